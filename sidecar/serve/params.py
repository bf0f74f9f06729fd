"""Request params checked against the protocol's own schemas (PARAMS_SCHEMAS, generated from
protocol/sidecar.openrpc.json) before any of them reaches the core.

The one place the protocol's bounds and types are enforced for the core's callers: the JSON-RPC
adapter checks every request here, the CLI the arguments it passes on; the MCP tools check their own
published input schemas (tighter bounds, from the same generated constants). The core keeps only the
rules a schema cannot say (a blank query, a path outside the vault, a cursor from another question).

Only the JSON Schema keywords the document may use (build_tasks/protocol.py ALLOWED_KEYS) are
understood. Every failure is InvalidParams naming the field, in its message and as `data.field` (as
the MCP tools' argument errors do), so no input ends as an internal error.
"""

from __future__ import annotations

import math
import re
from typing import Any

from sidecar.errors import InvalidParams
from sidecar.protocol_types import PARAMS_SCHEMAS

Schema = dict[str, Any]
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def check_params(method: str, params: dict[str, Any]) -> None:
    """Raise InvalidParams (with the field's name) when `params` break `method`'s schema."""
    schema = PARAMS_SCHEMAS.get(method)
    if schema is not None:
        _check(params, schema, "params")


def _check(value: Any, schema: Schema, where: str) -> None:
    if "oneOf" in schema:
        _check_one_of(value, schema["oneOf"], where)
    if "type" in schema:
        _check_type(value, schema["type"], where)
    if "enum" in schema and value not in schema["enum"]:
        raise _invalid(where, f"must be one of {', '.join(map(str, schema['enum']))}")
    if "const" in schema and value != schema["const"]:
        raise _invalid(where, f"must be {schema['const']!r}")
    if isinstance(value, str):
        _check_string(value, schema, where)
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int | float):
        _check_number(value, schema, where)
    elif isinstance(value, list):
        _check_array(value, schema, where)
    elif isinstance(value, dict):
        _check_object(value, schema, where)


def _invalid(where: str, text: str) -> InvalidParams:
    """`where` names the field (`limit`, `filters.tag`, `a key of filters.fields`); `params`: the whole object."""
    field = where.removeprefix("a key of ")
    return InvalidParams(f"{where} {text}", {} if field == "params" else {"field": field})


def _check_one_of(value: Any, options: list[Schema], where: str) -> None:
    matches = 0
    for option in options:
        try:
            _check(value, option, where)
        except InvalidParams:
            continue
        matches += 1
    if matches != 1:
        raise _invalid(where, "does not have any of the allowed forms")


def _check_type(value: Any, expected: str | list[str], where: str) -> None:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        # bool is an int to Python, never a number to JSON Schema
        if isinstance(value, JSON_TYPES[name]) and not (isinstance(value, bool) and name in ("integer", "number")):
            return
    raise _invalid(where, f"must be {' or '.join(names)}, not {_json_type(value)}")


def _json_type(value: Any) -> str:
    for name, types in JSON_TYPES.items():
        if isinstance(value, types) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return type(value).__name__


def _check_string(value: str, schema: Schema, where: str) -> None:
    if len(value) < schema.get("minLength", 0):
        raise _invalid(where, "must not be empty" if schema["minLength"] == 1
                       else f"must have at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise _invalid(where, f"is too long: {len(value):,} characters (at most {schema['maxLength']:,})")
    if not _is_unicode(value):
        raise _invalid(where, "is not valid Unicode text (a lone surrogate)")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        raise _invalid(where, "does not have the expected form")


def _is_unicode(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_number(value: float, schema: Schema, where: str) -> None:
    if not math.isfinite(value):
        raise _invalid(where, "must be a finite number")
    if "minimum" in schema and value < schema["minimum"]:
        raise _invalid(where, f"must be at least {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        raise _invalid(where, f"must be at most {schema['maximum']}")


def _check_array(value: list[Any], schema: Schema, where: str) -> None:
    if len(value) < schema.get("minItems", 0):
        raise _invalid(where, f"needs at least {schema['minItems']} item(s)")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise _invalid(where, f"has too many items: {len(value):,} (at most {schema['maxItems']:,})")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, f"{where}[{i}]")


def _check_object(value: dict[str, Any], schema: Schema, where: str) -> None:
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        raise _invalid(where, f"has too many keys: {len(value):,} (at most {schema['maxProperties']:,})")
    for name in schema.get("required", ()):
        if name not in value:
            raise _invalid(_field(where, name), "is required")
    known: dict[str, Schema] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    names = schema.get("propertyNames")
    for key, item in value.items():
        inner = _field(where, key)
        if names is not None:
            _check(key, names, f"a key of {where}")
        if key in known:
            _check(item, known[key], inner)
        elif extra is False:
            raise InvalidParams(f"unknown param {inner[:200]}", {"field": inner[:200]})
        elif isinstance(extra, dict):
            _check(item, extra, inner)


def _field(where: str, key: str) -> str:
    return key if where == "params" else f"{where}.{key}"

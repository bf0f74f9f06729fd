"""`python3 build.py protocol [--check]`: generate the JSON-RPC types from protocol/sidecar.openrpc.json.

protocol/sidecar.openrpc.json is the single source of truth. From it this task writes

    sidecar/protocol_types.py            TypedDicts, PROTOCOL_VERSION, METHODS, ERROR_CODES, EVENTS,
                                         param bounds (SEARCH_LIMIT_MAX, ...), PARAMS_SCHEMAS
    obsidian-plugin/src/protocol.gen.ts  interfaces, SidecarMethods, SidecarEvents, PROTOCOL_VERSION,
                                         METHODS, EVENTS, ERROR_CODES, param bounds
    sidecar/adapters/mcp/outputs.py               the MCP tools' pydantic output models that project a result schema,
                                         as protocol/mcp-outputs.json says (fields, narrower types)

All are deterministic (same document, same bytes). `--check` regenerates in memory and exits 1, with a diff
summary, when a file on disk differs.

The generator understands the subset of JSON Schema (draft-07) the document uses, and refuses anything else
so that a new construct is a loud error instead of a silently wrong type:
  type (one type, or [T, "null"]), enum, const, $ref to #/components/schemas, oneOf [X, {"type": "null"}],
  object with properties/required/additionalProperties, array with items (one schema, or a tuple list).
Every object with properties must be a named schema in components.schemas (inline ones have no good name).

For tests (and the server's tests), `result_schema(method)`, `params_schema(method)` and `event_schema(name)`
return self-contained schemas with every $ref inlined, ready for jsonschema.Draft7Validator.
"""

from __future__ import annotations

import copy
import difflib
import json
import keyword
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "protocol" / "sidecar.openrpc.json"
PY_OUT = ROOT / "sidecar" / "protocol_types.py"
TS_OUT = ROOT / "obsidian-plugin" / "src" / "protocol.gen.ts"
MCP_DOCUMENT = ROOT / "protocol" / "mcp-outputs.json"
MCP_OUT = ROOT / "sidecar" / "adapters" / "mcp" / "outputs.py"

SCHEMA_REF = "#/components/schemas/"
ERROR_REF = "#/components/errors/"
PY_LINE = 110
TS_LINE = 110

Schema = dict[str, Any]


class ProtocolError(ValueError):
    """The document uses something the generator does not understand, or is inconsistent."""


# ---- the document ------------------------------------------------------------------------
def load_document(path: Path = DOCUMENT) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        doc: dict[str, Any] = json.load(fh)
    return doc


def method_names(doc: dict[str, Any] | None = None) -> tuple[str, ...]:
    doc = doc or load_document()
    return tuple(m["name"] for m in doc["methods"])


def error_codes(doc: dict[str, Any] | None = None) -> dict[str, int]:
    doc = doc or load_document()
    return {name: int(err["code"]) for name, err in doc["components"]["errors"].items()}


def resolve_pointer(doc: dict[str, Any], ref: str) -> Any:
    """Follow a local JSON pointer such as `#/components/schemas/Band`; raises ProtocolError if it dangles."""
    if not ref.startswith("#/"):
        raise ProtocolError(f"only local $ref is supported: {ref}")
    node: Any = doc
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ProtocolError(f"$ref does not resolve: {ref}")
    return node


def iter_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from iter_refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from iter_refs(item)


def inline_refs(node: Any, doc: dict[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """A deep copy of `node` with every $ref replaced by its target (siblings of $ref are kept)."""
    if isinstance(node, dict):
        if "$ref" in node:
            ref = node["$ref"]
            if ref in seen:
                raise ProtocolError(f"recursive $ref cannot be inlined: {' -> '.join((*seen, ref))}")
            target = inline_refs(resolve_pointer(doc, ref), doc, (*seen, ref))
            siblings = {k: inline_refs(v, doc, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings} if siblings else target
        return {k: inline_refs(v, doc, seen) for k, v in node.items()}
    if isinstance(node, list):
        return [inline_refs(item, doc, seen) for item in node]
    return copy.deepcopy(node)


def _method(doc: dict[str, Any], name: str) -> dict[str, Any]:
    for m in doc["methods"]:
        if m["name"] == name:
            return dict(m)
    raise KeyError(f"no method {name!r} in {DOCUMENT.name}")


def result_schema(method: str, doc: dict[str, Any] | None = None) -> Schema:
    """Self-contained JSON Schema (draft-07) of `method`'s result, every $ref inlined."""
    doc = doc or load_document()
    schema: Schema = inline_refs(_method(doc, method)["result"]["schema"], doc)
    schema.setdefault("$schema", "http://json-schema.org/draft-07/schema#")
    return schema


def params_schema(method: str, doc: dict[str, Any] | None = None) -> Schema:
    """Self-contained JSON Schema of `method`'s by-name params object (no unknown params)."""
    doc = doc or load_document()
    params = _method(doc, method)["params"]
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {p["name"]: inline_refs(p["schema"], doc) for p in params},
        "required": [p["name"] for p in params if p.get("required")],
        "additionalProperties": False,
    }


def event_schema(event: str, doc: dict[str, Any] | None = None) -> Schema:
    """Self-contained JSON Schema of the `data` of a server-sent event on GET /events."""
    doc = doc or load_document()
    schema: Schema = inline_refs(doc["x-events"]["events"][event]["schema"], doc)
    schema.setdefault("$schema", "http://json-schema.org/draft-07/schema#")
    return schema


# ---- a small intermediate model -----------------------------------------------------------
# A type expression is one of:
#   ("prim", "string"|"integer"|"number"|"boolean"|"null"|"any")
#   ("ref", Name)  ("literal", [values])  ("array", T)  ("tuple", [T...])  ("map", T)  ("union", [T...])
TypeExpr = tuple[str, Any]


class Field:
    def __init__(self, name: str, type_: TypeExpr, required: bool, description: str) -> None:
        self.name = name
        self.type = type_
        self.required = required
        self.description = description


class Named:
    """A named type: an alias (enum, tuple, ...) or a record (object with properties)."""

    def __init__(self, name: str, description: str, *, alias: TypeExpr | None = None,
                 fields: list[Field] | None = None, extra: TypeExpr | None = None) -> None:
        self.name = name
        self.description = description
        self.alias = alias
        self.fields = fields  # a record's own fields; its base's come first (all_fields)
        self.extra = extra  # type of additional properties of a record, None when closed
        self.base: Named | None = None  # the record this one extends (an x-parts part of it)

    @property
    def all_fields(self) -> list[Field]:
        return (self.base.all_fields if self.base else []) + (self.fields or [])

    def deps(self) -> list[str]:
        exprs: list[TypeExpr] = []
        if self.alias is not None:
            exprs.append(self.alias)
        for f in self.fields or []:
            exprs.append(f.type)
        if self.extra is not None:
            exprs.append(self.extra)
        out: list[str] = [self.base.name] if self.base else []
        for e in exprs:
            out += _expr_refs(e)
        return out


def _expr_refs(expr: TypeExpr) -> list[str]:
    kind, arg = expr
    if kind == "ref":
        return [arg]
    if kind in ("array", "map"):
        return _expr_refs(arg)
    if kind in ("tuple", "union"):
        return [r for a in arg for r in _expr_refs(a)]
    return []


ALLOWED_KEYS = {
    "type", "enum", "const", "$ref", "oneOf", "properties", "required", "additionalProperties", "items",
    "additionalItems", "minItems", "maxItems", "description", "title", "default", "minimum", "maximum",
    "minLength", "maxLength", "pattern", "examples", "$schema", "maxProperties", "propertyNames",
    "x-parts",
}
PRIMS = {"string", "integer", "number", "boolean", "null"}


def type_expr(schema: Schema, where: str) -> TypeExpr:
    unknown = set(schema) - ALLOWED_KEYS
    if unknown:
        raise ProtocolError(f"{where}: unsupported JSON Schema keyword(s) {sorted(unknown)}")
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith(SCHEMA_REF):
            raise ProtocolError(f"{where}: $ref must point into {SCHEMA_REF}: {ref}")
        return ("ref", ref[len(SCHEMA_REF):])
    if "const" in schema:
        return ("literal", [schema["const"]])
    if "enum" in schema:
        return ("literal", list(schema["enum"]))
    if "oneOf" in schema:
        return ("union", [type_expr(s, f"{where}.oneOf[{i}]") for i, s in enumerate(schema["oneOf"])])
    t = schema.get("type")
    if isinstance(t, list):
        return ("union", [type_expr({**schema, "type": x}, where) for x in t])
    if t in PRIMS:
        return ("prim", t)
    if t == "array":
        items = schema.get("items")
        if isinstance(items, list):
            if schema.get("additionalItems") is not False:
                raise ProtocolError(f"{where}: a tuple needs additionalItems: false")
            return ("tuple", [type_expr(s, f"{where}.items[{i}]") for i, s in enumerate(items)])
        if not isinstance(items, dict):
            raise ProtocolError(f"{where}: array without items")
        return ("array", type_expr(items, f"{where}.items"))
    if t == "object":
        if schema.get("properties"):
            raise ProtocolError(f"{where}: inline object with properties; name it in components.schemas")
        extra = schema.get("additionalProperties", True)
        if extra is True or extra == {}:
            return ("map", ("prim", "any"))
        if extra is False:
            raise ProtocolError(f"{where}: empty closed object")
        return ("map", type_expr(extra, f"{where}.additionalProperties"))
    raise ProtocolError(f"{where}: cannot make a type of {json.dumps(schema)[:120]}")


def named_type(name: str, schema: Schema) -> Named:
    description = str(schema.get("description", ""))
    if schema.get("type") == "object" and "properties" in schema:
        unknown = set(schema) - ALLOWED_KEYS
        if unknown:
            raise ProtocolError(f"{name}: unsupported JSON Schema keyword(s) {sorted(unknown)}")
        required = set(schema.get("required", []))
        missing = required - set(schema["properties"])
        if missing:
            raise ProtocolError(f"{name}: required but not in properties: {sorted(missing)}")
        fields = [
            Field(key, type_expr(sub, f"{name}.{key}"), key in required, str(sub.get("description", "")))
            for key, sub in schema["properties"].items()
        ]
        extra_schema = schema.get("additionalProperties", True)
        extra: TypeExpr | None
        if extra_schema is False:
            extra = None
        elif extra_schema is True or extra_schema == {}:
            extra = ("prim", "any")
        else:
            extra = type_expr(extra_schema, f"{name}.additionalProperties")
        return Named(name, description, fields=fields, extra=extra)
    return Named(name, description, alias=type_expr(schema, name))


def record_part(whole: Named, name: str, spec: dict[str, Any]) -> Named:
    """`x-parts` of a record: a record of some of its fields, for code that builds one part of the whole
    (the core's status, which `serve` completes). The whole then extends the part, so each field is
    generated once: in the part, or in the whole for the fields the part leaves out."""
    if whole.base is not None:
        raise ProtocolError(f"{whole.name}.x-parts: one part a record, {whole.base.name} is already one")
    by_name = {f.name: f for f in whole.fields or []}
    unknown = [key for key in spec["properties"] if key not in by_name]
    if unknown:
        raise ProtocolError(f"{whole.name}.x-parts.{name}: not fields of {whole.name}: {unknown}")
    part = Named(name, str(spec.get("description", "")), fields=[by_name[key] for key in spec["properties"]])
    whole.fields = [f for f in whole.fields or [] if f.name not in spec["properties"]]
    whole.base = part
    return part


BOUND_KEYS = {"minimum": "MIN", "maximum": "MAX", "minLength": "MIN_LENGTH", "maxLength": "MAX_LENGTH",
              "minItems": "MIN_ITEMS", "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES", "default": "DEFAULT"}


def _constant(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9]+", "_", part).upper() for part in parts)


def _bounds_of(schema: Schema, doc: dict[str, Any], *name: str) -> list[tuple[str, Any]]:
    """The bounds and the scalar default of one param schema (and of the properties of an object it refers to)."""
    out = [(_constant(*name, BOUND_KEYS[key]), value) for key, value in schema.items()
           if key in BOUND_KEYS and isinstance(value, int | float | str)]
    if "$ref" in schema:
        target = resolve_pointer(doc, schema["$ref"])
        for prop, sub in target.get("properties", {}).items():
            out += _bounds_of(sub, doc, *name, prop)
    return out


def param_bounds(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    """METHOD_PARAM_MAX and friends for every bound (minimum, maxLength, ...) and scalar default of a param:
    what the adapters and the core state as Field(le=...) or a default, named after the schema."""
    out: list[tuple[str, Any]] = []
    for m in doc["methods"]:
        for p in m["params"]:
            out += _bounds_of(p["schema"], doc, m["name"], p["name"])
    names = [n for n, _ in out]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ProtocolError(f"param bound names clash: {clashes}")
    return out


def pascal(method: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[._\-]", method) if part)


class Model:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.version = str(doc["info"]["version"])
        self.types: dict[str, Named] = {}
        for name, schema in doc["components"]["schemas"].items():
            self.types[name] = named_type(name, schema)
            for part, spec in schema.get("x-parts", {}).items():
                self.types[part] = record_part(self.types[name], part, spec)
        self.methods: list[tuple[str, str, str, str]] = []  # (method, params type, result type, summary)
        for m in doc["methods"]:
            if m.get("paramStructure", "by-name") != "by-name":
                raise ProtocolError(f"{m['name']}: params must be by-name")
            params_name = f"{pascal(m['name'])}Params"
            if params_name in self.types:
                raise ProtocolError(f"{params_name} clashes with a schema of the same name")
            fields = [Field(p["name"], type_expr(p["schema"], f"{m['name']}.params.{p['name']}"),
                            bool(p.get("required")), str(p.get("description", "")))
                      for p in m["params"]]
            self.types[params_name] = Named(params_name, f"Params of `{m['name']}` (by name).", fields=fields)
            result = type_expr(m["result"]["schema"], f"{m['name']}.result")
            if result[0] != "ref":
                raise ProtocolError(f"{m['name']}: the result schema must be a $ref to a named schema")
            self.methods.append((m["name"], params_name, result[1], str(m.get("summary", ""))))
        self.errors = error_codes(doc)
        self.bounds = param_bounds(doc)
        self.events: list[tuple[str, str, str]] = []
        for event, spec in doc.get("x-events", {}).get("events", {}).items():
            expr = type_expr(spec["schema"], f"x-events.{event}")
            if expr[0] != "ref":
                raise ProtocolError(f"event {event}: the schema must be a $ref to a named schema")
            self.events.append((event, expr[1], str(spec.get("summary", ""))))
        for t in self.types.values():
            for dep in t.deps():
                if dep not in self.types:
                    raise ProtocolError(f"{t.name} refers to unknown schema {dep}")

    def ordered(self) -> list[Named]:
        """Dependencies before dependants (Python evaluates aliases eagerly); otherwise document order."""
        done: dict[str, None] = {}
        visiting: set[str] = set()

        def visit(name: str) -> None:
            if name in done:
                return
            if name in visiting:
                raise ProtocolError(f"recursive type {name} is not supported")
            visiting.add(name)
            for dep in self.types[name].deps():
                visit(dep)
            visiting.discard(name)
            done[name] = None

        for name in self.types:
            visit(name)
        return [self.types[n] for n in done]


# ---- Python ---------------------------------------------------------------------------------
def py_expr(expr: TypeExpr) -> str:
    kind, arg = expr
    if kind == "prim":
        return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None",
                "any": "Any"}[arg]
    if kind == "ref":
        return str(arg)
    if kind == "literal":
        return f"Literal[{', '.join(_py_literal(v) for v in arg)}]"
    if kind == "array":
        return f"list[{py_expr(arg)}]"
    if kind == "tuple":
        # JSON arrays decode to lists, so a fixed-length tuple is typed as a list of its item types.
        members = list(dict.fromkeys(py_expr(a) for a in arg))
        return f"list[{' | '.join(members)}]"
    if kind == "map":
        return f"dict[str, {py_expr(arg)}]"
    if kind == "union":
        return " | ".join(dict.fromkeys(py_expr(a) for a in arg))
    raise ProtocolError(f"unknown type expression {expr}")


def _bare(schema: Any) -> Any:
    """A schema without the keys that only document it (what the runtime check does not need)."""
    if isinstance(schema, dict):
        return {k: _bare(v) for k, v in schema.items() if k not in ("description", "$schema", "default")}
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    return schema


def _py_literal(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _py_comment(text: str, indent: str) -> list[str]:
    if not text:
        return []
    width = PY_LINE - len(indent) - 2
    return [f"{indent}# {line}" for line in textwrap.wrap(text, width)]


def _py_docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    width = PY_LINE - len(indent) - 6
    lines = textwrap.wrap(text, width) or [""]
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{line}" for line in lines[1:]], f'{indent}"""']


def _py_tuple(values: list[str], head: str) -> list[str]:
    one = f"{head}({', '.join(values)}{',' if len(values) == 1 else ''})"
    if len(one) <= PY_LINE:
        return [one]
    return [f"{head}(", *[f"    {v}," for v in values], ")"]


def render_python(model: Model) -> str:
    out = [
        '"""Vault Sidecar JSON-RPC types. GENERATED, DO NOT EDIT.',
        "",
        "Generated by `python3 build.py protocol` from protocol/sidecar.openrpc.json (the source of truth);",
        "edit the document and regenerate. Objects that allow extra keys (see the document) are typed with",
        "their known keys only. Types come before their users (no forward references), so that runtime",
        "introspection such as __required_keys__ is right.",
        '"""',
        "",
        "from typing import Any, Literal, NotRequired, TypeAlias, TypedDict",
        "",
        f"PROTOCOL_VERSION = {json.dumps(model.version)}",
        "",
        *_py_tuple([json.dumps(m[0]) for m in model.methods], "METHODS: tuple[str, ...] = "),
        "",
        *_py_tuple([json.dumps(e[0]) for e in model.events], "EVENTS: tuple[str, ...] = "),
        "",
        "ERROR_CODES: dict[str, int] = {",
        *[f"    {json.dumps(k)}: {v}," for k, v in model.errors.items()],
        "}",
        "",
        "# Bounds and defaults of the params, named METHOD_PARAM_BOUND: the core and the adapters use these",
        "# instead of restating a number.",
        *[f"{name} = {_py_literal(value)}" for name, value in model.bounds],
        "",
        "# Each method's params as one JSON Schema (every $ref inlined, descriptions left out): the sidecar",
        "# checks every request against it at the boundary (sidecar/serve/params.py).",
        "PARAMS_SCHEMAS: dict[str, dict[str, Any]] = {",
        *[f"    {json.dumps(m[0])}: {_bare(params_schema(m[0], model.doc))!r}," for m in model.methods],
        "}",
    ]
    for t in model.ordered():
        out += ["", ""]
        if t.alias is not None:
            out += _py_comment(t.description, "")
            expr = py_expr(t.alias)
            line = f"{t.name}: TypeAlias = {expr}"
            if len(line) > PY_LINE and t.alias[0] == "literal":
                values = [f"    {_py_literal(v)}," for v in t.alias[1]]
                out += [f"{t.name}: TypeAlias = Literal[", *values, "]"]
            else:
                out.append(line)
            continue
        fields = t.fields or []
        functional = any(not f.name.isidentifier() or keyword.iskeyword(f.name) for f in t.all_fields)
        if functional and t.base is not None:
            raise ProtocolError(f"{t.name}: a record with x-parts needs field names Python can write as a class")
        if functional:
            out.append(f"{t.name} = TypedDict({json.dumps(t.name)}, {{")
            for f in fields:
                expr = py_expr(f.type)
                typ = expr if f.required else f"NotRequired[{expr}]"
                out.append(f"    {json.dumps(f.name)}: {typ!r},")
            out.append("})")
            continue
        out.append(f"class {t.name}({t.base.name if t.base else 'TypedDict'}):")
        doc = t.description
        if t.extra is not None:
            doc = (doc + " " if doc else "") + f"May carry further keys of type {py_expr(t.extra)}."
        body: list[str] = []
        if doc:
            body += _py_docstring(doc, "    ")
        for f in fields:
            expr = py_expr(f.type)
            typ = expr if f.required else f"NotRequired[{expr}]"
            if body and f.description:
                body.append("")
            body += _py_comment(f.description, "    ")
            body.append(f"    {f.name}: {typ}")
        out += body or ["    pass"]
    return "\n".join(out) + "\n"


# ---- TypeScript ---------------------------------------------------------------------------
def ts_expr(expr: TypeExpr) -> str:
    kind, arg = expr
    if kind == "prim":
        return {"string": "string", "integer": "number", "number": "number", "boolean": "boolean",
                "null": "null", "any": "unknown"}[arg]
    if kind == "ref":
        return str(arg)
    if kind == "literal":
        return " | ".join(json.dumps(v) for v in arg)
    if kind == "array":
        inner = ts_expr(arg)
        return f"({inner})[]" if " " in inner else f"{inner}[]"
    if kind == "tuple":
        return f"[{', '.join(ts_expr(a) for a in arg)}]"
    if kind == "map":
        return f"Record<string, {ts_expr(arg)}>"
    if kind == "union":
        return " | ".join(dict.fromkeys(ts_expr(a) for a in arg))
    raise ProtocolError(f"unknown type expression {expr}")


def _ts_key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name) else json.dumps(name)


def _ts_doc(text: str, indent: str) -> list[str]:
    if not text:
        return []
    text = text.replace("*/", "*\\/")
    lines = textwrap.wrap(text, TS_LINE - len(indent) - 3)
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *[f"{indent} * {line}" for line in lines], f"{indent} */"]


def render_typescript(model: Model) -> str:
    out = [
        "// Vault Sidecar JSON-RPC types. GENERATED, DO NOT EDIT.",
        "// Generated by `python3 build.py protocol` from protocol/sidecar.openrpc.json",
        "// (the source of truth): edit the document and regenerate.",
        "",
        f"export const PROTOCOL_VERSION = {json.dumps(model.version)};",
        "",
        "export const METHODS = [",
        *[f"  {json.dumps(m[0])}," for m in model.methods],
        "] as const;",
        "",
        "export const EVENTS = [",
        *[f"  {json.dumps(e[0])}," for e in model.events],
        "] as const;",
        "",
        "export const ERROR_CODES = {",
        *[f"  {_ts_key(k)}: {v}," for k, v in model.errors.items()],
        "} as const;",
        "",
        "export type ErrorKind = keyof typeof ERROR_CODES;",
        "",
        "/** Bounds and defaults of the params, named METHOD_PARAM_BOUND. */",
        *[f"export const {name} = {json.dumps(value)};" for name, value in model.bounds],
    ]
    for t in model.types.values():
        out.append("")
        out += _ts_doc(t.description, "")
        if t.alias is not None:
            out.append(f"export type {t.name} = {ts_expr(t.alias)};")
            continue
        fields = t.fields or []
        if not t.all_fields and t.extra is None:
            out.append(f"export type {t.name} = Record<string, never>;")
            continue
        out.append(f"export interface {t.name}{f' extends {t.base.name}' if t.base else ''} {{")
        for f in fields:
            out += _ts_doc(f.description, "  ")
            out.append(f"  {_ts_key(f.name)}{'' if f.required else '?'}: {ts_expr(f.type)};")
        if t.extra is not None:
            out.append(f"  [key: string]: {ts_expr(t.extra)};")
        out.append("}")
    out += ["", "/** Every method: its by-name params and its result. */"]
    out.append("export interface SidecarMethods {")
    for name, params, result, summary in model.methods:
        out += _ts_doc(summary, "  ")
        out.append(f"  {json.dumps(name)}: {{ params: {params}; result: {result} }};")
    out += ["}", "", "export type SidecarMethod = keyof SidecarMethods;", ""]
    out += ["/** Server-sent events on GET /events: event name -> data. */"]
    out.append("export interface SidecarEvents {")
    for name, schema, summary in model.events:
        out += _ts_doc(summary, "  ")
        out.append(f"  {_ts_key(name)}: {schema};")
    out += ["}", "", "export type SidecarEvent = keyof SidecarEvents;", ""]
    return "\n".join(out)


# ---- the MCP output models (pydantic), projections of the result schemas --------------------------
def load_projections(path: Path = MCP_DOCUMENT) -> dict[str, Any]:
    with path.open(encoding="utf-8") as fh:
        spec: dict[str, Any] = json.load(fh)
    return spec


def _projected_field(entry: str | dict[str, Any], source: Named | None, name: str) -> tuple[str, TypeExpr, bool, str]:
    """(field name, type, optional, comment) of one entry of a projection."""
    spec = {"name": entry} if isinstance(entry, str) else entry
    unknown = set(spec) - {"name", "type", "optional", "comment", "description"}
    if unknown:
        raise ProtocolError(f"MCP model {name}.{spec.get('name')}: unknown key(s) {sorted(unknown)}")
    field_name = str(spec["name"])
    known = {f.name: f for f in source.all_fields} if source is not None else {}
    of = known.get(field_name)
    if "type" in spec:
        t = spec["type"]
        expr = ("ref", t["model"]) if "model" in t else ("array", ("ref", t["list_of"])) if "list_of" in t \
            else type_expr(t, f"MCP model {name}.{field_name}")
        optional = bool(spec.get("optional"))
    elif of is None:
        raise ProtocolError(f"MCP model {name}.{field_name}: not a field of {source.name if source else 'any schema'}")
    else:
        expr = of.type
        optional = bool(spec.get("optional")) or not of.required or ("prim", "null") in _members(of.type)
    return field_name, expr, optional, str(spec.get("comment") or (of.description if of else ""))


def _members(expr: TypeExpr) -> list[TypeExpr]:
    return list(expr[1]) if expr[0] == "union" else [expr]


def render_mcp(model: Model, spec: dict[str, Any]) -> str:
    models: dict[str, Any] = spec["models"]
    imported: set[str] = set()
    body: list[str] = []
    for name, m in models.items():
        source = model.types.get(m["from"]) if "from" in m else None
        if "from" in m and source is None:
            raise ProtocolError(f"MCP model {name}: no schema {m['from']}")
        fields = [_projected_field(e, source, name) for e in m["fields"]]
        described = {e["name"]: str(e["description"]) for e in m["fields"] if isinstance(e, dict) and "description" in e}
        # a comment, not a docstring: pydantic would publish a docstring as the outputSchema's description
        body += ["", "", f"# Projection of the protocol's {m['from']}." if source else "# MCP only.",
                 f"class {name}({m.get('base', 'BaseModel')}):"]
        for field_name, expr, optional, comment in fields:
            refs = _expr_refs(expr)
            for ref in refs:
                if ref not in models and ref not in model.types:
                    raise ProtocolError(f"MCP model {name}.{field_name}: unknown type {ref}")
            imported |= {r for r in refs if r not in models}
            typ = py_expr(expr)
            line = f"    {field_name}: {typ}"
            if optional:
                line += " = None" if ("prim", "null") in _members(expr) else " | None = None"
            if field_name in described:  # published in the outputSchema
                if optional:
                    raise ProtocolError(f"MCP model {name}.{field_name}: a description on an optional field")
                line += f" = Field(description={_py_literal(described[field_name])})"
            if comment:
                if not body[-1].startswith("class "):
                    body.append("")
                body += _py_comment(comment, "    ")
            body.append(line)
    head = [
        '"""The MCP tools\' output models. GENERATED, DO NOT EDIT.',
        "",
        "Generated by `python3 build.py protocol` from protocol/mcp-outputs.json: projections of the result",
        "schemas of protocol/sidecar.openrpc.json (the source of truth); edit those and regenerate.",
        '"""',
        "",
        "from typing import Literal",
        "",
        "from pydantic import BaseModel, Field",
        "",
    ]
    if imported:
        head += [f"from sidecar.protocol_types import {', '.join(sorted(imported))}"]
    out = "\n".join([*head, *body]) + "\n"
    if "Field(" not in out:
        out = out.replace("import BaseModel, Field\n", "import BaseModel\n")
    return out if "Literal[" in out else out.replace("from typing import Literal\n\n", "")


# ---- the task -------------------------------------------------------------------------------
def generate(doc: dict[str, Any] | None = None, projections: dict[str, Any] | None = None) -> dict[Path, str]:
    model = Model(doc or load_document())
    return {PY_OUT: render_python(model), TS_OUT: render_typescript(model),
            MCP_OUT: render_mcp(model, projections or load_projections())}


def check(doc: dict[str, Any] | None = None, projections: dict[str, Any] | None = None) -> list[str]:
    """Problems as lines of text (a diff summary per stale file); empty when everything is up to date."""
    problems: list[str] = []
    for path, text in generate(doc, projections).items():
        rel = path.relative_to(ROOT)
        if not path.exists():
            problems.append(f"{rel}: missing")
            continue
        current = path.read_text(encoding="utf-8")
        if current == text:
            continue
        diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                         f"{rel} (on disk)", f"{rel} (generated)", lineterm="", n=1))
        changed = sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        problems.append(f"{rel}: out of date ({changed} line(s) differ)")
        problems += [f"    {line}" for line in diff[:40]]
        if len(diff) > 40:
            problems.append(f"    ... {len(diff) - 40} more diff lines")
    return problems


def write(doc: dict[str, Any] | None = None) -> list[Path]:
    changed = []
    for path, text in generate(doc).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            changed.append(path)
    return changed


def run(args: list[str]) -> int:
    unknown = [a for a in args if a != "--check"]
    if unknown:
        print(f"usage: python3 build.py protocol [--check] (unknown: {' '.join(unknown)})", file=sys.stderr)
        return 2
    try:
        if "--check" in args:
            problems = check()
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                print("protocol types are stale: run `python3 build.py protocol`", file=sys.stderr)
                return 1
            print("[build] protocol types are up to date", file=sys.stderr)
            return 0
        changed = write()
    except ProtocolError as exc:
        print(f"protocol: {exc}", file=sys.stderr)
        return 1
    for path in changed:
        print(f"[build] wrote {path.relative_to(ROOT)}", file=sys.stderr)
    if not changed:
        print("[build] protocol types were already up to date", file=sys.stderr)
    return 0

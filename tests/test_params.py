"""sidecar/serve/params.py: every request checked against the protocol's params schema, failures named."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonrpcserver import async_dispatch
from mcp.types import CallToolResult

from sidecar.adapters.mcp.server import build_mcp
from sidecar.adapters.mcp.tools import MAX_SINCE, parse_since
from sidecar.adapters.rpc import _wrap
from sidecar.errors import InvalidParams
from sidecar.protocol_types import PARAMS_SCHEMAS
from sidecar.serve.params import check_params
from tests.conftest import open_index

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from build_tasks import protocol as proto  # noqa: E402


def test_the_checked_schemas_are_the_documents() -> None:
    for method in proto.method_names():
        assert PARAMS_SCHEMAS[method]["properties"].keys() == proto.params_schema(method)["properties"].keys()


@pytest.mark.parametrize("params", [
    {"query": "bread"},
    {"query": "bread", "limit": 100, "mode": "lexical", "explain": True, "max_tokens": 50},
    {"query": "x", "filters": {"folder": "A", "tag": "#t", "fields": {"type": "x"}, "modified_since": 1.5,
                               "exclude_path": "a.md", "exclude_terms": ["w"]}},
    {"query": "x", "filters": {"modified_since": 0}},
])
def test_valid_search_params_pass(params: dict[str, object]) -> None:
    check_params("search", params)


@pytest.mark.parametrize(("params", "field"), [
    ({"query": "x", "filters": {"modified_since": float("nan")}}, "filters.modified_since"),
    ({"query": "x", "filters": {"modified_since": float("inf")}}, "filters.modified_since"),
    ({"query": "x", "filters": {"modified_since": False}}, "filters.modified_since"),
    ({"query": "x\ud800"}, "query"),
    ({"query": "x", "filters": {"fields": {"k" * 300: "v"}}}, "filters.fields"),
    ({"query": "x", "filters": {"exclude_terms": [""]}}, "filters.exclude_terms[0]"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 101}, "limit"),
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "max_tokens": 0}, "max_tokens"),
    ({"query": "x", "typed": "yes"}, "typed"),
    ({"query": "x", "filters": []}, "filters"),
    ({"query": "x", "filters": {"fields": ["type"]}}, "filters.fields"),
    ({"query": "x", "bogus": 1}, "bogus"),
    ({"limit": 5}, "query"),
])
def test_invalid_search_params_name_the_field(params: dict[str, object], field: str) -> None:
    """In the message and as data.field, as MCP's argument errors do."""
    with pytest.raises(InvalidParams, match=field.replace("[", r"\[").replace("]", r"\]")) as raised:
        check_params("search", params)
    assert raised.value.data == {"field": field}


def test_mcp_dates_before_the_epoch_or_far_ahead_are_clamped_not_internal_errors() -> None:
    """`modified_since: "0001-01-01"` raised ValueError (year 1 in local time) and answered internal error."""
    assert parse_since("0001-01-01") == 0.0
    assert parse_since("9999-12-31T23:59:59") == MAX_SINCE
    with pytest.raises(InvalidParams):
        parse_since("abc")


CHECKED_AT_THE_BOUNDARY_ONLY = [  # (entry point, method or tool, arguments, field): the core checks none of these again
    ("json-rpc", "health.page", {"section": "orphans", "limit": 0}, "limit"),
    ("json-rpc", "health.page", {"section": "orphans", "limit": 501}, "limit"),
    ("mcp", "vault_health", {"section": "orphans", "limit": 0}, "limit"),
    ("mcp", "vault_health", {"section": "orphans", "limit": 101}, "limit"),
    ("mcp", "list_notes", {"limit": 0}, "limit"),
    ("mcp", "list_notes", {"limit": 501}, "limit"),
    ("json-rpc", "related", {"text": 7}, "text"),
]


@pytest.mark.parametrize(("port", "name", "arguments", "field"), CHECKED_AT_THE_BOUNDARY_ONLY,
                         ids=[f"{port}-{name}-{args[field]}" for port, name, args, field in CHECKED_AT_THE_BOUNDARY_ONLY])
def test_every_entry_point_refuses_a_value_out_of_range_naming_its_field(port: str, name: str, arguments: dict[str, object],
                                                                         field: str, tmp_path: Path) -> None:
    """health_page, list_notes and related's unsaved text rely on these boundary checks (the CLI reaches
    none of them: `sidecar health` builds the whole report, `sidecar related` takes no text). Refused
    before the core is asked: the JSON-RPC core here fails the test, the MCP one has no index (a value
    let through would answer index_not_ready)."""
    error = rpc_error(name, arguments) if port == "json-rpc" else mcp_error(name, arguments, tmp_path)
    named = error["data"]["field"] if port == "json-rpc" else error["field"]
    assert named == field and field in error["message"], error


def rpc_error(method: str, params: dict[str, object]) -> dict[str, Any]:
    async def core(**_params: object) -> None:
        raise AssertionError("the core was asked")

    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    error: dict[str, Any] = json.loads(asyncio.run(async_dispatch(request, methods={method: _wrap(method, core)})))["error"]
    assert error["code"] == InvalidParams.code, error
    return error


def mcp_error(tool: str, arguments: dict[str, object], tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "vault").mkdir()
    core = open_index(tmp_path / "vault", tmp_path / "index")
    try:
        result = asyncio.run(build_mcp(core).call_tool(tool, arguments))
    finally:
        core.close()
    assert isinstance(result, CallToolResult) and result.is_error, result
    error: dict[str, Any] = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
    assert error["code"] == "invalid_params", error
    return error

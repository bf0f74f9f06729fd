"""sidecar/serve/params.py: every request checked against the protocol's params schema, failures named."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sidecar.adapters.mcp.tools import MAX_SINCE, parse_since
from sidecar.errors import InvalidParams
from sidecar.protocol_types import PARAMS_SCHEMAS
from sidecar.serve.params import check_params

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

"""protocol/sidecar.openrpc.json: well-formed, schemas valid, every $ref resolves, generated types fresh."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from build_tasks import protocol as proto  # noqa: E402

REQUIRED_METHODS = {
    "status", "search", "related", "health", "health.summary", "health.page", "note.links", "reindex", "shutdown", "mcp.config", "edits.list",
    "edits.undo",
}
REQUIRED_ERRORS = {
    "not_found": -32004, "invalid_params": -32602, "index_not_ready": -32010, "busy": -32011, "vault": -32012,
    "shutting_down": -32013, "internal": -32000, "invalid_request": -32600, "method_not_found": -32601,
    "parse_error": -32700, "conflict": -32014, "writes_disabled": -32015,
}


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return proto.load_document()


def all_schemas(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = list(doc["components"]["schemas"].items())
    for m in doc["methods"]:
        out += [(f"{m['name']}.params.{p['name']}", p["schema"]) for p in m["params"]]
        out.append((f"{m['name']}.result", m["result"]["schema"]))
    out += [(f"x-events.{name}", e["schema"]) for name, e in doc["x-events"]["events"].items()]
    return out


def test_generated_files_are_up_to_date() -> None:
    problems = proto.check()
    assert not problems, "\n".join(["run `python3 build.py protocol`:", *problems])


def test_openrpc_shape(doc: dict[str, Any]) -> None:
    assert doc["openrpc"].startswith("1.3.")
    assert doc["info"]["version"] == "1.8.0"
    names = [m["name"] for m in doc["methods"]]
    assert len(names) == len(set(names))
    assert set(names) == REQUIRED_METHODS
    for m in doc["methods"]:
        assert m["paramStructure"] == "by-name", m["name"]
        assert isinstance(m["params"], list)
        for p in m["params"]:
            assert set(p) <= {"name", "summary", "description", "required", "schema", "deprecated"}, p
            assert isinstance(p["schema"], dict)
        assert set(m["result"]) >= {"name", "schema"}
        assert m["errors"], f"{m['name']} documents no errors"
        for e in m["errors"]:
            assert e["$ref"].startswith("#/components/errors/")


def test_error_codes(doc: dict[str, Any]) -> None:
    assert proto.error_codes(doc) == REQUIRED_ERRORS
    for name, err in doc["components"]["errors"].items():
        assert set(err) <= {"code", "message", "data"}
        assert err["data"]["kind"] == name
    assert doc["components"]["errors"]["busy"]["data"]["retryable"] is True


def test_events_are_documented(doc: dict[str, Any]) -> None:
    events = doc["x-events"]
    assert events["method"] == "GET" and events["path"] == "/events"
    assert set(events["events"]) == {"progress", "index_changed", "status", "agent_edit"}


@pytest.mark.parametrize("name", [s[0] for s in all_schemas(proto.load_document())])
def test_every_schema_is_valid_json_schema(doc: dict[str, Any], name: str) -> None:
    schema = dict(all_schemas(doc))[name]
    jsonschema.Draft7Validator.check_schema(schema)


def test_every_ref_resolves(doc: dict[str, Any]) -> None:
    refs = set(proto.iter_refs(doc))
    assert refs, "expected $refs in the document"
    for ref in refs:
        proto.resolve_pointer(doc, ref)
    with pytest.raises(proto.ProtocolError):
        proto.resolve_pointer(doc, "#/components/schemas/NoSuchThing")


def test_objects_are_closed_unless_noted(doc: dict[str, Any]) -> None:
    """additionalProperties is allowed only where the protocol says so."""
    open_ok = {"HealthSummary", "ErrorData", "SearchResponse.explanation", "SearchFilters.fields",
               "McpHttpConfig.cursor", "McpStdioConfig.cursor"}

    def walk(where: str, node: Any) -> None:
        if not isinstance(node, dict):
            return
        if node.get("type") == "object" and where not in open_ok:
            assert node.get("additionalProperties") is False, f"{where} must set additionalProperties: false"
        for key, sub in node.get("properties", {}).items():
            walk(f"{where}.{key}", sub)

    for name, schema in doc["components"]["schemas"].items():
        walk(name, schema)


def test_result_schemas_are_self_contained(doc: dict[str, Any]) -> None:
    for method in REQUIRED_METHODS:
        schema = proto.result_schema(method, doc)
        assert "$ref" not in json.dumps(schema)
        jsonschema.Draft7Validator.check_schema(schema)
        assert "$ref" not in json.dumps(proto.params_schema(method, doc))
    for event in doc["x-events"]["events"]:
        assert "$ref" not in json.dumps(proto.event_schema(event, doc))


def _status() -> dict[str, Any]:
    return {
        "version": "0.1.0", "protocol_version": "1.0.0", "vault": "/v", "index_dir": "/i", "index_bytes": 10,
        "schema_version": 1, "backend": "sqlite", "vector_store": "blob", "vector_search": "numpy",
        "model": {"name": None, "fingerprint": None, "dim": None, "available": False, "error": "no model"},
        "notes": 1, "chunks": 2, "chunks_with_vectors": 0, "chunks_without_vectors": 2,
        "vectors_available": False, "skipped": [{"path": "a.md", "reason": "too big"}],
        "last_indexed_at": None,
        "building": True, "complete": False, "bands": {"high": 0.6, "low": 0.4, "source": "default"}, "progress": {"phase": "scan", "done": 1, "total": 3},
        "mcp": {"enabled": False, "port": None},
    }


def _search() -> dict[str, Any]:
    hit = {
        "path": "a.md", "title": "A", "heading": "Setup > Install", "heading_path": ["Setup", "Install"],
        "snippet": "install the thing", "highlights": [[0, 7]], "start_line": 3, "end_line": 9,
        "band": "high", "score": 0.03,
        "scores": {"fused": 0.03, "bm25_rank": 1, "vector_similarity": None, "vector_rank": None,
                   "graph_boost": None, "recency_boost": 0.001},
        "reason": "keyword match", "other_sections": [{"heading": "Intro", "start_line": 1, "end_line": 2}],
    }
    return {"query": "install", "mode": "lexical", "took_ms": 3.2, "vectors_available": False,
            "index_building": False, "band": "high", "caveat": None, "results": [hit]}


def test_sample_responses_validate(doc: dict[str, Any]) -> None:
    jsonschema.Draft7Validator(proto.result_schema("status", doc)).validate(_status())
    jsonschema.Draft7Validator(proto.event_schema("status", doc)).validate(_status())
    jsonschema.Draft7Validator(proto.result_schema("search", doc)).validate(_search())
    jsonschema.Draft7Validator(proto.result_schema("shutdown", doc)).validate({"ok": True})
    summary = {k: 0 for k in ("notes", "orphans", "no_inbound", "dead_ends", "unresolved_links",
                              "unresolved_targets", "ambiguous_links", "broken_anchors", "near_duplicates",
                              "secrets")}
    health = {"generated_at": 1.0, "took_ms": 1, "summary": {**summary, "stale_notes": 4},
              "rules": ["orphans"],
              "sections": [{"id": "orphans", "title": "Orphans", "severity": "info", "count": 1,
                            "items": [{"path": "a.md", "line": None, "message": "no links", "fix": None,
                                       "severity": "info"}]}]}
    jsonschema.Draft7Validator(proto.result_schema("health", doc)).validate(health)


def test_bad_responses_are_rejected(doc: dict[str, Any]) -> None:
    v = jsonschema.Draft7Validator(proto.result_schema("search", doc))
    bad = _search()
    bad["results"][0]["highlights"] = [[0, 1, 2]]
    assert list(v.iter_errors(bad))
    extra = _search()
    extra["surprise"] = 1
    assert list(v.iter_errors(extra))
    assert list(jsonschema.Draft7Validator(proto.result_schema("shutdown", doc)).iter_errors({"ok": False}))
    params = jsonschema.Draft7Validator(proto.params_schema("search", doc))
    assert not list(params.iter_errors({"query": "x", "limit": 100, "mode": "semantic"}))
    assert list(params.iter_errors({"query": "x", "limit": 101}))
    assert list(params.iter_errors({"limit": 5}))
    assert list(params.iter_errors({"query": "x", "bogus": True}))


def test_python_types_match_the_document(doc: dict[str, Any]) -> None:
    from sidecar import protocol_types as pt

    assert doc["info"]["version"] == pt.PROTOCOL_VERSION
    assert set(pt.METHODS) == REQUIRED_METHODS
    assert pt.ERROR_CODES == REQUIRED_ERRORS
    required = set(doc["components"]["schemas"]["SearchResult"]["required"])
    assert set(pt.SearchResult.__required_keys__) == required
    assert "truncated" in pt.SearchResult.__optional_keys__
    assert set(pt.SearchParams.__required_keys__) == {"query"}


def test_generated_python_header_and_syntax() -> None:
    text = proto.PY_OUT.read_text(encoding="utf-8")
    assert "GENERATED, DO NOT EDIT" in text.splitlines()[0]
    ast.parse(text)
    ts = proto.TS_OUT.read_text(encoding="utf-8")
    assert "GENERATED, DO NOT EDIT" in ts.splitlines()[0]
    assert 'export const PROTOCOL_VERSION = "1.8.0";' in ts
    for method in REQUIRED_METHODS:
        assert f'"{method}": {{ params:' in ts


def test_generator_rejects_unsupported_schema(doc: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(doc))
    broken["components"]["schemas"]["Band"] = {"anyOf": [{"type": "string"}]}
    with pytest.raises(proto.ProtocolError):
        proto.generate(broken)
    dangling = json.loads(json.dumps(doc))
    progress = dangling["components"]["schemas"]["Progress"]
    progress["properties"]["done"] = {"$ref": "#/components/schemas/Nope"}
    with pytest.raises(proto.ProtocolError):
        proto.generate(dangling)


def test_a_record_part_takes_its_fields_from_the_whole(doc: dict[str, Any]) -> None:
    from sidecar import protocol_types as pt

    whole = doc["components"]["schemas"]["StatusResponse"]
    part = whole["x-parts"]["IndexStatus"]["properties"]
    assert list(pt.IndexStatus.__annotations__) == part
    assert pt.IndexStatus.__annotations__ == {k: pt.StatusResponse.__annotations__[k] for k in part}
    stray = json.loads(json.dumps(doc))
    stray["components"]["schemas"]["StatusResponse"]["x-parts"]["IndexStatus"]["properties"].append("nope")
    with pytest.raises(proto.ProtocolError):
        proto.generate(stray)


def test_the_whole_extends_its_part_and_states_each_field_once(doc: dict[str, Any]) -> None:
    from sidecar import protocol_types as pt

    whole = doc["components"]["schemas"]["StatusResponse"]
    assert set(pt.StatusResponse.__annotations__) == set(whole["properties"])
    generated = proto.generate(doc)
    python, typescript = generated[proto.PY_OUT], generated[proto.TS_OUT]
    assert "class StatusResponse(IndexStatus):" in python
    assert python.count("    protocol_version: str") == 1 and python.count("    vault: str") == 1
    assert "export interface StatusResponse extends IndexStatus {" in typescript
    two = json.loads(json.dumps(doc))
    parts = two["components"]["schemas"]["StatusResponse"]["x-parts"]
    parts["Another"] = {"properties": ["vault"]}
    with pytest.raises(proto.ProtocolError):
        proto.generate(two)


def test_generation_is_deterministic(doc: dict[str, Any]) -> None:
    assert proto.generate(doc) == proto.generate(json.loads(json.dumps(doc)))


def test_param_bounds_are_the_documents(doc: dict[str, Any]) -> None:
    from sidecar import protocol_types as pt

    seen = 0
    for method in proto.method_names(doc):
        for name, schema in proto.params_schema(method, doc)["properties"].items():
            for key, suffix in proto.BOUND_KEYS.items():
                if isinstance(schema.get(key), int | float | str):
                    assert getattr(pt, proto._constant(method, name, suffix)) == schema[key], (method, name, key)
                    seen += 1
    assert seen >= 20 and pt.SEARCH_LIMIT_MAX == 100 and pt.SEARCH_FILTERS_FOLDER_MAX_LENGTH == 1024


@pytest.mark.parametrize(("tool", "method"), [("search", "search"), ("related_notes", "related"),
                                              ("vault_health", "health.page")])
def test_mcp_limits_stay_within_the_protocols(doc: dict[str, Any], tool: str, method: str) -> None:
    """The MCP tools may page smaller than JSON-RPC (agents pay per token), never wider."""
    from typing import get_type_hints

    from pydantic import TypeAdapter

    from sidecar.adapters.mcp.tools import VaultTools

    mcp = TypeAdapter(get_type_hints(getattr(VaultTools, tool), include_extras=True)["limit"]).json_schema()
    rpc = proto.params_schema(method, doc)["properties"]["limit"]
    assert mcp["minimum"] == rpc["minimum"] and mcp["maximum"] <= rpc["maximum"]


def test_changing_the_schema_without_regenerating_is_caught(doc: dict[str, Any]) -> None:
    """The drift check (`build.py protocol --check`, run by `build.py test`) covers every generated file:
    a changed bound, error code or result field, not regenerated, makes each of them stale."""
    everything = {proto.PY_OUT, proto.TS_OUT, proto.MCP_OUT}
    assert set(proto.generate(doc)) == everything
    protocol_only = {proto.PY_OUT, proto.TS_OUT}  # the MCP models project result fields, not params or codes
    for change, touched in ((_raise_search_limit, protocol_only), (_renumber_busy, protocol_only),
                            (_add_result_field, protocol_only), (_make_snippet_nullable, everything)):
        edited = json.loads(json.dumps(doc))
        change(edited)
        stale = {line.split(":")[0] for line in proto.check(edited) if line.endswith("line(s) differ)")}
        assert stale == {str(path.relative_to(proto.ROOT)) for path in touched}, change.__name__


def _raise_search_limit(doc: dict[str, Any]) -> None:
    next(p for m in doc["methods"] if m["name"] == "search" for p in m["params"] if p["name"] == "limit")[
        "schema"]["maximum"] = 200


def _renumber_busy(doc: dict[str, Any]) -> None:
    doc["components"]["errors"]["busy"]["code"] = -32020


def _add_result_field(doc: dict[str, Any]) -> None:
    doc["components"]["schemas"]["SearchResult"]["properties"]["rank"] = {"type": "integer"}


def _make_snippet_nullable(doc: dict[str, Any]) -> None:
    doc["components"]["schemas"]["SearchResult"]["properties"]["snippet"] = {"type": ["string", "null"]}


def test_mcp_models_project_only_fields_the_protocol_has(doc: dict[str, Any]) -> None:
    spec = proto.load_projections()
    spec["models"]["SearchHit"]["fields"].append("rank")  # SearchResult has no `rank`
    with pytest.raises(proto.ProtocolError, match="rank"):
        proto.generate(doc, spec)
    text = proto.MCP_OUT.read_text(encoding="utf-8")
    assert "GENERATED, DO NOT EDIT" in text.splitlines()[0] and '"""' not in text.split("class ", 1)[1]


def test_generated_mcp_models_keep_the_published_shape() -> None:
    from sidecar.adapters.mcp.outputs import RelatedOut, SearchOut

    search = SearchOut.model_json_schema()
    assert list(search["properties"]) == ["next_cursor", "mode", "band", "caveat", "index_building", "results"]
    assert search["required"] == ["mode", "band", "results"] and "description" not in search
    hit = search["$defs"]["SearchHit"]
    assert hit["required"] == ["path", "heading", "start_line", "end_line", "band", "snippet"]
    related = RelatedOut.model_json_schema()
    assert related["$defs"]["RelatedNote"]["properties"]["band"]["enum"] == ["high", "medium", "low"]
    assert related["properties"]["source_path"] == {"title": "Source Path", "type": "string"}
    from sidecar.adapters.mcp.outputs import HealthOut, LinksOut

    section = HealthOut.model_json_schema()["$defs"]["HealthSection"]["properties"]["count"]
    assert section == {"description": "Findings in all; `items` shows the first few.", "title": "Count", "type": "integer"}
    outlink = LinksOut.model_json_schema()["$defs"]["Outlink"]
    assert outlink["required"] == ["target", "kind", "line"] and outlink["properties"]["kind"]["type"] == "string"

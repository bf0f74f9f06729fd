"""The running server keeps the protocol/ contract: same methods, and real answers validate."""

from __future__ import annotations

import inspect
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from build_tasks import protocol
from sidecar.adapters.rpc import build_methods
from sidecar.report.health import to_markdown
from tests.conftest import DEMO_VAULT
from tests.serverproc import Sidecar, start_sidecar


class _NoService:
    bus: Any = None


def test_documented_methods_are_exactly_the_implemented_ones() -> None:
    implemented = set(build_methods(_NoService()))  # type: ignore[arg-type]
    assert implemented == set(protocol.method_names())


def test_documented_params_match_the_implementation() -> None:
    methods = build_methods(_NoService())  # type: ignore[arg-type]
    for name in protocol.method_names():
        documented = set(protocol.params_schema(name).get("properties", {}))
        wrapped = methods[name].__closure__[0].cell_contents  # type: ignore[index]  (the inner function)
        accepted = set(inspect.signature(wrapped).parameters)
        assert documented == accepted, name


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    base = tmp_path_factory.mktemp("contract")
    vault = base / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    proc = start_sidecar(vault, base / "index", env={"XDG_CONFIG_HOME": str(base / "config")})
    try:
        proc.wait_ready()
        yield proc
    finally:
        proc.stop()


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("status", {}),
    ("search", {"query": "sourdough starter", "limit": 5}),
    ("search", {"query": "SQLITE_BUSY", "mode": "lexical", "explain": True, "max_tokens": 200}),
    ("search", {"query": "how do I keep the lab running in a power cut", "mode": "semantic",
                "filters": {"folder": "Home Lab", "exclude_terms": ["grafana"]}}),
    ("search", {"query": "nothing matches zzqqxx"}),
    ("related", {"path": "Cooking/Sourdough Bread.md"}),
    ("health.summary", {}),
    ("health.page", {"section": "orphans", "limit": 2}),
    ("related", {"text": "# Draft\n\nMy [[Home Lab]] needs a UPS.\n\n## Power\nbattery runtime", "cursor_heading": "Power"}),
    ("health", {}),
    ("health", {"markdown": True}),
    ("note.links", {"path": "Home.md"}),
    ("mcp.config", {}),
    ("reindex", {}),
]


@pytest.mark.parametrize(("method", "params"), CALLS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(CALLS)])
def test_real_answers_validate_against_the_contract(server: Sidecar, method: str, params: dict[str, Any]) -> None:
    Draft7Validator.check_schema(protocol.params_schema(method))
    assert not list(Draft7Validator(protocol.params_schema(method)).iter_errors(params))
    result = server.call(method, **params)
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}"
              for e in Draft7Validator(protocol.result_schema(method)).iter_errors(result)]
    assert errors == [], json.dumps(result)[:2000]


def test_health_markdown_is_the_sidecars_own_rendering(server: Sidecar) -> None:
    result = server.call("health", markdown=True)
    markdown = result.pop("markdown")
    assert markdown == to_markdown(result)  # one renderer: the plugin saves exactly this text
    assert "[[" not in markdown and "](" not in markdown
    assert "markdown" not in server.call("health")


def test_error_codes_are_the_documented_ones(server: Sidecar) -> None:
    codes = protocol.error_codes()
    assert server.rpc("note.links", path="../../etc/passwd")["error"]["code"] == codes["not_found"]
    assert server.rpc("search", query="")["error"]["code"] == codes["invalid_params"]


def test_the_status_event_validates(server: Sidecar) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.rpc_port, timeout=20)
    conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{server.rpc_port}", "Authorization": f"Bearer {server.token}"})
    resp = conn.getresponse()
    assert resp.readline().decode().strip() == "event: status"
    data = json.loads(resp.readline().decode().removeprefix("data: "))
    conn.close()
    errors = list(Draft7Validator(protocol.event_schema("status")).iter_errors(data))
    assert errors == []


def test_shutdown_answers_and_stops(tmp_path: Path) -> None:
    proc = start_sidecar(DEMO_VAULT, tmp_path / "idx", "--no-mcp", "--no-watch")
    result = proc.call("shutdown")
    assert not list(Draft7Validator(protocol.result_schema("shutdown")).iter_errors(result))
    assert proc.proc.wait(timeout=20) == 0


def test_cursor_round_trip_over_json_rpc(server: Sidecar) -> None:
    summary = server.call("health.summary")
    count = {s["id"]: s["count"] for s in summary["sections"]}["orphans"]
    seen, cursor = [], None
    while True:
        page = server.call("health.page", section="orphans", limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [i["path"] for i in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == count == len(set(seen)) >= 3


def test_bad_cursor_over_json_rpc_is_invalid_params(server: Sidecar) -> None:
    error = server.rpc("health.page", section="orphans", cursor="garbage!")["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "cursor"
    error = server.rpc("health.page", section="nope")["error"]
    assert error["code"] == -32602 and error["data"]["field"] == "section"

"""The HTTP rules of both ports under attack (bench/attack/http_matrix.py), quick subset."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_matrix_sockets_and_token_exposure(tmp_path: Path) -> None:
    result = load("http_matrix").run(quick=True, out=tmp_path)
    assert result.ok, result.failures[:10]
    assert result.figures["rpc_cells"] > 200 and result.figures["mcp_cells"] > 200
    assert all(s.startswith("127.0.0.1:") for s in result.figures["listening_sockets"])


def test_expected_table_is_what_the_brief_says() -> None:
    expected = load("http_matrix").expected_status
    assert expected("rpc", "loopback", "obsidian", "right", "json") == 200
    assert expected("mcp", "loopback", "obsidian", "right", "json") == 403
    assert expected("mcp", "absent", "absent", "right", "json") == 400
    assert expected("rpc", "evil_localhost", "absent", "right", "json") == 421
    assert expected("rpc", "loopback", "absent", "query", "json") == 400
    assert expected("rpc", "loopback", "absent", "right", "form") == 415

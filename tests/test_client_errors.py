"""What a client is told when answering it raised (serve/client_errors.py), and that both ports tell it alike."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import apsw
import pytest
import sqlean
from jsonrpcserver import async_dispatch
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.shared.exceptions import MCPError

from sidecar.adapters.mcp.tools import NoteResources, VaultTools
from sidecar.adapters.rpc import _wrap
from sidecar.errors import Busy, NotFound
from sidecar.protocol_types import ERROR_CODES
from sidecar.serve.client_errors import busy_from, client_error
from tests.conftest import open_index


def test_sqlite_busy_from_any_driver_is_the_retryable_busy_error() -> None:
    for exc in (sqlite3.OperationalError("database is locked"), sqlean.OperationalError("database is busy"),
                sqlite3.OperationalError("locking protocol"), apsw.ProtocolError("ProtocolError")):
        busy = busy_from(exc)
        assert isinstance(busy, Busy) and busy.code == -32011 and busy.data["retryable"] is True


def test_other_errors_are_not_busy() -> None:
    assert busy_from(sqlite3.OperationalError("no such table: notes")) is None
    assert busy_from(ValueError("locked")) is None


def test_our_errors_pass_busy_is_busy_and_anything_else_is_a_logged_internal_error(
        caplog: pytest.LogCaptureFixture) -> None:
    ours = NotFound("no such note: 'x'", {"suggestions": []})
    assert client_error(ours) is ours
    assert client_error(sqlite3.OperationalError("database is locked")).kind == "busy"
    assert not caplog.records  # neither is a bug: nothing logged
    with caplog.at_level(logging.ERROR):
        internal = client_error(KeyError("secret-looking detail"))
    assert internal.kind == "internal" and internal.code == ERROR_CODES["internal"] and internal.data == {}
    assert "KeyError" in internal.message and "secret-looking" not in internal.message  # the log has the rest
    assert [r.exc_info[1] for r in caplog.records if r.exc_info] and "secret-looking" in caplog.text


RAISED: list[Exception] = [NotFound("no such note: 'x'", {"suggestions": ["y.md"]}),
                           sqlite3.OperationalError("database is locked"), RuntimeError("a bug")]


def _rpc_error(exc: Exception) -> dict[str, Any]:
    async def raising() -> None:
        raise exc

    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status"})
    reply = asyncio.run(async_dispatch(request, methods={"status": _wrap("status", raising)}))
    error: dict[str, Any] = json.loads(reply)["error"]
    return error


def _mcp_error(exc: Exception, tmp_path: Path) -> dict[str, Any]:
    def raising() -> Any:
        raise exc

    (tmp_path / "vault").mkdir(exist_ok=True)
    core = open_index(tmp_path / "vault", tmp_path / "index")
    try:
        result = asyncio.run(VaultTools(core).run(raising, needs_index=False))
    finally:
        core.close()
    assert result.is_error
    error: dict[str, Any] = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
    return error


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_both_ports_answer_an_exception_with_the_same_error(exc: Exception, tmp_path: Path) -> None:
    """Each port only words it its own way: JSON-RPC {code, message, data: {kind, ...}}, MCP {code: kind, message, ...}."""
    rpc, mcp = _rpc_error(exc), _mcp_error(exc, tmp_path)
    expected = client_error(exc)
    assert rpc["code"] == expected.code and rpc["data"]["kind"] == mcp["code"] == expected.kind
    assert rpc["message"] == mcp["message"] == expected.message
    assert {k: v for k, v in rpc["data"].items() if k != "kind"} == {k: v for k, v in mcp.items()
                                                                      if k not in ("code", "message")}


@pytest.mark.parametrize("exc", RAISED, ids=lambda e: type(e).__name__)
def test_a_resource_read_that_fails_says_why_as_the_tools_do(exc: Exception, tmp_path: Path) -> None:
    """Only "no such note" is the SDK's resource-not-found; busy stays retryable and a bug stays internal."""
    (tmp_path / "vault").mkdir()
    core = open_index(tmp_path / "vault", tmp_path / "index")
    notes = NoteResources(VaultTools(core))

    def raising(path: str) -> str:
        raise exc

    notes.note_path = raising  # type: ignore[method-assign]
    expected = client_error(exc)
    try:
        with pytest.raises((ResourceNotFoundError, MCPError)) as raised:
            asyncio.run(notes.read("Alpha.md"))
    finally:
        core.close()
    if isinstance(expected, NotFound):
        assert isinstance(raised.value, ResourceNotFoundError) and str(raised.value) == expected.message
        return
    assert isinstance(raised.value, MCPError)
    error = raised.value.error
    assert (error.code, error.message) == (expected.code, expected.message)
    assert error.data == {"kind": expected.kind, **expected.data}

"""Where a running sidecar listens: the MCP port fallback and the state file beside the index.

Several vaults can be open at once, each with its own sidecar, all asking for the default MCP port.
The first one gets it; the others serve MCP on a free port instead (or, if even that fails, not at
all) and keep serving JSON-RPC: a busy MCP port is never fatal. The port really used goes into the
handshake, `status` and `serve.json` in the index folder, where `sidecar mcp-config` finds it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sidecar.private import write_private
from sidecar.protocol_types import McpState

log = logging.getLogger(__name__)

STATE_FILE = "serve.json"
IN_USE = frozenset({errno.EADDRINUSE, errno.EACCES, 10048, 10013})  # 10048/10013: Windows' in use / forbidden

T = TypeVar("T")


@dataclass(frozen=True)
class McpPlacement:
    """Where MCP ended up: `port` None means off; `note` says why it is not where it was asked for."""

    requested: int | None
    port: int | None
    note: str | None = None

    def to_json(self) -> McpState:
        return {"enabled": self.port is not None, "port": self.port, "requested_port": self.requested, "note": self.note}


def port_in_use(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and (exc.errno in IN_USE or getattr(exc, "winerror", None) in IN_USE)


async def start_with_fallback(start: Callable[[int], Awaitable[tuple[T, int]]],
                              requested: int) -> tuple[T | None, McpPlacement]:
    """Start on `requested`; when it is taken, on a free port; when that fails too, not at all."""
    try:
        handle, port = await start(requested)
        return handle, McpPlacement(requested, port)
    except OSError as exc:
        if not port_in_use(exc) or requested == 0:
            return None, _off(requested, exc)
        first = exc
    try:
        handle, port = await start(0)
    except OSError as exc:
        return None, _off(requested, exc)
    note = (f"MCP port {requested} is in use (another vault's sidecar?) or reserved: MCP serves on port {port} instead; "
            f"agent configurations for port {requested} reach whatever holds it")
    log.warning("%s (%s)", note, first)
    return handle, McpPlacement(requested, port, note)


def _off(requested: int, exc: OSError) -> McpPlacement:
    note = f"MCP is off: no port could be opened ({exc}); JSON-RPC serves as usual"
    log.warning(note)
    return McpPlacement(requested, None, note)


# ---- serve.json ------------------------------------------------------------------------------
def write_state(index_dir: Path, rpc_port: int, mcp: McpPlacement, version: str) -> Path:
    """Record where this sidecar listens (0600: the ports are no secret, but the folder is private)."""
    path = index_dir / STATE_FILE
    state = {"pid": os.getpid(), "version": version, "rpc_port": rpc_port, **{f"mcp_{k}": v for k, v in
                                                                            mcp.to_json().items() if k != "enabled"}}
    write_private(path, json.dumps(state))
    return path


def remove_state(index_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (index_dir / STATE_FILE).unlink()


def running_state(index_dir: Path) -> dict[str, Any] | None:
    """The state of this index's running sidecar; None when there is none (no file, or its RPC port is
    closed: a sidecar that was killed leaves its file behind)."""
    try:
        state = json.loads((index_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not isinstance(state.get("rpc_port"), int):
        return None
    return state if listening(state["rpc_port"]) else None


def served_mcp_port(index_dir: Path) -> int | None:
    """The MCP port this index's running sidecar really serves on; None when none runs or MCP is off."""
    state = running_state(index_dir)
    port = state.get("mcp_port") if state else None
    return port if isinstance(port, int) else None


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def bind_loopback(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:port (0: a free one); "port in use" is raised here. IPPROTO_TCP by
    name: asyncio sets TCP_NODELAY only on connections whose socket says so, and without it a reply on a
    kept-alive connection (every MCP client's) waited ~40 ms for the client's delayed ACK (Nagle)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart on a fixed port despite TIME_WAIT
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock

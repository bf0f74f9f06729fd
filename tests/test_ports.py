"""Several vaults at once: two real sidecars asking for one MCP port. The second serves MCP on a free
port, says so (handshake, status, serve.json) and keeps serving JSON-RPC; `mcp-config` prints the
port really used."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.serve.ports import STATE_FILE, bind_loopback, listening, running_state, start_with_fallback
from tests.serverproc import Sidecar, start_sidecar

NOTES = {
    "Sourdough.md": "# Sourdough\n\nFeed the starter twice a day; a warm kitchen makes the dough rise.\n",
    "Kubernetes.md": "# Kubernetes\n\nA pod restarts with back-off when its container keeps crashing.\n",
}


def small_vault(root: Path) -> Path:
    root.mkdir(parents=True)
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, Sidecar, int, Path]]:
    base = tmp_path_factory.mktemp("ports")
    env = {"SIDECAR_MCP_TOKEN": "t" * 32, "XDG_CONFIG_HOME": str(base / "config")}
    port = free_port()
    first = start_sidecar(small_vault(base / "a"), base / "a-index", "--mcp-port", str(port), env=env)
    second = None
    try:
        second = start_sidecar(small_vault(base / "b"), base / "b-index", "--mcp-port", str(port), env=env)
        yield first, second, port, base
    finally:
        for server in (second, first):
            if server is not None:
                server.stop()


def test_the_second_sidecar_falls_back_and_says_so(two: tuple[Sidecar, Sidecar, int, Path]) -> None:
    first, second, port, _ = two
    assert first.handshake["mcp_port"] == port and first.handshake["mcp_note"] is None
    fallback = second.handshake["mcp_port"]
    assert isinstance(fallback, int) and fallback != port and listening(fallback)
    assert second.handshake["mcp_requested_port"] == port
    assert f"MCP port {port} is in use" in second.handshake["mcp_note"]
    mcp = second.call("status")["mcp"]
    assert mcp == {"enabled": True, "port": fallback, "requested_port": port, "note": second.handshake["mcp_note"]}


def test_json_rpc_serves_in_both(two: tuple[Sidecar, Sidecar, int, Path]) -> None:
    first, second, _, _ = two
    for server, title in ((first, "Sourdough"), (second, "Kubernetes")):
        server.wait_ready()
        hits = server.call("search", query=title.lower(), limit=3)["results"]
        assert hits and hits[0]["path"] == f"{title}.md"


def test_serve_json_and_mcp_config_give_the_port_really_used(two: tuple[Sidecar, Sidecar, int, Path]) -> None:
    _, second, port, base = two
    state = running_state(base / "b-index")
    assert state is not None and state["pid"] == second.proc.pid
    assert state["mcp_port"] == second.handshake["mcp_port"] and state["mcp_requested_port"] == port
    env = {**os.environ, "SIDECAR_MCP_TOKEN": "t" * 32, "XDG_CONFIG_HOME": str(base / "config")}
    for extra in ([], ["--port", str(port)]):
        out = subprocess.run([sys.executable, "-m", "sidecar", "mcp-config", "--vault", str(base / "b"),
                              "--index", str(base / "b-index"), "--json", *extra],
                             capture_output=True, text=True, env=env, timeout=60, check=True)
        assert json.loads(out.stdout)["http"]["url"] == f"http://127.0.0.1:{second.handshake['mcp_port']}/mcp"
        assert ("not " + str(port)) in out.stderr if extra else not out.stderr.strip()


def test_cli_status_says_where_the_running_sidecar_serves(two: tuple[Sidecar, Sidecar, int, Path]) -> None:
    _, second, port, base = two
    env = {**os.environ, "XDG_CONFIG_HOME": str(base / "config")}
    out = subprocess.run([sys.executable, "-m", "sidecar", "status", "--vault", str(base / "b"), "--index",
                          str(base / "b-index")], capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    assert f"served by pid {second.proc.pid}" in out and f"MCP on port {second.handshake['mcp_port']}" in out
    assert f"note: MCP port {port} is in use" in out


def test_a_stopped_sidecar_leaves_no_state(tmp_path: Path) -> None:
    index = tmp_path / "index"
    server = start_sidecar(small_vault(tmp_path / "v"), index, "--no-mcp", env={"XDG_CONFIG_HOME": str(tmp_path / "c")})
    try:
        assert json.loads((index / STATE_FILE).read_text())["mcp_port"] is None
        assert running_state(index) is not None
    finally:
        assert server.stop() == 0
    assert not (index / STATE_FILE).exists() and running_state(index) is None


async def test_no_port_at_all_turns_mcp_off_not_the_sidecar() -> None:
    tried: list[int] = []

    async def always_busy(port: int) -> tuple[None, int]:
        tried.append(port)
        raise OSError(errno.EADDRINUSE, "Address already in use")

    handle, placement = await start_with_fallback(always_busy, 8765)
    assert handle is None and tried == [8765, 0]
    assert placement.to_json() == {"enabled": False, "port": None, "requested_port": 8765,
                                   "note": placement.note}
    assert placement.note is not None and "MCP is off" in placement.note


async def test_connections_to_the_mcp_socket_send_without_waiting_for_acks() -> None:
    """TCP_NODELAY on every accepted connection: without it, a reply on a kept-alive connection (how
    MCP clients connect) waited ~40 ms for the client's delayed ACK. asyncio sets it only when the
    listening socket names IPPROTO_TCP."""
    accepted: list[socket.socket] = []

    class Accept(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.append(transport.get_extra_info("socket"))

    sock = bind_loopback(0)
    server = await asyncio.get_running_loop().create_server(Accept, sock=sock)
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        while not accepted:
            await asyncio.sleep(0.01)
        assert accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


SHADOW = "raise ImportError('a file named mcp.py where the sidecar was started')\n"


def shadowing_folder(base: Path) -> Path:
    """A folder holding an mcp.py, as a user's project may: `python -m` puts the folder it starts in
    first on sys.path, where that file shadows the MCP SDK."""
    folder = base / "project"
    folder.mkdir()
    (folder / "mcp.py").write_text(SHADOW, encoding="utf-8")
    return folder


def test_serve_says_mcp_is_off_when_it_cannot_start(tmp_path: Path) -> None:
    """JSON-RPC goes on; status and serve.json say MCP is off and why, and the log does, instead of
    advertising a port nobody answers on."""
    shadow = shadowing_folder(tmp_path)
    server = start_sidecar(small_vault(tmp_path / "v"), tmp_path / "index", "--mcp-port", "0",
                           env={"PYTHONPATH": str(shadow), "SIDECAR_MCP_TOKEN": "t" * 32})
    try:
        mcp = server.call("status")["mcp"]
        for _ in range(600):  # the failure comes when the MCP side loads, after the handshake
            if not mcp["enabled"]:
                break
            time.sleep(0.05)
            mcp = server.call("status")["mcp"]
        assert mcp["enabled"] is False and mcp["port"] is None
        assert "MCP is off" in mcp["note"] and "mcp.py where the sidecar was started" in mcp["note"]
        state = running_state(tmp_path / "index")
        assert state is not None and state["mcp_port"] is None and "MCP is off" in state["mcp_note"]
        server.wait_ready()
        assert server.call("search", query="sourdough")["results"]
    finally:
        server.stop()
    assert "MCP is off" in server.stderr_path.read_text()


def test_the_printed_stdio_command_runs_from_a_folder_that_shadows_its_modules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents start `mcp-config`'s command in the user's project folder: with `python -m` and no `-P`,
    an mcp.py there ran instead of the SDK."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from sidecar.config import Settings
    from sidecar.serve import mcp_config

    monkeypatch.setattr(mcp_config.shutil, "which", lambda _name: None)  # no `sidecar` on PATH: python runs it
    command = mcp_config.stdio_command(Settings(vault=small_vault(tmp_path / "v"), index_dir=tmp_path / "index"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIDECAR_")} | {"HF_HUB_OFFLINE": "1"}
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=shadowing_folder(tmp_path))

    async def tools() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

    assert "search" in asyncio.run(asyncio.wait_for(tools(), 120))

"""Read timeouts and the connection cap on both ports (sidecar/serve/connwatch.py).

200 connections trickling headers or bodies stayed open for 30 s on each port. The unit tests move
the watch's clock by hand; the live test only waits for the server to drop what it must drop."""

from __future__ import annotations

import json
import secrets
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.serve.connwatch import READ_SECONDS, ConnectionWatch
from tests.serverproc import Sidecar, start_sidecar


class FakeTransport:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class FakeProtocol:
    answering = False


def watch_of(max_connections: int = 64) -> ConnectionWatch:
    watch = ConnectionWatch(lambda p: p.answering, read_seconds=10, max_connections=max_connections)
    watch._sweeper = object()  # type: ignore[assignment]  (no event loop here: the test sweeps by hand)
    return watch


def test_a_connection_reading_too_long_is_closed_and_one_answering_never() -> None:
    watch = watch_of()
    reading, answering = FakeProtocol(), FakeProtocol()
    answering.answering = True
    t_reading, t_answering = FakeTransport(), FakeTransport()
    watch.opened(reading, t_reading)  # type: ignore[arg-type]
    watch.opened(answering, t_answering)  # type: ignore[arg-type]
    start = time.monotonic()
    assert watch.sweep(start + 9) == 0 and not t_reading.closed
    assert watch.sweep(start + 11) == 1 and t_reading.closed
    assert watch.sweep(start + 10_000) == 0 and not t_answering.closed  # a slow report, an event stream
    answering.answering = False  # done: reading its next request from now on (keep-alive)
    watch.sweep(start + 10_001)
    assert watch.sweep(start + 10_012) == 1 and t_answering.closed and watch.open_connections == 0


def test_at_the_cap_the_longest_reading_connection_gives_way() -> None:
    watch = watch_of(max_connections=3)
    protocols = [FakeProtocol() for _ in range(3)]
    transports = [FakeTransport() for _ in range(3)]
    for p, t in zip(protocols, transports, strict=True):
        watch.opened(p, t)  # type: ignore[arg-type]
    newcomer, its_transport = FakeProtocol(), FakeTransport()
    watch.opened(newcomer, its_transport)  # type: ignore[arg-type]
    assert transports[0].closed and not its_transport.closed and watch.open_connections == 3
    for p in (*protocols[1:], newcomer):
        p.answering = True
    late, late_transport = FakeProtocol(), FakeTransport()
    watch.opened(late, late_transport)  # type: ignore[arg-type]
    assert late_transport.closed and watch.open_connections == 3  # all answering: the newcomer is refused


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, str]]:
    base = tmp_path_factory.mktemp("connwatch")
    vault = base / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nsourdough\n")
    mcp_token = secrets.token_urlsafe(16)
    sidecar = start_sidecar(vault, base / "idx", env={"SIDECAR_MCP_TOKEN": mcp_token})
    try:
        sidecar.wait_ready()
        yield sidecar, mcp_token
    finally:
        sidecar.stop()


def _trickle(port: int, body_too: bool) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    if body_too:  # complete headers, a body that never arrives
        sock.sendall(f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                     "Content-Length: 1000\r\n\r\n{".encode())
    else:
        sock.sendall(f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
    return sock


def _closed_by_server(sock: socket.socket, give_up_after: float) -> bool:
    """True once the server closes (EOF, a reset, or an error response followed by EOF)."""
    sock.settimeout(give_up_after)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        return True
    return True


@pytest.mark.parametrize("port_name", ["rpc_port", "mcp_port"])
def test_trickling_clients_are_dropped_and_do_not_lock_others_out(server: tuple[Sidecar, str], port_name: str) -> None:
    sidecar, mcp_token = server
    port = int(sidecar.handshake[port_name])
    socks = [_trickle(port, body_too=i % 2 == 1) for i in range(100)]  # past the cap of 64
    try:
        # Served at once despite 100 trickling connections: the longest-reading ones give way.
        if port_name == "rpc_port":
            assert "result" in sidecar.rpc("status")
        else:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
            reply = sidecar.http("POST", "/mcp", body, {"Authorization": f"Bearer {mcp_token}",
                                 "Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
                                 port=port)
            assert reply.status == 200, reply.raw[:200]
        # The limit is the server's READ_SECONDS; the margin only covers a loaded machine.
        assert all(_closed_by_server(s, READ_SECONDS + 30) for s in socks)
    finally:
        for s in socks:
            s.close()


def test_an_event_stream_is_not_a_slow_read(server: tuple[Sidecar, str], tmp_path: Path) -> None:
    sidecar, _ = server
    sock = socket.create_connection(("127.0.0.1", sidecar.rpc_port), timeout=5)
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{sidecar.rpc_port}\r\n"
                 f"Authorization: Bearer {sidecar.token}\r\n\r\n".encode())
    try:
        seen = b""
        for _ in range(20):  # the headers and the first event may come in separate segments
            seen += sock.recv(65536)
            if b"event: status" in seen:
                break
        assert b"event: status" in seen
        assert not _closed_by_server(sock, READ_SECONDS + 3)  # answering: no read timeout applies
    finally:
        sock.close()

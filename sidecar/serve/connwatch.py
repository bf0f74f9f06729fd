"""Read timeouts and a connection cap for both ports (aiohttp for JSON-RPC, uvicorn for MCP).

Neither server drops a client that trickles its headers or body: 200 such connections stayed open
for 30 s on each port. The rule, the same on both: a connection may spend at most READ_SECONDS
reading one request (headers and body; an idle keep-alive connection counts as reading its next
one), and at most MAX_CONNECTIONS are open per port; the newest beyond that is closed at once.
Time spent answering (a slow report, an event stream) never counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # uvicorn loads with the MCP port, not with JSON-RPC's start (server.py)
    from uvicorn.protocols.http.h11_impl import H11Protocol

READ_SECONDS = 10.0  # a local client sends a request in milliseconds; a busy machine still well under this
MAX_CONNECTIONS = 64  # the plugin holds two or three, an agent a few
SWEEP_SECONDS = 0.5


class ConnectionWatch:
    """Tracks the open connections of one port; `sweep` closes those reading for too long.
    `is_answering` tells from a server's own protocol object whether it is answering; by default,
    whether `answering(protocol, True)` was said last."""

    def __init__(self, is_answering: Callable[[Any], bool] | None = None, read_seconds: float = READ_SECONDS,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self._answering: set[Any] = set()
        self.is_answering = is_answering or self._answering.__contains__
        self.read_seconds = read_seconds
        self.max_connections = max_connections
        self._reading_since: dict[Any, float | None] = {}
        self._transports: dict[Any, asyncio.BaseTransport] = {}
        self.dropped = 0
        self._sweeper: asyncio.Task[None] | None = None

    def answering(self, protocol: Any, now_answering: bool) -> None:
        if now_answering:
            self._answering.add(protocol)
        else:
            self._answering.discard(protocol)

    def opened(self, protocol: Any, transport: asyncio.BaseTransport) -> None:
        if self._sweeper is None:  # started by the first connection: the servers need no other wiring
            self._sweeper = asyncio.get_running_loop().create_task(self.run(), name="connection-watch")
        if len(self._transports) >= self.max_connections and not self._drop_longest_reading():
            self.dropped += 1  # every slot is answering: the newcomer waits its turn by reconnecting
            transport.close()
            return
        self._transports[protocol] = transport
        self._reading_since[protocol] = time.monotonic()

    def closed(self, protocol: Any) -> None:
        self._transports.pop(protocol, None)
        self._reading_since.pop(protocol, None)
        self._answering.discard(protocol)

    def _drop_longest_reading(self) -> bool:
        """At the cap, the connection that has been reading longest gives way: a flood of trickling
        clients cannot lock out a client that sends its request at once."""
        reading = [(since, p) for p, since in self._reading_since.items()
                   if since is not None and not self.is_answering(p)]
        if not reading:
            return False
        _since, protocol = min(reading, key=lambda item: item[0])
        self._close(protocol)
        return True

    def _close(self, protocol: Any) -> None:
        transport = self._transports.get(protocol)
        self.dropped += 1
        self.closed(protocol)
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()

    @property
    def open_connections(self) -> int:
        return len(self._transports)

    def sweep(self, now: float | None = None) -> int:
        """Close every connection that has been reading one request for longer than allowed."""
        now = time.monotonic() if now is None else now
        late = []
        for protocol in list(self._transports):
            if self.is_answering(protocol):
                self._reading_since[protocol] = None
                continue
            since = self._reading_since.get(protocol) or now
            self._reading_since[protocol] = since
            if now - since > self.read_seconds:
                late.append(protocol)
        for protocol in late:
            self._close(protocol)
        return len(late)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            self.sweep()


# ---- JSON-RPC (aiohttp) ------------------------------------------------------------------------
class WatchedProtocol(asyncio.Protocol):
    """aiohttp's RequestHandler (slotted: it cannot be subclassed per connection or given attributes)
    behind a thin protocol that tells the watch when the connection opens and closes."""

    def __init__(self, inner: asyncio.Protocol, watch: ConnectionWatch) -> None:
        self.inner = inner
        self.watch = watch

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)
        self.watch.opened(self.inner, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.watch.closed(self.inner)
        self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def aiohttp_factory(server: Callable[[], asyncio.Protocol], watch: ConnectionWatch) -> Callable[[], asyncio.Protocol]:
    """aiohttp's protocol factory, each connection registered with the watch."""
    return lambda: WatchedProtocol(server(), watch)


# ---- MCP (uvicorn, h11) --------------------------------------------------------------------------
def uvicorn_answering(protocol: Any) -> bool:
    """A request whose body is complete and whose response is not: the app is working on it."""
    cycle = getattr(protocol, "cycle", None)
    return cycle is not None and not cycle.more_body and not cycle.response_complete


def watched_h11(watch: ConnectionWatch) -> type[H11Protocol]:
    """uvicorn's h11 protocol class, each connection registered with the watch (`http=` of its Config)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol  # noqa: PLC0415

    class WatchedH11(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            watch.opened(self, transport)

        def connection_lost(self, exc: Exception | None) -> None:
            watch.closed(self)
            super().connection_lost(exc)

    return WatchedH11

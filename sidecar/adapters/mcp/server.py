"""MCP adapter: read-only vault tools for agents (Claude Code, Cursor, Codex).

Two transports share one tool set (`build_mcp`):
- streamable HTTP at http://127.0.0.1:PORT/mcp inside `sidecar serve`, behind the same Guard as
  the JSON-RPC port (Host, Origin, bearer token, content type) and the SDK's own DNS-rebinding
  check configured to agree with it;
- stdio for `sidecar mcp --stdio`, where stdout carries MCP frames only.

The HTTP endpoint is stateless (a fresh transport per POST, no Mcp-Session-Id) and answers
plain JSON instead of SSE: every tool is a read-only request/response call that never sends
the client requests or notifications, so sessions would only add state to expire, a GET
stream to keep open and a failure mode ("session not found" after an idle timeout or a
restart of the sidecar) without giving a client anything. Resource subscriptions need a
session to notify on, so only stdio serves them and announces `subscribe` (subscribe.py).

The core is synchronous (SQLite, numpy), so every tool runs it on a worker thread. Tools
return a `CallToolResult` whose structured content is validated against a pydantic model;
the SDK publishes that model as the tool's outputSchema. Errors come back as tool results
with isError set and `{"error": {"code", "message", ...}}` as JSON text, so an agent can correct itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
from collections.abc import Generator

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sidecar import __version__
from sidecar.adapters.mcp.subscribe import add_subscriptions
from sidecar.adapters.mcp.tools import (
    INSTRUCTIONS,
    MARKDOWN,
    MCP_PATH,
    NOTE_URI,
    READ_ONLY,
    SERVER_NAME,
    TOOLS,
    NoteResources,
    VaultMCP,
    VaultTools,
    add_prompts,
)
from sidecar.adapters.mcp.writes import WRITE_INSTRUCTIONS
from sidecar.core import VaultIndex
from sidecar.serve.connwatch import ConnectionWatch, uvicorn_answering, watched_h11
from sidecar.serve.gate import ReadGate
from sidecar.serve.httpguard import MAX_BODY_BYTES, Guard, Rejection
from sidecar.serve.ports import bind_loopback

log = logging.getLogger(__name__)


def build_mcp(core: VaultIndex, gate: ReadGate | None = None, subscriptions: bool = False) -> VaultMCP:
    """`subscriptions`: serve resources/subscribe (a transport with a session: stdio); `server.note_subscriptions.run()`
    must then run beside the server."""

    instructions = INSTRUCTIONS + (WRITE_INSTRUCTIONS if core.writes is not None else "")
    server = VaultMCP(SERVER_NAME, title="Vault Sidecar", version=__version__, instructions=instructions,
                      log_level="WARNING", subscriptions=False)
    tools = VaultTools(core, gate)
    server.notes = NoteResources(tools)
    server.resource(NOTE_URI, name="note", title="A note of the vault", mime_type=MARKDOWN)(server.notes.read)
    if subscriptions:

        server.note_subscriptions = add_subscriptions(server, server.notes)
    add_prompts(server)
    if core.writes is not None:
        from sidecar.adapters.mcp.writes import add_write_tools  # noqa: PLC0415  (off by default)

        add_write_tools(server, tools)
    for name, title, description in TOOLS:
        server.add_tool(getattr(tools, name), name=name, title=title, description=description,
                        annotations=READ_ONLY, structured_output=True)
        server.slim_tool(name)
    return server




# ---- HTTP -----------------------------------------------------------------------------------
class GuardMiddleware:
    """Applies the localhost Guard before the SDK sees a request; no CORS headers, ever."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            rejection = self.check(scope)
            if rejection is not None:
                log.info("MCP request refused: %s", rejection.code)
                await reject(rejection, send)
                return
        await self.app(scope, receive, send)

    def check(self, scope: Scope) -> Rejection | None:
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))  # first wins, as in the SDK
        return self.guard.check(headers.get("host"), headers.get("origin"), headers.get("authorization"),
                                headers.get("content-type"), scope["method"],
                                scope.get("query_string", b"").decode("latin-1"))


async def reject(rejection: Rejection, send: Send) -> None:
    body = json.dumps({"error": {"code": rejection.code, "message": rejection.message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if rejection.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="vault-sidecar"'))
    start: Message = {"type": "http.response.start", "status": rejection.status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


def mcp_http_app(core: VaultIndex, token: str, port: int, gate: ReadGate | None = None) -> ASGIApp:
    """Streamable HTTP at /mcp, stateless with JSON answers, behind the Guard for this port."""
    if not token:
        raise ValueError("the MCP endpoint needs a token")
    guard = Guard(port, token)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=sorted(guard.allowed_hosts()), allowed_origins=[])
    inner = build_mcp(core, gate).streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        transport_security=security, max_request_body_size=MAX_BODY_BYTES)
    return GuardMiddleware(inner, guard)


class McpReady(asyncio.Event):
    """Set once the server accepts connections; `port` is the bound port (the answer to port 0)."""

    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"


class _Uvicorn(uvicorn.Server):
    """uvicorn that leaves signals to the host process, and says when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the host owns SIGINT/SIGTERM and stops us by cancelling serve()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.listening.set()


class McpHttpServer:
    """The MCP HTTP endpoint on 127.0.0.1, run on the caller's asyncio loop.

    The socket is bound in the constructor: port 0 resolves to a real port at once, before the
    app exists (its Host check needs the port), and "port in use" fails here, not in a task. `sock`:
    one bound already (serve binds before this module is even imported, server.py).
    """

    def __init__(self, core: VaultIndex, token: str, port: int = 0, gate: ReadGate | None = None,
                 sock: socket.socket | None = None) -> None:
        self.sock = sock or bind_loopback(port)
        self.port: int = self.sock.getsockname()[1]
        self.watch = ConnectionWatch(uvicorn_answering)  # read timeouts and a connection cap (connwatch.py)
        config = uvicorn.Config(mcp_http_app(core, token, self.port, gate), log_config=None, access_log=False,
                                lifespan="on", ws="none", server_header=False, timeout_graceful_shutdown=2,
                                proxy_headers=False,  # never behind a proxy: no X-Forwarded-* is believed
                                http=watched_h11(self.watch))
        self._server = _Uvicorn(config)

    async def serve(self, ready: asyncio.Event | None = None) -> None:
        """Serve until cancelled; a cancel shuts down gracefully (open requests get 2 s)."""
        task = asyncio.ensure_future(self._server.serve(sockets=[self.sock]))
        notify = asyncio.ensure_future(self._notify(ready))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            self._server.should_exit = True
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            notify.cancel()
            self.sock.close()

    async def _notify(self, ready: asyncio.Event | None) -> None:
        await self._server.listening.wait()
        if isinstance(ready, McpReady):
            ready.port = self.port
        if ready is not None:
            ready.set()


async def serve_mcp_http(core: VaultIndex, token: str, port: int, ready: asyncio.Event | None = None,
                         gate: ReadGate | None = None) -> None:
    """Serve MCP over HTTP until cancelled. Pass an `McpReady` to learn the bound port."""
    await McpHttpServer(core, token, port, gate).serve(ready)


# ---- stdio ----------------------------------------------------------------------------------
async def run_stdio_async(core: VaultIndex) -> None:
    """MCP over this process's stdin/stdout; the SDK points fd 1 at stderr while serving. One client,
    one session for the process's life: resource subscriptions are served here."""
    server = build_mcp(core, subscriptions=True)
    assert server.note_subscriptions is not None
    poll = asyncio.create_task(server.note_subscriptions.run())
    try:
        await server.run_stdio_async()
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)


def run_stdio(core: VaultIndex) -> None:
    asyncio.run(run_stdio_async(core))

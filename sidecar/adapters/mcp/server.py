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
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, RequestId, jsonrpc_message_adapter
from pydantic import ValidationError
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
from sidecar.protocol_types import ERROR_CODES
from sidecar.serve.connwatch import ConnectionWatch, uvicorn_answering, watched_h11
from sidecar.serve.gate import ReadGate
from sidecar.serve.httpguard import Guard, Rejection, body_limit, too_large
from sidecar.serve.ports import bind_loopback

if TYPE_CHECKING:  # the stream protocols the SDK's server.run takes
    from mcp.shared._stream_protocols import ReadStream, WriteStream

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




# ---- what is not one JSON-RPC message: the same answer on both transports ----------------------
def refusal(exc: Exception) -> JSONRPCError:
    """The answer to a stdio line or HTTP body the SDK's parser refused with `exc`: a parse error for what is
    not JSON (a lone surrogate escape such as \\ud800 included), an invalid request for JSON that is not one
    request or notification (a batch, a bare value, a malformed envelope)."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    parse = next((e for e in errors if e["type"] == "json_invalid"), None)
    if parse is not None or not errors:
        detail = parse["ctx"]["error"] if parse is not None and "ctx" in parse else "not JSON"
        code, kind, message = ERROR_CODES["parse_error"], "parse_error", f"Parse error: {detail}"
    else:
        code, kind = ERROR_CODES["invalid_request"], "invalid_request"
        message = "Invalid request: send one JSON-RPC request or notification object; batches are not supported"
    return JSONRPCError(jsonrpc="2.0", id=readable_id(errors), error=ErrorData(code=code, message=message,
                                                                                data={"kind": kind}))


def readable_id(errors: list[Any]) -> RequestId | None:
    """The request's id, where a lenient reading finds one, so a stdio client's call is answered instead of
    waiting for ever (Python's parser reads the lone surrogates the SDK's refuses); else null."""
    for error in errors:
        value = whole_message(error)
        found = value.get("id") if isinstance(value, dict) else None
        if answerable(found):
            return found
    return None


def answerable(request_id: Any) -> bool:
    """An id an answer can carry: an integer (not a boolean) or text that is UTF-8 (no lone surrogate)."""
    if isinstance(request_id, str):
        try:
            request_id.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    return isinstance(request_id, int) and not isinstance(request_id, bool)


def whole_message(error: Any) -> Any:
    """The message an error of the SDK's parse is about, where it holds all of it: the raw text of a parse
    error, the value a union member refused or the object a member's field is missing from (never a field's
    own value: a params object has ids of its own)."""
    loc, value = error["loc"], error.get("input")
    if error["type"] == "json_invalid":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value if len(loc) == 1 or (len(loc) == 2 and error["type"] == "missing") else None


def body_refusal(body: bytes) -> JSONRPCError | None:
    try:
        jsonrpc_message_adapter.validate_json(body, by_name=False)  # the stdio reader's own parse
    except ValidationError as exc:
        return refusal(exc)
    return None


# ---- HTTP -----------------------------------------------------------------------------------
class GuardMiddleware:
    """Applies the localhost Guard before the SDK sees a request; no CORS headers, ever. Then reads a POST's
    body itself, at most `max_body` bytes: over that is a 413 with a JSON-RPC error (the SDK's own limit
    answers bare text), and a body that is not one JSON-RPC message gets stdio's answer (`refusal`)."""

    def __init__(self, app: ASGIApp, guard: Guard, max_body: int) -> None:
        self.app = app
        self.guard = guard
        self.max_body = max_body

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
            if scope["method"] == "POST":
                await self.post(scope, receive, send)
                return
            if scope["method"] == "GET":  # the SDK served a GET an event stream that never ended, to any number
                await send_json(405, NO_STREAM, send, [(b"allow", b"POST")])  # of clients: 63 locked the port
                return
        await self.app(scope, receive, send)

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await read_body(scope, receive, self.max_body)
        if body is None:
            log.info("MCP request refused: body over %s bytes", self.max_body)
            await send_json(413, too_large(self.max_body), send)
            return
        refused = body_refusal(body)
        if refused is not None:
            await send_json(400, refused.model_dump(by_alias=True, mode="json"), send)
            return
        await self.app(scope, replay(body, receive), send)

    def check(self, scope: Scope) -> Rejection | None:
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))  # first wins, as in the SDK
        return self.guard.check(headers.get("host"), headers.get("origin"), headers.get("authorization"),
                                headers.get("content-type"), scope["method"],
                                scope.get("query_string", b"").decode("latin-1"))


# The spec's answer for a server that offers no event stream (stateless: nothing to send on one).
NO_STREAM = {"error": {"code": "method_not_allowed", "message": "this endpoint is stateless and has no event "
                       "stream: send each JSON-RPC message as a POST"}}


async def reject(rejection: Rejection, send: Send) -> None:
    extra = [(b"www-authenticate", b'Bearer realm="vault-sidecar"')] if rejection.status == 401 else []
    await send_json(rejection.status, {"error": {"code": rejection.code, "message": rejection.message}}, send, extra)


async def send_json(status: int, payload: dict[str, Any], send: Send,
                    extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *(extra or [])]
    start: Message = {"type": "http.response.start", "status": status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


async def read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None once it is over `limit` (a declared length over it is not read at all)."""
    declared = dict(scope["headers"]).get(b"content-length", b"")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return bytes(body)  # the client went away: whatever is answered goes nowhere
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body", False):
            return bytes(body)


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the SDK: the body read, in one message, then the connection's own (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def next_message() -> Message:
        return pending.pop() if pending else await receive()

    return next_message


def mcp_http_app(core: VaultIndex, token: str, port: int, gate: ReadGate | None = None) -> ASGIApp:
    """Streamable HTTP at /mcp, stateless with JSON answers, behind the Guard for this port."""
    if not token:
        raise ValueError("the MCP endpoint needs a token")
    guard = Guard(port, token)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=sorted(guard.allowed_hosts()), allowed_origins=[])
    # Writes carry a whole note: the limit admits the largest one the writer takes, so HTTP accepts what stdio does.
    limit = body_limit(core.settings.max_file_bytes if core.writes is not None else None)
    inner = build_mcp(core, gate).streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        transport_security=security, max_request_body_size=limit)
    return GuardMiddleware(inner, guard, limit)


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
class AnsweringReadStream:
    """The stdio read stream, each line the SDK could not read answered with `refusal`: its stdin reader puts
    the parse error in the stream, where the server drops it, and the client would wait for ever."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]) -> None:
        self.inner = inner
        self.write = write

    @property
    def last_context(self) -> Any:
        """The sender's contextvars, which the SDK's dispatcher reads off its stream (duck-typed)."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self.inner.receive()
            if not isinstance(item, Exception):
                return item
            await self.write.send(SessionMessage(refusal(item)))

    def __aiter__(self) -> AnsweringReadStream:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> AnsweringReadStream:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


async def run_stdio_async(core: VaultIndex) -> None:
    """MCP over this process's stdin/stdout; the SDK points fd 1 at stderr while serving. One client,
    one session for the process's life: resource subscriptions are served here."""
    server = build_mcp(core, subscriptions=True)
    assert server.note_subscriptions is not None
    poll = asyncio.create_task(server.note_subscriptions.run())
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with the read stream ours to wrap
    try:
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(AnsweringReadStream(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())
    finally:
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)


def run_stdio(core: VaultIndex) -> None:
    asyncio.run(run_stdio_async(core))

"""JSON-RPC 2.0 for the Obsidian plugin: aiohttp + jsonrpcserver on POST /rpc, events on GET /events.

Every method is async and runs the (blocking) core in a worker thread; errors leave as
JSON-RPC errors with our stable codes, never as tracebacks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web
from jsonrpcserver import Error, Result, Success, async_dispatch
from jsonrpcserver.main import default_validator

from sidecar.errors import InvalidParams, SidecarError
from sidecar.protocol_types import (
    EDITS_LIST_LIMIT_DEFAULT,
    EDITS_LIST_OFFSET_DEFAULT,
    ERROR_CODES,
    HEALTH_PAGE_LIMIT_DEFAULT,
    REINDEX_FULL_DEFAULT,
    RELATED_LIMIT_DEFAULT,
    SEARCH_EXPLAIN_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_TYPED_DEFAULT,
    EditsResponse,
    StatusResponse,
    UndoResponse,
)
from sidecar.serve.client_errors import client_error
from sidecar.serve.connwatch import ConnectionWatch, aiohttp_factory
from sidecar.serve.events import EventBus
from sidecar.serve.gate import ReadGate
from sidecar.serve.httpguard import MAX_BODY_BYTES, GuardSlot, too_large
from sidecar.serve.params import check_params

OBSIDIAN_ORIGIN = "app://obsidian.md"
HEARTBEAT_SECONDS = 15.0


class Service(Protocol):
    """What the RPC adapter needs from the running server (see server.py)."""

    bus: EventBus
    stopping: asyncio.Event
    gate: ReadGate  # shared with the MCP port

    def call_core(self, name: str, **kwargs: Any) -> Any: ...  # blocking; runs in a worker thread
    def status(self) -> StatusResponse: ...
    def request_reindex(self, full: bool) -> bool: ...
    def request_shutdown(self) -> None: ...
    def mcp_config(self) -> dict[str, Any]: ...
    def edits(self, limit: int, offset: int) -> EditsResponse: ...  # blocking
    def undo(self, edit: int) -> UndoResponse: ...  # blocking


def _wrap(name: str, fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def method(*positional: Any, **params: Any) -> Any:
        try:
            if positional:
                raise InvalidParams("params must be an object (by name), not an array")
            check_params(name, params)  # the protocol's schema, before the core sees anything
            return Success(await fn(**params))
        except Exception as exc:
            return _error(client_error(exc))

    return method


def _error(exc: SidecarError) -> Result:
    """Our error as a JSON-RPC error object (SidecarError.to_json: code, message, kind and data under `data`)."""
    return Error(exc.code, exc.message, exc.to_json()["data"])


def build_methods(service: Service) -> dict[str, Callable[..., Awaitable[Any]]]:
    async def core(name: str, **kwargs: Any) -> Any:
        return await service.gate.answer(service.call_core, name, **kwargs)

    async def keywords(name: str, **kwargs: Any) -> Any:  # no vectors involved: the gate's keyword lane
        return await service.gate.keywords(service.call_core, name, **kwargs)

    async def status() -> Any:
        return await asyncio.to_thread(service.status)

    async def search(query: str, limit: int = SEARCH_LIMIT_DEFAULT, mode: str = "hybrid", filters: dict[str, Any] | None = None,
                     max_tokens: int | None = None, explain: bool = SEARCH_EXPLAIN_DEFAULT, typed: bool = SEARCH_TYPED_DEFAULT) -> Any:
        lane = keywords if mode == "lexical" else core
        return await lane("search", query=query, limit=limit, mode=mode, filters=filters,
                          max_tokens=max_tokens, explain=explain, typed=typed)

    async def related(path: str | None = None, text: str | None = None, cursor_heading: str | None = None,
                      limit: int = RELATED_LIMIT_DEFAULT) -> Any:
        return await core("related", path=path, text=text, cursor_heading=cursor_heading, limit=limit)

    async def health(sections: list[str] | None = None, markdown: bool = False) -> Any:
        report = await service.gate.report(service.call_core, "health", sections=sections)
        if not markdown:
            return report
        from sidecar.report.health import to_markdown  # noqa: PLC0415  (the report's module loads with the report lane)
        # The one Markdown rendering of a report: the plugin saves this text, the CLI prints it.
        return {**report, "markdown": to_markdown(report)}

    async def health_summary() -> Any:
        return await service.gate.report(service.call_core, "health_summary")

    async def health_page(section: str, limit: int = HEALTH_PAGE_LIMIT_DEFAULT, cursor: str | None = None) -> Any:
        return await service.gate.report(service.call_core, "health_page", section=section, limit=limit, cursor=cursor)

    async def note_links(path: str) -> Any:
        return await keywords("note_links", path=path)

    async def reindex(full: bool = REINDEX_FULL_DEFAULT) -> Any:
        return {"started": service.request_reindex(bool(full))}

    async def shutdown() -> Any:
        service.request_shutdown()
        return {"ok": True}

    async def mcp_config() -> Any:
        return service.mcp_config()

    async def edits_list(limit: int = EDITS_LIST_LIMIT_DEFAULT, offset: int = EDITS_LIST_OFFSET_DEFAULT) -> Any:
        return await asyncio.to_thread(service.edits, limit, offset)

    async def edits_undo(edit: int) -> Any:
        return await asyncio.to_thread(service.undo, edit)

    plain: dict[str, Callable[..., Awaitable[Any]]] = {"status": status, "search": search, "related": related, "health": health,
             "health.summary": health_summary, "health.page": health_page, "note.links": note_links, "reindex": reindex, "shutdown": shutdown, "mcp.config": mcp_config,
             "edits.list": edits_list, "edits.undo": edits_undo}
    return {name: _wrap(name, fn) for name, fn in plain.items()}


REQUEST_KEYS = frozenset({"jsonrpc", "method", "id", "params"})


def _validate_request(request: Any) -> None:
    """jsonrpcserver's request schema, decided by hand for the request everyone sends (an object
    with jsonrpc "2.0", a string method, an id and params of the schema's types, no other member);
    anything else goes to the library's own jsonschema validator, which costs ~0.25 ms a request."""
    if not (isinstance(request, dict) and request.keys() <= REQUEST_KEYS and request.get("jsonrpc") == "2.0"
            and type(request.get("method")) is str and type(request.get("id")) in (str, int, float, type(None))
            and type(request.get("params", {})) in (dict, list)):
        default_validator(request)


def _is_batch(body: str) -> bool:
    """A JSON array at the top level (after any leading whitespace) is a batch."""
    return body.lstrip(" \t\r\n").startswith("[")


KIND_OF_CODE = {code: kind for kind, code in ERROR_CODES.items()}


def _serialize(response: Any) -> str:
    """The reply's JSON. jsonrpcserver's own errors (parse error, invalid request, method not found)
    carry a string in `data`; every error of the contract carries `data.kind` (protocol/README.md), so
    they get theirs, with the library's text as `data.detail`."""
    error = response.get("error") if isinstance(response, dict) else None
    if isinstance(error, dict) and not isinstance(error.get("data"), dict):
        detail = error.get("data")
        error["data"] = {"kind": KIND_OF_CODE.get(int(error.get("code", 0)), "internal"),
                         **({"detail": str(detail)} if detail is not None else {})}
    return json.dumps(response)


def _rpc_error(kind: str, message: str) -> web.Response:
    return web.json_response({"jsonrpc": "2.0", "id": None,
                              "error": {"code": ERROR_CODES[kind], "message": message, "data": {"kind": kind}}})


def json_error(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def guard_middleware(slot: GuardSlot, max_body: int) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
        guard = slot.guard
        if guard is None:
            return json_error(503, "starting", "the sidecar is starting")
        rejection = guard.check(request.headers.get("Host"), request.headers.get("Origin"),
                                request.headers.get("Authorization"), request.headers.get("Content-Type"),
                                request.method, request.query_string)
        if rejection is not None:
            return json_error(rejection.status, rejection.code, rejection.message)
        try:
            return await handler(request)
        except web.HTTPRequestEntityTooLarge:  # a JSON-RPC error, as the MCP port answers it
            return web.json_response(too_large(max_body), status=413)
        except web.HTTPException as exc:
            return json_error(exc.status, "http_error", exc.reason)

    return middleware


def answering_middleware(watch: ConnectionWatch) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
        """Reading the body still counts as reading (a trickled body is dropped by the connection
        watch); from then on the connection is answering and no read timeout applies."""
        await request.read()
        watch.answering(request.protocol, True)
        try:
            return await handler(request)
        finally:
            watch.answering(request.protocol, False)  # keep-alive: the next request is being read

    return middleware


class WatchedSite(web.TCPSite):
    """aiohttp's TCP site, with every connection registered with a ConnectionWatch."""

    __slots__ = ("_watch",)

    def __init__(self, runner: web.BaseRunner, host: str, port: int, watch: ConnectionWatch) -> None:
        super().__init__(runner, host, port)
        self._watch = watch

    async def start(self) -> None:
        self._runner._reg_site(self)  # what BaseSite.start does; TCPSite.start would bind without the watch
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            aiohttp_factory(server, self._watch), self._host, self._port)


async def _next_frame(queue: asyncio.Queue[str], stopping: asyncio.Event) -> str | None:
    """The next event, a keep-alive comment after a quiet while, or None when the server stops."""
    get = asyncio.ensure_future(queue.get())
    stop = asyncio.ensure_future(stopping.wait())
    done, _pending = await asyncio.wait({get, stop}, timeout=HEARTBEAT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if get in done:
        return get.result()
    get.cancel()
    return None if stop in done else ": keep-alive\n\n"


def build_app(service: Service, slot: GuardSlot, watch: ConnectionWatch | None = None,
              max_body: int = MAX_BODY_BYTES) -> web.Application:
    """`max_body`: the largest request body read (httpguard.body_limit); past it, a 413 JSON-RPC error."""
    methods = build_methods(service)
    app = web.Application(middlewares=[guard_middleware(slot, max_body), answering_middleware(watch or ConnectionWatch())],
                          client_max_size=max_body)

    async def rpc(request: web.Request) -> web.Response:
        try:
            body = (await request.read()).decode("utf-8")
        except UnicodeDecodeError:  # invalid UTF-8 is not JSON: the spec's parse error, not a 500
            return _rpc_error("parse_error", "Parse error: the body is not UTF-8")
        if _is_batch(body):  # one request per POST (protocol/README.md): a batch would hold the read gate for all
            return _rpc_error("invalid_request", "Invalid request: batches are not supported, "
                              "send one request object per POST")
        reply = await async_dispatch(body, methods=methods, validator=_validate_request, serializer=_serialize)
        if not reply:
            return web.Response(status=204)  # notifications only
        return web.Response(text=reply, content_type="application/json")

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        queue = service.bus.subscribe()
        try:
            status = await asyncio.to_thread(service.status)
            await response.write(f"event: status\ndata: {json.dumps(status)}\n\n".encode())
            while not service.stopping.is_set():
                frame = await _next_frame(queue, service.stopping)
                if frame is None:
                    break  # shutting down: end the stream so the server can stop at once
                await response.write(frame.encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            service.bus.unsubscribe(queue)
        return response

    app.router.add_post("/rpc", rpc)
    app.router.add_get("/events", events)
    return app

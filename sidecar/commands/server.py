"""`sidecar serve`: one asyncio loop running JSON-RPC (aiohttp), MCP (uvicorn), the watcher and the
single index writer (a one-thread executor). This module wires things; it holds no logic of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from aiohttp import web

from sidecar import __version__
from sidecar.adapters.rpc import OBSIDIAN_ORIGIN, WatchedSite, build_app
from sidecar.config import Settings
from sidecar.core import LoadedModel, VaultIndex
from sidecar.errors import InvalidParams, ShuttingDown, WritesDisabled
from sidecar.protocol_types import (
    EDITS_LIST_LIMIT_DEFAULT,
    EDITS_LIST_OFFSET_DEFAULT,
    PROTOCOL_VERSION,
    EditsResponse,
    IndexingStats,
    IndexRunCost,
    StatusResponse,
    UndoResponse,
)
from sidecar.protocol_types import Progress as ProgressInfo
from sidecar.serve.connwatch import ConnectionWatch
from sidecar.serve.events import EventBus
from sidecar.serve.gate import ReadGate
from sidecar.serve.httpguard import Guard, GuardSlot, body_limit
from sidecar.serve.ports import McpPlacement, bind_loopback, remove_state, start_with_fallback, write_state
from sidecar.serve.tokens import mcp_token, rpc_token
from sidecar.serve.watch import RECONCILE_SECONDS, reconcile_every, watch_vault
from sidecar.store.indexer import IndexReport, Progress

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")

CORE_METHODS = frozenset({"search", "related", "health", "health_summary", "health_page", "note_links"})
PROGRESS_INTERVAL = 0.25  # seconds between progress events: enough for a smooth status bar
PARENT_POLL_SECONDS = 1.0
MODEL_WAIT_POLL_SECONDS = 0.05  # how often a writer waiting for the model checks for a stop
EVENT_BURST = 500  # more paths in one batch (a sync client, a git checkout): one scan beats indexing each
SHUTDOWN_GRACE_SECONDS = 2.0  # in-flight requests get this long; the plugin kills us after 3 s
MCP_BACKLOG = 128  # connections made while the MCP SDK still loads wait here (asyncio's default backlog)


@dataclass
class ServeOptions:
    rpc_port: int = 0
    mcp_port: int | None = 0  # None: MCP off
    watch: bool = True
    reconcile_seconds: float = RECONCILE_SECONDS
    exit_with_parent: bool = True
    parent_pid: int = field(default_factory=os.getppid)  # taken when the options are made, at start-up


class SidecarService:
    """The running server's state; the RPC and MCP adapters call into it."""

    def __init__(self, core: VaultIndex, bus: EventBus, options: ServeOptions, stopping: asyncio.Event) -> None:
        self.core = core
        self.bus = bus
        self.options = options
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-writer")
        self.stopping = stopping
        self.gate = ReadGate()
        self.cancel_index = threading.Event()
        self._wake = asyncio.Event()
        self._full = False
        self._scan = True  # the first run scans; later ones only when events cannot say what changed
        self.first_scan_done = asyncio.Event()  # the model loads after it (_load_model)
        self._changed: set[str] = set()  # watcher paths not indexed yet
        self.indexing: IndexingStats = {"event_runs": 0, "scans": 0, "last_event_run": None, "last_scan": None}
        self.progress: ProgressInfo | None = None
        self._last_progress = 0.0
        self.mcp = McpPlacement(None, None)  # where MCP ended up (ports.py)
        self.mcp_token: str | None = None

    # ---- called by adapters ---------------------------------------------------------------
    def call_core(self, name: str, **kwargs: Any) -> Any:
        if self.stopping.is_set():
            raise ShuttingDown("the sidecar is shutting down")
        if name not in CORE_METHODS:
            raise InvalidParams(f"unknown core method {name}")
        return getattr(self.core, name)(**kwargs)

    def status(self) -> StatusResponse:
        return {**self.core.status(), "progress": self.progress, "indexing": self.indexing,
                "protocol_version": PROTOCOL_VERSION, "mcp": self.mcp.to_json()}

    def request_reindex(self, full: bool = False) -> bool:
        self._full = self._full or full
        self._scan = True
        self._wake.set()
        return True

    def request_shutdown(self) -> None:
        asyncio.get_running_loop().call_soon(self.stopping.set)

    def mcp_config(self) -> dict[str, Any]:
        from sidecar.serve.mcp_config import client_config, config_text  # noqa: PLC0415

        config = client_config(self.core.settings, self.mcp.port, self.mcp_token)
        return {**config, "text": config_text(config)}  # the plugin copies this text: one wording, the CLI's

    # ---- the writer -------------------------------------------------------------------------
    def on_files_changed(self, paths: set[str]) -> None:
        """A watcher batch, or a reconcile tick (no paths): the loop indexes just the notes named, or
        scans where only a scan can tell what changed (Vault.event_paths) or for the safety net."""
        writes = self.core.writes
        if writes is not None and paths and writes.echoes_only(paths):
            return  # our own edit, indexed before it answered (writes.py)
        if paths:
            self._changed |= paths
        else:
            self._scan = True
        self._wake.set()

    def edits(self, limit: int = EDITS_LIST_LIMIT_DEFAULT, offset: int = EDITS_LIST_OFFSET_DEFAULT) -> EditsResponse:
        if self.core.writes is None:
            return {"writes_enabled": False, "edits": [], "total": 0, "next_offset": None}
        return self.core.writes.edits_page(limit, offset)

    def undo(self, edit: int) -> UndoResponse:
        if self.core.writes is None:
            raise WritesDisabled("writes are off: start the sidecar with --allow-writes")
        done = self.core.writes.undo(edit, "Obsidian (undo)")
        return {"edit": done["edit"], "summary": done["summary"], "paths": done["paths"]}

    def on_progress(self, p: Progress) -> None:
        self.progress = {"phase": p.phase, "done": p.done, "total": p.total}
        now = time.monotonic()
        if p.phase == "done" or now - self._last_progress >= PROGRESS_INTERVAL:
            self._last_progress = now
            self.bus.publish("progress", self.progress)

    async def index_loop(self) -> None:
        try:  # the snapshot the first searches wait for is built before the start-up scan, not beside it
            await asyncio.to_thread(self.core.snapshot)
        except Exception:  # the first search will say what is wrong; indexing goes on regardless
            log.exception("loading the search snapshot failed")
        self._wake.set()  # index once at start: incremental, so an existing index is ready at once
        while not self.stopping.is_set():
            await self._wait_for_work()
            if self.stopping.is_set():
                return
            full, self._full = self._full, False
            changed, self._changed = self._changed, set()
            scan, self._scan = self._scan or full, False
            try:  # event_paths stats the paths: on the writer thread too, not on the loop
                notes = None if scan or len(changed) > EVENT_BURST else await self._on_writer(self.core.event_paths, changed)
                if notes is None:
                    report = await self._scan_run(full)
                elif notes:
                    report = await self._on_writer(self.core.index_paths, notes)
                else:
                    continue  # only hidden, excluded or outside paths
            except Exception:
                log.exception("indexing failed; the previous index keeps serving")
                continue
            finally:
                self.first_scan_done.set()
            self._count(report, "last_scan" if notes is None else "last_event_run")
            await self._announce(report, reloaded=notes is None)

    def _count(self, report: IndexReport, kind: Literal["last_scan", "last_event_run"]) -> None:
        """What status says of the runs: how many of each kind, and what the last one cost."""
        run: IndexRunCost = {
            "seconds": round(report.seconds, 4), "cpu_seconds": round(report.cpu_seconds, 4),
            "changed": report.added + report.updated + report.renamed + report.deleted, "at": time.time()}
        # a new dict each time: a status being read on another thread keeps the one it had
        if kind == "last_scan":
            self.indexing = {**self.indexing, "scans": self.indexing["scans"] + 1, "last_scan": run}
        else:
            self.indexing = {**self.indexing, "event_runs": self.indexing["event_runs"] + 1, "last_event_run": run}

    async def _scan_run(self, full: bool) -> IndexReport:
        self.cancel_index.clear()
        self.core.index_queued()  # visible in status before the run's first progress event
        await self.publish_status()
        try:
            return await self._on_writer(self._index_once, full)
        finally:
            self.progress = None

    async def _on_writer(self, work: Callable[[T], R], arg: T) -> R:
        """`work(arg)` on the single writer thread."""
        return await asyncio.get_running_loop().run_in_executor(self.writer, work, arg)

    async def _announce(self, report: IndexReport, reloaded: bool) -> None:
        changed = bool(report.changed_paths or report.full)
        if changed and reloaded:
            await _warm_up(self.core, collect=True)  # the next search finds the new vectors loaded
        await self.publish_status(sorted(set(report.changed_paths))[:1000] if changed else None)
        if report.skipped:
            log.info("%d file(s) skipped; see status", len(report.skipped))

    async def publish_status(self, changed_paths: list[str] | None = None) -> None:
        """The status event; with `changed_paths` (an empty list: answers changed, no path named) index_changed too."""
        status = await asyncio.to_thread(self.status)
        self.bus.publish("status", status)
        if changed_paths is not None:
            self.bus.publish("index_changed", {"paths": changed_paths, "notes": status["notes"], "chunks": status["chunks"]})

    def _index_once(self, full: bool) -> IndexReport:
        return self.core.index(full=full, progress=self.on_progress, cancel=self.cancel_index)

    async def _wait_for_work(self) -> None:
        stop = asyncio.ensure_future(self.stopping.wait())
        wake = asyncio.ensure_future(self._wake.wait())
        await asyncio.wait({stop, wake}, return_when=asyncio.FIRST_COMPLETED)
        for task in (stop, wake):
            task.cancel()
        self._wake.clear()

    async def watch_stdin(self) -> None:
        """The plugin keeps our stdin open as a lifeline: EOF means Obsidian is gone."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while await reader.read(4096):
            pass
        log.warning("stdin closed: shutting down")
        self.stopping.set()

    async def watch_parent(self) -> None:
        """When the plugin (our parent) dies we are re-parented: exit instead of lingering."""
        parent = self.options.parent_pid
        while not self.stopping.is_set():
            await asyncio.sleep(PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                log.warning("parent process %d is gone: shutting down", parent)
                self.stopping.set()


async def serve(settings: Settings, options: ServeOptions) -> int:
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):  # before anything slow: a stop during start-up is clean too
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping.set)
    # The model and the vectors load after the handshake (load_model); search answers lexically meanwhile.
    core = await asyncio.to_thread(VaultIndex, settings, model_later=True)
    service = SidecarService(core, EventBus(loop), options, stopping)
    if core.writes is not None:
        core.writes.on_edit = lambda edit: service.bus.publish("agent_edit", edit)  # the plugin's Notice
    token, _token_file = rpc_token(settings.index_dir)
    runner, rpc_port = await _start_rpc(service, token, options.rpc_port)
    mcp_task: asyncio.Task[None] | None = None
    if options.mcp_port is not None:
        service.mcp_token = token_for_mcp = mcp_token()
        def mcp_failed(why: str) -> None:  # said where a client looks: status, serve.json (mcp-config)
            service.mcp = McpPlacement(service.mcp.requested, None, why)
            write_state(settings.index_dir, rpc_port, service.mcp, __version__)

        mcp_task, service.mcp = await start_with_fallback(
            lambda port: _start_mcp(core, token_for_mcp, port, service.gate, mcp_failed), options.mcp_port)
    write_state(settings.index_dir, rpc_port, service.mcp, __version__)
    _handshake(rpc_port, service.mcp)
    if await asyncio.to_thread(core.index_not_ready) is None:  # an index to serve: the scan first, then the model
        loading: asyncio.Future[None] = asyncio.ensure_future(_load_model(service))
    else:  # a first index: the model first in the writer's queue, so the run embeds as it goes
        loading = loop.run_in_executor(service.writer, _model_first, core, _read_model_aside(core),
                                       service.cancel_index)
    tasks = [asyncio.create_task(_vectors_loaded(service, loading), name="vectors"),
             asyncio.create_task(service.index_loop(), name="index")]
    if options.watch:
        tasks.append(asyncio.create_task(watch_vault(settings.vault, service.on_files_changed, service.stopping)))
    tasks.append(asyncio.create_task(reconcile_every(options.reconcile_seconds, service.on_files_changed, service.stopping)))
    if options.exit_with_parent:
        tasks.append(asyncio.create_task(service.watch_parent()))
        if _stdin_is_pipe():
            tasks.append(asyncio.create_task(service.watch_stdin()))
    await service.stopping.wait()
    log.info("shutting down")
    await _stop(service, runner, mcp_task, tasks)
    return 0


async def _load_model(service: SidecarService) -> None:
    """After the start-up scan, the snapshot, then the model's files on a daemon thread of their own
    (_read_model_aside), then its vectors on the writer (vectors_in). Not beside the scan: the load is pure Python for about
    1.5 s, and every SQLite call of a scan beside it waits for the GIL (16,894 notes: 0.6 s -> 2 s)."""
    await service.first_scan_done.wait()
    await asyncio.to_thread(service.core.snapshot)  # as VaultIndex.read_model: the first searches wait for it
    loaded = await asyncio.wrap_future(_read_model_aside(service.core))
    try:
        await asyncio.get_running_loop().run_in_executor(service.writer, service.core.vectors_in, loaded,
                                                         service.on_progress, service.cancel_index)
    finally:
        if service.progress is not None and service.progress["phase"] == "vectors":  # a run's after it is its own
            service.progress = None


def _read_model_aside(core: VaultIndex) -> Future[LoadedModel]:
    """The model's files on a daemon thread: a stop while they load (2-3 s on a busy machine, most of
    it in the tokenizers' own code) exits without them, inside the plugin's 3 s before SIGKILL."""
    files: Future[LoadedModel] = Future()

    def read() -> None:
        try:
            files.set_result(core.read_model_files())
        except BaseException as exc:  # the waiter reports it (_vectors_loaded logs it)
            files.set_exception(exc)

    threading.Thread(target=read, name=MODEL_THREAD, daemon=True).start()
    return files


MODEL_THREAD = "model-files"


def exited(code: int) -> int:
    """The serve command's exit status, exiting at once while the model's files still load on their daemon
    thread: the interpreter's exit ends such a thread inside the tokenizers' Rust code, and that aborts the
    process (SIGABRT, "FATAL: exception not rethrown") where a SIGTERM during start-up must exit 0."""
    if any(t.name == MODEL_THREAD and t.is_alive() for t in threading.enumerate()):
        logging.shutdown()  # every handler flushed: os._exit skips what the interpreter's exit would do
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _model_first(core: VaultIndex, files: Future[LoadedModel],
                 cancel: threading.Event) -> None:
    """On the writer before a first index's run: the model's vectors go in as it loads, unless a stop
    comes first (the writer must be free for the stop, which waits for it)."""
    while not cancel.is_set():
        try:
            loaded = files.result(timeout=MODEL_WAIT_POLL_SECONDS)
        except FutureTimeout:
            continue
        core.vectors_in(loaded)
        return


async def _vectors_loaded(service: SidecarService, loading: asyncio.Future[None]) -> None:
    """Once the model and the vectors are in: freeze what start-up loaded, and say so. index_changed
    without paths tells the plugin's views that answers changed: they search again, now with vectors."""
    try:
        await loading
    except Exception:  # load_model reports a missing model itself; anything else leaves search lexical
        log.exception("loading the embedding model failed")
    await _warm_up(service.core)
    await service.publish_status(changed_paths=[])


async def _warm_up(core: VaultIndex, collect: bool = False) -> None:
    """Load the vectors and graph (at start, and after a run that changed the index): the next search
    finds them in memory instead of paying for the load itself. What is loaded by then (modules,
    model, snapshot) lives until the next change; frozen, the collector stops scanning it, and a full
    collection no longer pauses every request for ~100 ms (docs/benchmarks.md, 8 clients).
    `collect` first clears what is not frozen yet, so no garbage gets frozen; at start it is skipped:
    it would cost the first answer ~0.1 s, and start-up leaves little garbage."""
    try:
        await asyncio.to_thread(_load_and_freeze, core, collect)
    except Exception:  # never fatal: the next search loads it, or reports the problem itself
        log.exception("loading the search snapshot failed")


def _load_and_freeze(core: VaultIndex, collect: bool) -> None:
    core.snapshot().warm()
    if collect:
        gc.collect()
    gc.freeze()


async def _start_rpc(service: SidecarService, token: str, port: int) -> tuple[web.AppRunner, int]:
    slot = GuardSlot()
    watch = ConnectionWatch()  # read timeouts and a connection cap (connwatch.py)
    # `related` carries the editor's buffer: any note the vault indexes (up to max_file_bytes) must fit.
    app = build_app(service, slot, watch, body_limit(service.core.settings.max_file_bytes))
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_SECONDS)
    await runner.setup()
    site = WatchedSite(runner, "127.0.0.1", port, watch)
    await site.start()
    bound = _bound_port(site)
    slot.guard = Guard(bound, token, frozenset({OBSIDIAN_ORIGIN}))
    return runner, bound


def _bound_port(site: web.TCPSite) -> int:
    server = site._server  # aiohttp exposes the bound sockets only here
    sockets = getattr(server, "sockets", None) or []
    return int(sockets[0].getsockname()[1])


async def _start_mcp(core: VaultIndex, token: str, port: int, gate: ReadGate,
                     failed: Callable[[str], None]) -> tuple[asyncio.Task[None], int]:
    """Bind and listen now: a port in use fails here (ports.py falls back), and an agent that connects
    at once waits in the backlog. The MCP SDK and uvicorn (~0.4 s of imports) load after the handshake."""
    sock = bind_loopback(port)
    sock.listen(MCP_BACKLOG)
    task = asyncio.create_task(_serve_mcp(core, token, sock, gate, failed), name="mcp-http")
    return task, int(sock.getsockname()[1])


async def _serve_mcp(core: VaultIndex, token: str, sock: socket.socket, gate: ReadGate,
                     failed: Callable[[str], None]) -> None:
    """MCP on the bound socket until stopped. If it cannot start or stops by itself (the SDK shadowed
    by an mcp.py where `python -m` was started, say), JSON-RPC goes on and the port says it is off."""
    try:
        await asyncio.to_thread(core.snapshot)  # the one the first search needs (read_model's first step) goes first
        mcp_server = await asyncio.to_thread(importlib.import_module, "sidecar.adapters.mcp.server")  # off the loop
        server = await asyncio.to_thread(mcp_server.McpHttpServer, core, token, gate=gate, sock=sock)
        await server.serve()
    except Exception as exc:
        log.error("MCP is off: %s: %s", type(exc).__name__, exc, exc_info=log.isEnabledFor(logging.DEBUG))
        failed(f"MCP is off: it failed to start ({type(exc).__name__}: {str(exc)[:300]})")
    finally:
        sock.close()


def _stdin_is_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def _handshake(rpc_port: int, mcp: McpPlacement) -> None:
    line = {"rpc_port": rpc_port, "mcp_port": mcp.port, "pid": os.getpid(), "version": __version__,
            "protocol_version": PROTOCOL_VERSION, "mcp_requested_port": mcp.requested, "mcp_note": mcp.note}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


async def _stop(service: SidecarService, runner: web.AppRunner, mcp_task: asyncio.Task[None] | None,
                tasks: list[asyncio.Task[Any]]) -> None:
    service.cancel_index.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if mcp_task is not None:
        mcp_task.cancel()
        await asyncio.gather(mcp_task, return_exceptions=True)
    await runner.cleanup()
    remove_state(service.core.settings.index_dir)
    await asyncio.get_running_loop().run_in_executor(None, service.writer.shutdown, True)
    service.core.close()

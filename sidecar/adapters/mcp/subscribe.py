"""Resource subscriptions where a session lasts: `sidecar mcp --stdio` (one client, one session).

A client subscribes to a note's URI (`resources/subscribe`) and is sent `notifications/resources/updated`
with that URI when what `resources/read` gives for it changes: the note's text, or whether it is
served at all (deleted, moved away, now ignored). The HTTP endpoint is stateless and has no stream to
notify on, so it registers none of this and announces no `subscribe` (server.py).

The stdio process indexes only its own writes; the index it reads is kept by `sidecar serve` (or
`sidecar index`), and a note may change on disk with no indexer running at all. So it polls, and only
while something is subscribed: each tick stats the subscribed files and reads the index generation
(one row); a note is read again only when its file's stat or the generation moved, and it notifies
only when the hash of the served text differs, so a touch or an unrelated index run sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from sidecar.adapters.mcp.tools import resource_error
from sidecar.errors import NotFound, SidecarError
from sidecar.serve.client_errors import client_error
from sidecar.store.indexer import content_digest

if TYPE_CHECKING:
    from sidecar.adapters.mcp.tools import NoteResources, VaultMCP

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5  # a stat per subscribed note and one meta row per tick: nothing for an idle client
MAX_SUBSCRIPTIONS = 1_000  # bounds a tick's work; a client watching more should reread instead

StatSig = tuple[int, int, int] | None  # (mtime_ns, size, inode) of the file, None: gone


@dataclass
class Watched:
    path: str  # the vault path the URI names (resolved once, at subscribe)
    stat: StatSig
    digest: str | None  # hash of the text resources/read serves; None: it is not served now


class NoteSubscriptions:
    """The URIs this session's client subscribed to, and the poll that notifies it of their changes."""

    def __init__(self, server: VaultMCP, notes: NoteResources) -> None:
        self.server = server
        self.notes = notes
        self.core = notes.tools.core
        self._watched: dict[str, Watched] = {}
        self._lock = threading.Lock()  # the dict is read on worker threads (ticks) and changed on the loop
        self._generation: str | None = None
        self._session: ServerSession | None = None
        self._wanted = asyncio.Event()  # set while anything is subscribed

    # ---- handlers -------------------------------------------------------------------------
    async def subscribe(self, ctx: ServerRequestContext[Any], params: SubscribeRequestParams) -> EmptyResult:
        """Refused exactly as resources/read refuses the URI (outside, hidden, ignored, missing)."""
        uri = params.uri
        path = await self.notes.tools.gate.answer(self._served_path, uri)
        with self._lock:
            self._refuse_past_limit(uri)
        watched = await self.notes.tools.gate.answer(self._baseline, path)
        with self._lock:
            self._refuse_past_limit(uri)  # again: another subscribe may have come in while this one read
            self._watched[uri] = watched
        self._session = ctx.session
        self._wanted.set()
        return EmptyResult()

    def _refuse_past_limit(self, uri: str) -> None:
        if uri not in self._watched and len(self._watched) >= MAX_SUBSCRIPTIONS:
            raise MCPError(code=INVALID_PARAMS, message=f"at most {MAX_SUBSCRIPTIONS} subscriptions at once; "
                           "unsubscribe from some first", data={"uri": uri})

    async def unsubscribe(self, ctx: ServerRequestContext[Any], params: UnsubscribeRequestParams) -> EmptyResult:
        """Idempotent: a URI that was not subscribed (or was refused) is simply not watched."""
        with self._lock:
            self._watched.pop(params.uri, None)
            if not self._watched:
                self._wanted.clear()
        return EmptyResult()

    # ---- the poll -------------------------------------------------------------------------
    async def run(self) -> None:
        """Until cancelled: every POLL_SECONDS while anything is subscribed, notify what changed."""
        while True:
            await self._wanted.wait()
            await asyncio.sleep(POLL_SECONDS)
            try:
                changed = await self.notes.tools.gate.answer(self.changed)
            except Exception:
                log.exception("checking subscribed notes failed; trying again on the next tick")
                continue
            for uri in changed:
                await self._notify(uri)

    async def _notify(self, uri: str) -> None:
        if self._session is None:
            return
        try:
            await self._session.send_resource_updated(uri)
        except Exception as exc:  # the client went away: the session ends with the process
            log.debug("could not send resources/updated for %s: %s", uri, exc)

    def changed(self) -> list[str]:
        """The subscribed URIs whose served text changed since the last look (on a worker thread)."""
        generation = self.core.generation()
        moved, self._generation = generation != self._generation, generation
        with self._lock:
            watched = list(self._watched.items())
        out = []
        for uri, before in watched:
            stat = self._stat(before.path)
            if stat == before.stat and not moved:
                continue
            now = Watched(before.path, stat, self._digest(before.path))
            with self._lock:
                if self._watched.get(uri) is not before:
                    continue  # unsubscribed (or subscribed again) meanwhile
                self._watched[uri] = now
            if now.digest != before.digest:
                out.append(uri)
        return out

    # ---- what a URI serves ----------------------------------------------------------------
    def _served_path(self, uri: str) -> str:
        """The note resources/read would serve for this URI, else the error resources/read gives."""
        param = self.server.note_path_of(uri)
        try:
            if param is None:  # not a note URI, or one the SDK's template refuses: its own words
                raise NotFound(f"Unknown resource: {uri}")
            return self.notes.note_path(param)
        except NotFound as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.message, data={"uri": uri}) from None
        except Exception as exc:
            raise resource_error(client_error(exc), uri) from None

    def _baseline(self, path: str) -> Watched:
        return Watched(path, self._stat(path), self._digest(path))

    def _stat(self, path: str) -> StatSig:
        try:
            st = os.stat(self.core.vault.disk_path(path))
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _digest(self, path: str) -> str | None:
        """The served text's hash: read with the same confinement and redaction as resources/read."""
        try:
            text = self.notes.text_of(path)
        except SidecarError:
            return None
        return content_digest(text)


def add_subscriptions(server: VaultMCP, notes: NoteResources) -> NoteSubscriptions:
    """Serve resources/subscribe and /unsubscribe; the SDK then announces `subscribe: true`."""
    subscriptions = NoteSubscriptions(server, notes)
    lowlevel = server._lowlevel_server  # MCPServer has no public way to add these two handlers
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscriptions.subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, subscriptions.unsubscribe)
    return subscriptions

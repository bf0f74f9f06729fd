"""Keep the index converging on the files: watchfiles events (debounced) plus a periodic reconcile.

The OS can drop events (inotify queue overflow during a git checkout), so events only say
"look now"; the indexer's own scan decides what changed. That makes atomic saves, renames,
bursts and files vanishing mid-read all the same case.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from watchfiles import Change, awatch

log = logging.getLogger(__name__)

DEBOUNCE_MS = 200  # an editor's write-temp-then-rename lands in one batch
STEP_MS = 20  # a batch is yielded once no event came for this long (and at most DEBOUNCE_MS after the first):
# an editor's write-temp-then-rename is two events within a millisecond or two
RECONCILE_SECONDS = 60.0
STOP_POLL_MS = 500  # how often the watcher thread checks for shutdown: bounds the time a stop takes


def interesting(root: Path) -> Callable[[Change, str], bool]:
    """Notes, the two files that change the ignore rules, and any other path that comes or goes: a
    folder (its notes come or go with it, "Books v1.0" too) or an attachment (links resolve to it).
    Not .git or .trash churn, nor an attachment or log written in place (it resolves the same)."""

    def accept(change: Change, path: str) -> bool:
        try:
            rel = Path(path).resolve().relative_to(root).as_posix()
        except ValueError:
            rel = Path(path).relative_to(root).as_posix() if path.startswith(str(root)) else path
        if rel in (".indexignore", ".obsidian/app.json"):
            return True
        if any(p.startswith(".") for p in rel.split("/")):
            return False
        return rel.lower().endswith(".md") or change != Change.modified

    return accept


async def watch_vault(root: Path, on_change: Callable[[set[str]], None], stop: asyncio.Event,
                      debounce_ms: int = DEBOUNCE_MS) -> None:
    try:
        async for changes in awatch(root, watch_filter=interesting(root), debounce=debounce_ms, step=STEP_MS,
                                    stop_event=stop, recursive=True, ignore_permission_denied=True,
                                    rust_timeout=STOP_POLL_MS):
            on_change({path for _change, path in changes})
    except Exception:  # the watcher failing must not take the service down: reconcile still runs
        log.exception("file watcher stopped; changes are picked up by the periodic reconcile only")


async def reconcile_every(seconds: float, on_change: Callable[[set[str]], None], stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except TimeoutError:
            on_change(set())

"""The one rule for what a client is told when answering it raised: which exception becomes which
SidecarError (kind, code, message, data). Both adapters use it and keep only their wire format
(JSON-RPC error objects, MCP tool errors), so a client of either port gets the same error.
"""

from __future__ import annotations

import logging

from sidecar.errors import Busy, SidecarError

log = logging.getLogger(__name__)


def client_error(exc: Exception) -> SidecarError:
    """Our own errors as they are, SQLite busy/locked as the retryable Busy, anything else a logged
    internal error that names only the exception's type (the traceback stays in the log)."""
    if isinstance(exc, SidecarError):
        return exc
    busy = busy_from(exc)
    if busy is not None:
        return busy
    log.error("internal error answering a client", exc_info=exc)
    return SidecarError(f"internal error in the sidecar ({type(exc).__name__}); its log (stderr) has the details")


def busy_from(exc: BaseException) -> Busy | None:
    """SQLite's "database is locked" / SQLITE_BUSY (from any driver) as our retryable Busy, else None.
    SQLITE_PROTOCOL ("locking protocol") too: SQLite documents it as a WAL reader that lost the race
    to start a transaction dozens of times in a row, which a retry a moment later wins."""
    text = str(exc).lower()
    if type(exc).__name__ in ("OperationalError", "BusyError", "LockedError", "ProtocolError") and (
            "locked" in text or "busy" in text or "locking protocol" in text or type(exc).__name__ == "ProtocolError"):
        return Busy("the index is busy (a write is finishing): retry in a moment", {"retryable": True})
    return None

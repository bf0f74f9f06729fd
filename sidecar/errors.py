"""Errors that reach a user or a client, each with a stable code and a message that says what to do.

JSON-RPC reserves -32768..-32000 for the protocol itself; our application codes live in
-32000..-32099 ("server error" range) so that generic clients still treat them as errors.
"""

from __future__ import annotations


class SidecarError(Exception):
    code = -32000
    kind = "internal"

    def __init__(self, message: str, data: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "data": {"kind": self.kind, **self.data}}


class NotFound(SidecarError):
    """Also raised for paths outside the vault or excluded: "outside" and "not found" answer alike."""

    code = -32004
    kind = "not_found"


class InvalidParams(SidecarError):
    code = -32602
    kind = "invalid_params"


class IndexNotReady(SidecarError):
    code = -32010
    kind = "index_not_ready"


class Busy(SidecarError):
    """Retryable: the writer holds the database longer than the busy timeout."""

    code = -32011
    kind = "busy"


class VaultError(SidecarError):
    code = -32012
    kind = "vault"


class ShuttingDown(SidecarError):
    code = -32013
    kind = "shutting_down"


class Conflict(SidecarError):
    """A write whose content hash no longer matches the file: someone changed it meanwhile."""

    code = -32014
    kind = "conflict"


class WritesDisabled(SidecarError):
    code = -32015
    kind = "writes_disabled"


def busy_from(exc: BaseException) -> Busy | None:
    """SQLite's "database is locked" / SQLITE_BUSY (from any driver) as our retryable Busy, else None.
    SQLITE_PROTOCOL ("locking protocol") too: SQLite documents it as a WAL reader that lost the race
    to start a transaction dozens of times in a row, which a retry a moment later wins."""
    text = str(exc).lower()
    if type(exc).__name__ in ("OperationalError", "BusyError", "LockedError", "ProtocolError") and (
            "locked" in text or "busy" in text or "locking protocol" in text or type(exc).__name__ == "ProtocolError"):
        return Busy("the index is busy (a write is finishing): retry in a moment", {"retryable": True})
    return None

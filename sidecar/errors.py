"""Errors that reach a user or a client, each with a stable code and a message that says what to do.

The codes come from protocol/sidecar.openrpc.json (components.errors, generated into ERROR_CODES):
a class names its `kind` and gets that kind's code. JSON-RPC reserves its own range for the protocol;
our application codes live in the "server error" range so that generic clients still treat them as errors.
"""

from __future__ import annotations

from typing import Any

from sidecar.protocol_types import ERROR_CODES


class SidecarError(Exception):
    kind = "internal"
    code = ERROR_CODES[kind]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A kind the protocol lists gets its code (a misspelt kind fails at import); a kind it does not
        list (an adapter's own) must set `code` itself."""
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            cls.code = ERROR_CODES[cls.kind]

    def __init__(self, message: str, data: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "data": {"kind": self.kind, **self.data}}


class NotFound(SidecarError):
    """Also raised for paths outside the vault or excluded: "outside" and "not found" answer alike."""

    kind = "not_found"


class InvalidParams(SidecarError):
    kind = "invalid_params"


class IndexNotReady(SidecarError):
    kind = "index_not_ready"


class Busy(SidecarError):
    """Retryable: the writer holds the database longer than the busy timeout."""

    kind = "busy"


class VaultError(SidecarError):
    kind = "vault"


class ShuttingDown(SidecarError):
    kind = "shutting_down"


class Conflict(SidecarError):
    """A write whose content hash no longer matches the file: someone changed it meanwhile."""

    kind = "conflict"


class WritesDisabled(SidecarError):
    kind = "writes_disabled"

"""The localhost rules both ports enforce, as pure functions over header values.

Why each rule exists:
- Host must name the loopback address or localhost with our port: a DNS-rebinding page
  reaches 127.0.0.1 under a foreign name, and its Host header gives it away.
- A browser always sends Origin on cross-site requests: any web Origin is refused. The RPC
  port may allow the Obsidian app's own origin (`app://obsidian.md`).
- Bearer token on every request, compared in constant time; never in the query string.
- Only application/json bodies: "simple" cross-site requests (text/plain, forms) never preflight.
- Bodies up to a limit (`body_limit`), refused unread past it with a JSON-RPC error (`too_large`).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Any

from sidecar.protocol_types import ERROR_CODES

MAX_BODY_BYTES = 1_000_000  # a port whose requests carry no note's text (MCP with writes off)
# A port that takes a note's whole text (JSON-RPC's editor buffers, MCP's writes) admits the largest note instead:
# a note of max_file_bytes escaped the longest way JSON escapes, a control character as \u00XX
# (6 bytes for 1), plus the request around it (method, path, heading, hash, ids, _meta).
JSON_ESCAPE_GROWTH = 6
ENVELOPE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Guard:
    port: int
    token: str
    allowed_origins: frozenset[str] = frozenset()

    def allowed_hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}", f"[::1]:{self.port}"}

    def check(self, host: str | None, origin: str | None, authorization: str | None,
              content_type: str | None, method: str, query: str = "") -> Rejection | None:
        if host is None or host.lower() not in self.allowed_hosts():
            return Rejection(421, "bad_host", "Host must be 127.0.0.1 or localhost with this port")
        if origin is not None and origin not in self.allowed_origins:
            return Rejection(403, "bad_origin", "browser origins are not allowed")
        if "token=" in query.lower() or "access_token=" in query.lower():
            return Rejection(400, "token_in_query", "send the token in the Authorization header, not the URL")
        if not self.token_ok(authorization):
            return Rejection(401, "unauthorized", "missing or wrong bearer token")
        if method == "POST" and (content_type or "").split(";")[0].strip().lower() != "application/json":
            return Rejection(415, "bad_content_type", "Content-Type must be application/json")
        return None

    def token_ok(self, authorization: str | None) -> bool:
        if not authorization or not authorization.startswith("Bearer "):
            return False
        given = authorization[len("Bearer "):].strip().encode()
        return hmac.compare_digest(given, self.token.encode())


def body_limit(note_bytes: int | None = None) -> int:
    """The largest request body a port reads: MAX_BODY_BYTES, or enough for any note of up to `note_bytes`
    (the vault's max_file_bytes) where requests carry a note's text."""
    return MAX_BODY_BYTES if note_bytes is None else JSON_ESCAPE_GROWTH * note_bytes + ENVELOPE_BYTES


def too_large(limit: int) -> dict[str, Any]:
    """The answer (HTTP 413) to a body over `limit`: a JSON-RPC error, so a client reports it as one. Its id is
    null: the body is not parsed."""
    return {"jsonrpc": "2.0", "id": None, "error": {
        "code": ERROR_CODES["invalid_request"], "data": {"kind": "invalid_request", "limit": limit},
        "message": f"Invalid request: the body is over this port's limit of {limit:,} bytes"}}


@dataclass
class GuardSlot:
    """Filled once the socket is bound: the Host rule needs the real port, known only then."""

    guard: Guard | None = None

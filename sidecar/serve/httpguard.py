"""The localhost rules both ports enforce, as pure functions over header values.

Why each rule exists:
- Host must name the loopback address or localhost with our port: a DNS-rebinding page
  reaches 127.0.0.1 under a foreign name, and its Host header gives it away.
- A browser always sends Origin on cross-site requests: any web Origin is refused. The RPC
  port may allow the Obsidian app's own origin (`app://obsidian.md`).
- Bearer token on every request, compared in constant time; never in the query string.
- Only application/json bodies: "simple" cross-site requests (text/plain, forms) never preflight.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

MAX_BODY_BYTES = 1_000_000  # a 200 KB editor buffer plus JSON overhead fits comfortably


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


@dataclass
class GuardSlot:
    """Filled once the socket is bound: the Host rule needs the real port, known only then."""

    guard: Guard | None = None

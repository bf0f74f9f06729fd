"""Tokens for the two ports. Never on a command line, never logged, never inside the vault.

- JSON-RPC: SIDECAR_RPC_TOKEN (the plugin makes a fresh one per run); else generated per run
  and written to a 0600 file in the index folder so local tools can find it.
- MCP: SIDECAR_MCP_TOKEN; else a persistent token in a 0600 file in the user's config folder,
  so agent configurations keep working across restarts.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from sidecar.config import MCP_TOKEN_ENV, RPC_TOKEN_ENV, config_dir, env_text
from sidecar.private import write_private

TOKEN_BYTES = 32


def rpc_token(index_dir: Path) -> tuple[str, Path | None]:
    """(token, file it was written to or None when it came from the environment)."""
    given = env_text(RPC_TOKEN_ENV)
    if given:
        return given, None
    token = secrets.token_urlsafe(TOKEN_BYTES)
    path = index_dir / "rpc-token"
    write_private(path, token)
    return token, path


def mcp_token_file() -> Path:
    return config_dir() / "mcp-token"


MIN_MCP_TOKEN_CHARS = 16  # a short chosen token is guessable by anything that can reach the port


def mcp_token() -> str:
    given = env_text(MCP_TOKEN_ENV)
    if given:
        if len(given) < MIN_MCP_TOKEN_CHARS:
            raise ValueError(f"{MCP_TOKEN_ENV} is {len(given)} character(s) long; use at least "
                             f"{MIN_MCP_TOKEN_CHARS} (or unset it to get a generated one)")
        return given
    path = mcp_token_file()
    if path.exists():
        value = path.read_text().strip()
        if value:
            return value
    token = secrets.token_urlsafe(TOKEN_BYTES)
    write_private(path, token)
    return token

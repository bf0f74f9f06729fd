"""Ready-to-paste MCP client configuration for Claude Code, Cursor and Codex (HTTP and stdio)."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from typing import Any

from sidecar.config import Settings

SERVER_NAME = "vault-sidecar"
TOKEN_ENV = "SIDECAR_MCP_TOKEN"  # noqa: S105  (a variable name, not a secret)


def stdio_command(settings: Settings) -> list[str]:
    exe = shutil.which("sidecar")
    base = [exe] if exe else [sys.executable, "-m", "sidecar"]
    # Absolute: the client starts the server in a folder of its own, where a relative index would be
    # another (empty) index.
    return [*base, "mcp", "--stdio", "--vault", str(settings.vault.resolve()), "--index",
            str(settings.index_dir.resolve())]


def client_config(settings: Settings, port: int | None, token: str | None) -> dict[str, Any]:
    command = stdio_command(settings)
    out: dict[str, Any] = {
        "stdio": {
            "command": command,
            "claude_code": f"claude mcp add {SERVER_NAME} -- {shlex.join(command)}",
            "cursor": {"mcpServers": {SERVER_NAME: {"command": command[0], "args": command[1:]}}},
            "codex": (f"[mcp_servers.{SERVER_NAME}]\ncommand = {json.dumps(command[0])}\n"
                      f"args = {json.dumps(command[1:])}\n"),
        },
        "http": None,
    }
    if port is not None and token is not None:
        url = f"http://127.0.0.1:{port}/mcp"
        out["http"] = {
            "url": url,
            "token_hint": f"the token is in the Authorization header below; Codex reads it from ${TOKEN_ENV}",
            "claude_code": f"claude mcp add --transport http {SERVER_NAME} {url} --header 'Authorization: Bearer {token}'",
            "cursor": {"mcpServers": {SERVER_NAME: {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}},
            "codex": (f"# export {TOKEN_ENV}='{token}' before starting Codex\n[mcp_servers.{SERVER_NAME}]\n"
                      f"url = {json.dumps(url)}\nbearer_token_env_var = \"{TOKEN_ENV}\"\n"),
        }
    return out

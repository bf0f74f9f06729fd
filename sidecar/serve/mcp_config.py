"""Ready-to-paste MCP client configuration for Claude Code, Cursor and Codex (HTTP and stdio)."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from typing import Any

from sidecar.config import MCP_TOKEN_ENV as TOKEN_ENV
from sidecar.config import Settings

SERVER_NAME = "vault-sidecar"


def sidecar_argv() -> list[str]:
    """The command that runs this sidecar. `-P`: an agent starts it in the user's project folder, and a
    file there named like a module it imports (mcp.py, yaml.py) would shadow it and run instead."""
    exe = shutil.which("sidecar")
    return [exe] if exe else [sys.executable, "-P", "-m", "sidecar"]


def _vault_args(settings: Settings) -> list[str]:
    # Absolute: the client starts the server in a folder of its own, where a relative index would be
    # another (empty) index.
    return ["--vault", str(settings.vault.resolve()), "--index", str(settings.index_dir.resolve())]


def stdio_command(settings: Settings) -> list[str]:
    return [*sidecar_argv(), "mcp", "--stdio", *_vault_args(settings)]


def hook_config(settings: Settings, max_tokens: int = 1500) -> dict[str, Any]:
    """A prompt-submit hook: `sidecar context -` reads the hook's JSON event (its `prompt`) on stdin and
    prints a context block, which Claude Code adds to the conversation (docs/mcp.md)."""
    command = shlex.join([*sidecar_argv(), "context", "-", *_vault_args(settings), "--max-tokens", str(max_tokens)])
    return {"command": command,
            "claude_code": {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}}}


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


def config_text(c: dict[str, Any]) -> str:
    """client_config() as text to read and paste."""
    lines = []
    if c["http"]:
        h = c["http"]
        lines += [f"# MCP over HTTP ({h['url']}, while `sidecar serve --mcp-port N` runs)", "", "Claude Code:",
                  f"  {h['claude_code']}", "", "Cursor (.cursor/mcp.json):", json.dumps(h["cursor"], indent=2), "",
                  "Codex (~/.codex/config.toml):", h["codex"], ""]
    s = c["stdio"]
    lines += ["# MCP over stdio (the client starts the sidecar itself)", "", "Claude Code:", f"  {s['claude_code']}", "",
              "Cursor (.cursor/mcp.json):", json.dumps(s["cursor"], indent=2), "", "Codex (~/.codex/config.toml):",
              s["codex"]]
    if not c["http"]:
        lines.append("(no sidecar serves MCP for this vault now: start `sidecar serve --mcp-port N` "
                     "(or turn MCP on in the plugin) for the HTTP variant)")
    return "\n".join(lines)

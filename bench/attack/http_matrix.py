#!/usr/bin/env python3
"""HTTP rules on both ports: Host x Origin x token x content type, sockets, where the tokens appear.

    python bench/attack/http_matrix.py [--quick] [--out DIR]

Every cell of the matrix is sent to the JSON-RPC port (POST /rpc, `status`) and the MCP port
(POST /mcp, `tools/call index_status`) and its status compared with `expected_status`, the one
table that specifies both ports. Then: listening sockets of the server's pid are on 127.0.0.1
only (/proc/net/tcp{,6}); neither token appears in any log line (the server runs with -v), in
/proc/PID/cmdline or environment-free argv, or in any file inside the vault.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import MCP_ACCEPT, Live, Result, main_for, say, table, workdir

HOSTS: dict[str, str | None] = {
    "loopback": "127.0.0.1:{port}", "localhost": "localhost:{port}", "ipv6_loopback": "[::1]:{port}",
    "any": "0.0.0.0:{port}", "foreign": "example.com", "evil_localhost": "localhost.evil.example:{port}",
    "no_port": "127.0.0.1", "other_port": "127.0.0.1:1", "absent": None,
}
ORIGINS: dict[str, str | None] = {
    "absent": None, "null": "null", "foreign": "https://evil.example", "other_local": "http://localhost:3000",
    "same_port": "http://127.0.0.1:{port}", "obsidian": "app://obsidian.md",
}
TOKENS = ("none", "wrong", "wrong_length", "right", "query", "right_lowercase_scheme", "basic")
CTYPES = {"json": "application/json", "json_charset": "application/json; charset=utf-8", "text": "text/plain",
          "form": "application/x-www-form-urlencoded", "multipart": "multipart/form-data; boundary=x", "absent": None}


def expected_status(port: str, host: str, origin: str, token: str, ctype: str) -> int:
    """The rules of both ports, in the order they are checked. `port` is "rpc" or "mcp"."""
    if host == "absent":
        return 400  # HTTP/1.1 requires Host: the HTTP parser refuses before our checks run
    if host not in ("loopback", "localhost", "ipv6_loopback"):
        return 421  # DNS rebinding: a foreign name (or another port) reached our socket
    allowed_origins = {"absent", "obsidian"} if port == "rpc" else {"absent"}
    if origin not in allowed_origins:
        return 403  # a browser page; the RPC port allows the Obsidian app only, MCP no browser at all
    if token == "query":
        return 400  # tokens never travel in URLs (logs, history, Referer)
    if token != "right":
        return 401
    if ctype not in ("json", "json_charset"):
        return 415  # text/plain and forms are "simple" requests a page can send without a preflight
    return 200


def header_sets(live: Live, port_name: str) -> list[tuple[tuple[str, str, str, str], dict[str, Any]]]:
    port = live.rpc_port if port_name == "rpc" else live.mcp_port
    token = live.rpc_token if port_name == "rpc" else live.mcp_token
    cells = []
    for host_name, host in HOSTS.items():
        for origin_name, origin in ORIGINS.items():
            for token_name in TOKENS:
                for ctype_name, ctype in CTYPES.items():
                    headers: dict[str, str] = {}
                    if ctype is not None:
                        headers["Content-Type"] = ctype
                    if origin is not None:
                        headers["Origin"] = origin.format(port=port)
                    if port_name == "mcp":
                        headers["Accept"] = MCP_ACCEPT
                    query = ""
                    auth = {"none": None, "wrong": "x" * len(token), "wrong_length": token + "x",
                            "right": token, "query": None, "right_lowercase_scheme": None, "basic": None}[token_name]
                    if token_name == "query":
                        query = f"?token={token}"
                    if auth is not None:
                        headers["Authorization"] = f"Bearer {auth}"
                    if token_name == "right_lowercase_scheme":
                        headers["Authorization"] = f"bearer {token}"
                    if token_name == "basic":
                        headers["Authorization"] = f"Basic {token}"
                    cells.append(((host_name, origin_name, token_name, ctype_name),
                                  {"headers": headers, "query": query,
                                   "host": None if host is None else host.format(port=port), "port": port}))
    return cells


def lowercase_scheme_ok(status: int, want: int, token: str, ctype: str) -> bool:
    """RFC 9110 makes the auth scheme case-insensitive; refusing `bearer` (401) is safe, accepting it is too."""
    return token == "right_lowercase_scheme" and want == 401 and status in (401, 415 if ctype not in ("json", "json_charset") else 200)


def run_matrix(live: Live, result: Result, quick: bool) -> list[list[Any]]:
    rpc_body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status"}).encode()
    mcp_body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "index_status", "arguments": {}}}).encode()
    rows = []
    for port_name in ("rpc", "mcp"):
        counts: dict[int, int] = {}
        wrong = 0
        resets: list[str] = []
        cells = header_sets(live, port_name)
        if quick:
            cells = [c for i, c in enumerate(cells) if i % 3 == 0 or c[0][1:] == ("absent", "right", "json")]
        for (host, origin, token, ctype), spec in cells:
            want = expected_status(port_name, host, origin, token, ctype)
            try:
                reply = live.server.http("POST", ("/rpc" if port_name == "rpc" else "/mcp") + spec["query"],
                                         rpc_body if port_name == "rpc" else mcp_body, spec["headers"],
                                         port=spec["port"], host=spec["host"])
            except ConnectionResetError:
                # The parser refused before reading our body and closed: the unread bytes turn the close
                # into a reset. A refusal all the same, but only acceptable where a refusal was expected.
                resets.append(f"{port_name} {host}/{origin}/{token}/{ctype}")
                if want == 200:
                    result.fail(f"{port_name} {host}/{origin}/{token}/{ctype}: connection reset, expected 200")
                continue
            counts[reply.status] = counts.get(reply.status, 0) + 1
            if reply.status != want and not lowercase_scheme_ok(reply.status, want, token, ctype):
                wrong += 1
                result.fail(f"{port_name} Host={host} Origin={origin} token={token} type={ctype}: "
                            f"HTTP {reply.status}, expected {want}: {reply.raw[:120]!r}")
            if reply.status == 200 and want != 200:
                result.fail(f"{port_name} {host}/{origin}/{token}/{ctype}: answered 200 where {want} was expected")
            if reply.status not in (200, 400) and reply.body is not None and "error" not in reply.body:
                result.fail(f"{port_name} {host}/{origin}/{token}/{ctype}: refusal without an error object")
            if reply.status != 200 and b"access-control-allow-origin" in reply.raw.lower():
                result.fail(f"{port_name}: CORS header on a refusal")
        if resets:
            counts[0] = len(resets)
            say(f"{port_name}: {len(resets)} connection reset(s) on refusals, e.g. {resets[:3]}")
        rows.append([port_name, len(cells), wrong, ", ".join(f"{k or 'reset'}: {v}" for k, v in sorted(counts.items()))])
        result.figures[f"{port_name}_resets"] = len(resets)
        result.figures[f"{port_name}_cells"] = len(cells)
        result.figures[f"{port_name}_wrong"] = wrong
    return rows


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket the process holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table_name, width in (("tcp", 8), ("tcp6", 32)):
        try:
            lines = Path(f"/proc/net/{table_name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state != "0A" or inode not in inodes:
                continue
            addr_hex, port_hex = local.split(":")
            addr = ".".join(str(b) for b in reversed(bytes.fromhex(addr_hex))) if width == 8 else "ipv6:" + addr_hex
            found.append((addr, int(port_hex, 16)))
    return found


def check_exposure(live: Live, result: Result, index_dir: Path) -> None:
    sockets = listening(live.pid)
    result.figures["listening_sockets"] = [f"{a}:{p}" for a, p in sockets]
    if not sockets:
        result.fail("no listening socket found for the server's pid (cannot check)")
    for addr, port in sockets:
        if addr != "127.0.0.1":
            result.fail(f"listening on {addr}:{port}, not 127.0.0.1")
    tokens = {"rpc token": live.rpc_token, "mcp token": live.mcp_token}
    cmdline = Path(f"/proc/{live.pid}/cmdline").read_bytes()
    log = live.server.stderr_path.read_bytes()
    result.figures["log_lines_checked"] = log.count(b"\n")
    vault_files = [p for p in live.vault.rglob("*") if p.is_file()]
    for name, token in tokens.items():
        if token.encode() in cmdline:
            result.fail(f"the {name} is in /proc/PID/cmdline")
        if token.encode() in log:
            result.fail(f"the {name} is in the log (-v)")
        for path in vault_files:
            if token.encode() in path.read_bytes():
                result.fail(f"the {name} is in a vault file: {path}")
    token_file = index_dir / "rpc-token"
    if token_file.exists() and token_file.stat().st_mode & 0o077:
        result.fail(f"{token_file} is readable by others: {oct(token_file.stat().st_mode)}")
    result.figures["vault_files_checked"] = len(vault_files)


def run(quick: bool = False, out: Path | None = None) -> Result:
    result = Result("http_matrix")
    with workdir("http") as base:
        vault = base / "vault"
        (vault / "Notes").mkdir(parents=True)
        for i in range(20):
            (vault / "Notes" / f"n{i}.md").write_text(f"# Note {i}\n\nsome text about topic {i} [[n{(i + 1) % 20}]]\n")
        with Live(vault, base / "index", "-v", "--no-parent-watch") as live:
            live.wait_ready()
            rows = run_matrix(live, result, quick)
            # a few requests that log (refusals are logged at INFO on the MCP port) before the log check
            check_exposure(live, result, base / "index")
    print(table(["port", "cells", "wrong", "statuses"], rows))
    say(f"sockets: {result.figures.get('listening_sockets')}")
    return result


if __name__ == "__main__":
    raise SystemExit(main_for(run))

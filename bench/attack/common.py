"""Shared pieces of the attack suites: the real server in a child process, both ports, tables, RSS.

Every suite is a module in bench/attack/ with `run(quick: bool, out: Path) -> Result`; the
pytest tests (tests/test_attack_*.py) call the same functions with small sizes. All traffic
goes to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.serverproc import Reply, Sidecar, start_sidecar  # noqa: E402  (needs ROOT on sys.path)

EVAL_VAULTS = ROOT.parent / "shared" / "eval-vaults"
JSON = "application/json"
MCP_ACCEPT = "application/json, text/event-stream"


@dataclass
class Result:
    """What a suite found: figures for the summary table, and every failure in words."""

    suite: str
    figures: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def fail(self, message: str) -> None:
        if len(self.failures) < 200:
            self.failures.append(message)
        say(f"FAIL {message}")

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite, "ok": self.ok, "figures": self.figures, "failures": self.failures}


def say(message: str) -> None:
    print(f"[attack {time.strftime('%H:%M:%S')}] {message}", flush=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def vault_notes(vault: Path) -> list[Path]:
    """The vault's notes, sorted, leaving out hidden folders and files (the sidecar never indexes them)."""
    return sorted(p for p in vault.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(vault).parts))


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def rss_kb(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) of a live process in KiB, from /proc."""
    cur = peak = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return cur, peak


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a live process has used, from /proc (0.0 once it is gone). Bounds in
    the suites are on CPU time: on a busy 2-core machine wall time measures the neighbours."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def canary(label: str) -> str:
    return f"CANARY{label.upper()}{secrets.token_hex(8).upper()}"


@contextmanager
def workdir(prefix: str, keep: bool = False) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=f"attack-{prefix}-"))
    try:
        yield path
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)


def python() -> str:
    return sys.executable


def sidecar_cmd(*args: str) -> list[str]:
    return [python(), "-m", "sidecar", *args]


def run_sidecar(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(sidecar_cmd(*args), capture_output=True, text=True, timeout=timeout, env=full_env,
                          check=False, cwd=ROOT)


class Live:
    """`sidecar serve` on a vault, with helpers for both ports. Use as a context manager."""

    def __init__(self, vault: Path, index_dir: Path, *extra: str, mcp_token: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.mcp_token = mcp_token or secrets.token_urlsafe(24)
        self.server: Sidecar = start_sidecar(vault, index_dir, *extra,
                                             env={"SIDECAR_MCP_TOKEN": self.mcp_token, **(env or {})})
        self.vault = vault
        self._ids = 0

    def __enter__(self) -> Live:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> int:
        return self.server.stop()

    @property
    def pid(self) -> int:
        return self.server.proc.pid

    @property
    def rpc_port(self) -> int:
        return self.server.rpc_port

    @property
    def mcp_port(self) -> int:
        return int(self.server.handshake["mcp_port"])

    @property
    def rpc_token(self) -> str:
        return self.server.token

    def wait_ready(self, timeout: float = 300) -> dict[str, Any]:
        return self.server.wait_ready(timeout)

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def rpc_raw(self, method: str, params: dict[str, Any]) -> Reply:
        payload = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params}
        return self.server.http("POST", "/rpc", json.dumps(payload).encode(),
                                {"Authorization": f"Bearer {self.rpc_token}", "Content-Type": JSON})

    def rpc(self, method: str, **params: Any) -> dict[str, Any]:
        """The whole JSON-RPC reply object ({result} or {error})."""
        reply = self.rpc_raw(method, params)
        if reply.status != 200 or not isinstance(reply.body, dict):
            raise AssertionError(f"RPC {method}: HTTP {reply.status} {reply.raw[:300]!r}")
        return reply.body

    def mcp_raw(self, tool: str, arguments: dict[str, Any]) -> Reply:
        payload = {"jsonrpc": "2.0", "id": self._next_id(), "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}
        return self.server.http("POST", "/mcp", json.dumps(payload).encode(),
                                {"Authorization": f"Bearer {self.mcp_token}", "Content-Type": JSON,
                                 "Accept": MCP_ACCEPT}, port=self.mcp_port)

    def mcp(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """{"ok": structuredContent} or {"error": the tool's error object} (or the protocol error)."""
        reply = self.mcp_raw(tool, arguments)
        if reply.status != 200 or not isinstance(reply.body, dict):
            raise AssertionError(f"MCP {tool}: HTTP {reply.status} {reply.raw[:300]!r}")
        return mcp_outcome(reply.body)


def mcp_outcome(body: dict[str, Any]) -> dict[str, Any]:
    if "error" in body:
        return {"error": {"protocol": body["error"]}}
    result = body.get("result") or {}
    if result.get("isError"):
        text = "".join(c.get("text", "") for c in result.get("content", []))
        try:
            return {"error": json.loads(text).get("error")}
        except ValueError:
            return {"error": {"text": text}}
    return {"ok": result.get("structuredContent")}


def write_json(out: Path, name: str, data: Any) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    return path


def main_for(run: Any, argv: Sequence[str] | None = None) -> int:
    """The command line every suite shares: --quick, --out DIR; exit 1 when anything failed."""
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the fast subset")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    args = parser.parse_args(argv)
    result: Result = run(quick=args.quick, out=args.out)
    write_json(args.out, f"{result.suite}.json", result.to_json())
    say(f"{result.suite}: {'PASS' if result.ok else 'FAIL'} {json.dumps(result.figures, default=str)}")
    for failure in result.failures[:30]:
        say(f"  - {failure}")
    return 0 if result.ok else 1

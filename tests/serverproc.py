"""Start the real `sidecar serve` in a child process and talk to it over HTTP (stdlib client)."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Reply:
    status: int
    body: Any
    raw: bytes


@dataclass
class Sidecar:
    proc: subprocess.Popen[bytes]
    handshake: dict[str, Any]
    token: str
    stderr_path: Path
    _ids: int = field(default=0)

    @property
    def rpc_port(self) -> int:
        return int(self.handshake["rpc_port"])

    def http(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
             port: int | None = None, host: str | None = "default", timeout: float = 30) -> Reply:
        port = port or self.rpc_port
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host == "default":
            conn.putheader("Host", f"127.0.0.1:{port}")
        elif host is not None:
            conn.putheader("Host", host)
        for key, value in (headers or {}).items():
            conn.putheader(key, value)
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body or b"")
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return Reply(resp.status, parsed, raw)

    def rpc(self, method: str, **params: Any) -> Any:
        self._ids += 1
        payload = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        reply = self.http("POST", "/rpc", json.dumps(payload).encode(),
                          {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        assert reply.status == 200, reply.raw
        return reply.body

    def call(self, method: str, **params: Any) -> Any:
        body = self.rpc(method, **params)
        assert "result" in body, body
        return body["result"]

    def wait_until(self, predicate: Any, timeout: float = 30.0, what: str = "condition") -> Any:
        """Poll the live server until predicate(status) is truthy (bounded; no fixed sleeps)."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        raise AssertionError(f"timed out waiting for {what}; stderr tail:\n{self.stderr_tail()}")

    def wait_ready(self, timeout: float = 60.0) -> dict[str, Any]:
        def ready() -> Any:
            status = self.call("status")
            return status if status["complete"] and not status["building"] else None
        return self.wait_until(ready, timeout, "the initial index")  # type: ignore[no-any-return]

    def stderr_tail(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode


def start_sidecar(vault: Path, index_dir: Path, *extra: str, token: str | None = None,
                  env: dict[str, str] | None = None) -> Sidecar:
    token = token or secrets.token_urlsafe(24)
    stderr_path = index_dir.parent / f"sidecar-{secrets.token_hex(4)}.stderr"
    index_dir.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, "SIDECAR_RPC_TOKEN": token, "HF_HUB_OFFLINE": "1", **(env or {})}
    cmd = [sys.executable, "-m", "sidecar", "serve", "--vault", str(vault), "--index", str(index_dir),
           "--rpc-port", "0", *extra]
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=full_env)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the one handshake line; blocks until the server is listening
    if not line:
        proc.wait(timeout=10)
        raise AssertionError(f"no handshake; exit {proc.returncode}; stderr:\n{stderr_path.read_text()}")
    return Sidecar(proc, json.loads(line), token, stderr_path)

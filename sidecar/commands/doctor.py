"""`sidecar doctor`: check every moving part and say how to fix what is wrong."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sidecar.config import MCP_TOKEN_ENV, Settings, env_text


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # "ok", "warn" or "fail"
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"name": self.name, "state": self.state, "detail": self.detail, "fix": self.fix}


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info < (3, 11):  # noqa: UP036  (doctor must explain, not crash, on an old Python)
        return Check("python", "fail", f"Python {version}", "install Python 3.11 or newer")
    return Check("python", "ok", f"Python {version} at {sys.executable}")


def check_sqlite() -> Check:
    from sidecar.store.db import connect  # noqa: PLC0415
    from sidecar.store.reads import fts5_compiled  # noqa: PLC0415

    conn, backend = connect(":memory:")
    fts = fts5_compiled(conn)
    conn.close()
    if not fts:
        return Check("sqlite", "fail", backend.description, "this SQLite lacks FTS5: `pip install sqlean.py`")
    if not backend.vec_version:
        return Check("sqlite", "warn", backend.description,
                     "sqlite-vec did not load: `pip install sqlean.py sqlite-vec` (vectors still work, stored as BLOBs)")
    return Check("sqlite", "ok", backend.description)


def check_model(settings: Settings) -> Check:
    from sidecar.ingest.embed import DEFAULT_MODEL_DIR, Embedder, ModelUnavailable  # noqa: PLC0415

    started = time.perf_counter()
    try:
        embedder = Embedder.load(settings.model)
    except ModelUnavailable as exc:
        return Check("model", "fail", str(exc), "pass --model with a local Model2Vec folder, or drop --model for the embedded one")
    took = time.perf_counter() - started
    detail = f"{embedder.name} dim {embedder.dim} fingerprint {embedder.fingerprint}, loaded in {took:.2f} s"
    if settings.model is None:
        bad = _verify_sums(DEFAULT_MODEL_DIR)
        if bad:
            return Check("model", "fail", f"{detail}; files differ from SHA256SUMS: {', '.join(bad)}",
                         "reinstall vault-sidecar, or rebuild the model with `python3 build.py model`")
    return Check("model", "ok", detail)


def _verify_sums(folder: Path) -> list[str]:
    """Files that differ from SHA256SUMS; a composite model (parts.json) checks each of its parts."""
    from sidecar.ingest.embed import COMPOSITE_FILE  # noqa: PLC0415

    composite = folder / COMPOSITE_FILE
    if composite.exists():
        parts = json.loads(composite.read_text(encoding="utf-8"))["parts"]
        return [bad for part in parts for bad in _verify_sums((folder / part["folder"]).resolve())]
    sums = folder / "SHA256SUMS"
    if not sums.exists():
        return [f"{folder.name}/SHA256SUMS missing"]
    bad = []
    for line in sums.read_text().splitlines():
        if not line.strip():
            continue
        digest, name = line.split(maxsplit=1)
        path = folder / name.lstrip("*")
        if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            bad.append(f"{folder.name}/{name}")
    return bad


def check_vault(settings: Settings) -> Check:
    from sidecar.ingest.vault import Vault  # noqa: PLC0415

    if not settings.vault.is_dir():
        return Check("vault", "fail", f"{settings.vault} is not a folder", "pass --vault with your vault's folder")
    scan = Vault.for_settings(settings).scan()
    detail = f"{len(scan.notes)} notes, {len(scan.attachments)} attachments, {len(scan.skipped)} skipped"
    return Check("vault", "ok" if scan.notes else "warn", detail, None if scan.notes else "the vault has no .md notes")


def check_index(settings: Settings) -> Check:
    from sidecar.store.db import connect  # noqa: PLC0415
    from sidecar.store.reads import check_fts_integrity, integrity_check, note_count  # noqa: PLC0415

    if not settings.db_path.exists():
        return Check("index", "warn", f"no index yet at {settings.db_path}", "run `sidecar index` (or `sidecar serve`)")
    conn, _backend = connect(settings.db_path)
    try:
        integrity = integrity_check(conn)
        check_fts_integrity(conn)
        notes = note_count(conn)
    except Exception as exc:
        return Check("index", "fail", f"{settings.db_path}: {exc}", "delete the index folder and run `sidecar index --full`")
    finally:
        conn.close()
    if integrity != "ok":
        return Check("index", "fail", f"integrity check: {integrity}", "run `sidecar index --full` to rebuild")
    return Check("index", "ok", f"{notes} notes at {settings.db_path} (SQLite and FTS5 integrity ok)")


def check_ports() -> Check:
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
    except OSError as exc:
        return Check("ports", "fail", f"cannot bind 127.0.0.1: {exc}", "check the loopback interface and firewall")
    return Check("ports", "ok", "can listen on 127.0.0.1 (serve picks free ports with --rpc-port 0 --mcp-port 0)")


def check_tokens() -> Check:
    from sidecar.serve.tokens import mcp_token_file  # noqa: PLC0415

    path = mcp_token_file()
    if env_text(MCP_TOKEN_ENV):
        return Check("tokens", "ok", f"MCP token from {MCP_TOKEN_ENV}")
    if not path.exists():
        return Check("tokens", "ok", f"MCP token will be created (0600) at {path} on first serve")
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check("tokens", "fail", f"{path} is readable by others (mode {oct(mode)})", f"chmod 600 {path}")
    return Check("tokens", "ok", f"MCP token file {path} (mode 0600)")


def check_watcher(settings: Settings) -> Check:
    limit_file = Path("/proc/sys/fs/inotify/max_user_watches")
    if not limit_file.exists():
        return Check("watcher", "ok", "native file events (periodic reconcile as a safety net)")
    limit = int(limit_file.read_text().strip() or 0)
    folders = sum(1 for _root, dirs, _files in os.walk(settings.vault) for _ in dirs) + 1
    if folders > limit * 0.8:
        return Check("watcher", "warn", f"{folders} folders vs inotify limit {limit}",
                     "raise fs.inotify.max_user_watches; until then changes are found by the periodic reconcile")
    return Check("watcher", "ok", f"{folders} folders to watch, inotify limit {limit}")


def run_checks(settings: Settings) -> list[Check]:
    checks: list[Callable[[], Check]] = [
        check_python, check_sqlite, lambda: check_model(settings), lambda: check_vault(settings),
        lambda: check_index(settings), check_ports, check_tokens, lambda: check_watcher(settings),
    ]
    out = []
    for check in checks:
        try:
            out.append(check())
        except Exception as exc:  # a broken check reports itself instead of hiding the others
            out.append(Check(getattr(check, "__name__", "check"), "fail", f"{type(exc).__name__}: {exc}"))
    return out


def checks_text(checks: list[Check]) -> str:
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}
    return "\n".join(f"[{marks[c.state]}] {c.name}: {c.detail}" + (f"\n       fix: {c.fix}" if c.fix else "")
                     for c in checks)

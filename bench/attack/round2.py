#!/usr/bin/env python3
"""The second attack round's findings (issue 14), each replayed against the real CLI and `sidecar serve`.

    python bench/attack/round2.py [--quick] [--out DIR]

Cases: a 1.9 MB heading (index size against note size), a FIFO in place of a note (both ports keep
answering), NFD ignore rules, hard links to outside/.obsidian/ignored files, the six secret kinds and
a secret in a file name, file modes under umask 022, a JSON-RPC batch, wrong param types, trickling
clients on both ports, and the link graph after a run stopped mid-way.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import JSON, Live, Result, main_for, run_sidecar, say, table, workdir

CANARY = "ROUNDTWOCANARY"
SECRETS = {
    "discord": "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdEFGHijklMNOPqrstUVWXyz0123456789",
    "mailgun": "key-3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "azure_sas": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl%3D",
    "age": "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3JN54KHCE",
    "atlassian": "ATATT3xFfGF0" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ" * 6,
    "password": "Otter-wsnE37-93",
}
NAME_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ2c4D"


def build_vault(root: Path, outside: Path, heading_chars: int) -> None:
    (root / ".obsidian").mkdir(parents=True)
    nfd = unicodedata.normalize("NFD", "é")
    (root / f"Priv{nfd}").mkdir()
    (root / f"Priv{nfd}" / "p.md").write_text(f"# P\n\n{CANARY}nfd\n")
    (root / ".indexignore").write_text(f"Priv{unicodedata.normalize('NFC', 'é')}/\nIgnored/\n")
    (root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": [f"/R{nfd}gex/"]}))
    (root / "Régex").mkdir()
    (root / "Régex" / "z.md").write_text(f"# Z\n\n{CANARY}regex\n")
    (root / "Ignored").mkdir()
    (root / "Ignored" / "i.md").write_text(f"# I\n\n{CANARY}ignored\n")
    (root / ".obsidian" / "w.md").write_text(f"# W\n\n{CANARY}obsidian\n")
    outside.write_text(f"# O\n\n{CANARY}outside\n")
    for name, target in (("h-out.md", outside), ("h-ign.md", root / "Ignored" / "i.md"),
                         ("h-obs.md", root / ".obsidian" / "w.md")):
        os.link(target, root / name)
    (root / "Heading.md").write_text("# " + "heading " * (heading_chars // 8) + "\n\nbody\n")
    lines = [f"{kind} {value}" for kind, value in SECRETS.items() if kind not in ("azure_sas", "password")]
    lines += [f"https://x.blob.core.windows.net/c?sv=2022-11-02&sig={SECRETS['azure_sas']}",
              f"the wifi password is {SECRETS['password']}"]
    (root / "Secrets.md").write_text("# Secrets\n\n" + "\n".join(lines) + "\n")
    (root / f"{NAME_TOKEN}.md").write_text("# Named\n")
    for i in range(30):
        (root / f"n{i}.md").write_text(f"# N{i}\n\nsee [[n{(i + 1) % 30}]] sourdough\n")
    os.mkfifo(root / "Fifo.md")


def check_index(root: Path, index_dir: Path, result: Result, rows: list[list[Any]]) -> None:
    old = os.umask(0o022)
    try:
        proc = run_sidecar("index", "--vault", str(root), "--index", str(index_dir), "--json", timeout=300)
    finally:
        os.umask(old)
    if proc.returncode != 0:
        result.fail(f"index exited {proc.returncode}: {proc.stderr[-300:]}")
        return
    db = index_dir / "index.sqlite3"
    ratio = db.stat().st_size / (root / "Heading.md").stat().st_size
    result.figures["heading_index_ratio"] = round(ratio, 2)
    size = (root / "Heading.md").stat().st_size
    rows.append([f"a {size / 1e6:.1f} MB heading", f"index {db.stat().st_size / 1e6:.1f} MB = {ratio:.1f}x the note"])
    if ratio > 5:
        result.fail(f"a 1.9 MB heading made an index {ratio:.1f}x the note")
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in (index_dir, db)}
    rows.append(["modes under umask 022", json.dumps(modes)])
    if modes != {index_dir.name: "0o700", db.name: "0o600"}:
        result.fail(f"index modes {modes}")
    raw = db.read_bytes() + (db.with_name(db.name + "-wal").read_bytes() if db.with_name(db.name + "-wal").exists() else b"")
    leaked = [k for k, v in SECRETS.items() if v.encode() in raw] + (["file name"] if NAME_TOKEN.encode() in raw else [])
    leaked += [c for c in ("nfd", "regex", "outside", "ignored", "obsidian") if f"{CANARY}{c}".encode() in raw]
    result.figures["leaks_in_index"] = len(leaked)
    rows.append(["secrets, names, canaries in the index file", ", ".join(leaked) or "none"])
    for item in leaked:
        result.fail(f"in the index file: {item}")


def check_serve(root: Path, index_dir: Path, result: Result, rows: list[list[Any]], quick: bool) -> None:
    with Live(root, index_dir, "--no-parent-watch") as live:
        live.wait_ready(300)
        answers = [live.rpc("search", query=q) for q in (CANARY, "sourdough", "Fifo")]
        answers += [live.mcp("read_note", path=p) for p in ("Fifo.md", "h-out.md", "Régex/z.md", "Privé/p.md")]
        answers += [live.rpc("related", path="Heading.md")]
        text = json.dumps(answers, ensure_ascii=False)
        leaks = [c for c in ("nfd", "regex", "outside", "ignored", "obsidian") if f"{CANARY}{c}" in text]
        leaks += [k for k, v in SECRETS.items() if v in text] + (["file name"] if NAME_TOKEN in text else [])
        result.figures["leaks_served"] = len(leaks)
        rows.append(["served with a FIFO at Fifo.md (search, read_note, related)", ", ".join(leaks) or "nothing forbidden"])
        for leak in leaks:
            result.fail(f"served: {leak}")
        related_bytes = len(json.dumps(answers[-1]))
        rows.append(["related for the long-heading note", f"{related_bytes:,} bytes"])
        if related_bytes > 200_000:
            result.fail(f"related answered {related_bytes:,} bytes")
        check_protocol(live, result, rows)
        check_trickle(live, result, rows, 8 if quick else 200)


def check_protocol(live: Live, result: Result, rows: list[list[Any]]) -> None:
    batch = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "search", "params": {"query": "x"}} for i in range(10_000)])
    reply = live.server.http("POST", "/rpc", batch.encode(), {"Authorization": f"Bearer {live.rpc_token}",
                                                                "Content-Type": JSON})
    code = (reply.body or {}).get("error", {}).get("code") if isinstance(reply.body, dict) else None
    rows.append(["batch of 10,000 searches", f"error {code}"])
    if code != -32600:
        result.fail(f"a batch answered {reply.raw[:100]!r}")
    wrong = [("search", {"query": "x", "filters": {"modified_since": "abc"}}), ("related", {"cursor_heading": 7}),
             ("note.links", {"path": ["a"]}), ("health", {"sections": "orphans"}),
             ("search", {"query": "x", "filters": {"folder": "f" * 100_000}}),
             ("search", {"query": "x", "filters": {"exclude_terms": ["w"] * 20_000}})]
    codes = [live.rpc(m, **p).get("error", {}).get("code") for m, p in wrong]
    rows.append(["wrong param types", f"{codes.count(-32602)}/{len(codes)} invalid params"])
    result.figures["wrong_types_invalid_params"] = f"{codes.count(-32602)}/{len(codes)}"
    if codes.count(-32602) != len(codes):
        result.fail(f"wrong types answered {codes}")


def check_trickle(live: Live, result: Result, rows: list[list[Any]], count: int) -> None:
    for label, port in (("rpc", live.rpc_port), ("mcp", live.mcp_port)):
        socks = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
            socks.append(sock)
        started = time.monotonic()
        served = "result" in live.rpc("status")
        open_after = 0
        for sock in socks:
            sock.settimeout(max(0.1, 40 - (time.monotonic() - started)))
            try:
                while sock.recv(4096):
                    pass
            except TimeoutError:
                open_after += 1
            except OSError:
                pass
            sock.close()
        took = time.monotonic() - started
        result.figures[f"{label}_trickling_left_open"] = open_after
        rows.append([f"{count} trickling clients ({label})", f"all dropped within {took:.0f} s; status served: {served}"])
        if open_after or not served:
            result.fail(f"{label}: {open_after} trickling connections still open after 40 s; served={served}")


def check_links_after_stop(root: Path, index_dir: Path, result: Result, rows: list[list[Any]]) -> None:
    from sidecar.config import Settings  # noqa: PLC0415
    from sidecar.core import VaultIndex  # noqa: PLC0415

    core = VaultIndex(Settings(vault=root, index_dir=index_dir, notes_per_transaction=5), load_model=False)
    try:
        before = core.reader().execute("SELECT count(*) FROM links WHERE target_id IS NOT NULL").fetchone()[0]
        import threading  # noqa: PLC0415

        cancel = threading.Event()
        core.index(full=True, cancel=cancel, progress=lambda p: cancel.set() if p.phase == "notes" and p.done >= 10 else None)
        after = core.reader().execute("SELECT count(*) FROM links WHERE target_id IS NOT NULL").fetchone()[0]
        complete = core.status()["complete"]
    finally:
        core.close()
    result.figures["links_resolved_after_stopped_rebuild"] = f"{after}/{before}"
    rows.append(["full rebuild stopped mid-way", f"{after}/{before} links resolved; status complete={complete}"])
    if after != before:
        result.fail(f"a rebuild stopped mid-way left {after}/{before} links resolved")


def run(quick: bool = False, out: Path | None = None) -> Result:
    result = Result("round2")
    rows: list[list[Any]] = []
    with workdir("round2") as base:
        root = base / "vault"
        root.mkdir()
        build_vault(root, base / "outside.md", 300_000 if quick else 1_900_000)
        check_index(root, base / "idx", result, rows)
        check_serve(root, base / "idx", result, rows, quick)
        check_links_after_stop(root, base / "idx", result, rows)
    print(table(["case", "outcome"], rows))
    say(f"round2: {len(rows)} cases")
    result.figures["cases"] = len(rows)
    return result


if __name__ == "__main__":
    raise SystemExit(main_for(run))

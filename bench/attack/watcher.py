#!/usr/bin/env python3
"""Watcher convergence: bursts of file operations against a running `sidecar serve`.

    python bench/attack/watcher.py [--quick] [--out DIR] [--runs N] [--ops N]

Each run fires a burst of OPS operations in a few seconds, like a git checkout: creates, edits
(same size on purpose: a same-length edit within one timestamp tick is the hard case), renames,
deletes, editor-style atomic saves (write a temp file, rename it over the note) and files deleted
right after they were written (deleted while the indexer reads them). Every file version carries
a unique token. Then the index must match the disk within the debounce + reconcile interval plus
the time to index the changes: the same note set (index database vs disk), every note's content
hash equal to the file's, a sample of current tokens findable by search, stale tokens not, and
`status` counting the same number of notes.
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Live, Result, percentile, say, table, workdir, write_json

from sidecar.ingest.vault import UnreadableNote, decode_note
from sidecar.store.db import connect
from sidecar.store.indexer import content_digest

DEBOUNCE_S = 0.2


def token() -> str:
    return "VER" + secrets.token_hex(6).upper()  # always 15 characters: edits keep the file size


def body(tok: str, n: int) -> str:
    return f"# Note {n}\n\nversion token {tok}\nfiller text about the burst test\n"


def disk_state(vault: Path) -> dict[str, str]:
    out = {}
    for path in vault.rglob("*.md"):
        rel = path.relative_to(vault).as_posix()
        if any(p.startswith(".") for p in rel.split("/")):
            continue
        try:
            out[rel] = content_digest(decode_note(path.read_bytes()).text)
        except (OSError, UnreadableNote):
            continue
    return out


def index_state(db: Path) -> dict[str, str]:
    conn, _backend = connect(db, readonly=True)
    try:
        return dict(conn.execute("SELECT path, content_hash FROM notes").fetchall())
    finally:
        conn.close()


class Burst:
    def __init__(self, vault: Path, rng: random.Random) -> None:
        self.vault = vault
        self.rng = rng
        self.live: dict[str, str] = {}  # path -> current token
        self.stale: list[str] = []
        self.counter = 0
        self.counts: dict[str, int] = {}

    def _write(self, rel: str, tok: str) -> None:
        path = self.vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        self.counter += 1
        path.write_text(body(tok, self.counter % 1000), encoding="utf-8")

    def op(self) -> None:
        kinds = ["create", "edit", "atomic", "rename", "delete", "vanish"]
        weights = [3, 4, 2, 1, 1, 1] if len(self.live) > 50 else [10, 1, 1, 0, 0, 1]
        kind = self.rng.choices(kinds, weights)[0]
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "create" or not self.live:
            rel = f"Burst/d{self.rng.randrange(20)}/n{secrets.token_hex(4)}.md"
            self.live[rel] = token()
            self._write(rel, self.live[rel])
            return
        rel = self.rng.choice(list(self.live))
        if kind == "edit":
            self.stale.append(self.live[rel])
            self.live[rel] = token()
            self._write(rel, self.live[rel])
        elif kind == "atomic":
            self.stale.append(self.live[rel])
            self.live[rel] = token()
            tmp = self.vault / (rel + ".tmp~")
            tmp.write_text(body(self.live[rel], 0), encoding="utf-8")
            os.replace(tmp, self.vault / rel)
        elif kind == "rename":
            new = f"Burst/d{self.rng.randrange(20)}/r{secrets.token_hex(4)}.md"
            (self.vault / new).parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.vault / rel, self.vault / new)
            self.live[new] = self.live.pop(rel)
        elif kind == "delete":
            (self.vault / rel).unlink()
            self.stale.append(self.live.pop(rel))
        else:  # vanish: a file that exists only for a moment
            tmp_rel = f"Burst/gone-{secrets.token_hex(4)}.md"
            tok = token()
            self._write(tmp_rel, tok)
            (self.vault / tmp_rel).unlink()
            self.stale.append(tok)


def converge(live: Live, db: Path, deadline_s: float) -> tuple[float | None, list[str]]:
    """Seconds until the index matched the disk (None: never, within the deadline), and what differed last."""
    started = time.monotonic()
    problems: list[str] = []
    while time.monotonic() - started < deadline_s:
        disk = disk_state(live.vault)
        index = index_state(db)
        if disk == index:
            return time.monotonic() - started, []
        missing, extra = disk.keys() - index.keys(), index.keys() - disk.keys()
        stale = [p for p in disk.keys() & index.keys() if disk[p] != index[p]]
        problems = [f"{len(missing)} on disk not indexed (e.g. {sorted(missing)[:2]}), {len(extra)} indexed not on "
                    f"disk (e.g. {sorted(extra)[:2]}), {len(stale)} with stale content (e.g. {sorted(stale)[:2]})"]
        time.sleep(0.25)
    return None, problems


def check_search(live: Live, burst: Burst, rng: random.Random, sample: int, result: Result, run: int) -> None:
    for rel in rng.sample(sorted(burst.live), min(sample, len(burst.live))):
        hits = live.rpc("search", query=burst.live[rel], mode="lexical", limit=3)["result"]["results"]
        if [h["path"] for h in hits] != [rel]:
            result.fail(f"run {run}: token of {rel} finds {[h['path'] for h in hits]}")
    for tok in rng.sample(burst.stale, min(sample, len(burst.stale))):
        hits = live.rpc("search", query=tok, mode="lexical", limit=3)["result"]["results"]
        if hits:
            result.fail(f"run {run}: stale token {tok} still finds {[h['path'] for h in hits]}")
    status = live.rpc("status")["result"]
    if status["notes"] != len(disk_state(live.vault)):
        result.fail(f"run {run}: status says {status['notes']} notes, the disk has {len(disk_state(live.vault))}")


def run(quick: bool = False, out: Path | None = None, runs: int | None = None, ops: int | None = None,
        reconcile: float | None = None, seed: int = 11) -> Result:
    result = Result("watcher")
    runs = runs or (3 if quick else 20)
    ops = ops or (1000 if quick else 10_000)
    reconcile = reconcile or (3.0 if quick else 10.0)
    rng = random.Random(seed)
    rows: list[list[Any]] = []
    with workdir("watch") as base:
        vault = base / "vault"
        vault.mkdir()
        for i in range(100):
            (vault / f"Seed {i}.md").write_text(f"# Seed {i}\n\nseed note {i}\n")
        burst = Burst(vault, rng)
        with Live(vault, base / "index", "--no-parent-watch", "--reconcile-seconds", str(reconcile)) as live:
            live.wait_ready()
            db = base / "index" / "index.sqlite3"
            times = []
            for r in range(runs):
                started = time.perf_counter()
                for _ in range(ops):
                    burst.op()
                burst_s = time.perf_counter() - started
                # then keep editing a few notes while the index catches up (same size, random small pauses):
                # an edit landing in the same timestamp tick as the indexer's read must not be lost
                hot = rng.sample(sorted(burst.live), min(10, len(burst.live)))
                trickle_end = time.monotonic() + (1.5 if quick else 3.0)
                while time.monotonic() < trickle_end:
                    rel = rng.choice(hot)
                    if rel in burst.live:
                        burst.stale.append(burst.live[rel])
                        burst.live[rel] = token()
                        burst._write(rel, burst.live[rel])
                        burst.counts["trickle"] = burst.counts.get("trickle", 0) + 1
                    time.sleep(rng.choice((0.0, 0.001, 0.005, 0.02, 0.1)))
                # the allowance: debounce + one reconcile interval + indexing the burst (embedding ~ 1 ms a note)
                deadline = DEBOUNCE_S + reconcile + 30 + ops * 0.004
                took, problems = converge(live, db, deadline)
                if took is None:
                    result.fail(f"run {r}: no convergence within {deadline:.0f} s: {problems}")
                else:
                    times.append(took)
                check_search(live, burst, rng, 20 if quick else 60, result, r)
                rows.append([r, ops, f"{burst_s:.1f}", len(burst.live), "-" if took is None else f"{took:.1f}",
                             "ok" if took is not None else "FAIL"])
                say(f"run {r}: {rows[-1]}")
            result.figures.update(runs=runs, ops_per_run=ops, reconcile_s=reconcile, converged=len(times),
                                  converge_p50_s=round(percentile(times, 50), 2),
                                  converge_max_s=round(max(times), 2) if times else None, op_mix=burst.counts)
    print(table(["run", "ops", "burst s", "notes on disk", "converged after s", "result"], rows))
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--ops", type=int)
    parser.add_argument("--reconcile", type=float)
    args = parser.parse_args()
    result = run(args.quick, args.out, args.runs, args.ops, args.reconcile)
    write_json(args.out, "watcher.json", result.to_json())
    say(f"watcher: {'PASS' if result.ok else 'FAIL'} {result.figures}")
    for failure in result.failures[:30]:
        say(f"  - {failure}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

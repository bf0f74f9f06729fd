#!/usr/bin/env python3
"""Crash safety: `kill -9` at random moments during full and incremental `sidecar index` runs.

    python bench/attack/crash.py [--quick] [--out DIR] [--files N] [--kills N]

A generated vault (bench/generate_vault.py) has two states, A and B (B: some notes edited,
some deleted, some renamed, some added). Clean rebuilds of A and B are the references. Each
round either runs `sidecar index --full` or switches the vault to the other state and runs
`sidecar index`, and kills the process with SIGKILL after a random delay. After each kill:
`PRAGMA integrity_check` and the FTS5 integrity check must pass; then `sidecar index` runs to
the end and the index must equal the clean rebuild of the current state: notes (path, content
hash), chunks (path, hash), links (with what they resolve to), tags, findings, skipped files,
and one vector per chunk.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Result, run_sidecar, say, sidecar_cmd, table, workdir, write_json

sys.path.insert(0, str(ROOT / "bench"))
from generate_vault import generate

from sidecar.store.db import connect
from sidecar.store.vectors import BLOB_TABLE, VEC0_TABLE

State = dict[str, Any]


def make_states(vault: Path, files: int, seed: int) -> tuple[dict[str, bytes], dict[str, bytes]]:
    generate(vault, files, seed, vault.parent / "queries.json")
    a = {p.relative_to(vault).as_posix(): p.read_bytes() for p in vault.rglob("*.md")}
    rng = random.Random(seed)
    b = dict(a)
    paths = sorted(a)
    rng.shuffle(paths)
    n = max(2, len(paths) // 20)  # 10 % edited, 5 % each deleted, renamed and added: seconds of work to kill
    edited, deleted, renamed = paths[:n * 2], paths[n * 2:n * 3], paths[n * 3:n * 4]
    for rel in edited:
        b[rel] = a[rel] + f"\n\nEdited in state B: crash-test line {rng.random()} [[{paths[-1][:-3]}]] #edited\n".encode()
    for rel in deleted:
        del b[rel]
    for rel in renamed:
        b[rel.replace(".md", " (moved).md")] = b.pop(rel)
    for i in range(n):
        b[f"Added/New note {i}.md"] = f"# New {i}\n\nAdded in state B, links to [[{paths[i][:-3]}]]. #added\n".encode()
    return a, b


def switch(vault: Path, current: dict[str, bytes], target: dict[str, bytes]) -> None:
    for rel in current.keys() - target.keys():
        (vault / rel).unlink()
    for rel, data in target.items():
        if current.get(rel) != data:
            path = vault / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def open_db(db: Path) -> Any:
    conn, _backend = connect(db)
    return conn


def integrity(db: Path) -> list[str]:
    """Problems found by SQLite's and FTS5's own checks (empty when fine)."""
    problems = []
    conn = open_db(db)
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if rows != ["ok"]:
            problems.append(f"integrity_check: {rows[:5]}")
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
        except Exception as exc:
            problems.append(f"fts5 integrity-check: {exc}")
    finally:
        conn.close()
    return problems


def generation(db: Path) -> str | None:
    """The index generation (moves on every commit), or None before the first one."""
    conn = open_db(db)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return None if row is None else str(row[0])
    finally:
        conn.close()


def state(db: Path) -> State:
    conn = open_db(db)
    try:
        q = conn.execute
        tables = {r[0] for r in q("SELECT name FROM sqlite_master")}
        vec = VEC0_TABLE if VEC0_TABLE in tables else BLOB_TABLE if BLOB_TABLE in tables else None
        vector_ids = {r[0] for r in q(f"SELECT rowid FROM {vec}")} if vec else set()
        chunk_ids = {r[0] for r in q("SELECT id FROM chunks")}
        return {
            "notes": sorted(q("SELECT path, content_hash FROM notes").fetchall()),
            "chunks": Counter(q("SELECT n.path, c.hash FROM chunks c JOIN notes n ON n.id = c.note_id").fetchall()),
            "links": Counter(q("SELECT n.path, l.target_raw, l.anchor, l.kind, l.line, l.target_path, l.ambiguous,"
                               " t.path FROM links l JOIN notes n ON n.id = l.source_id"
                               " LEFT JOIN notes t ON t.id = l.target_id").fetchall()),
            "tags": Counter(q("SELECT n.path, t.tag FROM tags t JOIN notes n ON n.id = t.note_id").fetchall()),
            "findings": Counter(q("SELECT n.path, f.kind, f.line FROM findings f JOIN notes n ON n.id = f.note_id")
                                .fetchall()),
            "skipped": sorted(q("SELECT path, reason FROM skipped").fetchall()),
            "chunks_without_vector": len(chunk_ids - vector_ids),
            "vectors_without_chunk": len(vector_ids - chunk_ids),
        }
    finally:
        conn.close()


def diff(got: State, want: State) -> list[str]:
    out = []
    for key in ("notes", "chunks", "links", "tags", "findings", "skipped"):
        if got[key] != want[key]:
            if isinstance(got[key], Counter):
                extra, missing = got[key] - want[key], want[key] - got[key]
            else:
                extra, missing = set(got[key]) - set(want[key]), set(want[key]) - set(got[key])
            out.append(f"{key}: {len(list(extra))} extra (e.g. {list(extra)[:2]}), "
                       f"{len(list(missing))} missing (e.g. {list(missing)[:2]})")
    for key in ("chunks_without_vector", "vectors_without_chunk"):
        if got[key]:
            out.append(f"{key}: {got[key]}")
    return out


def index_args(vault: Path, index_dir: Path, full: bool) -> list[str]:
    return ["index", "--vault", str(vault), "--index", str(index_dir), "--json", *(["--full"] if full else [])]


def timed_index(vault: Path, index_dir: Path, full: bool = False) -> float:
    started = time.perf_counter()
    done = run_sidecar(*index_args(vault, index_dir, full))
    if done.returncode != 0:
        raise RuntimeError(f"sidecar index failed: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def kill_during(vault: Path, index_dir: Path, full: bool, delay: float) -> bool:
    """Start `sidecar index`, SIGKILL it after `delay` seconds; True when it was still running."""
    proc = subprocess.Popen(sidecar_cmd(*index_args(vault, index_dir, full)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        proc.wait(timeout=delay)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def run(quick: bool = False, out: Path | None = None, files: int | None = None, kills: int | None = None,
        seed: int = 7) -> Result:
    result = Result("crash")
    files = files or (300 if quick else 3000)
    kills = kills or (6 if quick else 50)
    rng = random.Random(seed)
    with workdir("crash") as base:
        vault = base / "vault"
        a, b = make_states(vault, files, seed)
        say(f"vault of {len(a)} notes (state B: {len(b)} notes); building the references")
        ref_full = timed_index(vault, base / "ref-a")
        refs = {"A": state(base / "ref-a" / "index.sqlite3")}
        switch(vault, a, b)
        timed_index(vault, base / "ref-b")
        refs["B"] = state(base / "ref-b" / "index.sqlite3")
        switch(vault, b, a)
        index_dir = base / "index"
        shutil.copytree(base / "ref-a", index_dir)
        current = "A"
        switch(vault, a, b)
        incr = timed_index(vault, index_dir)
        current = "B"
        say(f"clean full index {ref_full:.1f} s, incremental A->B {incr:.1f} s")
        result.figures.update(notes=len(a), full_index_s=round(ref_full, 1), incremental_s=round(incr, 1))
        rows = []
        killed = mid_write = 0
        for i in range(kills):
            full = i % 2 == 0
            if not full:  # move to the other state, so the run has real work to do
                target = "A" if current == "B" else "B"
                switch(vault, a if current == "A" else b, a if target == "A" else b)
                current = target
            span = ref_full if full else incr
            delay = rng.uniform(min(1.0, span / 2), span * 1.1)  # about 1 s goes to imports and the model
            db = index_dir / "index.sqlite3"
            before = generation(db)
            was_running = kill_during(vault, index_dir, full, delay)
            killed += was_running
            wrote = generation(db) != before
            mid_write += was_running and wrote
            problems = integrity(db)
            for p in problems:
                result.fail(f"kill {i} ({'full' if full else 'incremental'} at {delay:.2f} s): {p}")
            timed_index(vault, index_dir)
            problems2 = integrity(db)
            differences = diff(state(db), refs[current])
            for p in problems2:
                result.fail(f"kill {i}: after the restart: {p}")
            for d in differences:
                result.fail(f"kill {i} ({'full' if full else 'incremental'} at {delay:.2f} s, state {current}): "
                            f"after the restart the index differs from a clean rebuild: {d}")
            rows.append([i, "full" if full else "incremental", f"{delay:.2f}",
                         ("killed after writing" if wrote else "killed before writing") if was_running else "finished",
                         "ok" if not problems else "FAIL", "equal" if not (differences or problems2) else "DIFFERS"])
            say(f"kill {i}: {rows[-1]}")
        result.figures.update(rounds=kills, killed_mid_run=killed, killed_after_writing=mid_write,
                              integrity_failures=sum(r[4] != "ok" for r in rows),
                              restart_not_equal=sum(r[5] != "equal" for r in rows))
        print(table(["round", "run", "kill at s", "process", "integrity", "after restart"], rows))
        if out is not None:
            write_json(out, "crash-rounds.json", rows)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    parser.add_argument("--files", type=int)
    parser.add_argument("--kills", type=int)
    args = parser.parse_args()
    result = run(args.quick, args.out, args.files, args.kills)
    write_json(args.out, "crash.json", result.to_json())
    say(f"crash: {'PASS' if result.ok else 'FAIL'} {result.figures}")
    for failure in result.failures[:30]:
        say(f"  - {failure}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

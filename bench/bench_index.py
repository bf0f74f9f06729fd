#!/usr/bin/env python3
"""Indexing costs for one vault: full index, incremental runs, edit-to-searchable.

    python bench/bench_index.py VAULT [--index DIR] [--name NAME] [--json OUT] [--copy]

Every measurement runs in a fresh subprocess of this Python:
- full index: `sidecar index --full` from an empty index folder; wall time, the run's own time,
  peak RSS of that child (os.wait4 / getrusage RUSAGE_CHILDREN), index size (db + wal + shm),
  notes and chunks;
- cold incremental: `sidecar index` with nothing changed (process start + model load + scan);
- warm incremental (one child holding a loaded VaultIndex, as `serve` does): nothing changed,
  1 edited note, 100 edited notes (edit = append a paragraph), and "edit to searchable": append
  a paragraph with a unique word to one note, index, search the word, until the note is found.

The vault is never written when it is not ours: a read-only vault, one under a `shared` folder,
or any vault with --copy is copied to a temporary folder first. A writable vault (a generated
one) is edited in place and every edited note is restored (and re-indexed) at the end.
The index goes to bench/out/index-NAME unless --index says otherwise (never inside the vault).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

EDIT_TEXT = ("\n\nBenchmark edit {n}: an appended paragraph, as when someone adds a thought at the end of a "
             "note. It mentions a few ordinary words so that nothing about it is special.\n")


def vault_name(vault: Path) -> str:
    return vault.parent.name if vault.name == "vault" else vault.name


def notes_in(vault: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(vault):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [Path(root) / f for f in sorted(files) if f.endswith(".md")]
    return found


def needs_copy(vault: Path) -> bool:
    return not os.access(vault, os.W_OK) or "shared" in vault.resolve().parts


def copy_vault(vault: Path) -> Path:
    dest = Path(tempfile.mkdtemp(prefix="bench-vault-")) / vault_name(vault)
    shutil.copytree(vault, dest, copy_function=shutil.copyfile, symlinks=True)  # no read-only modes
    for root, dirs, files in os.walk(dest):
        for name in dirs + files:
            p = Path(root) / name
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
    dest.chmod(0o755)
    return dest


def run_child(cmd: list[str]) -> tuple[int, float, int, str, str]:
    """(exit code, wall seconds, peak RSS bytes of that child, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, wall, usage.ru_maxrss * 1024, out.read().decode(), err.read().decode()


def file_sizes(index_dir: Path) -> dict[str, int]:
    db = index_dir / "index.sqlite3"
    return {k: (Path(f"{db}{s}").stat().st_size if Path(f"{db}{s}").exists() else 0)
            for k, s in (("db", ""), ("wal", "-wal"), ("shm", "-shm"))}


def sidecar_cmd(python: str, vault: Path, index_dir: Path, *extra: str) -> list[str]:
    return [python, "-m", "sidecar", "index", "--vault", str(vault), "--index", str(index_dir), "--json", *extra]


def full_index(python: str, vault: Path, index_dir: Path, profile: Path | None) -> dict[str, Any]:
    shutil.rmtree(index_dir, ignore_errors=True)
    cmd = sidecar_cmd(python, vault, index_dir, "--full")
    if profile is not None:
        cmd = [python, "-m", "cProfile", "-o", str(profile), *cmd[1:]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    code, wall, rss, out, err = run_child(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if code != 0:
        raise SystemExit(f"full index failed ({code}):\n{err[-3000:]}")
    data = json.loads(out)
    sizes = file_sizes(index_dir)
    status = data["status"]
    return {
        "wall_s": wall, "run_s": data["report"]["seconds"], "peak_rss_bytes": rss,
        "rusage_children_maxrss_bytes": max(before, after) * 1024,
        "index_bytes": sizes["db"] + sizes["wal"] + sizes["shm"], "db_bytes": sizes["db"], "wal_bytes": sizes["wal"],
        "notes": status["notes"], "chunks": status["chunks"], "chunks_with_vectors": status["chunks_with_vectors"],
        "skipped": len(status["skipped"]), "backend": status["backend"], "complete": status["complete"],
    }


def cold_incremental(python: str, vault: Path, index_dir: Path) -> dict[str, Any]:
    code, wall, rss, out, err = run_child(sidecar_cmd(python, vault, index_dir))
    if code != 0:
        raise SystemExit(f"incremental index failed ({code}):\n{err[-3000:]}")
    data = json.loads(out)
    return {"wall_s": wall, "run_s": data["report"]["seconds"], "peak_rss_bytes": rss}


# ---- the warm child -------------------------------------------------------------------------
def warm_child(vault: Path, index_dir: Path, seed: int) -> dict[str, Any]:
    """Runs inside a fresh subprocess: one loaded VaultIndex, as the server holds it."""
    from sidecar.config import from_env  # noqa: PLC0415
    from sidecar.core import VaultIndex  # noqa: PLC0415

    t0 = time.perf_counter()
    index = VaultIndex(from_env(vault, index_dir=index_dir))
    opened = time.perf_counter() - t0
    index.search("warm up the snapshot", limit=5)
    rng = random.Random(seed)
    notes = notes_in(vault)
    originals: dict[Path, bytes] = {}

    def append(path: Path, text: str) -> None:
        originals.setdefault(path, path.read_bytes())
        with path.open("a", encoding="utf-8") as fh:
            fh.write(text)

    def timed_index() -> tuple[float, dict[str, Any]]:
        start = time.perf_counter()
        report = index.index()
        return time.perf_counter() - start, report.to_json()

    result: dict[str, Any] = {"open_s": opened}
    noop = [timed_index()[0] for _ in range(3)]
    result["noop_s"] = statistics.median(noop)
    sample = rng.sample(notes, min(len(notes), 156))
    append(sample[0], EDIT_TEXT.format(n=0))
    result["edit1_s"], rep1 = timed_index()
    result["edit1_updated"] = rep1["updated"]
    for n, path in enumerate(sample[1:101], start=1):
        append(path, EDIT_TEXT.format(n=n))
    result["edit100_s"], rep100 = timed_index()
    result["edit100_updated"] = rep100["updated"]
    result.update(edit_to_found(index, vault, sample[101:106], rng, seed, append, lambda rel: index.index()))
    events = edit_to_found(index, vault, sample[106:156], rng, seed + 1, append, lambda rel: index.index_paths([rel]))
    result.update({k.replace("edit_to_found", "event_to_found"): v for k, v in events.items()})
    for path, data in originals.items():  # leave the vault as we found it
        path.write_bytes(data)
    result["restore_s"], rep = timed_index()
    result["restored"] = rep["updated"]
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    index.close()
    return result


def edit_to_found(index: Any, vault: Path, paths: list[Path], rng: random.Random, seed: int,
                  append: Any, reindex: Any) -> dict[str, Any]:
    """Append a new word to each note, reindex (a scan, or just that note as the watcher's events do
    now), search for the word: the time until the note is found, and its two parts."""
    found_times, index_times, search_times, misses = [], [], [], 0
    for k, path in enumerate(paths):
        word = f"zqbench{seed}x{k}w{rng.randrange(10**9)}"
        rel = path.relative_to(vault).as_posix()
        start = time.perf_counter()
        append(path, f"\n\nA fresh thought mentioning {word} for the first time.\n")
        reindex(rel)
        indexed = time.perf_counter()
        hits = index.search(word, limit=10)
        done = time.perf_counter()
        if rel not in {r["path"] for r in hits["results"]}:
            misses += 1
        found_times.append(done - start)
        index_times.append(indexed - start)
        search_times.append(done - indexed)
    ordered = sorted(found_times)
    return {"edit_to_found_s": statistics.median(found_times), "edit_to_found_max_s": max(found_times),
            "edit_to_found_p99_s": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "edit_to_found_n": len(found_times),
            "edit_to_found_index_s": statistics.median(index_times),
            "edit_to_found_search_s": statistics.median(search_times), "edit_to_found_misses": misses}


def warm_incremental(python: str, vault: Path, index_dir: Path, seed: int) -> dict[str, Any]:
    cmd = [python, str(Path(__file__).resolve()), "--warm-child", str(vault), "--index", str(index_dir),
           "--seed", str(seed)]
    code, wall, _rss, out, err = run_child(cmd)
    if code != 0:
        raise SystemExit(f"warm incremental child failed ({code}):\n{err[-3000:]}")
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    data["wall_s"] = wall
    return data


# ---- report -------------------------------------------------------------------------------
def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def ms(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s < 10 else f"{s:.1f} s"


def table(res: dict[str, Any]) -> str:
    f, c, w = res["full"], res["cold_noop"], res["warm"]
    chunks = max(1, f["chunks"])
    scaled_ref = 83e6 * chunks / 49_746
    rows = [
        ("vault", f"{res['name']} ({f['notes']:,} notes, {res['files']:,} .md files, {mb(res['vault_bytes'])})"),
        ("chunks", f"{f['chunks']:,} ({f['chunks'] / max(1, f['notes']):.2f} a note; with vectors "
                   f"{f['chunks_with_vectors']:,})"),
        ("full index, wall (fresh process)", f"{f['wall_s']:.1f} s (indexer {f['run_s']:.1f} s; "
                                             f"{f['notes'] / max(f['run_s'], 1e-9):,.0f} notes/s)"),
        ("full index, peak RSS", mb(f["peak_rss_bytes"])),
        ("index size (db + wal + shm)", f"{mb(f['index_bytes'])} (db {mb(f['db_bytes'])}, wal {mb(f['wal_bytes'])}); "
                                        f"{f['index_bytes'] / chunks:,.0f} B/chunk; "
                                        f"{f['index_bytes'] / scaled_ref:.2f}x the seeds' 83 MB scaled to this chunk count"),
        ("incremental, nothing changed, cold CLI", f"{ms(c['wall_s'])} wall (indexer {ms(c['run_s'])})"),
        ("warm: open VaultIndex (model + db)", ms(w["open_s"])),
        ("warm incremental, nothing changed", ms(w["noop_s"])),
        ("warm incremental, 1 edited note", ms(w["edit1_s"])),
        ("warm incremental, 100 edited notes", ms(w["edit100_s"])),
        ("edit -> searchable, via a scan (median of 5)",
         f"{ms(w['edit_to_found_s'])} (index {ms(w['edit_to_found_index_s'])} + search "
         f"{ms(w['edit_to_found_search_s'])}; max {ms(w['edit_to_found_max_s'])}; misses {w['edit_to_found_misses']})"),
        (f"edit -> searchable, that note only (as the watcher does; {w.get('event_to_found_n', 0)} edits)",
         f"p50 {ms(w['event_to_found_s'])} (index {ms(w['event_to_found_index_s'])} + search "
         f"{ms(w['event_to_found_search_s'])}); p99 {ms(w['event_to_found_p99_s'])}; max {ms(w['event_to_found_max_s'])}; "
         f"misses {w['event_to_found_misses']}; watcher debounce not included (bench_live.py)"),
        ("warm child peak RSS", mb(w["peak_rss_bytes"])),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--index", type=Path, help="index folder (default bench/out/index-NAME)")
    parser.add_argument("--name", help="label in the table (default: the vault folder's name)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--copy", action="store_true", help="work on a temporary copy of the vault")
    parser.add_argument("--keep-copy", action="store_true", help="do not delete the temporary copy")
    parser.add_argument("--seed", type=int, default=7, help="which notes get edited")
    parser.add_argument("--python", default=sys.executable, help="the Python that has the sidecar installed")
    parser.add_argument("--profile", type=Path, help="run the full index under cProfile, stats to this file")
    parser.add_argument("--warm-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    vault = args.vault.resolve()
    if args.warm_child:
        print(json.dumps(warm_child(vault, args.index, args.seed)))
        return 0
    if not vault.is_dir():
        parser.error(f"no vault folder at {vault}")
    name = args.name or vault_name(vault)
    index_dir = (args.index or OUT / f"index-{name}").resolve()
    if index_dir == vault or vault in index_dir.parents:
        parser.error("the index folder must not be inside the vault")
    work = copy_vault(vault) if args.copy or needs_copy(vault) else vault
    try:
        files = notes_in(work)
        res: dict[str, Any] = {"name": name, "vault": str(vault), "copied": work != vault, "index": str(index_dir),
                               "files": len(files), "vault_bytes": sum(p.stat().st_size for p in files)}
        print(f"[bench_index] {name}: full index of {len(files):,} files ...", file=sys.stderr, flush=True)
        res["full"] = full_index(args.python, work, index_dir, args.profile)
        print(f"[bench_index] {name}: incremental runs ...", file=sys.stderr, flush=True)
        res["cold_noop"] = cold_incremental(args.python, work, index_dir)
        res["warm"] = warm_incremental(args.python, work, index_dir, args.seed)
    finally:
        if work != vault and not args.keep_copy:
            shutil.rmtree(work.parent, ignore_errors=True)
    print(f"Indexing: {name}")
    print(table(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

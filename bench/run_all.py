#!/usr/bin/env python3
"""Generate the synthetic vaults, run bench_index.py, bench_search.py and bench_service.py on each, print the tables.

    python bench/run_all.py [--sizes 1700,16894] [--quick] [--hub PATH | --no-hub] [--out bench/out]

--quick is --sizes 1700 --no-hub. Vaults are generated once into OUT/vault-N (reused when the
query file says same size and seed); indexes go to OUT/index-*; figures to OUT/results-*.json
and a Markdown copy of the tables to OUT/results-*.md. The obsidian-hub evaluation vault
(../shared/eval-vaults/obsidian-hub/vault beside the repo) is only read: bench_index.py copies
it before editing. Run with the Python that has the sidecar installed (`build.py bench` does).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_vault import GENERATOR_VERSION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_HUB = ROOT.parent / "shared" / "eval-vaults" / "obsidian-hub" / "vault"
SEEDS_REF = "Seeds' reference (Apple M3 Pro): 49,746 chunks / 16,894 files: 23 ms a query, 4 min full index, " \
            "< 10 s incremental, 83 MB index."
TARGETS = "Targets (this machine): 16,894 files: full index < 60 s, peak RSS < 500 MB, index <= 83 MB scaled to " \
          "chunks; 1 edited file searchable < 0.5 s; ~50k chunks: hybrid p50 < 10 ms, p99 < 30 ms, related " \
          "(5,000-char buffer) p50 < 20 ms; ~180k chunks: hybrid p50 < 40 ms."


def say(msg: str) -> None:
    print(f"[run_all {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, check=False)
        return out.stdout.strip() or platform.processor()
    return platform.processor() or platform.machine()


def ram_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "sidecar"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + (" + uncommitted changes in sidecar/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def machine(python: str, index_dir: Path | None, vault: Path | None, commit: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": cpu_model(), "cores": os.cpu_count(), "ram_gb": round(ram_bytes() / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
        "load_avg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "commit": commit,
    }
    if index_dir is not None and vault is not None and (index_dir / "index.sqlite3").exists():
        out = subprocess.run([python, "-m", "sidecar", "status", "--json", "--vault", str(vault), "--index", str(index_dir)],
                             capture_output=True, text=True, check=False)
        try:
            status = json.loads(out.stdout)
            info["backend"] = status["backend"]
            info["sidecar"] = status["version"]
            info["model"] = status["model"]["name"]
        except (json.JSONDecodeError, KeyError):
            info["backend"] = f"unknown (sidecar status failed: {out.stderr.strip()[-200:]})"
    return info


def machine_header(m: dict[str, Any]) -> str:
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gb']} GB RAM, {m['os']}, Python {m['python']}",
             f"  backend: {m.get('backend', '?')}; sidecar {m.get('sidecar', '?')}, model {m.get('model', '?')}; "
             f"load average at start {m.get('load_avg')}; commit {m.get('commit', '?')}"]
    return "\n".join(lines)


def ensure_vault(python: str, out: Path, files: int, seed: int) -> tuple[Path, Path]:
    vault = out / f"vault-{files}"
    queries = out / f"vault-{files}.queries.json"
    if vault.is_dir() and queries.exists():
        meta = json.loads(queries.read_text())
        if (meta.get("files"), meta.get("seed"), meta.get("generator")) == (files, seed, GENERATOR_VERSION):
            say(f"reusing {vault}")
            return vault, queries
    shutil.rmtree(vault, ignore_errors=True)
    say(f"generating {files:,} notes into {vault}")
    subprocess.run([python, str(HERE / "generate_vault.py"), str(vault), "--files", str(files), "--seed", str(seed),
                    "--queries", str(queries)], check=True)
    return vault, queries


def run_script(python: str, script: str, *args: str) -> str:
    say(f"{script} {' '.join(args)}")
    proc = subprocess.run([python, str(HERE / script), *args], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{script} failed with exit code {proc.returncode}")
    return proc.stdout


def one_vault(python: str, out: Path, stamp: str, label: str, vault: Path, queries: Path | None,
              search_args: list[str]) -> dict[str, Any]:
    index_dir = out / f"index-{label}"
    idx_json = out / f"results-{stamp}-{label}-index.json"
    run_script(python, "bench_index.py", str(vault), "--index", str(index_dir), "--name", label, "--json", str(idx_json),
               "--python", python)
    srch_json = out / f"results-{stamp}-{label}-search.json"
    args = ["--vault", str(vault), "--index", str(index_dir), "--json", str(srch_json), *search_args]
    if queries is not None:
        args += ["--queries", str(queries)]
    run_script(python, "bench_search.py", *args)
    service_args = ["--vault", str(vault), "--index", str(index_dir)] + (["--queries", str(queries)] if queries else [])
    try:
        service = run_script(python, "bench_service.py", *service_args)
    except SystemExit as exc:  # keep the minutes of figures above; the reason is on stderr
        service = f"service round trips: {exc}"
    try:
        service += run_script(python, "bench_live.py", "--vault", str(vault), "--index", str(index_dir))
    except SystemExit as exc:
        service += f"\nlive edits: {exc}"
    return {"label": label, "vault": str(vault), "index_dir": str(index_dir),
            "index": json.loads(idx_json.read_text()), "search": json.loads(srch_json.read_text()),
            "service": service.rstrip()}


def summary_table(runs: list[dict[str, Any]]) -> str:
    head = (f"  {'vault':<18} {'files':>7} {'chunks':>8} {'full idx':>9} {'s/1k chunks':>11} {'RSS MB':>7} "
            f"{'index MB':>8} {'B/chunk':>8} {'edit->found':>11} {'hyb p50':>8} {'hyb p99':>8} {'lex p50':>8} "
            f"{'sem p50':>8} {'rel p50':>8} {'base hyb p50':>12}")
    lines = ["Scaling summary (times in ms unless marked; full idx = wall of a fresh `sidecar index --full`; "
             "s/1k chunks = the indexer's own seconds per 1,000 chunks)", head]
    for r in runs:
        f, w, s = r["index"]["full"], r["index"]["warm"], r["search"]
        chunks = max(1, f["chunks"])
        lines.append(
            f"  {r['label']:<18} {r['index']['files']:>7,} {f['chunks']:>8,} {f['wall_s']:>8.1f}s "
            f"{f['run_s'] / chunks * 1000:>11.3f} {f['peak_rss_bytes'] / 1e6:>7.0f} {f['index_bytes'] / 1e6:>8.1f} "
            f"{f['index_bytes'] / chunks:>8,.0f} {w['event_to_found_s'] * 1000:>11.1f} "
            f"{s['ours']['hybrid']['p50_ms']:>8.1f} {s['ours']['hybrid']['p99_ms']:>8.1f} "
            f"{s['ours']['lexical']['p50_ms']:>8.1f} {s['ours']['semantic']['p50_ms']:>8.1f} "
            f"{s['related']['p50_ms']:>8.1f} {s['baseline']['hybrid']['p50_ms']:>12.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1700,16894", help="comma-separated note counts (default 1700,16894)")
    parser.add_argument("--quick", action="store_true", help="1,700 notes only, no obsidian-hub")
    parser.add_argument("--hub", type=Path, default=DEFAULT_HUB, help="obsidian-hub vault (read only)")
    parser.add_argument("--no-hub", action="store_true", help="skip the obsidian-hub vault")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("-n", default="360", help="queries per mode for bench_search.py")
    args = parser.parse_args(argv)
    sizes = [1700] if args.quick else [int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(",") if s]
    python = sys.executable
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    search_args = ["-n", args.n]
    started = time.perf_counter()
    commit = git_commit()  # the code measured is the code at the start
    runs: list[dict[str, Any]] = []
    for files in sizes:
        vault, queries = ensure_vault(python, out, files, args.seed)
        runs.append(one_vault(python, out, stamp, f"synthetic-{files}", vault, queries, search_args))
    hub = args.hub.resolve()
    if not args.quick and not args.no_hub and hub.is_dir():
        runs.append(one_vault(python, out, stamp, "obsidian-hub", hub, None, search_args))
    elif not args.quick and not args.no_hub:
        say(f"no obsidian-hub vault at {hub}: skipped")
    first = runs[0] if runs else None
    mach = machine(python, Path(first["index_dir"]) if first else None, Path(first["vault"]) if first else None, commit)

    import bench_index  # noqa: PLC0415  (same folder; only for their table printers)
    import bench_search  # noqa: PLC0415

    blocks = [f"Vault Sidecar benchmarks, {time.strftime('%Y-%m-%d %H:%M')} ({time.perf_counter() - started:.0f} s in all)",
              machine_header(mach), SEEDS_REF, TARGETS]
    for r in runs:
        blocks += ["", f"=== {r['label']} ===", machine_header(mach), "Indexing:",
                   bench_index.table(r["index"]), bench_search.table(r["search"]), r["service"]]
    blocks += ["", summary_table(runs)]
    text = "\n".join(blocks)
    print(text)
    (out / f"results-{stamp}.md").write_text("```\n" + text + "\n```\n")
    (out / f"results-{stamp}.json").write_text(json.dumps({"machine": mach, "runs": runs}, indent=1) + "\n")
    say(f"figures in {out / f'results-{stamp}.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

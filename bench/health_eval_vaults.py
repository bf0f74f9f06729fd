"""The vault-health report on the evaluation vaults: summary per vault and how long the report takes.

For each ../shared/eval-vaults/*/vault (when present) it builds the index, or brings an existing
one up to date (bench/out/health-index/<name>, never inside the vault), then times:
  * the report in a fresh process-like state (new VaultIndex: snapshot loaded cold),
  * the report again (snapshot cached, as in `sidecar serve`),
  * `sidecar health --json` end to end as a subprocess (model load included).

Usage: python bench/health_eval_vaults.py [--examples N] [--repeat N] [--skip-cli] [--only NAME] [--save DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sidecar.config import Settings
from sidecar.core import VaultIndex

ROOT = Path(__file__).resolve().parents[1]
EVAL_VAULTS = ROOT.parent / "shared" / "eval-vaults"
INDEX_ROOT = ROOT / "bench" / "out" / "health-index"
BUDGET_MS = 2000.0  # the report must come back within this from an existing index


def vaults(only: str | None) -> list[tuple[str, Path]]:
    found = sorted((p.parent.name, p) for p in EVAL_VAULTS.glob("*/vault") if p.is_dir())
    return [(name, path) for name, path in found if only is None or name == only]


def ensure_index(name: str, vault: Path) -> Path:
    index_dir = INDEX_ROOT / name
    index = VaultIndex(Settings(vault=vault, index_dir=index_dir))
    try:
        started = time.perf_counter()
        report = index.index()
        print(f"  index: {time.perf_counter() - started:.1f} s (added {report.added}, updated {report.updated}, "
              f"unchanged {report.unchanged}, embedded {report.embedded})")
    finally:
        index.close()
    return index_dir


def time_report(vault: Path, index_dir: Path, repeat: int) -> tuple[dict[str, Any], float, list[float], float]:
    """Each run opens a new VaultIndex, so the snapshot (vectors, graph) is loaded cold every time."""
    colds: list[float] = []
    report: dict[str, Any] = {}
    warm = opened = 0.0
    for _ in range(repeat):
        started = time.perf_counter()
        index = VaultIndex(Settings(vault=vault, index_dir=index_dir))
        opened = (time.perf_counter() - started) * 1000
        try:
            started = time.perf_counter()
            report = index.health()
            colds.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            index.health()
            warm = (time.perf_counter() - started) * 1000
        finally:
            index.close()
    return report, opened, colds, warm


def time_cli(vault: Path, index_dir: Path) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sidecar", "health", "--vault", str(vault), "--index", str(index_dir),
                    "--json"], check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def print_report(report: dict[str, Any], examples: int) -> None:
    summary = report["summary"]
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        print(f"    {key:<{width}}  {value}")
    if not examples:
        return
    for section in report["sections"]:
        if not section["count"]:
            continue
        print(f"  [{section['severity']}] {section['title']} ({section['count']}):")
        for item in section["items"][:examples]:
            where = f"{item['path']}:{item['line']}" if item["line"] else item["path"]
            print(f"      {where}  {item['message'][:160]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=3, help="items shown per section (0: summary only)")
    parser.add_argument("--skip-cli", action="store_true", help="do not time the `sidecar health` subprocess")
    parser.add_argument("--only", help="one vault by folder name")
    parser.add_argument("--repeat", type=int, default=3, help="cold report runs per vault (best and median shown)")
    parser.add_argument("--save", type=Path, help="write each full report as <dir>/<name>.json")
    args = parser.parse_args()
    found = vaults(args.only)
    if not found:
        print(f"no evaluation vaults under {EVAL_VAULTS}")
        return 0
    over_budget = False
    for name, vault in found:
        print(f"== {name} ({vault})")
        index_dir = ensure_index(name, vault)
        report, opened, colds, warm = time_report(vault, index_dir, args.repeat)
        cold = min(colds)
        line = (f"  report: {cold:.0f} ms cold (best of {len(colds)}; median {statistics.median(colds):.0f} ms; "
                f"snapshot load included), {warm:.0f} ms warm; open+model {opened:.0f} ms")
        if not args.skip_cli:
            line += f"; `sidecar health --json` end to end {time_cli(vault, index_dir):.0f} ms"
        print(line)
        over_budget |= cold > BUDGET_MS
        print_report(report, args.examples)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{name}.json").write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    if over_budget:
        print(f"SLOW: a report took over {BUDGET_MS:.0f} ms from an existing index")
    return 1 if over_budget else 0


if __name__ == "__main__":
    sys.exit(main())

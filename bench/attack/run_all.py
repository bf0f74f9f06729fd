#!/usr/bin/env python3
"""Run every attack suite, each in its own process, and print one summary table.

    python bench/attack/run_all.py [--quick] [--only paths,crash] [--out DIR]

Each suite writes OUT/<suite>.json (figures and failures); this script adds OUT/summary.json
and OUT/summary.md. The exit code is 1 when any suite failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SUITES = {  # name -> (script, what its figures mean in one line)
    "paths": ("paths.py", "path confinement, both ports"),
    "http_matrix": ("http_matrix.py", "Host x Origin x token x content type, sockets, token exposure"),
    "crash": ("crash.py", "kill -9 during indexing"),
    "watcher": ("watcher.py", "bursts against a live server"),
    "hostile": ("hostile.py", "hostile notes"),
    "secrets": ("secrets_leak.py", "redaction, leaks, rule change"),
    "load": ("load.py", "8 clients during full reindexes"),
    "round2": ("round2.py", "the second round's findings (issue 14)"),
}
HEADLINES = {
    "paths": ("inputs", "requests", "leaks", "answers_differing_present_vs_absent", "race_reads"),
    "http_matrix": ("rpc_cells", "rpc_wrong", "mcp_cells", "mcp_wrong", "listening_sockets"),
    "crash": ("notes", "rounds", "killed_mid_run", "integrity_failures", "restart_not_equal"),
    "watcher": ("runs", "ops_per_run", "converged", "converge_p50_s", "converge_max_s"),
    "hostile": ("files", "skipped", "max_index_s", "max_peak_rss_mb", "serve_peak_rss_mb"),
    "secrets": ("secrets_planted", "min_kind_pct", "fp_per_10k_lines", "secret_bytes_in_answers",
                "secret_bytes_in_index_files", "rule_change_left_after"),
    "load": ("calls", "busy", "errors", "rss_first_third_mb", "rss_last_third_mb"),
    "round2": ("cases", "heading_index_ratio", "leaks_in_index", "leaks_served", "wrong_types_invalid_params",
               "rpc_trickling_left_open", "mcp_trickling_left_open", "links_resolved_after_stopped_rebuild"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="every suite's fast subset")
    parser.add_argument("--only", help="comma-separated suite names: " + ",".join(SUITES))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(SUITES)
    unknown = set(names) - set(SUITES)
    if unknown:
        parser.error(f"unknown suite(s): {', '.join(sorted(unknown))}")
    rows = []
    failed = False
    for name in names:
        script, about = SUITES[name]
        started = time.perf_counter()
        print(f"\n===== {name}: {about} =====", flush=True)
        code = subprocess.call([sys.executable, str(HERE / script), "--out", str(args.out),
                                *(["--quick"] if args.quick else [])], cwd=ROOT)
        took = time.perf_counter() - started
        try:
            data = json.loads((args.out / f"{name}.json").read_text())
        except (OSError, ValueError):
            data = {"ok": False, "figures": {}, "failures": [f"no result file (exit {code})"]}
        ok = code == 0 and data.get("ok", False)
        failed |= not ok
        figures = data.get("figures", {})
        headline = ", ".join(f"{k}={figures.get(k)}" for k in HEADLINES[name] if k in figures)
        rows.append((name, "PASS" if ok else "FAIL", f"{took:.0f}", headline, len(data.get("failures", []))))
    lines = ["| suite | result | seconds | figures | failures |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {r} | {s} | {h} | {f} |" for n, r, s, h, f in rows]
    summary = "\n".join(lines)
    print("\n" + summary)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.md").write_text(summary + "\n")
    (args.out / "summary.json").write_text(json.dumps([dict(zip(("suite", "result", "seconds", "figures", "failures"),
                                                                r, strict=True)) for r in rows], indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

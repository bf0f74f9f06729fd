"""Edit -> searchable through the real file watcher: `sidecar serve` on an existing index, then one
note at a time gets a new word appended and JSON-RPC search is asked until it finds the note. The
figure includes the watcher's own wait (watch.py: it yields a batch once no event came for STEP_MS,
at most DEBOUNCE_MS after the first), stated beside it. The vault is restored afterwards.

    python bench/bench_live.py --vault V --index DIR [-n 40]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attack.common import Live, percentile

POLL_SECONDS = 0.005


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True, help="an existing index (built by sidecar index)")
    parser.add_argument("-n", type=int, default=40, help="edits, one at a time")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    from sidecar.watch import DEBOUNCE_MS, STEP_MS  # noqa: PLC0415  (the venv's sidecar)

    notes = sorted(p for p in args.vault.rglob("*.md") if not any(part.startswith(".") for part in p.parts))
    rng = random.Random(args.seed)
    sample = rng.sample(notes, min(args.n, len(notes)))
    originals = {p: p.read_bytes() for p in sample}
    times: list[float] = []
    misses = 0
    try:
        with Live(args.vault, args.index, "--no-mcp") as live:
            live.wait_ready()
            while live.server.call("status")["building"]:  # the start-up scan
                time.sleep(0.1)
            for k, path in enumerate(sample):
                word = f"zqlive{args.seed}x{k}w{rng.randrange(10**9)}"
                rel = path.relative_to(args.vault).as_posix()
                started = time.perf_counter()
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n\nA live thought mentioning {word}.\n")
                while True:
                    hits = live.server.call("search", query=word, limit=5, mode="lexical")["results"]
                    if any(h["path"] == rel for h in hits):
                        break
                    if time.perf_counter() - started > 10:
                        misses += 1
                        break
                    time.sleep(POLL_SECONDS)
                times.append(time.perf_counter() - started)
                time.sleep(0.3)  # let the watcher settle: edits one at a time, as a person types and saves
            runs = live.server.call("status")["indexing"]
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
    print(f"live: {args.vault.name}: edit -> searchable through the watcher, {len(times)} edits: "
          f"p50 {percentile(times, 50) * 1000:.0f} ms, p99 {percentile(times, 99) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms, misses {misses}")
    print(f"  of which the watcher waits {STEP_MS} ms of quiet (at most {DEBOUNCE_MS} ms) before it yields; "
          f"search polled every {POLL_SECONDS * 1000:.0f} ms")
    last = runs["last_event_run"] or {}
    print(f"  event-driven runs {runs['event_runs']}, scans {runs['scans']}; last event run "
          f"{last.get('seconds', 0) * 1000:.1f} ms ({last.get('cpu_seconds', 0) * 1000:.1f} ms CPU); last scan "
          f"{(runs['last_scan'] or {}).get('seconds', 0) * 1000:.0f} ms (the reconcile's cost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

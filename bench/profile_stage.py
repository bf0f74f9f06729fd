#!/usr/bin/env python3
"""cProfile one stage on an existing index and print where the time goes (own and cumulative).

    python bench/profile_stage.py search  --vault V --index DIR [--queries Q.json] [--mode hybrid]
    python bench/profile_stage.py related --vault V --index DIR
    python bench/profile_stage.py edit    --vault V --index DIR   (edit one note, index, search: 5 times)

`edit` appends to notes of the vault and restores them afterwards: use a vault you may write
(a generated one, or a copy). For a full index, profile the CLI instead:
`python -m cProfile -o full.prof -m sidecar index --full --vault V --index DIR` (or
bench_index.py --profile FILE), or sample it with py-spy.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import sys
import time
from pathlib import Path

from sidecar.config import from_env
from sidecar.core import VaultIndex


def queries(path: Path | None, index: VaultIndex, n: int) -> list[str]:
    if path is not None:
        data = json.loads(path.read_text())
        pool = data["lexical"] + data["semantic"] + data["mixed"]
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_search  # noqa: PLC0415

        data = bench_search.derive_queries(index, 3)
        pool = data["lexical"] + data["semantic"] + data["mixed"]
    random.Random(5).shuffle(pool)
    return [q["q"] for q in pool[:n]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=("search", "related", "edit"))
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("-n", type=int, default=300)
    parser.add_argument("--top", type=int, default=30, help="rows of the profile to print")
    parser.add_argument("--out", type=Path, help="also save the raw profile here")
    args = parser.parse_args(argv)
    vault = args.vault.resolve()
    index = VaultIndex(from_env(vault, index_dir=args.index.resolve()))
    prof = cProfile.Profile()
    if args.stage == "search":
        qs = queries(args.queries, index, args.n)
        for q in qs[:30]:
            index.search(q, mode=args.mode)
        started = time.perf_counter()
        prof.enable()
        for q in qs:
            index.search(q, mode=args.mode)
        prof.disable()
        label = f"{len(qs)} {args.mode} searches"
    elif args.stage == "related":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_search  # noqa: PLC0415

        bufs = bench_search.buffers(index, vault, min(args.n, 100), 3)
        for path, text in bufs[:5]:
            index.related(path=path, text=text)
        started = time.perf_counter()
        prof.enable()
        for path, text in bufs:
            index.related(path=path, text=text)
        prof.disable()
        label = f"{len(bufs)} related() calls on 5,000-char buffers"
    else:
        index.search("warm up")
        notes = sorted(vault.rglob("*.md"))
        picked = random.Random(9).sample(notes, 5)
        originals = {p: p.read_bytes() for p in picked}
        index.index()
        started = time.perf_counter()
        try:
            prof.enable()
            for k, p in enumerate(picked):
                with p.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n\nprofiled edit zqprof{k}word\n")
                index.index()
                index.search(f"zqprof{k}word")
            prof.disable()
        finally:
            for p, data in originals.items():
                p.write_bytes(data)
            index.index()
        label = "5 x (edit one note, incremental index, search the new word)"
    took = time.perf_counter() - started
    print(f"profile of {label}: {took:.2f} s wall in all")
    stats = pstats.Stats(prof)
    if args.out:
        stats.dump_stats(str(args.out))
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

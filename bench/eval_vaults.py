"""Development evaluation over every query set we have: the demo set (ours) and, when present, the
shared evaluation vaults (`../shared/eval-vaults/*/queries.jsonl`, written by people outside the team).

    python3 build.py eval [--sets demo,obsidian-help-ja] [--configs lexical,rrf,full] [--set NAME=VALUE ...]
                          [--vaults DIR ...]

Each vault is indexed once into bench/out/eval-index/<model>/<set>/ (incremental afterwards, so a rerun
only re-embeds when the model changed). Prints per set: nDCG@10, hit@10 and MRR@10 for every
ranking configuration, the full ranking per query kind, and the bands each population got;
writes the figures to bench/out/eval-results.json and .md. `--set lexical_weight=1.2` overrides
one `Ranking` field for the run (tuning experiments).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sidecar.config import from_env  # noqa: E402
from sidecar.core import VaultIndex  # noqa: E402
from sidecar.report import evaluate  # noqa: E402
from sidecar.retrieve.search import Ranking  # noqa: E402

SHARED = ROOT.parent / "shared" / "eval-vaults"
OUT = ROOT / "bench" / "out"
DEMO = ("demo", ROOT / "examples" / "demo-vault", ROOT / "examples" / "demo-vault.queries.json")


def query_sets(roots: list[Path] | None = None) -> list[tuple[str, Path, Path]]:
    """The demo set, then every `<root>/<set>/` holding `vault/` and `queries.jsonl` (the shared vaults
    by default; `--vaults DIR` adds folders laid out the same way, such as a user's own labelled sets)."""
    sets = [DEMO]
    for root in [SHARED, *(roots or [])]:
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if (folder / "queries.jsonl").is_file() and (folder / "vault").is_dir():
                    sets.append((folder.name, folder / "vault", folder / "queries.jsonl"))
    return sets


def ranking_with(overrides: list[str]) -> Ranking:
    base = Ranking()
    changes: dict[str, Any] = {}
    for item in overrides:
        name, _, raw = item.partition("=")
        current = getattr(base, name)  # AttributeError names a field that does not exist
        changes[name] = type(current)(raw) if not isinstance(current, bool) else raw.lower() in ("1", "true", "yes")
    return dataclasses.replace(base, **changes)


def run_set(name: str, vault: Path, queries_file: Path, ranking: Ranking, wanted: set[str] | None) -> dict[str, Any]:
    settings = from_env(vault)  # SIDECAR_MODEL picks another model: it gets indexes of its own
    index = VaultIndex(replace(settings, index_dir=OUT / "eval-index" / Path(settings.model or "default").name / name))
    started = time.perf_counter()
    index.index()
    indexed_s = time.perf_counter() - started
    index.ranking = ranking
    cfgs = [c for c in evaluate.configs(ranking) if wanted is None or c.name in wanted]
    queries = evaluate.load_queries(queries_file)
    table = evaluate.evaluate_set(index, queries, cfgs)
    index.close()
    return {"set": name, "queries": len(queries), "index_s": round(indexed_s, 1), "rankings": table}


def format_set(result: dict[str, Any]) -> str:
    rankings = result["rankings"]
    lines = [f"## {result['set']} ({result['queries']} queries, indexed in {result['index_s']} s)", "",
             "| ranking | nDCG@10 | hit@10 | MRR@10 | answerable h/m/l | unanswerable h/m/l |", "|---|---|---|---|---|---|"]
    for name, row in rankings.items():
        lines.append(f"| {name} | {row['ndcg@10']:.3f} | {row['hit@10']:.3f} | {row['mrr@10']:.3f} | "
                     f"{_bands(row['bands']['answerable'])} | {_bands(row['bands']['unanswerable'])} |")
    best = rankings.get("full") or next(iter(rankings.values()))
    kinds = sorted(best["by_kind"])
    shown = [n for n in ("lexical", "semantic", "rrf", "full") if n in rankings]
    lines += ["", "| kind (nDCG@10 / hit@10) | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for kind in kinds:
        cells = []
        for n in shown:
            k = rankings[n]["by_kind"].get(kind)
            cells.append(f"{k['ndcg@10']:.3f} / {k['hit@10']:.2f} (n={k['queries']})" if k else "-")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _bands(counts: dict[str, int]) -> str:
    return "/".join(str(counts.get(b, 0)) for b in ("high", "medium", "low")) + \
        (f" (+{counts['none']} none)" if counts.get("none") else "")


def summary(results: list[dict[str, Any]]) -> str:
    names = [r["set"] for r in results]
    rankings = list(results[0]["rankings"]) if results else []
    lines = ["## nDCG@10 / hit@10 per set", "", "| ranking | " + " | ".join(names) + " | mean |",
             "|---|" + "---|" * (len(names) + 1)]
    for rk in rankings:
        cells = [f"{r['rankings'][rk]['ndcg@10']:.3f} / {r['rankings'][rk]['hit@10']:.3f}" for r in results]
        mean = sum(r["rankings"][rk]["ndcg@10"] for r in results) / len(results)
        lines.append(f"| {rk} | " + " | ".join(cells) + f" | {mean:.3f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", help="comma-separated set names (default: all found)")
    parser.add_argument("--configs", help="comma-separated rankings (default: all)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE",
                        help="override one Ranking field")
    parser.add_argument("--out", default=str(OUT / "eval-results"), help="path prefix for the .json and .md")
    parser.add_argument("--vaults", action="append", default=[], metavar="DIR",
                        help="another folder of sets laid out as the shared ones (<DIR>/<set>/vault, queries.jsonl)")
    args = parser.parse_args(argv)
    sets = query_sets([Path(v) for v in args.vaults])
    if args.sets:
        wanted_sets = set(args.sets.split(","))
        sets = [s for s in sets if s[0] in wanted_sets]
    if len(sets) == 1 and not SHARED.is_dir():
        print(f"(no shared evaluation vaults at {SHARED}: the demo set only)", file=sys.stderr)
    ranking = ranking_with(args.overrides)
    wanted = set(args.configs.split(",")) if args.configs else None
    results = []
    for name, vault, queries in sets:
        result = run_set(name, vault, queries, ranking, wanted)
        print(format_set(result) + "\n", flush=True)
        results.append(result)
    text = summary(results)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"ranking": dataclasses.asdict(ranking), "sets": results}, indent=1))
    out.with_suffix(".md").write_text("\n\n".join(format_set(r) for r in results) + "\n\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

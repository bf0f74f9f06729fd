#!/usr/bin/env python3
"""Query latency on an existing index, in process, side by side with the seeds' plain pipeline and rg.

    python bench/bench_search.py --vault VAULT --index DIR [--queries Q.json] [--json OUT]

Measured, each after a warm-up, over the same queries in the same run:
- ours: VaultIndex.search() in lexical, semantic and hybrid mode (p50/p95/p99, >= 300 queries
  a mode), and VaultIndex.related() for an unsaved 5,000-character buffer (p50/p95);
- baseline, the seeds' plain pipeline: FTS5 BM25 top-k (every query word quoted and OR-ed) +
  sqlite-vec vec0 KNN (VectorTable.knn_sql) + RRF k=60 over chunks, no graph, no grouping, then
  the rows of the top results fetched; timed the same way, per mode;
- rg (ripgrep, one process a query, case-insensitive fixed string) for the literal queries over
  the vault folder, against our lexical and hybrid search on the same queries;
- KNN alone: numpy over the in-memory matrix vs vec0 KNN, time and top-30 agreement.

A small quality check rides along (not a benchmark of relevance, only a sanity check that the
fast path finds what the plain one finds): recall@10 of the notes that hold an identifier, and
the share of top-10 notes in the topic's folder for paraphrase queries.

Without --queries (a vault that was not generated), queries are derived from the index:
rare words of sampled chunks (lexical, with the note they came from), headings (semantic-ish),
and both together (mixed).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sidecar.config import from_env
from sidecar.core import VaultIndex
from sidecar.rank.fuse import rrf
from sidecar.retrieve.lexical import build_query
from sidecar.store.vectors import VectorTable

MODES = ("lexical", "semantic", "hybrid")
WARMUP = 40
BUFFER_CHARS = 5000
KNN_K = 30


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def summary(seconds: Sequence[float]) -> dict[str, float]:
    return {"n": len(seconds), "p50_ms": pct(seconds, 50) * 1000, "p95_ms": pct(seconds, 95) * 1000,
            "p99_ms": pct(seconds, 99) * 1000, "mean_ms": statistics.fmean(seconds) * 1000 if seconds else float("nan")}


def timed(fn: Callable[[str], Any], queries: Sequence[str]) -> tuple[list[float], list[Any]]:
    times, outs = [], []
    for q in queries:
        start = time.perf_counter()
        out = fn(q)
        times.append(time.perf_counter() - start)
        outs.append(out)
    return times, outs


def side_by_side(ours: Callable[[str], Any], base: Callable[[str], Any], queries: Sequence[str]) -> tuple[
        list[float], list[Any], list[float], list[float], list[Any], list[float]]:
    """Each query through both pipelines back to back, the order alternating, so that the noise of
    a shared machine falls on both alike. Wall and CPU (thread) time per call."""
    out: dict[str, tuple[list[float], list[Any], list[float]]] = {"ours": ([], [], []), "base": ([], [], [])}
    for i, q in enumerate(queries):
        for name in (("ours", "base") if i % 2 == 0 else ("base", "ours")):
            fn = ours if name == "ours" else base
            cpu = time.thread_time()
            start = time.perf_counter()
            result = fn(q)
            wall = time.perf_counter() - start
            times, results, cpus = out[name]
            times.append(wall)
            results.append(result)
            cpus.append(time.thread_time() - cpu)
    return (*out["ours"], *out["base"])


# ---- queries --------------------------------------------------------------------------------
def load_queries(path: Path | None, index: VaultIndex, n: int, seed: int) -> dict[str, Any]:
    if path is not None:
        data = json.loads(path.read_text())
        source = f"generated ({path.name})"
    else:
        data = derive_queries(index, seed)
        source = "derived from the index"
    rng = random.Random(seed)
    pools = [list(data["lexical"]), list(data["semantic"]), list(data["mixed"])]
    for pool in pools:
        rng.shuffle(pool)
    picked: list[dict[str, Any]] = []
    for i in range(n):  # interleave the three kinds: lexical, semantic, mixed, lexical, ...
        pool = pools[i % 3] or pools[0] or pools[1]
        if pool:
            picked.append(pool[(i // 3) % len(pool)])
    literal = [q for q in data["lexical"] if q.get("literal")]
    return {"source": source, "queries": picked, "literal": literal,
            "counts": {k: len(data[k]) for k in ("lexical", "semantic", "mixed")}}


WORDS = re.compile(r"[A-Za-z][A-Za-z0-9_]{4,}")
WORD = re.compile(r"\w+")


def derive_queries(index: VaultIndex, seed: int) -> dict[str, Any]:
    conn = index.reader()
    rows = conn.execute("SELECT c.heading, c.body, n.path FROM chunks c JOIN notes n ON n.id = c.note_id").fetchall()
    rng = random.Random(seed)
    sample = rng.sample(rows, min(len(rows), 3000))
    df: Counter[str] = Counter()
    per_chunk = []
    for heading, body, path in sample:
        words = {w.lower() for w in WORDS.findall(body)}
        df.update(words)
        per_chunk.append((heading, body, path, words))
    lexical, semantic, mixed = [], [], []
    for heading, _body, path, words in per_chunk:
        rare = sorted(w for w in words if df[w] == 1 and not w.isdigit())
        if rare and len(lexical) < 250:
            word = rng.choice(rare)
            # expected: every note whose text holds the word (checked with FTS below)
            lexical.append({"q": word, "kind": "rare word", "literal": True, "from": path})
        common = sorted(w for w in words if 3 <= df[w] <= 60)
        if len(common) >= 2 and len(lexical) < 400 and rng.random() < 0.3:
            lexical.append({"q": " ".join(rng.sample(common, 2)), "kind": "keyword", "literal": False})
        leaf = heading.split(" > ")[-1].strip() if heading else ""
        if len(leaf.split()) >= 2 and len(semantic) < 400:
            semantic.append({"q": leaf, "kind": "heading", "from": path})
        if rare and leaf and len(mixed) < 320 and rng.random() < 0.5:
            mixed.append({"q": f"{rng.choice(rare)} {leaf}", "kind": "rare word+heading", "from": path})
    for q in lexical:
        if q["kind"] == "rare word":
            match = build_query(f'"{q["q"]}"', prefix_last=False).match
            found = conn.execute(
                "SELECT DISTINCT n.path FROM chunks_fts f JOIN chunks c ON c.id = f.rowid JOIN notes n ON n.id = c.note_id"
                " WHERE chunks_fts MATCH ? LIMIT 20", (match,)).fetchall()
            q["expect"] = sorted(r[0] for r in found)
    return {"lexical": lexical, "semantic": semantic, "mixed": mixed}


# ---- the seeds' plain pipeline ----------------------------------------------------------------
class Baseline:
    """FTS5 BM25 top-k + vec0 KNN + RRF k=60 over chunks; no graph, no grouping, no bands."""

    def __init__(self, index: VaultIndex, k: int, limit: int = 10) -> None:
        self.conn = index.reader()
        self.embedder = index.embedder
        self.table = VectorTable(self.conn, index.backend)
        self.k = k
        self.limit = limit

    @staticmethod
    def plain_match(query: str) -> str | None:
        """The seeds' plain FTS5 query: every word quoted, OR-ed; no stopword list, no prefix.
        Independent of sidecar.lexical on purpose: the baseline must not move when ours does."""
        words = list(dict.fromkeys(WORD.findall(query)))
        return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) if words else None

    def lexical_ids(self, query: str) -> list[int]:
        match = self.plain_match(query)
        if match is None:
            return []
        rows = self.conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?",
                                 (match, self.k)).fetchall()
        return [int(r[0]) for r in rows]

    def semantic_ids(self, query: str) -> list[int]:
        assert self.embedder is not None
        vector = self.embedder.encode([query])[0]
        return [cid for cid, _sim in self.table.knn_sql(vector, self.k)]

    def rows(self, ids: list[int]) -> list[tuple[Any, ...]]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        found = {r[0]: r for r in self.conn.execute(
            f"SELECT c.id, n.path, c.heading, c.body FROM chunks c JOIN notes n ON n.id = c.note_id WHERE c.id IN ({marks})",
            ids)}
        return [found[i] for i in ids if i in found]

    def search(self, query: str, mode: str) -> list[tuple[Any, ...]]:
        legs: dict[str, list[int]] = {}
        if mode in ("lexical", "hybrid"):
            legs["lexical"] = self.lexical_ids(query)
        if mode in ("semantic", "hybrid"):
            legs["semantic"] = self.semantic_ids(query)
        fused = rrf(legs, {}, 60)
        top = sorted(fused, key=lambda c: -fused[c])[: self.limit]
        return self.rows(top)


# ---- measurements -----------------------------------------------------------------------------
def ours_paths(result: dict[str, Any]) -> list[str]:
    return [r["path"] for r in result["results"]]


def base_paths(rows: list[tuple[Any, ...]]) -> list[str]:
    return list(dict.fromkeys(r[1] for r in rows))


def quality(queries: Sequence[dict[str, Any]], paths: Sequence[list[str]]) -> dict[str, float | None]:
    recall, folder = [], []
    for q, got in zip(queries, paths, strict=True):
        if q.get("expect"):
            want = set(q["expect"])
            recall.append(len(want & set(got[:10])) / len(want))
        elif q.get("folder") and got:
            folder.append(sum(p.startswith(q["folder"] + "/") for p in got[:10]) / len(got[:10]))
    return {"identifier_recall@10": statistics.fmean(recall) if recall else None,
            "topic_precision@10": statistics.fmean(folder) if folder else None}


def rg_times(vault: Path, queries: Sequence[str]) -> dict[str, Any] | None:
    rg = shutil.which("rg")
    if rg is None or not vault.is_dir():
        return None

    def one(q: str) -> int:
        out = subprocess.run([rg, "-l", "-i", "-F", "--no-messages", "-g", "*.md", "--", q, str(vault)],
                             capture_output=True, check=False)
        return out.stdout.count(b"\n")

    for q in queries[:3]:
        one(q)  # page cache
    times, files = timed(one, queries)
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]
    return {"version": version, **summary(times), "files_matched_median": statistics.median(files) if files else 0}


def buffers(index: VaultIndex, vault: Path, count: int, seed: int) -> list[tuple[str, str]]:
    """(path, 5,000 characters of markdown): a note's own text, topped up with the next notes' text."""
    conn = index.reader()
    paths = [r[0] for r in conn.execute("SELECT path FROM notes ORDER BY path")]
    rng = random.Random(seed)
    out = []
    for start in rng.sample(range(len(paths)), min(count, len(paths))):
        text, i = "", start
        while len(text) < BUFFER_CHARS and i < start + 50:
            path = paths[i % len(paths)]
            file = vault / path
            if file.is_file():
                part = file.read_text(encoding="utf-8", errors="replace")
            else:  # the vault copy is gone: rebuild the text from the stored chunks
                rows = conn.execute("SELECT c.heading, c.body FROM chunks c JOIN notes n ON n.id = c.note_id"
                                    " WHERE n.path = ? ORDER BY c.ordinal", (path,)).fetchall()
                part = "\n\n".join((f"## {h.split(' > ')[-1]}\n\n" if h else "") + b for h, b in rows)
            if i != start and part.startswith("---"):  # only the first note keeps its frontmatter
                end = part.find("\n---", 3)
                part = part[end + 4:] if end > 0 else part
            text += ("\n\n" if text else "") + part
            i += 1
        out.append((paths[start], text[:BUFFER_CHARS]))
    return out


def knn_compare(index: VaultIndex, queries: Sequence[str]) -> dict[str, Any] | None:
    if index.embedder is None or not index.backend.vec_version:
        return None
    snap = index.snapshot()
    table = VectorTable(index.reader(), index.backend)
    vectors = index.embedder.encode(list(queries))

    def numpy_top(v: np.ndarray) -> list[int]:
        sims = snap.matrix @ v
        top = np.argpartition(-sims, KNN_K - 1)[:KNN_K]
        top = top[np.argsort(-sims[top])]
        return [int(snap.vector_ids[i]) for i in top]

    for v in vectors[:5]:
        numpy_top(v)
        table.knn_sql(v, KNN_K)
    t_np, t_vec, agree = [], [], []
    for v in vectors:
        start = time.perf_counter()
        a = numpy_top(v)
        mid = time.perf_counter()
        b = [cid for cid, _ in table.knn_sql(v, KNN_K)]
        t_np.append(mid - start)
        t_vec.append(time.perf_counter() - mid)
        agree.append(len(set(a) & set(b)) / KNN_K)
    return {"rows": len(snap.vector_ids), "numpy": summary(t_np), "vec0": summary(t_vec),
            "top30_agreement": statistics.fmean(agree), "top30_agreement_min": min(agree)}


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415

        info = [f"{i.get('internal_api')} {i.get('architecture', '')} threads={i.get('num_threads')}"
                for i in threadpool_info() if i.get("user_api") == "blas"]
        return "; ".join(info) or "unknown"
    except ImportError:
        pass
    try:  # numpy's build record: which BLAS it links (not how many threads it runs)
        deps = np.show_config(mode="dicts")["Build Dependencies"]  # type: ignore[func-returns-value]
        blas = deps.get("blas", {})
        return f"{blas.get('name', '?')} {blas.get('version', '')} (threadpoolctl not installed)"
    except Exception:
        return "unknown"


def run(vault: Path, index_dir: Path, queries_path: Path | None, n: int, seed: int, related_n: int,
        rg_n: int) -> dict[str, Any]:
    index = VaultIndex(from_env(vault, index_dir=index_dir))
    status = index.status()
    qset = load_queries(queries_path, index, n, seed)
    texts = [q["q"] for q in qset["queries"]]
    res: dict[str, Any] = {"vault": str(vault), "index": str(index_dir), "queries": qset["source"],
                           "query_counts": qset["counts"], "notes": status["notes"], "chunks": status["chunks"],
                           "backend": status["backend"], "blas": blas_info(),
                           "candidates_per_leg": index.ranking.candidates}
    baseline = Baseline(index, k=index.ranking.candidates)
    for mode in MODES:  # warm-up: snapshot, model, page cache, SQLite cache
        for q in texts[:WARMUP]:
            index.search(q, limit=10, mode=mode)
            baseline.search(q, mode)
    res["ours"], res["baseline"], res["quality"] = {}, {}, {}
    for mode in MODES:
        t_ours, r_ours, c_ours, t_base, r_base, c_base = side_by_side(
            lambda q, m=mode: index.search(q, limit=10, mode=m),  # type: ignore[misc]
            lambda q, m=mode: baseline.search(q, m), texts)  # type: ignore[misc]
        res["ours"][mode] = {**summary(t_ours), "cpu_mean_ms": statistics.fmean(c_ours) * 1000}
        res["baseline"][mode] = {**summary(t_base), "cpu_mean_ms": statistics.fmean(c_base) * 1000}
        res["quality"][mode] = {"ours": quality(qset["queries"], [ours_paths(r) for r in r_ours]),
                                "baseline": quality(qset["queries"], [base_paths(r) for r in r_base])}
    literal = [q["q"] for q in qset["literal"]][:rg_n]
    if literal:
        res["literal"] = {"n": len(literal),
                          "ours_lexical": summary(timed(lambda q: index.search(q, limit=10, mode="lexical"), literal)[0]),
                          "ours_hybrid": summary(timed(lambda q: index.search(q, limit=10, mode="hybrid"), literal)[0]),
                          "rg": rg_times(vault, literal)}
    bufs = buffers(index, vault, related_n + 5, seed)
    for path, text in bufs[:5]:
        index.related(path=path, text=text)
    t_rel, _ = timed(lambda pt: index.related(path=pt[0], text=pt[1], limit=10), bufs[5:])  # type: ignore[arg-type]
    res["related"] = {**summary(t_rel), "buffer_chars": statistics.median(len(t) for _, t in bufs[5:]) if bufs[5:] else 0}
    sem = [q["q"] for q in qset["queries"]][:200]
    res["knn"] = knn_compare(index, sem)
    index.close()
    return res


# ---- report -----------------------------------------------------------------------------------
def fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def table(res: dict[str, Any]) -> str:
    lines = [f"Search: {res['chunks']:,} chunks, {res['notes']:,} notes; queries {res['queries']}; "
             f"{res['ours']['hybrid']['n']} per mode; top 10; {res['candidates_per_leg']} candidates a leg",
             f"  {'mode':<10} {'ours p50':>9} {'p95':>7} {'p99':>7} | {'baseline p50':>12} {'p95':>7} {'p99':>7} | "
             f"{'ours/base p50':>13} {'p99':>6}"]
    for mode in MODES:
        o, b = res["ours"][mode], res["baseline"][mode]
        lines.append(f"  {mode:<10} {fmt(o['p50_ms']):>9} {fmt(o['p95_ms']):>7} {fmt(o['p99_ms']):>7} | "
                     f"{fmt(b['p50_ms']):>12} {fmt(b['p95_ms']):>7} {fmt(b['p99_ms']):>7} | "
                     f"{fmt(o['p50_ms'] / b['p50_ms'], 2):>13} {fmt(o['p99_ms'] / b['p99_ms'], 2):>6}")
    lines.append("  (milliseconds, wall; baseline = FTS5 BM25 top-k + vec0 KNN + RRF k=60 over chunks, no graph/grouping;"
                 " each query runs through both back to back)")
    lines.append("  CPU time per query, mean: " + ", ".join(
        f"{m} ours {fmt(res['ours'][m]['cpu_mean_ms'])} / baseline {fmt(res['baseline'][m]['cpu_mean_ms'])}" for m in MODES))
    q = res["quality"]["hybrid"]
    lines.append(f"  sanity, hybrid: identifier recall@10 ours {fmt(q['ours']['identifier_recall@10'], 2)} / baseline "
                 f"{fmt(q['baseline']['identifier_recall@10'], 2)}; topic precision@10 ours "
                 f"{fmt(q['ours']['topic_precision@10'], 2)} / baseline {fmt(q['baseline']['topic_precision@10'], 2)}")
    lit = res.get("literal")
    if lit:
        rg = lit["rg"]
        if rg:
            lines.append(f"  literal queries ({lit['n']}): rg p50 {fmt(rg['p50_ms'])} ms p95 {fmt(rg['p95_ms'])} "
                         f"(median {rg['files_matched_median']:.0f} files matched; {rg['version']}); ours lexical p50 "
                         f"{fmt(lit['ours_lexical']['p50_ms'])} ms, hybrid p50 {fmt(lit['ours_hybrid']['p50_ms'])} ms; "
                         f"ours/rg {fmt(lit['ours_lexical']['p50_ms'] / rg['p50_ms'], 3)} (lexical), "
                         f"{fmt(lit['ours_hybrid']['p50_ms'] / rg['p50_ms'], 3)} (hybrid)")
        else:
            lines.append("  rg: not installed or no vault folder; skipped")
    r = res["related"]
    lines.append(f"  related notes, {r['buffer_chars']:.0f}-char unsaved buffer ({r['n']} buffers): p50 "
                 f"{fmt(r['p50_ms'])} ms, p95 {fmt(r['p95_ms'])} ms, p99 {fmt(r['p99_ms'])} ms")
    k = res.get("knn")
    if k:
        lines.append(f"  KNN top-{KNN_K} over {k['rows']:,} vectors: numpy p50 {fmt(k['numpy']['p50_ms'], 2)} ms "
                     f"(p95 {fmt(k['numpy']['p95_ms'], 2)}), vec0 p50 {fmt(k['vec0']['p50_ms'], 2)} ms "
                     f"(p95 {fmt(k['vec0']['p95_ms'], 2)}); vec0/numpy {fmt(k['vec0']['p50_ms'] / k['numpy']['p50_ms'], 1)}x;"
                     f" top-{KNN_K} agreement {k['top30_agreement'] * 100:.1f}% (min {k['top30_agreement_min'] * 100:.0f}%)")
    lines.append(f"  BLAS: {res['blas']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, required=True, help="the vault folder (rg searches it)")
    parser.add_argument("--index", type=Path, required=True, help="an index folder made by `sidecar index`")
    parser.add_argument("--queries", type=Path, help="query file from generate_vault.py (default: derive from the index)")
    parser.add_argument("-n", type=int, default=360, help="queries per mode (default 360)")
    parser.add_argument("--related", type=int, default=100, help="buffers for related notes (default 100)")
    parser.add_argument("--rg", type=int, default=100, help="literal queries for the rg comparison (default 100)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (args.index / "index.sqlite3").exists():
        parser.error(f"no index in {args.index}: run bench_index.py or `sidecar index` first")
    res = run(args.vault.resolve(), args.index.resolve(), args.queries, args.n, args.seed, args.related, args.rg)
    print(table(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    print(f"[bench_search] pid {os.getpid()} done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

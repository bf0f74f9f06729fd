"""Known-answer evaluation: nDCG@10, recall@10 and MRR per ranking configuration, band accuracy
on unanswerable queries, and link prediction for related notes (hide a note's own links, see
whether `related` finds what it links to). Metrics are pure functions."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sidecar.errors import SidecarError
from sidecar.retrieve.search import Ranking
from sidecar.retrieve.view import IndexView
from sidecar.store.reads import notes_linking_two_or_more

K = 10


def dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], graded: dict[str, int], k: int = K) -> float:
    ideal = dcg(sorted(graded.values(), reverse=True)[:k])
    return dcg([graded.get(p, 0) for p in ranked[:k]]) / ideal if ideal else 0.0


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    return len(set(ranked[:k]) & relevant) / min(len(relevant), k) if relevant else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: set[str]) -> float:
    for i, path in enumerate(ranked, start=1):
        if path in relevant:
            return 1.0 / i
    return 0.0


@dataclass(frozen=True)
class Config:
    name: str
    mode: str
    ranking: Ranking
    typed: bool = False  # search-as-you-type (the speed shortcuts) rather than a submitted question


def configs(base: Ranking) -> list[Config]:
    """The seeds' plain pipeline (RRF k=60, equal weights), then each ingredient added on its own, then all,
    then all but one."""
    plain = replace(base, rrf_k=60, query_aware=False, graph_weight=0.0, recency_weight=0.0, lexical_weight=1.0,
                    semantic_weight=1.0, section_bonus=0.0, coverage_weight=0.0, long_note_damping=0.0,
                    loose_weight=1.0, named_first=False)
    return [
        Config("lexical", "lexical", plain),
        Config("semantic", "semantic", plain),
        Config("rrf", "hybrid", plain),
        Config("rrf+leg-weights", "hybrid", replace(plain, lexical_weight=base.lexical_weight,
                                                     semantic_weight=base.semantic_weight)),
        Config("rrf+query-aware", "hybrid", replace(plain, query_aware=True)),
        Config("rrf+graph", "hybrid", replace(plain, graph_weight=base.graph_weight or 0.1)),
        Config("rrf+sections", "hybrid", replace(plain, section_bonus=base.section_bonus or 0.1)),
        Config("rrf+coverage", "hybrid", replace(plain, coverage_weight=base.coverage_weight or 0.3)),
        Config("rrf+k30", "hybrid", replace(plain, rrf_k=base.rrf_k)),
        Config("rrf+long-note-damping", "hybrid", replace(plain, long_note_damping=base.long_note_damping or 0.08)),
        Config("rrf+loose-weight", "hybrid", replace(plain, loose_weight=base.loose_weight)),
        Config("rrf+named-first", "hybrid", replace(plain, named_first=True)),
        Config("full", "hybrid", base),
        Config("full-typed", "hybrid", base, typed=True),
        # leave one out: what each ingredient is worth with all the others on
        Config("full-no-leg-weights", "hybrid", replace(base, lexical_weight=1.0, semantic_weight=1.0)),
        Config("full-no-query-aware", "hybrid", replace(base, query_aware=False)),
        Config("full-no-graph", "hybrid", replace(base, graph_weight=0.0)),
        Config("full+sections", "hybrid", replace(base, section_bonus=base.section_bonus or 0.1)),
        Config("full+mentions", "hybrid", replace(base, mention_weight=0.0)),  # link targets name the linked note
        Config("full-no-coverage", "hybrid", replace(base, coverage_weight=0.0)),
        Config("full-k60", "hybrid", replace(base, rrf_k=60)),
        Config("full-no-long-note-damping", "hybrid", replace(base, long_note_damping=0.0)),
        Config("full-no-loose-weight", "hybrid", replace(base, loose_weight=1.0)),
        Config("full-no-named-first", "hybrid", replace(base, named_first=False)),
    ]


def load_queries(path: Path) -> list[dict[str, Any]]:
    """A labelled query set as [{id, query, relevant, kind}], from JSON (`{"queries": [...]}` or a list)
    or JSON lines (one query a line, told by the content, not the suffix). Each query spells its keys
    as our demo set does (`query`, `relevant`) or as the shared evaluation vaults do (`q`, `rel`);
    `relevant` maps note paths to grades (2: the answer, 1: useful), {} or absent for no answer.
    Anything else is a ValueError naming the file, the entry and what is wrong (exit 2)."""
    entries = _query_entries(path, _query_text(path))
    if not entries:
        raise ValueError(f"{path}: no queries in the file")
    return [_query(path, where, i, entry) for i, (where, entry) in enumerate(entries)]


def _query_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the query file: {exc.strerror}") from None


def _query_entries(path: Path, text: str) -> list[tuple[str, Any]]:
    """(where, entry) pairs: `where` names the entry in an error ("entry 3", "line 7")."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except ValueError as exc:
        if _first_line_is_json(text):  # several JSON values: JSON lines
            return _json_lines(path, text)
        raise ValueError(f"{path}: not valid JSON or JSON lines: {exc}") from None
    if isinstance(data, dict) and _QUERY_KEYS & data.keys():
        return [("line 1", data)]  # JSON lines of one line
    if isinstance(data, dict) and "queries" in data:
        data = data["queries"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: `queries` must be a list of queries, got {_json_kind(data)}")
    elif isinstance(data, dict):
        raise ValueError(f'{path}: no `queries` key: expected {{"queries": [...]}}, a list of queries or JSON lines')
    if not isinstance(data, list):
        raise ValueError(f'{path}: expected {{"queries": [...]}}, a list of queries or JSON lines, got {_json_kind(data)}')
    return [(f"entry {i}", entry) for i, entry in enumerate(data, start=1)]


def _first_line_is_json(text: str) -> bool:
    first = next(line for line in text.splitlines() if line.strip())
    try:
        json.loads(first)
    except ValueError:
        return False
    return True


def _json_lines(path: Path, text: str) -> list[tuple[str, Any]]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"line {number}", json.loads(line)))
        except ValueError as exc:
            raise ValueError(f"{path}: line {number}: not valid JSON: {exc}") from None
    return out


_QUERY_KEYS = {"query", "q"}


def _query(path: Path, where: str, i: int, entry: Any) -> dict[str, Any]:
    """One entry in our spelling; both spellings are read, `query`/`relevant` first."""
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: {where}: expected an object with a `query` (or `q`), got {_json_kind(entry)}")
    query = entry.get("query", entry.get("q"))
    if not isinstance(query, str) or not query.strip():
        raise ValueError(f"{path}: {where}: no `query` (or `q`) text" if query is None
                         else f"{path}: {where}: `query` (or `q`) must be non-empty text")
    relevant = entry.get("relevant", entry.get("rel")) or {}
    if not isinstance(relevant, dict) or not all(
            isinstance(grade, int) and not isinstance(grade, bool) for grade in relevant.values()):
        raise ValueError(f'{path}: {where}: `relevant` (or `rel`) must map note paths to whole-number grades, '
                         f'like {{"Note.md": 2}} ({{}} for a question the vault does not answer)')
    return {"id": str(entry.get("id", i + 1)), "query": query, "relevant": dict(relevant),
            "kind": str(entry.get("kind", "?"))}


def _json_kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


@dataclass
class Scores:
    """Sums over the answerable queries of one group (a ranking, or a ranking and a query kind)."""

    n: int = 0
    ndcg: float = 0.0
    hit: float = 0.0
    recall: float = 0.0
    mrr: float = 0.0

    def add(self, ranked: Sequence[str], graded: dict[str, int]) -> None:
        relevant = set(graded)
        self.n += 1
        self.ndcg += ndcg_at_k(ranked, graded)
        self.hit += bool(set(ranked[:K]) & relevant)
        self.recall += recall_at_k(ranked, relevant)
        self.mrr += reciprocal_rank(ranked[:K], relevant)

    def to_json(self) -> dict[str, float]:
        n = max(1, self.n)
        return {"queries": self.n, "ndcg@10": self.ndcg / n, "hit@10": self.hit / n, "recall@10": self.recall / n,
                "mrr@10": self.mrr / n}


def evaluate_set(index: IndexView, queries: list[dict[str, Any]], cfgs: list[Config]) -> dict[str, Any]:
    """Per ranking: the scores over answerable queries, the same per query kind, and the bands each
    population got (answerable queries should be high/medium, unanswerable ones low)."""
    out: dict[str, Any] = {}
    for cfg in cfgs:
        total, kinds = Scores(), dict[str, Scores]()
        bands: dict[str, dict[str, int]] = {"answerable": {}, "unanswerable": {}}
        for q in queries:
            res = index.search(q["query"], limit=K, mode=cfg.mode, ranking=cfg.ranking, typed=cfg.typed)
            population = "answerable" if q.get("relevant") else "unanswerable"
            bands[population][res["band"]] = bands[population].get(res["band"], 0) + 1
            if not q.get("relevant"):
                continue
            ranked = [r["path"] for r in res["results"]]
            graded = {p: int(g) for p, g in q["relevant"].items()}
            total.add(ranked, graded)
            kinds.setdefault(q.get("kind", "?"), Scores()).add(ranked, graded)
        out[cfg.name] = {**total.to_json(), "by_kind": {k: v.to_json() for k, v in sorted(kinds.items())},
                         "bands": bands}
    return out


def band_checks(bands: dict[str, dict[str, int]]) -> dict[str, bool]:
    """The promises the bands make (docs/ranking.md), checked on one set's band counts."""
    answerable, unanswerable = bands["answerable"], bands["unanswerable"]
    n_ans, n_un = sum(answerable.values()), sum(unanswerable.values())
    flagged = unanswerable.get("low", 0) + unanswerable.get("none", 0)
    confident = answerable.get("high", 0) + answerable.get("medium", 0)
    return {"no unanswerable query is high": unanswerable.get("high", 0) == 0,
            "at least half of the unanswerable queries are low": flagged * 2 >= n_un,
            "at least 90% of the answerable queries are high or medium": confident >= 0.9 * n_ans}


def evaluate_search(index: IndexView, queries: list[dict[str, Any]], cfgs: list[Config]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for name, row in evaluate_set(index, queries, cfgs).items():
        answerable, unanswerable = row["bands"]["answerable"], row["bands"]["unanswerable"]
        flagged = unanswerable.get("low", 0) + unanswerable.get("none", 0)
        table[name] = {"ndcg@10": row["ndcg@10"], "recall@10": row["recall@10"], "hit@10": row["hit@10"],
                       "mrr": row["mrr@10"],
                       "answerable_not_low": 1 - (answerable.get("low", 0) + answerable.get("none", 0)) / max(1, row["queries"]),
                       "unanswerable_flagged_low": flagged / max(1, sum(unanswerable.values()))}
    return table


def by_kind(index: IndexView, queries: list[dict[str, Any]], cfg: Config) -> dict[str, float]:
    row = evaluate_set(index, queries, [cfg])[cfg.name]
    return {kind: scores["ndcg@10"] for kind, scores in row["by_kind"].items()}


WIKILINK = re.compile(r"!?\[\[[^\]\n]*\]\]")
MDLINK = re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)")


def hide_links(text: str) -> str:
    """The note as if it had no links: wikilinks removed, markdown links reduced to their text."""
    return MDLINK.sub(r"\1", WIKILINK.sub("", text))


def link_prediction(index: IndexView, sample: int = 200, seed: int = 7) -> dict[str, float]:
    conn = index.reader()
    rows = notes_linking_two_or_more(conn)
    candidates = [(str(r[1]), set(json.loads(r[2]))) for r in rows]
    random.Random(seed).shuffle(candidates)  # noqa: S311  (a reproducible sample, not security)
    total = 0.0
    used = 0
    for path, targets in candidates[:sample]:
        try:
            text = index.read_note(path)["text"]
        except SidecarError:
            continue  # vanished or unreadable since indexing: not a sample
        res = index.related(path=path, text=hide_links(text), limit=K)
        total += recall_at_k([r["path"] for r in res["results"]], targets)
        used += 1
    return {"notes": float(used), "recall@10": total / used if used else 0.0}

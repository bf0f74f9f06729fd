"""search(query, limit, filters, mode, max_tokens): the one function behind every adapter.

Stages: candidates (BM25 over FTS5, cosine over the vector matrix) -> RRF over chunks ->
group by note -> link-graph boost -> bands -> results with per-signal scores and a reason.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np

from sidecar.errors import InvalidParams
from sidecar.ingest.boilerplate import WEIGHT as BOILERPLATE_WEIGHT
from sidecar.ingest.cjk import may_straddle_words
from sidecar.ingest.embed import Embedder
from sidecar.ingest.fold import fold
from sidecar.protocol_types import (
    SEARCH_LIMIT_DEFAULT,
    Band,
    SearchMode,
    SearchResponse,
    SearchResult,
)
from sidecar.rank.evidence import QueryEvidence, count_cap, query_evidence
from sidecar.rank.fuse import (
    CAVEATS,
    Thresholds,
    band_for,
    blur_share,
    confidence,
    is_identifier_query,
    query_weights,
    rrf,
)
from sidecar.retrieve.dates import MonthNamed, month_match, query_months
from sidecar.retrieve.lexical import (
    LexicalQuery,
    build_query,
    compound_splits,
    compound_word,
    ending_word,
    holds_term,
    make_snippet,
    may_be_compound,
    may_carry_ending,
    query_name_phrases,
    query_names,
    start_cuts,
    typed_out,
    without_link_targets,
)
from sidecar.retrieve.snapshot import Snapshot
from sidecar.store import search_reads as reads
from sidecar.store.reads import chunk_count

Mode = Literal["hybrid", "lexical", "semantic"]
CHARS_PER_TOKEN = 4  # the usual estimate for English prose; documented in the protocol
MIN_KNOWN_SHARE = 0.5  # below this share of letters in known pieces a query's vector is noise, not meaning
MAX_QUERY_CHARS = 4000  # a pasted page is searched by its beginning; BM25 and one embedding need no more


@dataclass(frozen=True)
class Filters:
    folder: str | None = None
    tag: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    modified_since: float | None = None
    exclude_path: str | None = None
    exclude_terms: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, raw: dict[str, Any] | None) -> Filters:
        if not raw:  # its shape is the protocol's SearchFilters, checked where the call came in (serve/params.py)
            return cls()
        fields_raw = raw.get("fields") or {}
        since = raw.get("modified_since")
        return cls(
            folder=_opt_str(raw.get("folder")), tag=_opt_str(raw.get("tag")),
            fields={str(k): str(v) for k, v in fields_raw.items()},
            modified_since=min(max(float(since), 0.0), 9.2e9) if since is not None else None,  # int64 ns
            exclude_path=_opt_str(raw.get("exclude_path")),
            exclude_terms=tuple(str(t) for t in raw.get("exclude_terms") or () if str(t).strip()),
        )

    @property
    def folder_key(self) -> str | None:
        return self.folder.strip("/").lower() if self.folder else None

    @property
    def tag_key(self) -> str | None:
        return self.tag.lstrip("#").lower() if self.tag else None

    def active(self) -> bool:
        return bool(self.folder or self.tag or self.fields or self.modified_since is not None or self.exclude_path
                    or self.exclude_terms)


def _opt_str(value: object) -> str | None:
    return str(value).strip() or None if value is not None else None


@dataclass(frozen=True)
class Ranking:
    """Every ranking ingredient, with the default the evaluation supports (docs/ranking.md)."""

    rrf_k: int = 30  # 60 (the seeds') let the weaker leg's tail outvote the stronger leg's head on every shared set
    lexical_weight: float = 1.5  # the static-embedding leg is the weaker one on every query kind measured
    semantic_weight: float = 1.0
    query_aware: bool = True
    graph_weight: float = 0.1  # authority + co-linking among top results (docs/ranking.md)
    recency_weight: float = 0.0  # off by default: the eval shows no gain on timeless notes
    recency_half_life_days: float = 90.0
    candidates: int = 120  # chunks per leg (80 missed answers the other leg ranked well)
    per_note: int = 40  # of them one note's at most: a pasted log of 1,000 sections that repeat a word took every
    # place, and the notes mentioning it once were not found (its 41st section adds nothing to its own score)
    section_bonus: float = 0.0  # share of a note's 2nd/3rd matching sections added to its score: off, it hurt
    # or did nothing on every set added alone and helped 3 of 5 taken out (docs/ranking.md)
    coverage_weight: float = 0.3  # lift for the share of query words the best section holds: keeps the
    # boosts above from putting a partial match over the one note that has every word
    long_note_damping: float = 0.08  # a note's score / (1 + this * log2(sections / long_note_sections)): a list of
    # 500 plugins has a section near almost any query, and the best of many sections is high by chance
    long_note_sections: int = 4  # notes up to this many sections are not damped at all
    column_weights: tuple[float, float, float, float] = (1.0, 1.0, 0.3, 1.0)  # body, heading, context (as the seeds), cjk
    loose_weight: float = 0.5  # lexical sections holding only some of the query's words count this share of
    # a full lexical vote: on a long paraphrase, notes sharing a few literal words outvote the semantic leg
    band_order: bool = False  # within the page, higher bands first (ties keep the ranking's order)
    mention_weight: float = 1.0  # what a query word a section holds only inside a link's target (`[[Sourdough
    # Bread]]`) counts for its coverage: 1.0 as any word (off); 0.0 moved every set within noise (docs/ranking.md)
    named_first: bool = True  # a query that is a note's title, file name or alias finds that note first
    template_weight: float = BOILERPLATE_WEIGHT  # a template's score is this share: a form, not an answer ("what
    # movies have I watched" led with kepano's Actor and Director Templates); its name still finds it first


def allowed_notes(conn: sqlite3.Connection, filters: Filters, phrases: Sequence[str] = ()) -> set[int] | None:
    """The notes the filters let through, and (quotes in the query) that hold every phrase; None: all."""
    if not filters.active() and not phrases:
        return None
    excluded = [m for term in filters.exclude_terms if (m := build_query(f'"{term}"', prefix_last=False).match)]
    return reads.filtered_note_ids(
        conn, filters.folder_key, filters.tag_key, filters.fields,
        None if filters.modified_since is None else int(filters.modified_since * 1e9), filters.exclude_path, excluded,
        phrases)


def nothing_passes(conn: sqlite3.Connection, filters: Filters) -> str:
    """Why no note passed the filters: a folder or tag the vault does not have ("Referencs") is said, not
    left as "nothing matched"."""
    missing = reads.filter_misses(conn, filters.folder_key, filters.tag_key)
    said = [f"There is no folder '{(filters.folder or '').strip('/')}' in the vault."] if "folder" in missing else []
    said += [f"No note has the tag #{(filters.tag or '').lstrip('#')}."] if "tag" in missing else []
    return " ".join(said) or "No note passes the filters (and holds the quoted words) all at once."


@dataclass
class Candidates:
    lexical: list[int] = field(default_factory=list)  # chunk ids, best first
    lexical_strict: int = 0  # how many of them hold every query term (the rest share only some)
    semantic: list[int] = field(default_factory=list)
    note_similarity: dict[int, float] = field(default_factory=dict)  # note id -> best cosine of its chunks
    known_share: float | None = None  # share of the query's letters the embedding model knows (Embedder.known_share)
    query_vector: np.ndarray | None = None
    background: float = 0.0  # the query's mean band cosine to a sample of the vault's sections (Snapshot.background)

    @property
    def blind(self) -> bool:
        """The model reads the query's language as one blur (BLIND_BACKGROUND): no cosine for the bands."""
        return self.background >= BLIND_BACKGROUND


def lexical_candidates(conn: sqlite3.Connection, query: LexicalQuery, allowed: set[int] | None,
                       ranking: Ranking, counts: dict[str, int] | None = None) -> tuple[list[int], int]:
    """BM25 candidates: sections holding every term first, then (if too few) those holding some; and
    how many hold every term.

    Asking for all terms first is both the better ranking (coverage) and the fast path: OR over
    common words makes FTS5 score tens of thousands of rows, AND intersects the posting lists."""
    if query.match is None:
        return [], 0
    found, strict = _all_then_any(conn, query, allowed, ranking, counts)
    if not found and query.fallback:  # no CJK bigram in common: sections sharing single characters
        return _bm25(conn, query.fallback, allowed, ranking, ranking.candidates), 0
    return found, strict


def _all_then_any(conn: sqlite3.Connection, query: LexicalQuery, allowed: set[int] | None,
                  ranking: Ranking, counts: dict[str, int] | None) -> tuple[list[int], int]:
    assert query.match is not None
    if len(query.parts) < 2 or query.match_all is None:
        found = _bm25(conn, query.match, allowed, ranking, ranking.candidates)
        if not found and query.parts:  # one word no note holds: a compound's parts, or the word's start
            wider = _specific_any(conn, query, counts)
            return (_bm25(conn, wider, allowed, ranking, ranking.candidates) if wider != query.match else []), 0
        return found, len(found)
    strict = _bm25(conn, query.match_all, allowed, ranking, ranking.candidates)
    if len(strict) >= ranking.candidates // 2:
        return strict, len(strict)
    seen = set(strict)
    loose = [c for c in _bm25(conn, _specific_any(conn, query, counts), allowed, ranking, ranking.candidates)
             if c not in seen]
    return strict + loose[: ranking.candidates - len(strict)], len(strict)


COMMON_SHARE = 0.05  # a term in more than 5% of sections only widens an OR; its rows are scored for nothing


def _specific_any(conn: sqlite3.Connection, query: LexicalQuery, counts: dict[str, int] | None) -> str:
    """The OR expression without terms found nearly everywhere (all of them, if every term is common),
    and with the parts of a compound the vault has only apart (lexical.compound_splits)."""
    total = chunk_count(conn) if counts is None else counts.get("", 0)
    cap = max(200, int(total * COMMON_SHARE))
    counts = {} if counts is None else counts
    kept = []
    for part in query.parts:
        found = _counted(conn, counts, "part:" + part, part, cap + 1)
        if found <= cap:
            kept.append(part)
        if found == 0:
            kept += _absent_word_parts(conn, part, counts)
    return " OR ".join(kept) if kept else str(query.match)


def _absent_word_parts(conn: sqlite3.Connection, part: str, counts: dict[str, int]) -> list[str]:
    """What to look up for a query word no section holds: a compound's two parts, else its longest start
    some word of the vault begins with (an ending Porter does not know: Italian "collegarmi" -> "collegar")."""
    compound = compound_word(part)
    split = _compound_parts(conn, compound, counts) if compound is not None else []
    if split:
        return split
    word = ending_word(part)
    return _start_part(conn, word, counts) if word is not None else []


def _start_part(conn: sqlite3.Connection, word: str, counts: dict[str, int]) -> list[str]:
    """The longest start of the word (start_cuts) that some section's word begins with, as an FTS5 prefix term."""
    for cut in start_cuts(word):
        term = f'"{word[:cut]}" *'
        if _counted(conn, counts, "start:" + term, term, 1):  # whether any section has it
            return [term]
    return []


def _counted(conn: sqlite3.Connection, cache: dict[str, int], key: str, expr: str, cap: int) -> int:
    """Sections matching the FTS5 expression, counted up to `cap` (reads.match_count) and kept under `key` in
    the generation's cache (Searcher._term_counts): a word asked again costs a dict lookup."""
    if key not in cache:
        cache[key] = reads.match_count(conn, expr, cap)
    return cache[key]


COMPOUND_COUNT_CAP = 1000  # a part's sections are counted this far: enough to rank the ways of splitting


def _compound_parts(conn: sqlite3.Connection, word: str, counts: dict[str, int]) -> list[str]:
    """The two FTS5 terms of the word's best split into words the vault has (the first whole, the second
    also as the start of a longer word: it carries the ending), by the geometric mean of their section
    counts; none when no split has both."""
    def count(term: str) -> int:
        return _counted(conn, counts, "compound:" + term, term, COMPOUND_COUNT_CAP)

    best: tuple[int, list[str]] | None = None
    for left, right in compound_splits(word):
        terms = [f'"{left}"', f'"{right}" *']
        right_count = count(terms[1])
        found = right_count and count(terms[0]) * right_count
        if found and (best is None or found > best[0]):
            best = (found, terms)
    return best[1] if best else []


Ranked = tuple[int, int, float]  # (section or row, note id, score: lower is better)


def capped(ranked: Sequence[Ranked], per_note: int) -> tuple[list[Ranked], set[int]]:
    """The rows in order, at most `per_note` of a note; and the notes that had more."""
    kept, counts, crowded = [], Counter[int](), set()
    for row in ranked:
        counts[row[1]] += 1
        if counts[row[1]] <= per_note:
            kept.append(row)
        else:
            crowded.add(row[1])
    return kept, crowded


def with_room(ranked: list[Ranked], limit: int, per_note: int,
              without: Callable[[set[int], int], list[Ranked]]) -> list[Ranked]:
    """A leg's `limit` best rows, `per_note` of a note at most. When a full list was crowded by a few
    notes, `without(those notes, places left)` asks the leg again for the places their extra rows took."""
    kept, crowded = capped(ranked, per_note)
    if crowded and len(ranked) == limit:
        kept = capped(sorted(kept + without(crowded, limit - len(kept)), key=lambda row: row[2]), per_note)[0]
    return kept[:limit]


def _bm25(conn: sqlite3.Connection, match: str, allowed: set[int] | None, ranking: Ranking, limit: int) -> list[int]:
    def ranked(excluded: set[int], places: int) -> list[Ranked]:
        return reads.bm25_ranked(conn, match, ranking.column_weights, allowed, places, excluded)

    return [row[0] for row in with_room(ranked(set(), limit), limit, ranking.per_note, ranked)]


def semantic_candidates(snap: Snapshot, query_vector: np.ndarray, allowed: set[int] | None,
                        k: int, per_note: int) -> tuple[list[int], dict[int, float]]:
    """Chunk ids of the k nearest chunks (best first), and each of their notes' best cosine."""
    if len(snap.vector_ids) == 0:
        return [], {}
    mask = None if allowed is None else \
        np.isin(snap.vector_notes, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
    query = query_vector.astype(np.float32, copy=False)

    def ranked(excluded: set[int], places: int) -> list[Ranked]:
        rows = mask
        if excluded:
            others = ~np.isin(snap.vector_notes, np.fromiter(excluded, dtype=np.int64, count=len(excluded)))
            rows = others if mask is None else mask & others
        top, sims = snap.nearest(query, places, rows)
        return list(zip(top.tolist(), snap.vector_notes[top].tolist(), (-sims).tolist(), strict=True))

    kept = with_room(ranked(set(), k), k, per_note, ranked)
    note_best: dict[int, float] = {}
    for _row, note, negative in kept:
        note_best.setdefault(note, -negative)  # best first: the first is the note's best
    return snap.vector_ids[[row for row, _, _ in kept]].tolist(), note_best


@dataclass(frozen=True, slots=True)
class Judged:
    """A hit's band and what it rests on (Searcher._judge): read for every hit of the page, shown or not."""
    band: Band
    score: float | None  # the confidence; None without a cosine
    coverage: float  # share of the query's terms its best section holds
    lex_rank: int | None


@dataclass
class NoteHit:
    note_id: int
    chunks: list[int]  # best first
    fused: float
    graph_boost: float | None = None
    recency_boost: float | None = None
    coverage_boost: float | None = None
    linked_results: int = 0  # other results among the first ten it links to or is linked from
    authority: float = 0.0  # its PageRank, 0..1 (the vault's best-linked note is 1)

    @property
    def score(self) -> float:
        return self.fused * (1 + (self.graph_boost or 0.0) + (self.recency_boost or 0.0) + (self.coverage_boost or 0.0))


def group_by_note(chunk_scores: dict[int, float], chunk_note: dict[int, int], section_bonus: float = 0.0) -> list[NoteHit]:
    """Best chunk decides a note's score; its next two matching sections may add `section_bonus` of theirs."""
    by_note: dict[int, list[tuple[float, int]]] = {}
    for chunk_id, score in chunk_scores.items():
        by_note.setdefault(chunk_note[chunk_id], []).append((score, chunk_id))
    hits = []
    for note_id, items in by_note.items():
        items.sort(reverse=True)
        extra = sum(s for s, _ in items[1:3]) * section_bonus if section_bonus else 0.0
        hits.append(NoteHit(note_id, [c for _, c in items], items[0][0] + extra))
    hits.sort(key=lambda h: -h.fused)
    return hits


def named_first(hits: list[NoteHit], note_rows: dict[int, dict[str, Any]], query: str) -> list[NoteHit]:
    """A query that is a note's name (its title, file name or an alias, in any case) finds that note first,
    as Obsidian's quick switcher does: "2024-03-05" opened a note that mentions the date above the daily
    note itself (docs/ranking.md)."""
    wanted = name_key(query)
    named = [h for h in hits if h.note_id in note_rows and wanted in _names(note_rows[h.note_id])] if wanted else []
    return [*named, *(h for h in hits if h not in named)] if named else hits


def name_key(text: str) -> str:
    """A name as typed and as written compare equal: case, width forms, runs of spaces, quotes around it."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().strip().strip('"').split())


def _names(row: dict[str, Any]) -> set[str]:
    stem = str(row["path"]).rsplit("/", 1)[-1].removesuffix(".md")
    return {name_key(n) for n in (str(row["title"]), stem, *(str(a) for a in row.get("aliases") or ()))}


def damp_long_notes(hits: list[NoteHit], sections: dict[int, int], damping: float, free: int) -> None:
    if damping <= 0:
        return
    free = max(1, free)
    for hit in hits:
        count = sections.get(hit.note_id, 1)
        if count > free:  # the others divide by exactly 1
            hit.fused /= 1 + damping * math.log2(count / free)
    hits.sort(key=lambda h: -h.fused)


def apply_graph_boost(hits: list[NoteHit], snap: Snapshot, weight: float, window: int = 10) -> None:
    """Authority (PageRank, 0..1) and links to/from the other top results both lift a note."""
    if weight <= 0 or not hits:
        return
    top = {h.note_id for h in hits[:window]}
    for hit in hits[: window * 3]:
        authority = snap.graph.authority.get(hit.note_id, 0.0)
        near = snap.graph.neighbours(hit.note_id)
        linked = len(near & top) - (hit.note_id in top and hit.note_id in near)  # itself is no other result
        hit.graph_boost = weight * (0.5 * math.sqrt(authority) + 0.5 * min(linked, 3) / 3)
        hit.linked_results, hit.authority = linked, authority


COVERAGE_WINDOW = 30  # the notes apply_coverage_boost looks at: their best sections' text is read


def apply_coverage_boost(hits: list[NoteHit], chunk_rows: dict[int, dict[str, Any]], terms: Sequence[str],
                         weight: float, mention_weight: float = 1.0, window: int = COVERAGE_WINDOW) -> None:
    """A note whose best section holds every query word outranks one that holds some of them, even when
    other boosts (graph, several sections) favour the partial match. Neutral for one-word queries."""
    if weight <= 0 or len(terms) < 2:
        return
    for hit in hits[:window]:
        hit.coverage_boost = weight * section_coverage(terms, chunk_rows[hit.chunks[0]], mention_weight)


def section_coverage(terms: Sequence[str], row: dict[str, Any], mention_weight: float = 1.0) -> float:
    """Share of the query's words the section holds, a word held only inside a link's target counting
    `mention_weight` of one ("next to the [[Sourdough Bread]] starter" is no section about sourdough)."""
    held = term_coverage(terms, f"{row['heading']} {row['body']} {row['context']}")
    if mention_weight >= 1.0 or "[[" not in row["body"]:
        return held
    own = term_coverage(terms, f"{row['heading']} {without_link_targets(row['body'])} {row['context']}")
    return own + mention_weight * (held - own)


TEMPLATE_NAMED = 2  # words of a template's title a query holds to ask for that template ("job interview template")


def weigh_templates(hits: list[NoteHit], note_rows: dict[int, dict[str, Any]], weight: float,
                    terms: Sequence[str] = ()) -> None:
    """A template's score is `weight` of it: a form, not an answer (the notes whose rows were read); unless the
    query holds TEMPLATE_NAMED words of its title ("a template for notes during a job interview")."""
    for hit in hits:
        row = note_rows.get(hit.note_id)
        if row is not None and row["template"] and not (terms and asks_for(terms, row["title"])):
            hit.fused *= weight


def asks_for(terms: Sequence[str], title: str) -> bool:
    """The query holds TEMPLATE_NAMED words of this title or more: it asks for that note by name."""
    return len(found_terms(terms, title)) >= TEMPLATE_NAMED


def apply_recency_boost(hits: list[NoteHit], mtimes: dict[int, int], ranking: Ranking, now: float) -> None:
    if ranking.recency_weight <= 0:
        return
    for hit in hits:
        age_days = max(0.0, (now - mtimes.get(hit.note_id, 0) / 1e9) / 86400)
        hit.recency_boost = ranking.recency_weight * 0.5 ** (age_days / ranking.recency_half_life_days)


def term_coverage(terms: Sequence[str], text: str) -> float:
    """Share of query terms present in the text (stem-ish for ASCII words, substring otherwise)."""
    return len(found_terms(terms, text)) / len(terms) if terms else 0.0


def found_terms(terms: Sequence[str], text: str) -> list[str]:
    """The query terms the text holds, in query order (lexical.term_pattern's rule, accents and case
    aside: the text folded once)."""
    folded = fold(text)
    return [term for term, folded_term in zip(terms, _folded_terms(tuple(terms)), strict=True)
            if holds_term(folded, folded_term)]


@functools.lru_cache(maxsize=256)
def _folded_terms(terms: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(fold(t) for t in terms)


def numbers_in_context(found: Sequence[str], evidence: QueryEvidence, title_heading: str, body: str) -> set[str]:
    """The query's numbers ("2023", "v1") the hit holds where they qualify the query's subject: in its
    title or heading, or on a line holding one of the query's rare words too. A list of links that has
    "2023" on one line and "October ... winners" on another is no page about October 2023."""
    numbers = set(evidence.exact & set(found))
    subject = (evidence.rare & set(found)) - numbers
    if not numbers or not subject:
        return numbers
    return {n for n in numbers if n in title_heading.lower()
            or any(n in line.lower() and term_coverage(list(subject), line) > 0 for line in body.splitlines())}


def unseen_phrases(conn: sqlite3.Connection, phrases: Collection[str], sections: int,
                   cache: dict[str, int]) -> list[str]:
    """The phrases no section holds (the words side by side, as a quoted search finds them), sorted; those past
    document_counts' MAX_EVIDENCE_TERMS (a pasted page) are not counted, and not said to be missing."""
    counts = document_counts(conn, [f'"{phrase}"' for phrase in phrases], sections, cache)
    return sorted(phrase for phrase in phrases if counts.get(f'"{phrase}"', 1) == 0)


def unseen_months(conn: sqlite3.Connection, months: Collection[MonthNamed], cache: dict[str, int]) -> list[str]:
    """The months the query names ("October 2023") that no section writes in any form (dates.month_match),
    as the query spells them."""
    return [named.spelled for named in months
            if not _counted(conn, cache, f"month:{named.year}-{named.month}", month_match(named), 1)]


def never_mentioned(query: str, names: Sequence[str]) -> str:
    """The caveat's sentence naming what the vault never mentions, spelled as the query spells it."""
    spelled = []
    for name in names:
        found = re.search(r"\b" + r"\W+".join(map(re.escape, name.split())) + r"\b", query, re.IGNORECASE)
        spelled.append(f"“{found.group(0) if found else name}”")
    listed = ", ".join(spelled[:-1]) + " or " + spelled[-1] if len(spelled) > 1 else spelled[0]
    return f"No note mentions {listed}."


def document_counts(conn: sqlite3.Connection, terms: Sequence[str], sections: int,
                    cache: dict[str, int] | None = None, apart: Mapping[str, str] | None = None) -> dict[str, int]:
    """Sections holding each term, counted up to evidence.count_cap (a common word costs no more than that).
    `cache` (kept per index generation) saves the count for terms seen before; `apart` (LexicalQuery.apart)
    names the phrase a camelCase term is also searched as."""
    cap = count_cap(sections)
    cache = {} if cache is None else cache
    counts = {}
    for term in terms[:MAX_EVIDENCE_TERMS]:
        key = "df:" + term
        if key not in cache:
            expr = build_query(term, prefix_last=False, drop_stopwords=False).match  # looked up as search does
            cache[key] = 0 if expr is None else reads.match_count(conn, expr, cap)
        counts[term] = cache[key]
    for term, count in list(counts.items()):
        if count == 0 and apart and term in apart:  # a camelCase word the vault spells apart: as present as that
            counts[term] = document_counts(conn, [apart[term]], sections, cache)[apart[term]]
        elif count == 0 and may_straddle_words(term):  # then its characters are the evidence
            chars = document_counts(conn, list(term), sections, cache)
            if all(chars.values()):
                counts[term] = min(chars.values())
        elif count == 0 and may_be_compound(term):  # a compound the vault has apart: as present as its rarer part
            parts = _compound_parts(conn, term, cache)
            if parts:
                counts[term] = min(cache["compound:" + part] for part in parts)
        if counts[term] == 0 and may_carry_ending(term) and (start := _start_part(conn, term, cache)):
            counts[term] = _counted(conn, cache, "df:" + start[0], start[0], cap)  # as present as the vault's word it inflects
    return counts


# A query whose mean cosine to a sample of the vault's sections (Snapshot.background) reaches this is one the
# model cannot tell apart from any other text of its language: the embedded model reads Vietnamese so
# (background 0.56-0.71 on help-vi's questions, against -0.09..0.31 on twelve sets in languages it reads).
BLIND_BACKGROUND = 0.45
# Short of that, a language the model half reads has every cosine raised by what all its texts share: Arabic,
# which the multilingual part's training texts lacked (background median 0.35; "an Apple Watch app?" was 0.72
# from the code of conduct). The background's excess over this floor is taken off each band cosine.
BACKGROUND_FLOOR = 0.2
# The vector leg still ranks for such a query (help-vi, background 0.56-0.70: full 0.622 against 0.546 for
# keywords alone; its English part reads the product's names) until the blur is nearly total: its votes count
# less from BLUR_RANKS_LESS and not at all from BLUR_RANKS_NOTHING (help-he, median 0.94, and help-fa, 0.79,
# ranked better by keywords alone).
BLUR_RANKS_LESS = 0.7
BLUR_RANKS_NOTHING = 0.85
BLIND = ("The embedding model reads this query's language as a blur (every note is about as close to it): "
         "the confidence band rests on keywords alone.")


def _model_caveat(cands: Candidates, mode: str) -> str | None:
    """What the embedding model could not do for this query, if anything."""
    if mode != "lexical" and cands.known_share is not None and cands.known_share < MIN_KNOWN_SHARE:
        return f"The embedding model knows only {cands.known_share:.0%} of this query's words: ranked by keywords alone."
    return BLIND if cands.blind else None


MAX_EVIDENCE_TERMS = 16
TERM_COUNTS_KEPT = 100_000  # cached FTS counts per index generation: a few MB at most
SHOWN_SECTIONS = 4  # a hit's best section and the next three, named in other_sections (_cosines weighs the first three)
NO_VECTORS = "Semantic search is unavailable (no vectors): these are lexical results only."
VECTORS_LOADING = "The embedding model is still loading (the sidecar just started): these are lexical results only."


class Searcher:
    def __init__(self, conn: sqlite3.Connection, snap: Snapshot, embedder: Embedder | None,
                 thresholds: Thresholds, ranking: Ranking | None = None, vectors_loading: bool = False,
                 hidden: Callable[[str], object] | None = None) -> None:
        self.conn = conn
        self.snap = snap
        self.embedder = embedder
        self.thresholds = thresholds
        self.ranking = ranking or Ranking()
        self.vectors_loading = vectors_loading  # no vectors yet: the model is still loading (VaultIndex.load_model)
        # A path the vault's rules now leave out (truthy: why), while the index still holds it: never served
        self.hidden = hidden

    def search(self, query: str, limit: int = SEARCH_LIMIT_DEFAULT, filters: Filters | None = None, mode: str = "hybrid",
               max_tokens: int | None = None, explain: bool = False, typed: bool = False) -> SearchResponse:
        started = time.perf_counter()
        text = query[:MAX_QUERY_CHARS] if isinstance(query, str) else query  # a trailing space ends the last word
        query = _stripped(text)
        filters = filters or Filters()
        vectors_available = self.embedder is not None and len(self.snap.vector_ids) > 0
        effective_mode: SearchMode = cast(SearchMode, mode) if vectors_available or mode == "lexical" else "lexical"
        # A submitted query keeps its function words in the all-terms pass (an intersection, cheap); typed
        # or submitted, words in >5% of sections stay out of the wide OR: keeping them there cost 4x the
        # time for no gain on the shared sets (docs/ranking.md). Only a query being typed ends in a prefix.
        lexq = build_query(text, prefix_last=typed, drop_stopwords=typed)
        # "Quotes make phrases" in every mode: the vector leg alone found notes without the phrase, as high
        allowed = allowed_notes(self.conn, filters, lexq.phrases)
        cands = self._candidates(query, lexq, allowed, effective_mode)
        weights = query_weights(query, self.ranking.lexical_weight, self.ranking.semantic_weight) \
            if self.ranking.query_aware else {"lexical": self.ranking.lexical_weight, "semantic": self.ranking.semantic_weight}
        if effective_mode == "hybrid":  # asked for the vector leg alone, its order is the answer however blurred
            weights["semantic"] *= blur_share(cands.background, BLUR_RANKS_LESS, BLUR_RANKS_NOTHING)
        fused = fuse_legs(cands, weights, self.ranking)
        for chunk_id in self.snap.boilerplate.keys() & fused.keys():
            fused[chunk_id] *= BOILERPLATE_WEIGHT
        hits = group_by_note(fused, self._chunk_notes(list(fused)), self.ranking.section_bonus)
        if not is_identifier_query(query):  # an exact identifier's section is no chance match, however long its note
            damp_long_notes(hits, self.snap.sections, self.ranking.long_note_damping, self.ranking.long_note_sections)
        apply_graph_boost(hits, self.snap, self.ranking.graph_weight)
        counts = document_counts(self.conn, lexq.terms, self.snap.chunk_count, self._term_counts(),
                                 dict(lexq.apart)) if hits else {}
        named = typed_out(text) if typed else query  # a name half typed is no name the vault lacks
        evidence = query_evidence(counts, self.snap.chunk_count,
                                  *self._names(named, counts) if hits else (frozenset(), ()))
        chunk_rows = self._chunk_rows([h.chunks[0] for h in hits[:COVERAGE_WINDOW]])
        apply_coverage_boost(hits, chunk_rows, lexq.terms, self.ranking.coverage_weight, self.ranking.mention_weight)
        # The window whose names named_first reads, and any hit further down whose file the query names: a
        # template whose one section is boilerplate ranked past it, and "Daily Note Template" found the Monthly one
        file_named = reads.notes_named(self.conn, query.lower()) if self.ranking.named_first else set()
        page = max(limit, ANSWER_WINDOW)  # the hits the answer's band reads, however few are shown
        note_rows = self._note_rows([h.note_id for i, h in enumerate(hits) if i < page * 3 or h.note_id in file_named])
        if self.hidden is not None:  # a note excluded since the last index run (a CLI search, say)
            hits = [h for h in hits if h.note_id not in note_rows or not self.hidden(note_rows[h.note_id]["path"])]
        apply_recency_boost(hits, {k: v["mtime_ns"] for k, v in note_rows.items()}, self.ranking, time.time())
        weigh_templates(hits, note_rows, self.ranking.template_weight, lexq.terms)
        hits.sort(key=lambda h: -h.score)
        hits = (named_first(hits, note_rows, query) if self.ranking.named_first else hits)[:page]
        judged = self._judged(hits, cands, chunk_rows, note_rows, lexq, evidence, vectors_available)
        if self.ranking.band_order:
            order = sorted(range(len(hits)), key=lambda i: -BAND_ORDER[judged[i].band])
            hits, judged = [hits[i] for i in order], [judged[i] for i in order]
        band = overall_band([j.band for j in judged])  # "limit": 1 asks for less to read, not whether the vault answers
        results = self._results(hits[:limit], judged[:limit], cands, chunk_rows, note_rows, lexq, max_tokens)
        response: SearchResponse = {
            "query": query, "mode": effective_mode, "took_ms": 0.0,
            "vectors_available": vectors_available, "vectors_loading": self.vectors_loading, "index_building": False,
            "band": band, "caveat": CAVEATS[band], "results": results,
        }
        if mode != effective_mode:
            response["caveat"] = _join(response["caveat"], VECTORS_LOADING if self.vectors_loading else NO_VECTORS)
        elif (note := _model_caveat(cands, effective_mode)) is not None:
            response["caveat"] = _join(response["caveat"], note)
        if allowed is not None and not allowed:
            response["caveat"] = _join(response["caveat"], nothing_passes(self.conn, filters))
        if evidence.missing_names:
            response["caveat"] = _join(response["caveat"], never_mentioned(query, evidence.missing_names))
        if explain:
            response["explanation"] = self._explanation(weights, cands, lexq, filters, allowed)
        response["took_ms"] = round((time.perf_counter() - started) * 1000, 2)
        return response

    # ---- stages -------------------------------------------------------------------------
    def _candidates(self, query: str, lexq: LexicalQuery, allowed: set[int] | None, mode: str) -> Candidates:
        cands = Candidates()
        if mode in ("hybrid", "lexical"):
            cands.lexical, cands.lexical_strict = lexical_candidates(
                self.conn, lexq, allowed, self.ranking, self._term_counts())
        if self.embedder is not None and len(self.snap.vector_ids):
            cands.known_share = self.embedder.known_share(query)
            if cands.known_share < MIN_KNOWN_SHARE:
                return cands  # mostly unknown: the vector would be noise, so keywords decide alone
            qvec = self.embedder.encode_query(query)
            if not np.any(qvec):
                return cands  # no known token in the query: the semantic leg has nothing to say
            cands.query_vector = qvec  # in lexical mode too: the bands weigh each hit's cosine
            dims, band_query, norm = self._band_query(qvec, self.embedder)
            cands.background = self.snap.background(band_query, dims) / norm
            if mode in ("hybrid", "semantic"):
                cands.semantic, cands.note_similarity = semantic_candidates(
                    self.snap, qvec, allowed, self.ranking.candidates, self.ranking.per_note)
        return cands

    def _names(self, query: str, counts: Mapping[str, int]) -> tuple[frozenset[str], list[str]]:
        """The query's names (lexical.query_names), and those of them no section holds that are phrases
        ("Apple Watch") or months ("October 2023"). A month's name in a date is the date's, no name of its own:
        a vault writing "12.03.2022" has "March 2022" without the word "March". A name the vault writes less
        the query's ending is no name it lacks: Polish "z Excela", "w Obsidianie" (help-pl, a QA set); from
        seven letters document_counts already counts it so, a name of six ("Excela") is looked past here."""
        months = query_months(query)
        dated = {word for month in months for word in month.spelled.split()}
        phrases = [phrase for phrase in query_name_phrases(query) if dated.isdisjoint(phrase.split())]
        cache = self._term_counts()
        names = query_names(query) - dated
        inflected = {name for name in names if counts.get(name) == 0 and _start_part(self.conn, name, cache)}
        return names - inflected, [*unseen_phrases(self.conn, phrases, self.snap.chunk_count, cache),
                                   *unseen_months(self.conn, months, cache)]

    def _term_counts(self) -> dict[str, int]:
        """The generation's cache of FTS counts, with the section count under "". A new one past
        TERM_COUNTS_KEPT entries (each distinct word asked adds some until the index changes); replaced,
        not cleared, as another thread may be reading the old one."""
        if len(self.snap.term_counts) > TERM_COUNTS_KEPT:
            self.snap.term_counts = {}
        self.snap.term_counts.setdefault("", self.snap.chunk_count)
        return self.snap.term_counts

    def _chunk_notes(self, chunk_ids: list[int]) -> dict[int, int]:
        """Chunk id -> note id: all grouping needs (the text is read only for the sections shown or weighed).
        The snapshot knows the note of every chunk with a vector (an array lookup, not 240 SQLite
        lookups); SQLite is asked for the rest."""
        notes: dict[int, int] = {}
        if len(self.snap.vector_ids) and chunk_ids:
            rows = self.snap.rows_for(np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids)))
            known = rows >= 0
            notes = dict(zip(np.asarray(chunk_ids)[known].tolist(), self.snap.vector_notes[rows[known]].tolist(),
                             strict=True))
        missing = [c for c in chunk_ids if c not in notes]
        if missing:
            notes.update(reads.chunk_note_ids(self.conn, set(missing)))
        return notes

    def _chunk_rows(self, chunk_ids: list[int]) -> dict[int, dict[str, Any]]:
        if not chunk_ids:
            return {}
        return reads.chunk_rows(self.conn, set(chunk_ids))

    def _read_rows(self, chunk_rows: dict[int, dict[str, Any]], chunk_ids: list[int]) -> None:
        """Adds to `chunk_rows` the rows of those sections it does not hold yet, in one read."""
        chunk_rows.update(self._chunk_rows([c for c in chunk_ids if c not in chunk_rows]))

    def _note_of(self, note_id: int, note_rows: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """A hit's note row; one named first from past the rows read up front is read once, and kept."""
        if note_id not in note_rows:
            note_rows.update(self._note_rows([note_id]))
        return note_rows[note_id]

    def _note_rows(self, note_ids: list[int]) -> dict[int, dict[str, Any]]:
        if not note_ids:
            return {}
        return reads.note_rows(self.conn, set(note_ids))

    def _judged(self, hits: list[NoteHit], cands: Candidates, chunk_rows: dict[int, dict[str, Any]],
                note_rows: dict[int, dict[str, Any]], lexq: LexicalQuery, evidence: QueryEvidence,
                vectors_available: bool) -> list[Judged]:
        """Each hit's band and what it rests on, from its best section (read here if it is not yet)."""
        self._read_rows(chunk_rows, [h.chunks[0] for h in hits])
        return [self._judge(h, cands, chunk_rows, note_rows, lexq, evidence, vectors_available, cosine)
                for h, cosine in zip(hits, self._cosines(hits, cands), strict=True)]

    def _judge(self, hit: NoteHit, cands: Candidates, chunk_rows: dict[int, dict[str, Any]],
               note_rows: dict[int, dict[str, Any]], lexq: LexicalQuery, evidence: QueryEvidence,
               vectors_available: bool, cosine: float | None) -> Judged:
        best = chunk_rows[hit.chunks[0]]
        note = self._note_of(hit.note_id, note_rows)
        lex_rank = _rank_of(cands.lexical, hit.chunks)
        text = f"{note['title']} {best['heading']} {best['body']} {best['context']}"
        found = found_terms(lexq.terms, text)
        coverage = len(found) / len(lexq.terms) if lexq.terms else 0.0
        # What the query names exactly and the hit lacks (a number) or the vault never names: no `high`
        named_missing = evidence.lacks_name or bool(
            evidence.exact - numbers_in_context(found, evidence, f"{note['title']} {best['heading']}", best["body"]))
        rare_hit = lex_rank is not None and bool(evidence.rare & set(found))
        # No cosine (no vectors yet, or the model knows too few of the query's letters): the band is the
        # keywords' alone, never high on them, rather than a cosine of 0 reading as "no answer".
        score = confidence(cosine, evidence.weighted_coverage(found), evidence.absent) \
            if vectors_available and cosine is not None else None
        return Judged(band_for(score, coverage, rare_hit, named_missing, self.thresholds, absent=evidence.absent,
                               lacks_thing=evidence.lacks_thing),
                      score, coverage, lex_rank)

    def _results(self, hits: list[NoteHit], judged: list[Judged], cands: Candidates,
                 chunk_rows: dict[int, dict[str, Any]], note_rows: dict[int, dict[str, Any]], lexq: LexicalQuery,
                 max_tokens: int | None) -> list[SearchResult]:
        """The hits shown: their other sections named, and with a budget their text (_fit_text)."""
        self._read_rows(chunk_rows, [c for h in hits for c in h.chunks[1:SHOWN_SECTIONS]])
        results = [self._result(h, j, cands, chunk_rows, note_rows, lexq) for h, j in zip(hits, judged, strict=True)]
        if max_tokens:
            self._fit_text(results, hits, chunk_rows, max_tokens, lexq.terms)
        return results

    def _result(self, hit: NoteHit, judged: Judged, cands: Candidates, chunk_rows: dict[int, dict[str, Any]],
                note_rows: dict[int, dict[str, Any]], lexq: LexicalQuery) -> SearchResult:
        best = chunk_rows[hit.chunks[0]]
        note = self._note_of(hit.note_id, note_rows)
        lex_rank, vec_rank = judged.lex_rank, _rank_of(cands.semantic, hit.chunks)
        similarity = cands.note_similarity.get(hit.note_id)
        band, score, coverage = judged.band, judged.score, judged.coverage
        snippet = make_snippet(best["body"], lexq.terms)
        heading_path = [p for p in best["heading"].split(" > ") if p]
        return {
            "path": note["path"], "title": note["title"], "heading": best["heading"], "heading_path": heading_path,
            "snippet": snippet.text, "highlights": [list(h) for h in snippet.highlights],
            "start_line": best["start_line"], "end_line": best["end_line"],
            "band": band, "score": round(hit.score, 6),
            "scores": {
                "fused": round(hit.fused, 6), "bm25_rank": lex_rank,
                "vector_similarity": None if similarity is None else round(similarity, 4),
                "vector_rank": vec_rank, "graph_boost": None if hit.graph_boost is None else round(hit.graph_boost, 4),
                "recency_boost": None if hit.recency_boost is None else round(hit.recency_boost, 4),
                "confidence": None if score is None else round(score, 4),
            },
            "reason": _reason(lex_rank, vec_rank, similarity, coverage, hit, best["heading"]),
            "other_sections": [
                {"heading": chunk_rows[c]["heading"], "start_line": chunk_rows[c]["start_line"],
                 "end_line": chunk_rows[c]["end_line"]} for c in hit.chunks[1:SHOWN_SECTIONS]],
        }

    def _fit_text(self, results: list[SearchResult], hits: list[NoteHit], chunk_rows: dict[int, dict[str, Any]],
                  max_tokens: int, terms: Sequence[str]) -> None:
        """The shown hits' section text within the budget (_fit_budget), every matching section of them read."""
        self._read_rows(chunk_rows, [c for h in hits for c in h.chunks])
        _fit_budget(results, chunk_rows, hits, max_tokens, terms)

    def _cosines(self, hits: list[NoteHit], cands: Candidates) -> list[float | None]:
        """Per hit, the best cosine of its first three matching sections to the query, whichever leg
        found them (the semantic leg's scores are weighted and cover only its finds), in the dimensions
        the bands read (Embedder.band_slice: the whole vector when the query has none there); rows
        looked up at once."""
        if cands.query_vector is None or self.embedder is None or cands.blind:  # blind: every section about as
            return [None] * len(hits)  # close as an answer, the cosine tells nothing
        dims, query, query_norm = self._band_query(cands.query_vector, self.embedder)
        excess = max(0.0, cands.background - BACKGROUND_FLOOR)
        firsts = [h.chunks[:3] for h in hits]
        rows = self.snap.rows_for(np.fromiter((c for f in firsts for c in f), dtype=np.int64)).tolist()
        cosines: list[float | None] = []
        start = 0
        for first in firsts:  # a product per hit: the same sums, to the bit, as when each hit was scored alone
            found = [r for r in rows[start:start + len(first)] if r >= 0]
            start += len(first)
            if not found:
                cosines.append(None)
                continue
            cosines.append(float(self.snap.cosines(found, query, dims).max()) / query_norm - excess)
        return cosines

    @staticmethod
    def _band_query(query_vector: np.ndarray, embedder: Embedder) -> tuple[slice, np.ndarray, float]:
        """The query's part the bands read (Embedder.band_slice; the whole vector when it has nothing
        there), and that part's length."""
        dims = embedder.band_slice
        query = query_vector[dims]
        norm = float(np.linalg.norm(query))
        return (dims, query, norm) if norm > 0.0 else (slice(None), query_vector, 1.0)

    def _explanation(self, weights: dict[str, float], cands: Candidates, lexq: LexicalQuery,
                     filters: Filters, allowed: set[int] | None) -> dict[str, Any]:
        r = self.ranking
        return {
            "fts_query": lexq.match, "terms": list(lexq.terms), "rrf_k": r.rrf_k, "leg_weights": weights,
            "query_aware": r.query_aware, "graph_weight": r.graph_weight, "recency_weight": r.recency_weight,
            "column_weights": dict(zip(("body", "heading", "context", "cjk"), r.column_weights, strict=True)),
            "candidates": {"lexical": len(cands.lexical), "semantic": len(cands.semantic)},
            "model_known_share": None if cands.known_share is None else round(cands.known_share, 3),
            "filters": {"active": filters.active(), "notes_allowed": None if allowed is None else len(allowed)},
            "thresholds": {"high": self.thresholds.high, "low": self.thresholds.low},
        }


def fuse_legs(cands: Candidates, weights: dict[str, float], ranking: Ranking) -> dict[int, float]:
    """RRF over both legs, the lexical sections that hold only some of the query's words weighing
    `loose_weight` of a full lexical vote at the ranks they have in that leg (after the strict ones)
    when some section holds every word. Lexical first, as ties keep the order they were found in."""
    strict, loose = cands.lexical[: cands.lexical_strict], cands.lexical[cands.lexical_strict:]
    share = ranking.loose_weight if strict else 1.0
    fused = rrf({"lexical": strict}, weights, ranking.rrf_k)
    fused.update(rrf({"lexical": loose}, {"lexical": weights["lexical"] * share},
                     ranking.rrf_k + len(strict)))  # rank r in the tail is rank strict + r in the leg
    for chunk_id, score in rrf({"semantic": cands.semantic}, weights, ranking.rrf_k).items():
        fused[chunk_id] = fused.get(chunk_id, 0.0) + score
    return fused


def _join(caveat: str | None, extra: str) -> str:
    return f"{caveat} {extra}" if caveat else extra


def _stripped(query: str) -> str:
    """The one rule on search's params that the schema cannot say (its minLength counts spaces). The
    bounds, types and modes are the protocol's, checked where a call comes in (serve/params.py)."""
    if not query.strip():
        raise InvalidParams("query must be a non-empty string", {"field": "query"})
    return query.strip()


BAND_ORDER = {"high": 3, "medium": 2, "low": 1, "none": 0}


ANSWER_WINDOW = 10  # hits (a default page) whose best band is the answer's


def overall_band(bands: Sequence[Band], window: int = ANSWER_WINDOW) -> Band:
    """The best band among the first page's hits: a boosted hub note on top must not hide an answer.
    It was the first three's: a page of low hits 1-5 and high ones at 6 and 7 said "the vault does not
    answer this" while get_context, quoting hit 6, said "high" (the eval: no unanswerable query moves).
    Search bands this many hits whatever its limit: asked for one, 17 answerable questions of the eval's
    sets said "the vault does not answer this", which asked for ten said `medium`."""
    return max(bands[:window], key=BAND_ORDER.__getitem__, default="none")


def _rank_of(ranked: list[int], chunk_ids: list[int]) -> int | None:
    wanted = set(chunk_ids)
    for rank, chunk_id in enumerate(ranked, start=1):
        if chunk_id in wanted:
            return rank
    return None


WELL_LINKED = 0.25  # authority from which a note is called well linked: its boost is half the most a note gets


def _reason(lex_rank: int | None, vec_rank: int | None, similarity: float | None, coverage: float,
            hit: NoteHit, heading: str) -> str:
    parts = []
    where = f" in section '{heading}'" if heading else ""
    if lex_rank is not None:
        parts.append(f"matches {round(coverage * 100)}% of your words{where} (keyword rank {lex_rank})")
    if vec_rank is not None and similarity is not None:
        parts.append(f"similar in meaning ({similarity:.2f}, rank {vec_rank})")
    if hit.linked_results:  # every note has some authority: only what lifts it visibly is said
        parts.append(f"linked with {hit.linked_results} other result{'s' if hit.linked_results > 1 else ''}")
    if hit.authority >= WELL_LINKED:
        parts.append("one of the vault's best-linked notes")
    if hit.recency_boost:
        parts.append("recently edited")
    if len(hit.chunks) > 1:
        parts.append(f"{len(hit.chunks)} matching sections")
    return "; ".join(parts) or "found"


def _fit_budget(results: list[SearchResult], chunk_rows: dict[int, dict[str, Any]], hits: list[NoteHit],
                max_tokens: int, terms: Sequence[str]) -> None:
    """Give each result its section text (small-to-big: with the matching sibling sections under the
    same parent heading) until the budget runs out; cut with an ellipsis, never drop silently. Where
    some hit is `high` or `medium`, a `low` one keeps its snippet only: the budget goes to what may answer."""
    budget = max_tokens * CHARS_PER_TOKEN
    answering = any(r["band"] in ("high", "medium") for r in results)
    for result, hit in zip(results, hits, strict=True):
        if answering and result["band"] == "low":
            continue
        sections = answer_sections(hit.chunks, chunk_rows, terms)
        text = "\n\n".join(chunk_rows[c]["body"] for c in sections)
        if len(sections) > 1:
            result["sections"] = [{"heading": chunk_rows[c]["heading"], "start_line": chunk_rows[c]["start_line"],
                                   "end_line": chunk_rows[c]["end_line"]} for c in sections]
        if len(text) <= budget:
            result["text"], result["truncated"] = text, False
            budget -= len(text)
        else:
            result["text"] = text[: max(0, budget - 1)].rstrip() + "…" if budget > 1 else "…"
            result["truncated"] = True
            budget = 0


MAX_SIBLINGS = 3


def answer_sections(chunks: list[int], chunk_rows: dict[int, dict[str, Any]], terms: Sequence[str]) -> list[int]:
    """The best section and the other matching sections under the same parent heading, in note order:
    an answer split over "Plugins > Anki" and "Plugins > Spaced Repetition" stays whole. A sibling
    matches too when it holds at least half as many of the query's words as the best section."""
    best = chunk_rows[chunks[0]]
    parent = best["heading"].rpartition(" > ")[0]
    if not parent:
        return chunks[:1]
    floor = term_coverage(terms, _section_text(best)) / 2
    siblings = [c for c in chunks[1:] if chunk_rows[c]["heading"].rpartition(" > ")[0] == parent
                and term_coverage(terms, _section_text(chunk_rows[c])) >= max(floor, 1e-9)][:MAX_SIBLINGS]
    return sorted([chunks[0], *siblings], key=lambda c: int(chunk_rows[c]["start_line"]))


def _section_text(row: dict[str, Any]) -> str:
    # The leaf heading only: the parent's words are in every sibling's path and would match them all.
    return f"{row['heading'].rpartition(' > ')[2]} {row['body']}"

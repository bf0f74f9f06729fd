"""Related notes for a saved note or an unsaved editor buffer (the pane that follows your writing).

Signals: section-level semantic similarity (the section at the cursor counts most), backlinks,
shared outgoing links (co-citation), shared tags. When a buffer is given it is the truth: its
text, links and tags are used, not the stored copy.
"""

from __future__ import annotations

import posixpath
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from sidecar.errors import InvalidParams, NotFound
from sidecar.ingest.boilerplate import WEIGHT as BOILERPLATE_WEIGHT
from sidecar.ingest.boilerplate import template_key
from sidecar.ingest.chunk import chunk_note
from sidecar.ingest.embed import Embedder
from sidecar.ingest.parse import is_template, parse_note
from sidecar.ingest.redact import redact
from sidecar.protocol_types import (
    RELATED_LIMIT_DEFAULT,
    RelatedNote,
    RelatedReason,
    RelatedResponse,
)
from sidecar.rank.fuse import related_band
from sidecar.retrieve.lexical import make_snippet
from sidecar.retrieve.snapshot import Snapshot
from sidecar.store import search_reads as reads
from sidecar.store.reads import note_id_at
from sidecar.store.rows import embed_text

SEMANTIC_ROWS = 4000  # rows sorted after the similarity product (200 notes are kept)
TAG_ONLY_CANDIDATES = 50  # below this many candidates, notes sharing only a tag are added too
MAX_BUFFER_CHARS = 200_000  # a pasted book is not a note; keep the pane fast
MAX_SOURCE_SECTIONS = 256  # a note of thousands of sections is compared through an even sample of them
SECTION_BLOCK = 32
FIRST_PASS_ROWS = 8000  # a large vault's rows scored exactly: the narrow first pass's best (snapshot.likely_rows)
# A cosine's level is the language's and the vault's, not the pair's: a note in a language the model reads as a
# blur is 0.99 from every note of its language (help-he, help-el, help-fa), one in a language it half reads
# 0.92-0.94 (help-uk, help-vi), one it reads 0.70-0.80 (help-de) and an English note 0.55-0.65 (demo). What a
# related note's band and "similar" rest on is how far it stands out from the source's typical note
# (_typical_cosine): its cosine less that one. Typical is the upper quartile of its cosines to a sample of the
# vault's sections: with the median, a vault of many kinds of note (obsidian-hub: plugin pages, people, roundups)
# put every plugin page far from typical for another plugin page.
TYPICAL_PERCENTILE = 75


def _bounded_sections(weights: np.ndarray) -> np.ndarray:
    """Indices of the sections to compare: all of them up to MAX_SOURCE_SECTIONS, else the ones at the
    cursor (highest weight) first and an evenly spaced sample of the rest."""
    m = len(weights)
    if m <= MAX_SOURCE_SECTIONS:
        return np.arange(m)
    first = np.flatnonzero(weights >= weights.max())
    if len(first) >= MAX_SOURCE_SECTIONS:
        return first[np.linspace(0, len(first) - 1, MAX_SOURCE_SECTIONS).astype(np.int64)]
    rest = np.setdiff1d(np.arange(m), first)
    sample = rest[np.linspace(0, len(rest) - 1, MAX_SOURCE_SECTIONS - len(first)).astype(np.int64)]
    return np.sort(np.concatenate([first, sample]))


def typical_cosines(cosines: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.floating[Any]]:
    """The typical one of each row's cosines (the last axis), kept as a column: TYPICAL_PERCENTILE."""
    return np.asarray(np.percentile(cosines, TYPICAL_PERCENTILE, axis=-1, keepdims=True))


@dataclass(frozen=True)
class RelatedWeights:
    semantic: float = 1.0
    links_here: float = 1.0  # a note that links here is as strong a sign as a near-identical section (link prediction: obsidian-hub 0.00 -> 0.46)
    shared_links: float = 0.12  # per shared target, up to 4
    shared_tags: float = 0.05  # per shared tag, up to 3
    other_sections: float = 0.6  # weight of sections away from the cursor


Signal = float | npt.NDArray[np.floating[Any]]  # one note's figure, or a block of notes' (health's suggestions)


def related_score(standout: Signal, links_here: Signal, shared_links: Signal, shared_tags: Signal,
                  w: RelatedWeights) -> float | npt.NDArray[np.floating[Any]]:
    """The one related-notes score, for one note or many at once: meaning (how far the note's cosine stands out
    from the source's typical note), plus a bonus for a note that links here (1.0 where one does), per shared
    link target (up to 4) and per shared tag (up to 3). Plain numbers stay Python floats, so a float32 block
    stays float32."""
    return (w.semantic * _at_least(standout, 0.0) + w.links_here * links_here
            + w.shared_links * _at_most(shared_links, 4) + w.shared_tags * _at_most(shared_tags, 3))


def _at_least(x: Signal, floor: float) -> Signal:
    return np.maximum(x, floor) if isinstance(x, np.ndarray) else max(x, floor)


def _at_most(x: Signal, cap: float) -> Signal:
    return np.minimum(x, cap) if isinstance(x, np.ndarray) else min(x, cap)


@dataclass
class Source:
    note_id: int | None
    path: str | None
    vectors: np.ndarray  # (m, d) unit rows, one per section
    headings: list[str]
    weights: np.ndarray  # (m,)
    outlinks: set[int] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    template: bool = False  # a template's related notes may be templates; a note's are not


class Related:
    def __init__(self, conn: sqlite3.Connection, snap: Snapshot, embedder: Embedder | None,
                 weights: RelatedWeights | None = None) -> None:
        self.conn = conn
        self.snap = snap
        self.embedder = embedder
        self.w = weights or RelatedWeights()

    def related(self, path: str | None = None, text: str | None = None, cursor_heading: str | None = None,
                limit: int = RELATED_LIMIT_DEFAULT) -> RelatedResponse:
        started = time.perf_counter()  # limit's bounds and text's type: checked where the call came in (serve/params.py)
        if path is None and text is None:
            raise InvalidParams("give a note path, an unsaved text, or both")
        source = self._source_from_text(path, text, cursor_heading) if text is not None \
            else self._source_from_note(path or "", cursor_heading)
        scores = self._score(source)
        ranked, notes = self._shown(sorted(scores.items(), key=lambda kv: -kv[1]["score"]), source, limit)
        results = self._results(ranked, notes, source)
        return {
            "source_path": source.path, "took_ms": round((time.perf_counter() - started) * 1000, 2),
            "vectors_available": self.embedder is not None and len(self.snap.vector_ids) > 0,
            "index_building": False, "results": results,
        }

    # ---- the source ---------------------------------------------------------------------
    def _source_from_note(self, path: str, cursor_heading: str | None) -> Source:
        note_id = note_id_at(self.conn, path)
        if note_id is None:
            raise NotFound(f"no indexed note at {path!r}")
        rows = reads.note_sections(self.conn, note_id)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        pos = self.snap.rows_for(ids) if len(ids) else np.zeros(0, np.int64)
        keep = pos >= 0
        vectors = self.snap.matrix[pos[keep]] if keep.any() else np.zeros((0, 1), np.float32)
        headings = [r[1] for r, k in zip(rows, keep, strict=True) if k]
        repeated = [int(i) in self.snap.boilerplate for i in ids[keep]]
        tags = reads.note_tags(self.conn, note_id)
        row = reads.note_rows(self.conn, {note_id}).get(note_id)
        return Source(note_id, path, vectors, headings, self._section_weights(headings, cursor_heading, repeated),
                      set(self.snap.graph.out_links.get(note_id, set())), tags, row is not None and row["template"])

    def _source_from_text(self, path: str | None, text: str, cursor_heading: str | None) -> Source:
        clean = redact(text[:MAX_BUFFER_CHARS].replace("\r\n", "\n")).text
        note = parse_note(path or "Untitled.md", clean)
        chunks = chunk_note(note)
        headings = [" > ".join(c.heading_path) for c in chunks]
        if self.embedder is not None and chunks:
            vectors = self.embedder.encode_recent([embed_text(note.title, h, c.text)
                                                   for h, c in zip(headings, chunks, strict=True)])
        else:
            vectors = np.zeros((0, 1), np.float32)
        note_id = note_id_at(self.conn, path) if path else None
        index = self.snap.path_index
        ids = self.snap.note_ids
        outlinks = set()
        for link in note.links:
            target = index.resolve(link.target, path or "Untitled.md", link.kind).path
            if target in ids and ids[target] != note_id:
                outlinks.add(int(ids[target]))
        repeated = [template_key(h, c.text) in self.snap.boilerplate_keys for h, c in zip(headings, chunks, strict=True)]
        return Source(note_id, path, vectors, headings, self._section_weights(headings, cursor_heading, repeated),
                      outlinks, {t.lower() for t in note.tags}, is_template(note.path, note.template_variables))

    def _section_weights(self, headings: list[str], cursor_heading: str | None, repeated: list[bool]) -> np.ndarray:
        """Sections at the cursor count most; a boilerplate section (a footer every note has) least."""
        weights = np.where(repeated, BOILERPLATE_WEIGHT, 1.0).astype(np.float32) if repeated else \
            np.ones(len(headings), dtype=np.float32)
        if cursor_heading:
            # The plugin sends the heading path ("Note > Setup"); a bare heading ("Setup") matches too.
            wanted = cursor_heading.strip().lower()
            last = wanted.split(" > ")[-1]
            at_cursor = [bool(h) and (h.lower() == wanted or h.lower().split(" > ")[-1] == last) for h in headings]
            if any(at_cursor):
                weights *= np.where(at_cursor, 1.0, self.w.other_sections).astype(np.float32)
        return weights

    # ---- scoring ------------------------------------------------------------------------
    def _score(self, src: Source) -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}

        def entry(note_id: int) -> dict[str, Any]:
            return out.setdefault(note_id, {"score": 0.0, "sim": None, "standout": None, "chunk": None, "section": None,
                                            "links_here": False, "shared_links": 0, "shared_tags": 0})

        typical = self._semantic(src, entry)
        for e in out.values():  # how far a note stands out from the source's typical note; "sim" stays the cosine
            e["standout"] = None if e["sim"] is None else e["sim"] - typical
        graph = self.snap.graph
        if src.note_id is not None:
            for note_id in graph.in_links.get(src.note_id, set()):
                entry(note_id)["links_here"] = True
        cocited: Counter[int] = Counter()
        for target in src.outlinks:
            for note_id in graph.in_links.get(target, set()):
                cocited[note_id] += 1
        for note_id, count in cocited.items():
            entry(note_id)["shared_links"] = count
        for note_id, count in self._shared_tags(src.tags).items():
            # A tag on thousands of notes (status/done) is not a reason to rank them all: it only
            # adds to notes already found by meaning or links, unless the tags are specific.
            if note_id in out or len(out) < TAG_ONLY_CANDIDATES:
                entry(note_id)["shared_tags"] = count
        for target in src.outlinks:
            entry(target)
        out.pop(src.note_id, None) if src.note_id is not None else None
        # One array product for every candidate (thousands where a tag or a hub page is widely shared),
        # in float64: the same sums, to the bit, as one note's Python floats.
        standout, links_here, shared_links, shared_tags = (
            np.fromiter(((e[k] or 0.0) for e in out.values()), dtype=np.float64, count=len(out))
            for k in ("standout", "links_here", "shared_links", "shared_tags"))
        scores = related_score(standout, links_here, shared_links, shared_tags, self.w)
        for e, score in zip(out.values(), np.asarray(scores).tolist(), strict=True):
            e["score"] = score
        return out

    def _semantic(self, src: Source, entry: Any) -> float:
        """The notes closest in meaning, entered with their best section's cosine; returns the source's typical
        cosine (_typical_cosine), 0 without vectors to compare."""
        if len(src.vectors) == 0 or len(self.snap.vector_ids) == 0 or src.vectors.shape[1] != self.snap.matrix.shape[1]:
            return 0.0
        sections = _bounded_sections(src.weights)
        weighted = (src.vectors[sections] * src.weights[sections, None]).T  # a section's weight scales its column
        # A large vault: only the rows a narrow first pass finds likely are scored in full (snapshot.py).
        rows = self.snap.likely_rows(src.vectors[sections], src.weights[sections], FIRST_PASS_ROWS)
        best, best_section = self._row_bests(weighted, sections, rows)
        # The best few thousand rows hold the best 200 notes; sorting every row cost 12% at 180k chunks.
        top = min(len(best), SEMANTIC_ROWS)
        order = np.argpartition(-best, top - 1)[:top] if top < len(best) else np.arange(len(best))
        order = order[np.argsort(-best[order])]
        seen = 0
        for row in order:
            row_id = int(row) if rows is None else int(rows[row])  # the snapshot's row of the scored row
            note_id = int(self.snap.vector_notes[row_id])
            if note_id == src.note_id or note_id < 0:  # the note itself, or a dead row (snapshot.py)
                continue
            e = entry(note_id)
            if e["sim"] is None:
                e["sim"] = float(best[row])
                e["chunk"] = int(self.snap.vector_ids[row_id])
                e["section"] = src.headings[int(best_section[row])] if src.headings else ""
                seen += 1
                if seen >= 200:
                    break
        return self._typical_cosine(src, weighted, sections)

    def _typical_cosine(self, src: Source, weighted: np.ndarray, sections: np.ndarray) -> float:
        """The cosine a note of this vault typically gets from the source, scored as every row is (_row_bests),
        at TYPICAL_PERCENTILE over the snapshot's background sample less the source's own sections."""
        sample = self.snap.background_rows
        sample = sample[self.snap.vector_notes[sample] != src.note_id] if src.note_id is not None else sample
        return float(typical_cosines(self._row_bests(weighted, sections, sample)[0]).item()) if len(sample) else 0.0

    def _row_bests(self, weighted: np.ndarray, sections: np.ndarray,
                   rows: np.ndarray | None) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Per matrix row (of `rows`, or every row), its best cosine to the source's `sections` (`weighted`: their
        vectors as columns, each times its weight), times the row's own weight; and which section gave it."""
        matrix = self.snap.matrix if rows is None else self.snap.matrix[rows]
        best = np.full(len(matrix), -np.inf, dtype=np.float32)
        best_section = np.zeros(len(matrix), dtype=np.int64)
        every = np.arange(len(matrix))
        # A block of sections at a time: memory n x SECTION_BLOCK, not n x m (a note of 3,000 sections
        # against 20,000 chunks needed 240 MB per call). Strictly greater keeps argmax's first-wins ties.
        for start in range(0, len(sections), SECTION_BLOCK):
            sims = matrix @ weighted[:, start:start + SECTION_BLOCK]
            arg = sims.argmax(axis=1)
            value = sims[every, arg]
            better = value > best
            best[better] = value[better]
            best_section[better] = sections[start + arg[better]]
        if self.snap.weighted:  # a row's weight is never negative: it scales the row's best, not which is best
            best *= self.snap.row_weights if rows is None else self.snap.row_weights[rows]
        return best, best_section

    def _shared_tags(self, tags: set[str]) -> dict[int, int]:
        if not tags:
            return {}
        return reads.shared_tag_counts(self.conn, tags)

    # ---- output -------------------------------------------------------------------------
    def _shown(self, ranked: list[tuple[int, dict[str, Any]]], src: Source,
               limit: int) -> tuple[list[tuple[int, dict[str, Any]]], dict[int, dict[str, Any]]]:
        """The first `limit` ranked notes that still exist and, unless the source is a template itself, are
        no template (a Movie Template is no note to read beside Movies: kepano's vault showed 4 in 7), with
        their rows: read a block at a time, a few reads, not one a note."""
        shown: list[tuple[int, dict[str, Any]]] = []
        notes: dict[int, dict[str, Any]] = {}
        block = max(2 * limit, 20)
        for start in range(0, len(ranked), block):
            part = ranked[start:start + block]
            notes.update(reads.note_rows(self.conn, {note_id for note_id, _e in part}))
            shown += [(n, e) for n, e in part if n in notes and (src.template or not notes[n]["template"])]
            if len(shown) >= limit:
                break
        return shown[:limit], notes

    def _results(self, ranked: list[tuple[int, dict[str, Any]]], notes: dict[int, dict[str, Any]],
                 src: Source) -> list[RelatedNote]:
        results: list[RelatedNote] = []
        best = {e["chunk"] for _note_id, e in ranked if e["chunk"] is not None}
        sections = reads.chunk_rows(self.conn, best) if best else {}  # the same: one read for every best section
        for note_id, e in ranked:
            note = notes.get(note_id)
            if note is None:  # gone since it was ranked
                continue
            chunk = self._best_chunk(note_id, e["chunk"], sections)
            sim = e["sim"]
            band = related_band(e["standout"], bool(e["links_here"] or e["shared_links"]))
            results.append({
                "path": note["path"], "title": note["title"], "folder": posixpath.dirname(note["path"]),
                "score": round(e["score"], 4), "band": band,
                "heading": chunk[0] if chunk else "", "excerpt": make_snippet(chunk[1], (), 180).text if chunk else "",
                "start_line": chunk[2] if chunk else 1, "already_linked": note_id in src.outlinks,
                "reasons": _reasons(e, note_id in src.outlinks),
                "similarity": None if sim is None else round(sim, 4),
                "standout": None if e["standout"] is None else round(e["standout"], 4),
            })
        return results

    def _best_chunk(self, note_id: int, chunk_id: int | None,
                    sections: dict[int, dict[str, Any]]) -> tuple[str, str, int] | None:
        """(heading, body, start line) of the note's closest section (None if it went since), or of its first."""
        if chunk_id is None:
            return reads.first_section_excerpt(self.conn, note_id)
        row = sections.get(chunk_id)
        return None if row is None else (str(row["heading"]), str(row["body"]), int(row["start_line"]))


def _reasons(e: dict[str, Any], already_linked: bool) -> list[RelatedReason]:
    reasons: list[RelatedReason] = []
    if e["links_here"]:
        reasons.append({"kind": "links_here", "label": "links here"})
    if already_linked:
        reasons.append({"kind": "linked_from_here", "label": "linked from this note"})
    if e["shared_links"]:
        n = e["shared_links"]
        reasons.append({"kind": "shares_links", "label": f"shares {n} link{'s' if n > 1 else ''}", "count": n})
    if e["shared_tags"]:
        n = e["shared_tags"]
        reasons.append({"kind": "shares_tags", "label": f"shares {n} tag{'s' if n > 1 else ''}", "count": n})
    if related_band(e["standout"], linked=False) != "low":  # its text stands out, whatever its links
        section = e["section"].split(" > ")[-1] if e["section"] else ""
        label = f"similar: {section}" if section else "similar content"
        reasons.append({"kind": "similar_section", "label": label})
    return reasons

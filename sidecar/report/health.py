"""The vault-health report: what is broken, duplicated, disconnected or out of date, each with a fix.

Everything comes from the index, plus one walk of the vault folder (for stale files and for
links into files the index leaves out). Loading (SQL) lives in `Context`; each finding is a
small function over plain rows, so the rules can be read and tested without a database.

Nothing here reads a credential: `findings` rows hold a kind and a line, never the value, and
every text shown (titles, link targets, headings) comes from the redacted index.
"""

from __future__ import annotations

import difflib
import json
import posixpath
import re
import sqlite3
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from sidecar.ingest.cjk import UNSPACED_CHAR, split_cjk_runs, without_spaces
from sidecar.ingest.embed import unit_rows
from sidecar.ingest.linkres import PathIndex
from sidecar.ingest.parse import is_template
from sidecar.retrieve.related import RelatedWeights, related_score, typical_cosines
from sidecar.store import health_reads as reads
from sidecar.store.reads import attachment_paths
from sidecar.store.snapshot_reads import chunk_owners
from sidecar.store.vectors import Matrix, VectorTable

if TYPE_CHECKING:
    from sidecar.ingest.embed import Embedder
    from sidecar.ingest.vault import Vault
    from sidecar.protocol_types import HealthItem, HealthResponse
    from sidecar.retrieve.snapshot import Snapshot
    from sidecar.retrieve.view import IndexView

Severity = Literal["error", "warning", "info"]

DUPLICATE_COSINE = 0.95  # note vectors this close are near-identical in meaning...
DUPLICATE_JACCARD = 0.6  # ...and this share of word 3-shingles makes them near-identical in text
DUPLICATE_MIN_SHINGLES = 20  # own text (boilerplate removed) below this is too little to call a copy
BOILERPLATE_NOTES = 10  # a word sequence in more candidate notes than this is template text, not a copy
SHINGLE_WORDS = 3
STUB_CHARS = 100
LONG_CHARS = 8000
SUGGESTIONS = 3  # related notes per orphan / dead end, candidates per broken link
SUGGEST_ITEMS = 500  # items of a section that get suggestions: each costs a pass over every note, and
# a 60,000-note vault with 30,000 notes nothing links to took a minute for advice nobody reads that far
RELATED_WEIGHTS = RelatedWeights()
NO_ROWS = np.zeros(0, np.int64)
TYPICAL_SAMPLE = 512  # notes a note's typical cosine is read over (by_meaning): steady, and cheap at any size
# A note suggested by meaning stands out from the item's typical note by this much (note vectors, the mean of
# sections, stand out about two thirds as far as related()'s sections): a note's three best on the Help vaults
# the model reads, 98-100% of them; on help-uk 6%, help-vi 17%, help-he, help-el and help-fa none (docs/ranking.md)
MEANING_STANDOUT = 0.05
NAME_CUTOFF = 0.75  # difflib ratio for "did you mean": catches typos and plurals, not unrelated names
MEANING_CUTOFF = 0.65  # cosine of a missing link's text and a note (its best model part); measured: below it, mostly noise
# A model part that reads a link's text as a blur (its mean cosine to every note this or more: the English part
# on Korean text, 0.90) says nothing of it: left out for that text. Taking the best part's cosine, every note of
# help-ko was "close in meaning" to any link (152 of 173 at 0.65 or more) and a note's own title found it first
# 24% of the time, 74% without the blurred part (docs/ranking.md).
MEANING_BLUR = 0.45
BLOCK_ROWS = 1024  # rows per matrix block: bounds memory on big vaults (1024 x 6.5k floats = 27 MB)
ATTACHMENT_EXT = re.compile(r"^(?=.*[a-z])[a-z0-9]{1,8}$")
ATTACHMENT_EXTENSIONS = frozenset((
    "png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "heic", "tif", "tiff", "pdf", "mp3", "wav", "m4a",
    "ogg", "flac", "webm", "mp4", "mov", "mkv", "avi", "canvas", "base", "excalidraw", "csv", "zip"))
WORD = re.compile(r"\w+")
WORD_ID_MASK = (1 << 21) - 1
MALFORMED = "malformed frontmatter"
WARNING_LINE = re.compile(r"\(line (\d+)\)")

RULES = [
    "Links resolve the way Obsidian resolves them, ignoring case: ./ and ../ from the linking note's folder; "
    "an exact vault path with or without .md; a folder/Note target as a path suffix; a bare name matches "
    "any file of that name (markdown links try the linking note's folder first).",
    "When several files share a name, the one in the linking note's folder wins, then the shortest path, "
    "then the alphabetically first; such links are reported as ambiguous.",
    "Every link kind counts: [[wikilinks]], ![[embeds]], [markdown](links) and links in frontmatter "
    "properties. Links inside code and comments are not links. A note linking to itself does not count.",
    "Orphans have no resolved link to or from another note; they are listed once, not again under "
    "'no inbound links' or 'dead ends'. Links to attachments (images, PDFs) do not connect notes.",
    "Heading anchors match when the heading text is the same after ignoring case, punctuation and spaces; "
    "block anchors (#^id) must name a block ID in the target note.",
    f"Near-duplicates: note vectors (mean of section vectors) with cosine >= {DUPLICATE_COSINE} and "
    f"at least {DUPLICATE_JACCARD:.0%} shared {SHINGLE_WORDS}-word sequences, not counting template text "
    f"(sequences found in more than {BOILERPLATE_NOTES} of the candidate notes); notes with less than "
    f"{DUPLICATE_MIN_SHINGLES} sequences of their own are left out.",
    f"Empty: nothing at all, neither text nor properties. Stub: under {STUB_CHARS} characters of text after "
    f"the frontmatter (properties alone make a stub). Long without headings: over {LONG_CHARS:,} characters "
    "and no heading.",
    "Missing attachments: embeds of a non-note file (an extension other than .md), and links to image, "
    "audio, video or PDF files, that are not in the vault. Links that reach a file the index leaves out "
    "(.indexignore, Obsidian's Excluded files, too large, unreadable) are listed apart: Obsidian may still open them.",
    "Did you mean: the closest file names, titles and aliases (difflib), then notes close in meaning to the "
    f"link text (cosine >= {MEANING_CUTOFF} in a model part that does not read the text as a blur: mean cosine "
    f"to every note under {MEANING_BLUR}). Link suggestions for orphans and dead ends score notes like "
    "related notes do: meaning, plus links here and shared tags. Suggestions are made for the first "
    f"{SUGGEST_ITEMS} items of a section; every item is listed and counted.",
    "Clusters: groups of notes connected by links (either direction) that are not connected to the largest group.",
    "Templates (a note with {{date}}-style or <% %> variables where a form has them, in a property or on a "
    "field line outside code, or named '... Template') are "
    "forms, not notes: they are never orphans, dead ends, stubs or empty, their links connect no notes, their "
    "tags are not 'used once', and no note is told to link to one.",
    "Stale: notes whose size or modification time on disk differ from the index, or that are on disk but "
    "not in the index, or in the index but gone from disk.",
]


# ---- report items ----------------------------------------------------------------------------
@dataclass
class Item:
    path: str
    message: str
    fix: str | None
    line: int | None = None
    related: list[dict[str, Any]] | None = None
    severity: Severity | None = None  # None: the section's severity
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable details: link target, kind, tags...
    key: Any = field(default=None, repr=False, compare=False)  # what its suggestions start from (note id, link...)

    def to_json(self, default: Severity, details: bool) -> HealthItem:
        """The protocol's HealthItem; `details` adds the `data` fields (tests, `sidecar health --json`)."""
        out: HealthItem = {"path": self.path, "line": self.line, "message": self.message, "fix": self.fix,
                           "severity": self.severity or default}
        if self.related is not None:
            out["related"] = [{"path": r["path"], "title": r["title"], "score": r["score"]} for r in self.related]
        # `details` keys lie beyond the schema (a TypedDict allows extra keys at run time, not in a literal)
        return cast("HealthItem", {**self.data, **out}) if details else out


@dataclass(frozen=True, slots=True)
class NoteRow:
    id: int
    path: str
    title: str
    aliases: tuple[str, ...]
    headings: tuple[tuple[int, str, int], ...]  # (level, text, line)
    block_ids: tuple[str, ...]
    warnings: tuple[str, ...]
    has_frontmatter: bool
    size: int
    mtime_ns: int
    template: bool = False  # a form to fill in (parse.is_template): no orphan, stub or link suggestion, its links no edges


@dataclass(frozen=True, slots=True)
class LinkRow:
    source_id: int
    raw: str
    anchor: str | None
    kind: str
    line: int
    target_path: str | None
    target_id: int | None
    ambiguous: bool


def note_target(link: LinkRow, notes: dict[int, NoteRow]) -> int | None:
    """The note the link joins its source to in the graph, or None: attachments, self-links and a
    template's links join none (a Movie Template's `categories: [[Movies]]` is no reader's path)."""
    target = link.target_id
    if target is None or target == link.source_id or target not in notes or notes[target].template:
        return None
    source = notes.get(link.source_id)
    return None if source is None or source.template else target


@dataclass(frozen=True)
class NoteVectors:
    ids: npt.NDArray[np.int64]  # note id per row
    matrix: Matrix  # unit rows: the normalised mean of each note's section vectors

    @cached_property
    def row_of(self) -> dict[int, int]:
        return {int(n): i for i, n in enumerate(self.ids)}


@dataclass
class DiskFiles:
    notes: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (size, mtime_ns)
    excluded: dict[str, str] = field(default_factory=dict)  # path -> why the index leaves it out


# ---- loading -------------------------------------------------------------------------------
class Context:
    """Lazily loaded index data: a report of one section loads only what that section needs."""

    def __init__(self, index: IndexView, loaded: dict[str, Any] | None = None) -> None:
        """`loaded`: values of the cached properties below, already at hand (health_cache keeps them
        between reports and advances them by the notes that changed)."""
        self.index = index
        self.conn: sqlite3.Connection = index.reader()
        self.vault: Vault = index.vault
        self.embedder: Embedder | None = index.embedder
        self.extra_counts: dict[str, int] = {}
        self.__dict__.update(loaded or {})  # where functools.cached_property looks first

    @cached_property
    def notes(self) -> dict[int, NoteRow]:
        return load_notes(self.conn)

    @cached_property
    def links(self) -> list[LinkRow]:
        return load_links(self.conn)

    @cached_property
    def edges(self) -> tuple[dict[int, set[int]], dict[int, set[int]]]:
        """(outgoing, incoming) note-to-note links; attachments and self-links do not connect notes."""
        out: dict[int, set[int]] = defaultdict(set)
        into: dict[int, set[int]] = defaultdict(set)
        for link in self.links:
            if (target := note_target(link, self.notes)) is not None:
                out[link.source_id].add(target)
                into[target].add(link.source_id)
        return out, into

    @cached_property
    def body_chars(self) -> dict[int, int]:
        return load_body_chars(self.conn)

    @cached_property
    def linkable(self) -> list[int]:
        """The notes the graph's sections look at, in path order: all but templates."""
        return [n for n, note in self.notes.items() if not note.template]

    @cached_property
    def vectors(self) -> NoteVectors:
        snap = self.index.snapshot()
        return note_vectors(*snap.live_vectors())

    @cached_property
    def disk(self) -> DiskFiles:
        return scan_disk(self.vault)

    @cached_property
    def clusters(self) -> list[list[int]]:
        """Groups of notes connected by links, largest first."""
        out, _into = self.edges
        return components(self.linkable, ((a, b) for a, targets in out.items() for b in targets))

    @cached_property
    def unresolved(self) -> Unresolved:
        return classify_unresolved(self)

    @cached_property
    def left_out(self) -> tuple[dict[str, str], PathIndex]:
        """The files the index leaves out (path -> why), and a resolver over them."""
        files = {**self.disk.excluded, **self.skipped}
        return files, PathIndex(list(files))

    @cached_property
    def skipped(self) -> dict[str, str]:
        return reads.skipped_reasons(self.conn)

    def bodies(self, note_ids: Iterable[int]) -> dict[int, str]:
        wanted = sorted(set(note_ids))
        if not wanted:
            return {}
        rows = reads.section_bodies(self.conn, wanted)
        parts: dict[int, list[str]] = defaultdict(list)
        for note_id, body in rows:
            parts[int(note_id)].append(str(body))
        return {k: "\n".join(v) for k, v in parts.items()}

    @cached_property
    def file_name_counts(self) -> Counter[str]:
        return Counter(_file_name(n.path).lower() for n in self.notes.values())

    def link_text(self, note_id: int) -> str:
        """What to write in [[...]] to reach the note: its file name, or its path where the name is shared."""
        path = self.notes[note_id].path
        name = _file_name(path)
        return name if self.file_name_counts[name.lower()] == 1 else path.removesuffix(".md")

    def ref(self, note_id: int, score: float) -> dict[str, Any]:
        note = self.notes[note_id]
        return {"path": note.path, "title": note.title, "score": round(score, 4)}

    @cached_property
    def tags(self) -> dict[int, tuple[tuple[str, str], ...]]:
        """note id -> its (tag, tag_lower) pairs."""
        return load_tags(self.conn)

    @cached_property
    def tag_usage(self) -> dict[str, dict[str, set[int]]]:
        return _tag_usage(self)  # read by two sections

    @cached_property
    def note_tags(self) -> dict[int, set[str]]:
        return {n: {low for _tag, low in pairs} for n, pairs in self.tags.items()}

    @cached_property
    def duplicate_pairs(self) -> tuple[Ints, Ints, npt.NDArray[np.float32]]:
        """(note id, note id, cosine) of the note pairs close enough in meaning to be compared as text."""
        nv = self.vectors
        rows_a, rows_b, cosines = similar_pairs(nv.matrix, DUPLICATE_COSINE)
        return nv.ids[rows_a], nv.ids[rows_b], cosines

    @cached_property
    def meaning_parts(self) -> list[Matrix]:
        """The note vectors cut into the embedder's model parts, each part unit length (_close_in_meaning)."""
        nv = self.vectors
        parts = self.embedder.part_slices if self.embedder is not None else []
        return [unit_rows(np.array(nv.matrix[:, sl])) for sl in parts] if len(parts) > 1 else [nv.matrix]

    @cached_property
    def name_matcher(self) -> tuple[dict[str, Guess], NameMatcher]:
        """Every file name, title and alias (lower case) -> its note, and the matcher over them."""
        by_name: dict[str, Guess] = {}
        for note in self.notes.values():
            for how, name in (("file name", _file_name(note.path)), ("title", note.title),
                              *(("alias", a) for a in note.aliases)):
                by_name.setdefault(name.lower(), Guess(note.id, 0.0, how, name))
        return by_name, NameMatcher(by_name)

    @cached_property
    def typical_columns(self) -> npt.NDArray[np.intp]:
        """An even sample of the note vectors' rows (TYPICAL_SAMPLE), the cosines a typical one is read from."""
        n = len(self.vectors.ids)
        return np.unique(np.linspace(0, n - 1, min(n, TYPICAL_SAMPLE)).astype(np.intp)) if n else np.zeros(0, np.intp)

    @cached_property
    def template_rows(self) -> npt.NDArray[np.int64]:
        """The vector rows of templates: never suggested as a note to link to."""
        nv = self.vectors
        return np.array([i for i, n in enumerate(nv.ids.tolist()) if n in self.notes and self.notes[n].template],
                        dtype=np.int64)

    @cached_property
    def tag_rows(self) -> dict[str, npt.NDArray[np.int64]]:
        """tag -> the vector rows of the notes carrying it."""
        rows: dict[str, list[int]] = defaultdict(list)
        for note_id, tags in self.note_tags.items():
            if note_id in self.vectors.row_of:
                for tag in tags:
                    rows[tag].append(self.vectors.row_of[note_id])
        return {tag: np.array(r, dtype=np.int64) for tag, r in rows.items()}

    def suggest_links(self, note_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """Notes each note could link to, scored with related()'s signals (meaning, links here, shared
        tags) on note vectors for all notes at once: related() itself costs ~10 ms a note."""
        nv = self.vectors
        if len(nv.ids) < 2:
            return {}
        out = {}
        step = block_rows(len(nv.ids))
        for start in range(0, len(note_ids), step):
            block = note_ids[start:start + step]
            rows = np.array([nv.row_of.get(n, -1) for n in block], dtype=np.int64)
            cosines = nv.matrix[np.maximum(rows, 0)] @ nv.matrix.T
            meaning = by_meaning(cosines, cosines[:, self.typical_columns])
            meaning[rows < 0] = 0.0  # a note without text: only its links and tags can speak
            links_here = np.zeros_like(meaning)
            tag_counts = np.zeros_like(meaning)
            for i, note_id in enumerate(block):
                links_here[i, [nv.row_of[o] for o in self.edges[1].get(note_id, ()) if o in nv.row_of]] = 1.0
                for tag in self.note_tags.get(note_id, ()):
                    tag_counts[i, self.tag_rows.get(tag, NO_ROWS)] += 1  # a tag only on notes without text: none
            score = suggestion_scores(meaning, links_here, tag_counts)
            has_row = rows >= 0
            score[np.flatnonzero(has_row), rows[has_row]] = -np.inf  # never the note itself
            score[:, self.template_rows] = -np.inf  # nor a template
            for note_id, best in zip(block, best_rows_each(score, SUGGESTIONS), strict=True):
                out[note_id] = [self.ref(int(nv.ids[j]), float(score_j)) for j, score_j in best]
        return out


# ---- loading rows: all of them, or only those of some notes (health_cache) ---------------------------
def load_notes(conn: sqlite3.Connection, note_ids: Iterable[int] | None = None) -> dict[int, NoteRow]:
    """Notes by id, in path order."""
    notes = {}
    for r in reads.note_rows(conn, note_ids):
        warnings = tuple(json.loads(r[6]))
        has_frontmatter = bool(r[9]) or any(MALFORMED in w.lower() for w in warnings)
        notes[int(r[0])] = NoteRow(int(r[0]), r[1], r[2], tuple(json.loads(r[3])),
                                   tuple((int(h[0]), str(h[1]), int(h[2])) for h in json.loads(r[4])),
                                   tuple(json.loads(r[5])), warnings, has_frontmatter, int(r[7]), int(r[8]),
                                   is_template(r[1], bool(r[10])))
    return notes


def load_links(conn: sqlite3.Connection, note_ids: Iterable[int] | None = None) -> list[LinkRow]:
    """Links of the notes (all notes: None), by source, line."""
    return [LinkRow(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], None if r[6] is None else int(r[6]), bool(r[7]))
            for r in reads.link_rows(conn, note_ids)]


def load_body_chars(conn: sqlite3.Connection, note_ids: Iterable[int] | None = None) -> dict[int, int]:
    return {int(r[0]): int(r[1] or 0) for r in reads.body_chars(conn, note_ids)}


def load_tags(conn: sqlite3.Connection, note_ids: Iterable[int] | None = None) -> dict[int, tuple[tuple[str, str], ...]]:
    tags: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for note_id, tag, tag_lower in reads.tag_rows(conn, note_ids):
        tags[int(note_id)].append((str(tag), str(tag_lower)))
    return {n: tuple(t) for n, t in tags.items()}


def block_rows(columns: int) -> int:
    """Rows per block of a (rows x columns) float32 product: about 32 MB, whatever the vault's size."""
    return max(1, min(1024, 8_000_000 // max(columns, 1)))


def by_meaning(cosines: Matrix, sample: Matrix) -> Matrix:
    """What each cosine says of a note to suggest: how far it stands out from the typical one of its row (the
    cosines to a sample of notes: related.typical_cosines), from MEANING_STANDOUT on, else 0. A language the
    model reads as a blur has every note at 0.99 from every other: nothing stands out."""
    standout = cosines - typical_cosines(sample)
    return np.where(standout >= MEANING_STANDOUT, standout, 0.0).astype(np.float32)


def suggestion_scores(meaning: npt.NDArray[np.float32], links_here: npt.NDArray[np.float32],
                      tag_counts: npt.NDArray[np.float32],
                      weights: RelatedWeights = RELATED_WEIGHTS) -> npt.NDArray[np.float32]:
    """related()'s score (related_score) on by_meaning's standouts, without shared links: co-citation for every
    pair of notes would cost a notes x notes product. Any shape: one note's row, or a block of them."""
    return np.asarray(related_score(meaning, links_here, 0.0, tag_counts, weights), dtype=np.float32)


def best_rows_each(score: npt.NDArray[np.float32], k: int) -> list[list[tuple[int, float]]]:
    """Per row of a 2-D score block: (column, score) of the k highest positive scores, best first.
    k passes of argmax: for a handful of picks several times faster than a partition of each row."""
    work = score.copy()
    rows = np.arange(len(work))
    picks: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]] = []
    for _ in range(min(k, work.shape[1])):
        cols = work.argmax(axis=1)
        picks.append((cols, work[rows, cols].copy()))
        work[rows, cols] = -np.inf
    return [[(int(cols[r]), float(values[r])) for cols, values in picks if values[r] > 0] for r in rows]


def best_rows(score: npt.NDArray[np.float32], k: int) -> list[int]:
    """Indices of the k highest positive scores, best first."""
    k = min(k, len(score))
    if k == 0:
        return []
    top = np.argpartition(-score, k - 1)[:k]
    return [int(j) for j in top[np.argsort(-score[top], kind="stable")] if score[j] > 0]


def scan_disk(vault: Vault) -> DiskFiles:
    """Notes on disk with their size/mtime, and every file the exclusion rules leave out."""
    disk = DiskFiles()
    for rel, st in vault.walk():  # the same walk the indexer scans with (hidden folders pruned)
        reason = vault.exclusion_reason(rel)
        shown = vault.shown_path(rel)  # a credential in a name is never served, here as in the index
        if reason:
            disk.excluded[shown] = reason
        elif rel.lower().endswith(".md"):
            disk.notes[shown] = (st.st_size, st.st_mtime_ns)
    return disk


# ---- vectors (pure) ---------------------------------------------------------------------------
def note_vectors(chunk_notes: npt.NDArray[np.int64], chunk_matrix: Matrix,
                 row_weights: npt.NDArray[np.float32] | None = None) -> NoteVectors:
    """One unit vector per note: the (weighted) mean of its section vectors, normalised. A shared footer
    weighs little, so two short notes are not near-duplicates because they end the same way."""
    if len(chunk_notes) == 0:
        return NoteVectors(np.zeros(0, np.int64), np.zeros((0, max(chunk_matrix.shape[1], 1)), np.float32))
    order = np.argsort(chunk_notes, kind="stable")
    sorted_notes = chunk_notes[order]
    starts = np.flatnonzero(np.r_[True, sorted_notes[1:] != sorted_notes[:-1]])
    rows = chunk_matrix[order] if row_weights is None else chunk_matrix[order] * row_weights[order, None]
    sums = np.add.reduceat(rows, starts, axis=0).astype(np.float32)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    np.divide(sums, norms, out=sums, where=norms > 0)
    return NoteVectors(sorted_notes[starts], sums)


Ints = npt.NDArray[np.int64]


def similar_pairs(matrix: Matrix, threshold: float) -> tuple[Ints, Ints, npt.NDArray[np.float32]]:
    """Row pairs (i < j) with cosine >= threshold, as arrays; one matrix product per block of rows."""
    found: list[tuple[Ints, Ints, npt.NDArray[np.float32]]] = []
    for start in range(0, len(matrix), BLOCK_ROWS):
        sims = matrix[start:start + BLOCK_ROWS] @ matrix[start:].T  # only j >= i: the other half is the mirror
        rows, cols = np.divmod(np.flatnonzero(sims >= threshold), sims.shape[1])  # 15x faster than 2-D nonzero
        keep = cols > rows  # j > i: each pair once, never a note with itself
        rows, cols = rows[keep], cols[keep]
        found.append((rows + start, cols + start, sims[rows, cols]))
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return (np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found]),
            np.concatenate([f[2] for f in found]))


# ---- text rules (pure) ----------------------------------------------------------------------
def text_overlap(texts: Sequence[str], left: Ints, right: Ints) -> npt.NDArray[np.float64]:
    """Jaccard index of the texts' own 3-word sequences for each pair (left[k], right[k]) of positions.

    Own: boilerplate removed, i.e. sequences found in more than BOILERPLATE_NOTES of the texts.
    Generated notes (plugin pages, daily notes) share most of their words with hundreds of siblings;
    that is a template, not a copy. Identical texts count once there, so real copies stay copies.
    A text with fewer than DUPLICATE_MIN_SHINGLES own sequences scores 0: too little to judge.
    Everything runs on flat arrays (a sequence packed into an int64, 21 bits a word): thousands of
    per-note sets and per-pair intersections cost several times more."""
    seqs, owner = _sequences(texts)
    seqs, owner = _without_boilerplate(texts, seqs, owner)
    seqs, owner = _distinct(seqs, owner)
    sizes = np.bincount(owner, minlength=len(texts))
    shared_keys, shared = _shared_counts(seqs, owner, len(texts))
    keys = np.minimum(left, right) * len(texts) + np.maximum(left, right)
    pos = np.clip(np.searchsorted(shared_keys, keys), 0, max(len(shared_keys) - 1, 0))
    inter = np.where(shared_keys[pos] == keys, shared[pos], 0) if len(shared_keys) else np.zeros(len(keys), np.int64)
    union = sizes[left] + sizes[right] - inter
    enough = (sizes[left] >= DUPLICATE_MIN_SHINGLES) & (sizes[right] >= DUPLICATE_MIN_SHINGLES)
    return np.where(enough & (union > 0), inter / np.maximum(union, 1), 0.0)


def _sequences(texts: Sequence[str]) -> tuple[Ints, Ints]:
    """Every 3-word sequence of every text (packed) and the position of its text."""
    words = [_words(text) for text in texts]
    lengths = np.array([len(w) for w in words], dtype=np.int64)
    vocab: defaultdict[str, int] = defaultdict(int)
    vocab.default_factory = vocab.__len__  # a new word gets the next id, at C speed
    ids = np.fromiter(map(vocab.__getitem__, chain.from_iterable(words)), dtype=np.int64, count=int(lengths.sum()))
    ids &= WORD_ID_MASK  # past 2M distinct words ids wrap: a rare collision, harmless for an overlap ratio
    if len(ids) < SHINGLE_WORDS:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    seqs = (ids[:-2] << 42) | (ids[1:-1] << 21) | ids[2:]
    owner = np.repeat(np.arange(len(texts)), lengths)[:-2]
    inside = np.arange(len(seqs)) + SHINGLE_WORDS <= np.cumsum(lengths)[owner]  # none spans two texts
    return seqs[inside], owner[inside]


def _words(text: str) -> list[str]:
    """Whitespace words (3x faster than a regex; punctuation stays on, alike in both copies), less URLs:
    addresses, not prose (two notes linking the same repository are not copies of each other). A run of
    a script written without spaces (Han, kana, Thai...) is a word a character: as one word, a whole
    Chinese paragraph made no sequence of three, and no copy of a Chinese note was ever found."""
    words = [w for w in text.lower().split() if "://" not in w]
    if text.isascii() or UNSPACED_CHAR.search(text) is None:
        return words
    return [piece for word in words for piece in _unspaced_apart(word)]


def _unspaced_apart(word: str) -> list[str]:
    """The word, its runs of a script written without spaces cut into characters (cjk.without_spaces)."""
    if not without_spaces(word):
        return [word]
    return [piece for unspaced, run in split_cjk_runs(word) for piece in (list(run) if unspaced else [run])]


def _without_boilerplate(texts: Sequence[str], seqs: Ints, owner: Ints) -> tuple[Ints, Ints]:
    # Occurrences, not distinct texts, are counted: a sequence repeated inside one note is structure
    # (table rules, list markers) and no evidence of copying either.
    first_of_text = np.zeros(len(texts), bool)
    first_of_text[list({t: i for i, t in enumerate(texts)}.values())] = True
    values, counts = np.unique(seqs[first_of_text[owner]], return_counts=True)
    own = ~np.isin(seqs, values[counts > BOILERPLATE_NOTES])
    return seqs[own], owner[own]


def _distinct(seqs: Ints, owner: Ints) -> tuple[Ints, Ints]:
    """(sequence, owner) pairs without repeats, sorted by sequence, then owner."""
    order = np.lexsort((owner, seqs))
    seqs, owner = seqs[order], owner[order]
    new = np.r_[True, (seqs[1:] != seqs[:-1]) | (owner[1:] != owner[:-1])] if len(seqs) else np.zeros(0, bool)
    return seqs[new], owner[new]


def _shared_counts(seqs: Ints, owner: Ints, n: int) -> tuple[Ints, Ints]:
    """For every pair of texts sharing a sequence: key (low * n + high) and how many they share, sorted."""
    if len(seqs) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1]])
    lengths = np.diff(np.r_[starts, len(seqs)])
    keys: list[Ints] = []
    for size in np.unique(lengths[lengths >= 2]).tolist():  # few sizes: boilerplate removal caps them
        groups = owner[starts[lengths == size][:, None] + np.arange(size)]  # owners ascending in a row
        for i in range(size):
            for j in range(i + 1, size):
                keys.append(groups[:, i] * n + groups[:, j])
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    unique, counts = np.unique(np.concatenate(keys), return_counts=True)
    return unique, counts.astype(np.int64)


def normalise_heading(text: str) -> str:
    """Case, punctuation and spacing do not matter when Obsidian matches a heading anchor."""
    return " ".join(WORD.findall(unicodedata.normalize("NFKC", text).casefold())).replace("_", " ").strip()


def anchor_problem(anchor: str, kind: str, target: NoteRow) -> str | None:
    """Why an anchor does not exist in the target note, or None when it does."""
    text = anchor.strip()  # markdown anchors arrive percent-decoded from the parser
    if not text:
        return None
    if text.startswith("^"):
        block = text[1:].strip().lower()
        return None if block in {b.lower() for b in target.block_ids} else f"has no block ^{text[1:].strip()}"
    wanted = normalise_heading(text.split("#")[-1])  # [[Note#A#B]]: the last heading of the path
    if not wanted or wanted in {normalise_heading(h[1]) for h in target.headings}:
        return None
    return f'has no heading "{text}"'


def attachment_extension(target: str) -> str | None:
    """The file extension when the target names a non-note file ("diagram.png"), else None."""
    ext = posixpath.splitext(posixpath.basename(target.strip()))[1][1:].lower()
    return ext if ext != "md" and ATTACHMENT_EXT.match(ext) else None


def is_missing_attachment(link: LinkRow) -> bool:
    ext = attachment_extension(link.raw)
    return ext is not None and (link.kind == "embed" or ext in ATTACHMENT_EXTENSIONS)


def tag_key(tag: str) -> str:
    """todo, Todo, todos, to-do and to_do share one key; nested tags compare per level."""
    return "/".join(_singular(re.sub(r"[-_\s]", "", part)) for part in tag.casefold().split("/"))


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def components(nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected components of an undirected graph, largest first (union-find)."""
    parent = {n: n for n in nodes}

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for n in parent:
        groups[root(n)].append(n)
    return sorted(groups.values(), key=lambda g: (-len(g), min(g)))


def _names(items: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(f'"{x}"' for x in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ---- sections: the link graph ------------------------------------------------------------------
ORPHAN_FIX = "Link it from a related note, or link it to one"
NO_INBOUND_FIX = "Link to it from a related note"
DEAD_END_FIX = "Link it to related notes"


def _orphans(ctx: Context) -> list[Item]:
    out, into = ctx.edges
    return _unlinked(ctx, [n for n in ctx.linkable if not out.get(n) and not into.get(n)],
                     "No link to or from any other note.", ORPHAN_FIX)


def _no_inbound(ctx: Context) -> list[Item]:
    out, into = ctx.edges
    return _unlinked(ctx, [n for n in ctx.linkable if not into.get(n) and out.get(n)],
                     "No other note links here, so it is reachable only by search.", NO_INBOUND_FIX)


def _dead_ends(ctx: Context) -> list[Item]:
    out, into = ctx.edges
    return _unlinked(ctx, [n for n in ctx.linkable if not out.get(n) and into.get(n)],
                     "Links to no other note: reading stops here.", DEAD_END_FIX)


def _unlinked(ctx: Context, ids: list[int], message: str, verb: str) -> list[Item]:
    """One item a note; the notes it could link to come with _suggest_unlinked."""
    return [Item(ctx.notes[n].path, message, _link_fix(None, verb), related=[], key=n) for n in ids]


def _suggest_for(verb: str) -> Callable[[Context, list[Item]], list[Item]]:
    def suggest(ctx: Context, items: list[Item]) -> list[Item]:
        related = ctx.suggest_links([it.key for it in items])
        return [replace(it, fix=_link_fix(related.get(it.key), verb), related=related.get(it.key, []))
                for it in items]

    return suggest


def _link_fix(related: list[dict[str, Any]] | None, verb: str) -> str:
    if not related:
        return verb + "."
    return f"{verb}: for example {_names([r['title'] for r in related])}."


CLUSTER_FIX = "Link one of these notes from the main part of the vault, if they belong there"


def _clusters(ctx: Context) -> list[Item]:
    groups = ctx.clusters
    items = []
    for group in (g for g in groups[1:] if len(g) >= 2):
        members = sorted(group, key=lambda n: (-len(ctx.edges[0].get(n, ())) - len(ctx.edges[1].get(n, ())),
                                               ctx.notes[n].path))
        titles = [ctx.notes[n].title for n in members]
        items.append(Item(ctx.notes[members[0]].path,
                          f"{len(group)} notes link only among themselves: {_names(titles)}.", CLUSTER_FIX + ".",
                          related=[], data={"members": [ctx.notes[n].path for n in members]}, key=group))
    return items


def _suggest_hubs(ctx: Context, items: list[Item]) -> list[Item]:
    """For each cut-off group, the notes of the main part closest to it in meaning."""
    if not items:
        return []
    main = set(ctx.clusters[0])
    in_main = np.fromiter((int(n) in main for n in ctx.vectors.ids), dtype=bool, count=len(ctx.vectors.ids))
    out = []
    for it in items:
        hubs = _closest_in(ctx, it.key, in_main)
        fix = CLUSTER_FIX + (f": for example from {_names([h['title'] for h in hubs])}." if hubs else ".")
        out.append(replace(it, fix=fix, related=hubs))
    return out


def _closest_in(ctx: Context, group: Sequence[int], in_pool: npt.NDArray[np.bool_]) -> list[dict[str, Any]]:
    """Notes of the pool (a mask over vector rows) closest in meaning to the group as a whole."""
    nv = ctx.vectors
    rows = [nv.row_of[n] for n in group if n in nv.row_of]
    if not rows:
        return []
    cosines = nv.matrix @ nv.matrix[rows].mean(axis=0)
    sims = np.where(in_pool, by_meaning(cosines, cosines[ctx.typical_columns]), -np.inf).astype(np.float32)
    return [ctx.ref(int(nv.ids[i]), float(sims[i])) for i in best_rows(sims, SUGGESTIONS)]


# ---- sections: broken links --------------------------------------------------------------------
@dataclass
class Unresolved:
    """Unresolved links sorted into what they are; computed once for three sections."""

    broken: list[LinkRow] = field(default_factory=list)
    attachments: list[LinkRow] = field(default_factory=list)
    excluded: list[tuple[LinkRow, str, str]] = field(default_factory=list)  # link, file, reason

    def extend(self, other: Unresolved) -> None:
        self.broken += other.broken
        self.attachments += other.attachments
        self.excluded += other.excluded


def classify_unresolved(ctx: Context, links: Iterable[LinkRow] | None = None) -> Unresolved:
    """The unresolved links among `links` (all: None) sorted into what they are. Depends on the
    links, their notes' paths and the files left out only (health_cache keeps it per note)."""
    result = Unresolved()
    dangling = [ln for ln in (ctx.links if links is None else links) if ln.target_path is None]
    left_out, hidden = ctx.left_out if dangling else ({}, None)
    for link in dangling:
        source = ctx.notes[link.source_id].path
        hit = hidden.resolve(link.raw, source, link.kind).path if hidden is not None and left_out else None
        if hit is not None:
            result.excluded.append((link, hit, left_out[hit]))
        elif is_missing_attachment(link):
            result.attachments.append(link)
        else:
            result.broken.append(link)
    return result


def _unresolved_links(ctx: Context) -> list[Item]:
    broken = ctx.unresolved.broken
    ctx.extra_counts["unresolved_targets"] = len(unresolved_targets(broken))
    return unresolved_items(ctx, broken)


def unresolved_targets(broken: Iterable[LinkRow]) -> set[str]:
    """The distinct notes the broken links ask for (the summary counts them)."""
    return {_target_key(ln.raw) for ln in broken}


def unresolved_items(ctx: Context, broken: Iterable[LinkRow]) -> list[Item]:
    """The broken links' items, without suggestions (a page adds them)."""
    return [_unresolved_item(ctx, link, []) for link in broken]


def _unresolved_item(ctx: Context, link: LinkRow, guess: Sequence[Guess]) -> Item:
    matches = [{"path": ctx.notes[g.note_id].path, "match": g.how, "matched": g.name} for g in guess]
    return Item(ctx.notes[link.source_id].path, _unresolved_message(link, guess, ctx),
                _unresolved_fix(link, guess, ctx), line=link.line,
                related=[ctx.ref(g.note_id, g.score) for g in guess],
                data={"target": link.raw, "kind": link.kind, "matches": matches}, key=link)


def _suggest_targets(ctx: Context, items: list[Item]) -> list[Item]:
    """Did you mean: close names and meanings for each broken link's target."""
    guesses = _did_you_mean(ctx, sorted({_target_key(it.key.raw) for it in items}))
    out = []
    for it in items:
        link = it.key
        guess = [g for g in guesses.get(_target_key(link.raw), []) if g.note_id != link.source_id][:SUGGESTIONS]
        out.append(_unresolved_item(ctx, link, guess))
    return out


@dataclass(frozen=True, slots=True)
class Guess:
    note_id: int
    score: float
    how: str  # "file name", "title", "alias" (close to what the link says) or "meaning"
    name: str  # the name that matched (empty for meaning)


def _unresolved_message(link: LinkRow, guess: Sequence[Guess], ctx: Context) -> str:
    message = f'Link to "{link.raw}" points to no note'
    if not guess:
        return message + "."
    return message + "; did you mean " + ", ".join(_guess_label(g, ctx) for g in guess) + "?"


def _guess_label(g: Guess, ctx: Context) -> str:
    label = f'"{ctx.link_text(g.note_id)}"'
    return f'{label} (its {g.how} "{g.name}")' if g.how in ("alias", "title") else label


def _unresolved_fix(link: LinkRow, guess: Sequence[Guess], ctx: Context) -> str:
    name = posixpath.basename(link.raw)
    if not guess:
        return f'Create a note named "{name}", or fix or remove the link.'
    best = guess[0]
    target = ctx.link_text(best.note_id)
    if best.how in ("alias", "title"):
        # Obsidian resolves links by file name only: an alias or title needs the file name in front.
        return (f'Link "{target}|{link.raw}" if that is the note you meant (links resolve by file name, '
                f'not by {best.how}), or create a note named "{name}".')
    return f'Point the link at "{target}" if that is what you meant, or create a note named "{name}".'


def _file_name(path: str) -> str:
    return posixpath.basename(path).removesuffix(".md")


def _target_key(raw: str) -> str:
    return raw.strip().lower().removesuffix(".md")


def _did_you_mean(ctx: Context, targets: Sequence[str]) -> dict[str, list[Guess]]:
    """Close names (file names, titles, aliases) first, then notes close in meaning, per target.

    One more than shown, so that dropping the linking note itself still leaves enough."""
    if not targets:
        return {}
    by_name, matcher = ctx.name_matcher
    meaning = _close_in_meaning(ctx, targets)
    out: dict[str, list[Guess]] = {}
    for target in targets:
        picks: dict[int, Guess] = {}
        for name, score in matcher.close(posixpath.basename(target), SUGGESTIONS + 1, NAME_CUTOFF):
            found = by_name[name]
            picks.setdefault(found.note_id, Guess(found.note_id, score, found.how, found.name))
        for note_id, score in meaning.get(target, []):
            picks.setdefault(note_id, Guess(note_id, score, "meaning", ""))
        out[target] = list(picks.values())[:SUGGESTIONS + 1]
    return out


class NameMatcher:
    """difflib ratios against the names sharing the most character trigrams with the word.

    difflib.get_close_matches over every title and alias of a 6,500-note vault costs about 50 ms a
    word; the trigram prefilter keeps the few dozen names that could reach the cutoff at all."""

    POOL = 40

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(dict.fromkeys(names))
        grams: dict[str, list[int]] = defaultdict(list)
        for i, name in enumerate(self.names):
            for gram in _trigrams(name):
                grams[gram].append(i)
        # Counted with numpy: common trigrams ("the", " no") list most names, so counting them in
        # Python cost seconds a report on a 17k-note vault.
        self._grams = {gram: np.array(ids, dtype=np.int32) for gram, ids in grams.items()}

    def pool(self, word: str) -> list[int]:
        """The names sharing the most trigrams with the word, most first (ties: earlier name first)."""
        postings = [self._grams[g] for g in _trigrams(word) if g in self._grams]
        if not postings:
            return []
        counts = np.bincount(np.concatenate(postings), minlength=len(self.names))
        floor = 1
        if len(counts) > self.POOL:
            floor = max(1, int(np.partition(counts, len(counts) - self.POOL)[len(counts) - self.POOL]))
        found = np.flatnonzero(counts >= floor)
        return [int(i) for i in found[np.lexsort((found, -counts[found]))][: self.POOL]]

    def close(self, word: str, n: int, cutoff: float) -> list[tuple[str, float]]:
        word = word.lower()
        matcher = difflib.SequenceMatcher(None, "", word)  # difflib caches its work on the second sequence
        scored = []
        for i in self.pool(word):
            matcher.set_seq1(self.names[i])
            if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:  # cheap upper bounds
                scored.append((self.names[i], matcher.ratio()))
        return sorted((x for x in scored if x[1] >= cutoff), key=lambda x: -x[1])[:n]


def _trigrams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i:i + 3] for i in range(len(padded) - 2)}


def _close_in_meaning(ctx: Context, targets: Sequence[str]) -> dict[str, list[tuple[int, float]]]:
    nv = ctx.vectors
    if ctx.embedder is None or len(nv.ids) == 0 or ctx.embedder.dim != nv.matrix.shape[1]:
        return {}
    queries = ctx.embedder.encode([posixpath.basename(t) for t in targets])
    # The best part's cosine: a link's few words are often well known to one model of the pair only
    # ("Goals 2027" ~ "2025 Goals": 0.92 in the English part, 0.72 in the multilingual one).
    parts = ctx.embedder.part_slices if len(ctx.meaning_parts) > 1 else [slice(None)]
    notes = ctx.meaning_parts
    out: dict[str, list[tuple[int, float]]] = {}
    for start in range(0, len(targets), BLOCK_ROWS):
        block = queries[start:start + BLOCK_ROWS]
        per_part = np.array([unit_rows(np.array(block[:, sl])) @ m.T for sl, m in zip(parts, notes, strict=True)])
        blurred = per_part.mean(axis=2) >= MEANING_BLUR  # (part, text)
        sims = np.where(blurred[:, :, None], np.float32(-1.0), per_part).max(axis=0)
        for i, row in enumerate(sims):
            best = best_rows(np.where(row >= MEANING_CUTOFF, row, 0.0).astype(np.float32), SUGGESTIONS)
            out[targets[start + i]] = [(int(nv.ids[j]), float(row[j])) for j in best]
    return out


def _missing_attachments(ctx: Context) -> list[Item]:
    return [Item(ctx.notes[ln.source_id].path, f'Embeds "{ln.raw}", which is not in the vault.',
                 "Add the file to the vault (or fix the file name in the link), or remove the embed.", line=ln.line,
                 data={"target": ln.raw, "kind": ln.kind})
            for ln in ctx.unresolved.attachments]


def _excluded_links(ctx: Context) -> list[Item]:
    return [Item(ctx.notes[ln.source_id].path,
                 f'Links to "{target}", which the index leaves out ({reason}): search and related notes '
                 "do not follow this link.",
                 "Nothing to do if it is left out on purpose; otherwise change .indexignore, Obsidian's "
                 "Excluded files or the size limit, and index again.", line=ln.line,
                 data={"target": ln.raw, "file": target, "reason": reason})
            for ln, target, reason in ctx.unresolved.excluded]


def _ambiguous_links(ctx: Context) -> list[Item]:
    links = [ln for ln in ctx.links if ln.ambiguous and ln.target_path is not None]
    if not links:
        return []
    files = [*(n.path for n in ctx.notes.values()),
             *attachment_paths(ctx.conn)]
    index = PathIndex(files)
    items = []
    for link in links:
        source = ctx.notes[link.source_id].path
        res = index.resolve(link.raw, source, link.kind)
        picked = res.path or link.target_path or ""
        others = [c for c in res.candidates if c != picked]
        why = _pick_reason(picked, others, source)
        items.append(Item(
            source, f'"{link.raw}" matches {len(others) + 1} files; Obsidian opens "{picked}" ({why}); '
            f"the other{'s' if len(others) > 1 else ''}: {_names(others)}.",
            f'Write the folder into the link ("{str(picked).removesuffix(".md")}") if that is the one you mean, '
            "or rename one of the files so the name is unique.", line=link.line,
            data={"target": link.raw, "picked": picked, "candidates": list(res.candidates)}))
    return items


def _pick_reason(picked: str, others: Sequence[str], source: str) -> str:
    if posixpath.dirname(picked.lower()) == posixpath.dirname(source.lower()):
        return "it is in this note's folder"
    if others and picked.count("/") < min(o.count("/") for o in others):
        return "it has the shortest path"
    return "it comes first alphabetically"


def _broken_anchors(ctx: Context) -> list[Item]:
    return [item for link, target in anchored_links(ctx) if (item := anchor_item(ctx, link, target)) is not None]


def anchored_links(ctx: Context) -> Iterator[tuple[LinkRow, NoteRow]]:
    """The links with an anchor, each with the note it reaches."""
    for link in ctx.links:
        target = ctx.notes.get(link.target_id) if link.anchor and link.target_id is not None else None
        if target is not None:
            yield link, target


def anchor_item(ctx: Context, link: LinkRow, target: NoteRow) -> Item | None:
    """The broken-anchor item of a link with an anchor into `target`, or None when the anchor exists.
    Depends on the link, the target note and the linking note's path only (health_cache keeps it)."""
    anchor = link.anchor or ""
    problem = anchor_problem(anchor, link.kind, target)
    if problem is None:
        return None
    where = "This note" if target.id == link.source_id else f'"{target.title}"'
    wanted = [h[1] for h in target.headings] if not anchor.startswith("^") else list(target.block_ids)
    close = difflib.get_close_matches(anchor.lstrip("^"), wanted, n=1, cutoff=0.6)
    fix = (f'Point the link at "{"^" if anchor.startswith("^") else ""}{close[0]}" if that is the one you meant, '
           "or link the note without the anchor." if close else
           "Point the link at an existing heading or block, or link the note without the anchor.")
    hint = f" Its headings: {_names(wanted, 8)}." if wanted and not anchor.startswith("^") and not close else ""
    return Item(ctx.notes[link.source_id].path, f'Link "{link.raw}#{anchor}": {where} {problem}.{hint}',
                fix, line=link.line, data={"target": target.path, "anchor": anchor})


# ---- sections: content ------------------------------------------------------------------------
def _near_duplicates(ctx: Context) -> list[Item]:
    nv = ctx.vectors
    ids_a, ids_b, cosines = ctx.duplicate_pairs
    if len(ids_a) == 0:
        return []
    rows_a = np.array([nv.row_of[int(n)] for n in ids_a], dtype=np.int64)
    rows_b = np.array([nv.row_of[int(n)] for n in ids_b], dtype=np.int64)
    involved = np.unique(np.concatenate([rows_a, rows_b]))
    bodies = ctx.bodies(int(nv.ids[r]) for r in involved)
    texts = [bodies.get(int(nv.ids[r]), "") for r in involved]
    overlap = text_overlap(texts, np.searchsorted(involved, rows_a), np.searchsorted(involved, rows_b))
    items = []
    for k in np.flatnonzero(overlap >= DUPLICATE_JACCARD).tolist():
        first, second = sorted((ctx.notes[int(nv.ids[rows_a[k]])], ctx.notes[int(nv.ids[rows_b[k]])]),
                               key=lambda n: n.path)
        cosine, shared = float(cosines[k]), float(overlap[k])
        items.append(Item(first.path, f'Nearly the same as "{second.path}" (similarity {cosine:.3f}, '
                          f"{shared:.0%} of the text shared).",
                          "Merge the two into one note and link to it, or delete the outdated copy.",
                          related=[ctx.ref(second.id, cosine)],
                          data={"other": second.path, "similarity": round(cosine, 4), "overlap": round(shared, 4)}))
    return sorted(items, key=lambda it: (it.path, it.data["other"]))


def _empty_notes(ctx: Context) -> list[Item]:
    # Empty means nothing at all (the "Untitled" a click leaves behind); properties without text is a stub.
    return [Item(n.path, "The note is empty.", "Write something in it, or delete it.")
            for n in ctx.notes.values() if ctx.body_chars.get(n.id, 0) == 0 and not n.has_frontmatter and not n.template]


def _stub_notes(ctx: Context) -> list[Item]:
    items = []
    for note in ctx.notes.values():
        chars = ctx.body_chars.get(note.id, 0)
        if chars >= STUB_CHARS or (chars == 0 and not note.has_frontmatter) or note.template:
            continue
        message = (f"Only {_plural(chars, 'character')} of text." if chars else
                   "Only properties (frontmatter), no text.")
        items.append(Item(note.path, message, "Flesh it out, or merge it into a related note.",
                          data={"chars": chars}))
    return items


def _long_without_headings(ctx: Context) -> list[Item]:
    return [Item(n.path, f"{ctx.body_chars.get(n.id, 0):,} characters and no heading.",
                 "Add headings: search returns sections, and one huge section is a poor answer.")
            for n in ctx.notes.values() if ctx.body_chars.get(n.id, 0) > LONG_CHARS and not n.headings]


def _malformed_frontmatter(ctx: Context) -> list[Item]:
    return [Item(n.path, w[0].upper() + w[1:] + ("" if w.endswith(".") else "."),
                 "Fix the YAML between the --- lines; until then its properties, tags and aliases are ignored.",
                 line=_warning_line(w))
            for n in ctx.notes.values() for w in n.warnings if MALFORMED in w.lower()]


def _warning_line(warning: str) -> int:
    found = WARNING_LINE.search(warning)
    return int(found.group(1)) if found else 1


def _secrets(ctx: Context) -> list[Item]:
    rows = reads.credential_findings(ctx.conn)
    return [Item(ctx.notes[int(r[0])].path,
                 f"Contains a credential ({r[1]}). The index holds it redacted, but the file still has it.",
                 "Move it to a password manager, delete it from the note (and from backups and sync history), "
                 "and rotate it if the vault was ever shared.", line=int(r[2]), data={"kind": str(r[1])})
            for r in rows if int(r[0]) in ctx.notes]


# ---- sections: tags ---------------------------------------------------------------------------
def _tag_usage(ctx: Context) -> dict[str, dict[str, set[int]]]:
    """tag_lower -> spelling -> note ids."""
    usage: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for note_id, pairs in ctx.tags.items():
        for tag, tag_lower in pairs:
            usage[tag_lower][tag].add(note_id)
    return usage


def _tags_used_once(ctx: Context) -> list[Item]:
    usage = ctx.tag_usage
    tagged = {t: set().union(*sp.values()) for t, sp in usage.items()}
    spread = {t: len(notes) for t, notes in tagged.items()}
    # A template's tag is there to be used again by every note made from it.
    planned = {t for t, notes in tagged.items() if any(ctx.notes[n].template for n in notes)}
    # A once-used tag that is a spelling variant of a used one (#todos next to #todo) says which to use.
    variants: dict[str, str] = {}
    for tag_lower in sorted(usage, key=lambda t: spread[t]):
        variants[tag_key(tag_lower)] = tag_lower
    items = []
    for tag_lower, spellings in sorted(usage.items()):
        if spread[tag_lower] != 1 or tag_lower in planned:
            continue
        better = variants.get(tag_key(tag_lower), tag_lower)
        fix = (f"Use #{better} instead (the same tag, spelled as in {_plural(spread[better], 'note')})."
               if better != tag_lower else "Keep it if you will use it again; otherwise remove it.")
        tag = next(iter(spellings))
        note = next(iter(set().union(*spellings.values())))
        items.append(Item(ctx.notes[note].path, f"#{tag} is used only here.", fix, data={"tag": tag}))
    return items


def _similar_tags(ctx: Context) -> list[Item]:
    by_key: dict[str, Counter[str]] = defaultdict(Counter)
    notes_of: dict[str, set[int]] = defaultdict(set)
    for spellings in ctx.tag_usage.values():
        for tag, notes in spellings.items():
            by_key[tag_key(tag)][tag] += len(notes)
            notes_of[tag] |= notes
    items = []
    for counts in by_key.values():
        if len(counts) < 2:
            continue
        ranked = counts.most_common()
        keep = ranked[0][0]
        rare = ranked[-1][0]
        listed = ", ".join(f"#{t} ({_plural(n, 'note')})" for t, n in ranked)
        rename = ", ".join(f"#{t}" for t, _ in ranked[1:])
        items.append(Item(ctx.notes[min(notes_of[rare], key=lambda n: ctx.notes[n].path)].path,
                          f"These tags look like one: {listed}.",
                          f"Pick one spelling (say #{keep}) and rename {rename} to it.",
                          data={"tags": dict(ranked)}))
    return sorted(items, key=lambda it: it.message)


# ---- sections: index coverage ----------------------------------------------------------------------
def _skipped(ctx: Context) -> list[Item]:
    return [Item(path, f"Not indexed: {reason}.", _skip_fix(reason), data={"reason": reason})
            for path, reason in ctx.skipped.items()]


SKIP_FIXES = (  # (what the reason holds, what to do): the first that matches
    ("too large", "Split the note into smaller notes, or raise max_file_bytes if it really is one note."),
    ("binary", "This is not a text note: give it its real file extension."),
    ("contains a credential", "Rename it without the credential (and rotate the credential): the index never "
                              "stores or shows that name."),
    ("hard-linked", "Copy the note instead of hard-linking it, or allow hard links if every name of it is inside "
                    "the vault."),
    ("cannot read this folder", "Give your user read permission on the folder, then index again."),
    ("cannot read", "Give your user read permission on the file, then index again."),
    ("a link", "Move what the link points to into the vault instead of linking to it."),
    ("not a regular file", "Replace it with a regular file, or move it out of the vault."),
)


def _skip_fix(reason: str) -> str:
    for start, fix in SKIP_FIXES:
        if start in reason:
            return fix
    return "Check the file opens as text in Obsidian, then index again."


def _lexical_only(ctx: Context) -> list[Item]:
    missing, total = _vector_coverage(ctx)
    ctx.extra_counts["lexical_only"] = sum(missing.values())
    fix = ("Run `sidecar index` to embed them." if ctx.embedder is not None else
           "No embedding model is loaded: fix the model setting, then run `sidecar index`.")
    return [Item(ctx.notes[n].path, f"{missing[n]} of {_plural(total[n], 'section')} have no vector: "
                 "found by keyword search only.", fix, data={"chunks": missing[n]})
            for n in sorted(missing, key=lambda n: ctx.notes[n].path) if n in ctx.notes]


def _vector_coverage(ctx: Context) -> tuple[Counter[int], Counter[int]]:
    """(sections without a vector, sections) per note. With a model the snapshot knows both (no pass
    over every chunk); without one it holds no vectors, and the table is asked."""
    snap = ctx.index.snapshot()
    if ctx.embedder is not None and snap.sections:
        with_vectors = vector_rows_per_note(snap, max(snap.sections) + 1)
        total = Counter(snap.sections)
        return Counter({n: k - int(with_vectors[n]) for n, k in total.items() if k > with_vectors[n]}), total
    have = VectorTable(ctx.conn, ctx.index.backend).ids()
    missing: Counter[int] = Counter()
    total = Counter()
    for chunk_id, note_id in chunk_owners(ctx.conn).items():
        total[int(note_id)] += 1
        if int(chunk_id) not in have:
            missing[int(note_id)] += 1
    return missing, total


def vector_rows_per_note(snap: Snapshot, size: int = 0) -> Ints:
    """Live matrix rows (section vectors) per note id, at least `size` long."""
    return np.bincount(snap.vector_notes[snap.vector_notes >= 0], minlength=size)


STALE_FIX = "Run `sidecar index` (or keep `sidecar serve` running, it follows changes)."


def _stale(ctx: Context) -> list[Item]:
    indexed = {n.path: (n.size, n.mtime_ns) for n in ctx.notes.values()}
    found = (stale_item(ctx, path, indexed.get(path)) for path in sorted(set(ctx.disk.notes) | set(indexed)))
    return [it for it in found if it is not None]


def stale_item(ctx: Context, path: str, indexed: tuple[int, int] | None) -> Item | None:
    """The stale item of one path (`indexed`: its size and mtime in the index, None when not there), or None."""
    on_disk = ctx.disk.notes.get(path)
    if path in ctx.skipped or on_disk == indexed:  # also: neither on disk nor in the index
        return None
    if indexed is None:
        return Item(path, "On disk but not in the index yet.", STALE_FIX)
    if on_disk is None:
        why = ctx.disk.excluded.get(path)
        message = f"Still in the index but now left out ({why})." if why else "In the index but gone from disk."
        return Item(path, message, STALE_FIX)
    return Item(path, "Changed on disk since it was indexed.", STALE_FIX)


# ---- the report ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SectionSpec:
    id: str
    title: str
    severity: Severity
    build: Callable[[Context], list[Item]]
    suggest: Callable[[Context, list[Item]], list[Item]] | None = None  # the items with their suggestions


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("unresolved_links", "Links to notes that do not exist", "error", _unresolved_links, _suggest_targets),
    SectionSpec("missing_attachments", "Embeds of missing attachments", "error", _missing_attachments),
    SectionSpec("broken_anchors", "Links to headings or blocks that do not exist", "error", _broken_anchors),
    SectionSpec("secrets", "Credentials in notes", "error", _secrets),  # a count of credentials, not of notes
    SectionSpec("malformed_frontmatter", "Invalid frontmatter", "error", _malformed_frontmatter),
    SectionSpec("ambiguous_links", "Ambiguous links (several files share the name)", "warning", _ambiguous_links),
    SectionSpec("excluded_links", "Links into files the index leaves out", "info", _excluded_links),
    SectionSpec("near_duplicates", "Near-duplicate notes", "warning", _near_duplicates),
    SectionSpec("empty_notes", "Empty notes", "warning", _empty_notes),
    SectionSpec("similar_tags", "Tags that look like the same tag", "warning", _similar_tags),
    SectionSpec("stale", "Notes changed since the last index", "warning", _stale),
    SectionSpec("skipped", "Files the index skipped", "warning", _skipped),
    SectionSpec("lexical_only", "Sections without vectors (keyword search only)", "warning", _lexical_only),
    SectionSpec("orphans", "Orphans: no links in or out", "info", _orphans, _suggest_for(ORPHAN_FIX)),
    SectionSpec("no_inbound", "Notes nothing links to", "info", _no_inbound, _suggest_for(NO_INBOUND_FIX)),
    SectionSpec("dead_ends", "Dead ends: notes that link nowhere", "info", _dead_ends, _suggest_for(DEAD_END_FIX)),
    SectionSpec("clusters", "Groups of notes cut off from the rest", "info", _clusters, _suggest_hubs),
    SectionSpec("stub_notes", f"Stubs (under {STUB_CHARS} characters)", "info", _stub_notes),
    SectionSpec("long_without_headings", f"Long notes without headings (over {LONG_CHARS:,} characters)",
                "info", _long_without_headings),
    SectionSpec("tags_used_once", "Tags used only once", "info", _tags_used_once),
)
SECTION_IDS = tuple(s.id for s in SECTIONS)
SUMMARY_KEYS = ("notes", "orphans", "no_inbound", "dead_ends", "unresolved_links", "unresolved_targets",
                "ambiguous_links", "broken_anchors", "excluded_links", "near_duplicates", "secrets",
                "missing_attachments", "empty_notes", "stub_notes", "long_without_headings", "malformed_frontmatter",
                "tags_used_once", "similar_tags", "clusters", "skipped", "lexical_only", "stale")


SECTION_BY_ID = {s.id: s for s in SECTIONS}


@dataclass(frozen=True)
class Findings:
    """Every section's items, without suggestions, for one generation of the index (health_cache)."""

    generation: str
    sections: dict[str, list[Item]]
    summary: dict[str, int]
    loaded: dict[str, Any]  # the Context values they were found with: the next generation starts from them
    took_ms: float


def find_all(ctx: Context, generation: str, started: float, known: dict[str, list[Item]] | None = None) -> Findings:
    """Every section's items (no suggestions: those cost a pass over every note per item). `known`:
    sections already found for this generation (health_cache: kept or advanced by what changed),
    whose counts beyond their length are in ctx.extra_counts already."""
    known = known or {}
    sections = {spec.id: known[spec.id] if spec.id in known else spec.build(ctx) for spec in SECTIONS}
    summary = {"notes": len(ctx.notes), **{sid: len(items) for sid, items in sections.items()}, **ctx.extra_counts}
    loaded = {k: v for k, v in vars(ctx).items() if k in LOADED}
    return Findings(generation, sections, {key: summary[key] for key in SUMMARY_KEYS}, loaded,
                    round((time.perf_counter() - started) * 1000, 1))


LOADED = frozenset(("notes", "links", "edges", "body_chars", "vectors", "disk", "skipped", "tags",
                    "duplicate_pairs", "name_matcher", "meaning_parts", "file_name_counts", "clusters"))


# ---- rendering --------------------------------------------------------------------------------
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _summary_line(report: HealthResponse) -> str:
    s = report["summary"]
    counts = ", ".join(f"{sec['title'].split(' (')[0].split(':')[0].lower()} {sec['count']}"
                       for sec in report["sections"] if sec["count"])
    return f"{s['notes']} notes; " + (counts or "nothing to report")


def to_text(report: HealthResponse, max_items: int = 20) -> str:
    lines = [f"Vault health ({report['took_ms']:.0f} ms)", _summary_line(report)]
    for sec in sorted(report["sections"], key=lambda s: SEVERITY_ORDER[s["severity"]]):
        if not sec["count"]:
            continue
        lines += ["", f"{sec['severity'].upper()}: {sec['title']} ({sec['count']})"]
        for item in sec["items"][:max_items]:
            where = f"{item['path']}:{item['line']}" if item["line"] else item["path"]
            lines.append(f"  {where}  {item['message']}")
            if item["fix"]:
                lines.append(f"      fix: {item['fix']}")
        if sec["count"] > max_items:
            lines.append(f"  ... and {sec['count'] - max_items} more (see --json)")
    return "\n".join(lines)


def to_markdown(report: HealthResponse, max_items: int = 50) -> str:
    """A report to save as a note. Paths are `code`, never [[links]]: saving it must not change the graph."""
    # No tags in the frontmatter: a tag only this note carries would be the next report's "tag used once".
    # Local time, with its offset: the note is read by the person who saved it, in their time zone.
    generated = datetime.fromtimestamp(report["generated_at"], UTC).astimezone().isoformat(timespec="seconds")
    lines = ["---", f"generated: {generated}", "---", "",
             "# Vault health", "", _summary_line(report), ""]
    for sec in sorted(report["sections"], key=lambda s: SEVERITY_ORDER[s["severity"]]):
        if not sec["count"]:
            continue
        lines += [f"## {sec['title']} ({sec['count']}, {sec['severity']})", ""]
        for item in sec["items"][:max_items]:
            where = f"`{_md_code(item['path'])}`" + (f" line {item['line']}" if item["line"] else "")
            lines.append(f"- {where}: {_md_text(item['message'])}")
            if item["fix"]:
                lines.append(f"    - Fix: {_md_text(item['fix'])}")
        if sec["count"] > max_items:
            lines.append(f"- ... and {sec['count'] - max_items} more (`sidecar health --json` lists all)")
        lines.append("")
    lines += ["## Rules used", "", *(f"- {_md_text(r)}" for r in report["rules"]), ""]
    return "\n".join(lines)


def _md_code(text: str) -> str:
    return text.replace("`", "'")


def _md_text(text: str) -> str:
    # Saved as a note, the report must add no link, tag or comment: break up [[, ](, %% and escape #.
    return (text.replace("[[", "[\u200b[").replace("](", "]\u200b(").replace("%%", "%\u200b%")
            .replace("#", "\\#"))

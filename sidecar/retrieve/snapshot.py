"""What search keeps in memory between queries: the vector matrix, chunk -> note map and link graph.

Reloaded when the index generation changes (the indexer bumps it on every commit that
changes data), so every reader process -- serve, `mcp --stdio`, the CLI -- sees new notes.
The writer's own process does better: after indexing a few notes it advances the snapshot by
what it wrote (follow_changes), so an edit costs milliseconds however big the vault is.

Rows of the matrix are only ever appended: an edited section's old row stays where it is, as a
dead row (note -1, weight 0), until a compaction. The matrix can be a view of a larger buffer, so
the rows a change adds go into room that older snapshots, still in use by other readers, do not see.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from sidecar.ingest.boilerplate import MIN_NOTES as BOILERPLATE_MIN_NOTES
from sidecar.ingest.boilerplate import WEIGHT as BOILERPLATE_WEIGHT
from sidecar.ingest.linkres import PathIndex
from sidecar.retrieve.graph import Graph, graph_signature, load_graph
from sidecar.store import snapshot_reads
from sidecar.store.db import Backend
from sidecar.store.reads import attachment_paths, note_ids_by_path
from sidecar.store.vectors import BLOCK_ROWS, Matrix, VectorTable


@dataclass
class Snapshot:
    generation: str
    vector_ids: npt.NDArray[np.int64]  # chunk id per matrix row (strictly increasing, dead rows included)
    matrix: Matrix  # unit-norm float32, one row per chunk that has a vector (and the dead rows)
    vector_notes: npt.NDArray[np.int64]  # note id per matrix row; -1 for a dead row
    graph: Graph
    chunk_count: int
    note_ids: dict[str, int] = field(default_factory=dict)  # path -> note id
    attachments: list[str] = field(default_factory=list)
    graph_signature: tuple[int, int] = (0, 0)
    term_counts: dict[str, int] = field(default_factory=dict)  # FTS document counts, for this generation
    thresholds: tuple[float, float] | None = None  # (high, low) as stored in meta for this generation
    sections: dict[int, int] = field(default_factory=dict)  # note id -> its number of sections
    boilerplate: Mapping[int, str] = field(default_factory=dict)  # chunk id -> template key, for sections
    # repeated across notes (boilerplate.py)
    boilerplate_keys: frozenset[str] = frozenset()  # their template keys, for unsaved buffers
    dead_rows: int = 0  # rows of chunks that are gone (see the module docstring)
    buffer: Matrix | None = None  # what `matrix` is the first rows of, when there is room to append
    first_pass: FirstPass | None = None  # the narrow copy nearest() scans first; built on first use
    # background()'s sample rows in a part's columns, with their lengths there; per part, built on first use
    _background_parts: dict[tuple[int | None, ...], tuple[Matrix, Matrix]] = field(default_factory=dict, repr=False)

    @property
    def weighted(self) -> bool:
        """Some row weighs other than 1: scores must be multiplied by row_weights."""
        return bool(self.boilerplate) or self.dead_rows > 0

    @cached_property
    def row_weights(self) -> npt.NDArray[np.float32]:
        """Per matrix row: 1, boilerplate.WEIGHT for a section repeated across notes, 0 for a dead row."""
        weights = np.ones(len(self.vector_ids), dtype=np.float32)
        if self.boilerplate:
            ids = np.fromiter(self.boilerplate, dtype=np.int64, count=len(self.boilerplate))
            weights[np.isin(self.vector_ids, ids, assume_unique=True)] = BOILERPLATE_WEIGHT
        if self.dead_rows:
            weights[self.vector_notes < 0] = 0.0
        return weights

    def live_vectors(self) -> tuple[npt.NDArray[np.int64], Matrix, npt.NDArray[np.float32] | None]:
        """(note per row, matrix, weights or None) without dead rows, for whole-vault reports."""
        weights = self.row_weights if self.boilerplate else None
        if not self.dead_rows:
            return self.vector_notes, self.matrix, weights
        live = self.vector_notes >= 0
        return self.vector_notes[live], self.matrix[live], None if weights is None else weights[live]

    def nearest(self, query: Matrix, k: int, mask: npt.NDArray[np.bool_] | None = None,
                min_rows: int | None = None) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """The rows of the k chunks most similar to `query` (cosine times row weight, rows outside
        `mask` left out), best first, with their similarities; only those above 0. From
        TWO_PASS_MIN_ROWS rows on, a first pass over the narrow copy (FirstPass) picks
        FIRST_PASS_ROWS candidates (4k if more) and only those are scored exactly, in full width."""
        n = len(self.vector_ids)
        k = min(k, n)
        if k <= 0:
            return np.zeros(0, np.intp), np.zeros(0, np.float32)
        keep = max(FIRST_PASS_ROWS, 4 * k)
        if n < (TWO_PASS_MIN_ROWS if min_rows is None else min_rows) or n <= keep:
            rows: npt.NDArray[np.intp] = np.arange(n)
            sims = self._scored(self.matrix @ query, None, mask)
        else:
            narrow = self.narrow()
            rough = self._scored(narrow.matrix(n) @ query[narrow.columns], None, mask)
            rows = np.argpartition(-rough, keep - 1)[:keep]
            sims = self._scored(self.matrix[rows] @ query, rows, mask)
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        top = top[sims[top] > 0.0]  # filtered-out rows, and chunks pointing away from the query
        return rows[top], sims[top]

    def likely_rows(self, queries: Matrix, weights: npt.NDArray[np.float32],
                    keep: int) -> npt.NDArray[np.intp] | None:
        """For several weighted queries at once (a note's sections): the `keep` rows whose best weighted
        similarity to any of them is highest in the narrow first pass, sorted, for exact scoring; None
        below TWO_PASS_MIN_ROWS rows (or `keep`), where scoring every row exactly is cheap."""
        n = len(self.vector_ids)
        if n < TWO_PASS_MIN_ROWS or n <= keep or not len(queries):
            return None
        narrow = self.narrow()
        weighted = (queries[:, narrow.columns] * weights[:, None]).T  # a query's weight scales its column
        rough = np.full(n, -np.inf, dtype=np.float32)
        for start in range(0, len(queries), QUERY_BLOCK):  # memory n x QUERY_BLOCK, however many queries
            np.maximum(rough, (narrow.matrix(n) @ weighted[:, start:start + QUERY_BLOCK]).max(axis=1), out=rough)
        rough = self._scored(rough, None, None)
        return np.sort(np.argpartition(-rough, keep - 1)[:keep])

    def _scored(self, sims: Matrix, rows: npt.NDArray[np.intp] | None,
                mask: npt.NDArray[np.bool_] | None) -> Matrix:
        if self.weighted:  # a footer every note shares is no answer, however close its words; a dead row 0
            sims *= self.row_weights if rows is None else self.row_weights[rows]
        if mask is not None:
            sims = np.where(mask if rows is None else mask[rows], sims, np.float32(-2.0))
        return sims

    def warm(self) -> None:
        """Build what nearest() reads besides the matrix now, off the request path (server warm-up)."""
        if len(self.vector_ids) >= TWO_PASS_MIN_ROWS:
            self.narrow()

    def narrow(self) -> FirstPass:
        """The first pass's copy of this snapshot's rows, built once (by one thread) on first use."""
        if self.first_pass is None:
            with _NARROWING:
                if self.first_pass is None:
                    self.first_pass = FirstPass.of(self.matrix, len(self.buffer) if self.buffer is not None else 0)
        return self.first_pass

    @cached_property
    def background_rows(self) -> npt.NDArray[np.intp]:
        """A fixed, evenly spaced sample of the live rows (BACKGROUND_ROWS), for background()."""
        live = np.flatnonzero(self.vector_notes >= 0)
        if len(live) > BACKGROUND_ROWS:
            live = live[np.linspace(0, len(live) - 1, BACKGROUND_ROWS).astype(np.intp)]
        return live

    def background(self, query: Matrix, dims: slice) -> float:
        """The query's mean cosine, in `dims`, to a sample of the vault's sections (times the query's norm).
        Near 0 for a query the model reads; near an answer's cosine for one whose language the model
        reads as a blur, where every text of it looks alike (search.BLIND_BACKGROUND)."""
        if not len(self.background_rows):
            return 0.0
        key = (dims.start, dims.stop, dims.step)  # a slice is no dict key before Python 3.12
        if key not in self._background_parts:  # every query reads the same sample: gathered once a generation
            self._background_parts[key] = self._part(self.background_rows, dims)
        part, norms = self._background_parts[key]
        return float(np.mean((part @ query) / norms))

    def cosines(self, rows: Sequence[int] | npt.NDArray[np.intp], query: Matrix, dims: slice) -> Matrix:
        """Each row's cosine to `query` in the columns `dims` (times the query's norm): a part of the
        vector is no unit vector, so each row is divided by its own length there (0 where it has none)."""
        part, norms = self._part(rows, dims)
        cosines: Matrix = (part @ query) / norms
        return cosines

    def _part(self, rows: Sequence[int] | npt.NDArray[np.intp], dims: slice) -> tuple[Matrix, Matrix]:
        part = self.matrix[rows, dims]
        return part, np.maximum(np.linalg.norm(part, axis=1), np.float32(1e-12))

    @cached_property
    def path_index(self) -> PathIndex:
        """Link resolution for unsaved buffers; built once per generation, not per keystroke."""
        return PathIndex([*self.note_ids, *self.attachments])

    def rows_for(self, chunk_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Matrix row of each chunk id, -1 where the chunk has no vector."""
        pos = np.searchsorted(self.vector_ids, chunk_ids)
        pos = np.clip(pos, 0, max(len(self.vector_ids) - 1, 0))
        if not len(self.vector_ids):
            return np.full(len(chunk_ids), -1, dtype=np.int64)
        found = (self.vector_ids[pos] == chunk_ids) & (self.vector_notes[pos] >= 0)
        return np.where(found, pos, -1)


BACKGROUND_ROWS = 512  # sections a query's background cosine is the mean over: 0.1 ms, and steady
TWO_PASS_MIN_ROWS = 20_000  # below this the full product is cheap: nearest() reads every column
FIRST_PASS_ROWS = 1_600  # candidates the narrow pass keeps for the exact second pass
NARROW_SHARE = 0.375  # share of the columns the narrow pass reads. At 50,537 x 512 over 300 bench queries:
# 1.8 ms CPU a query against 3.2 for the full product, 174 of 36,000 top-120 chunks changed (near rank 120),
# no top 10 changed; half the columns: 2.1 ms, 14 changed. The copy costs 37.5% of the matrix's memory.
QUERY_BLOCK = 32  # likely_rows: queries scored together, so memory stays rows x 32 floats
_NARROWING = threading.Lock()


@dataclass(frozen=True)
class FirstPass:
    """The matrix's highest-energy columns (a model2vec model's leading PCA components), copied
    side by side so a first pass reads a fraction of the bytes; room for as many rows as the snapshot's buffer."""

    columns: npt.NDArray[np.intp]
    buffer: Matrix

    @classmethod
    def of(cls, matrix: Matrix, room: int) -> FirstPass:
        energy = np.zeros(matrix.shape[1], dtype=np.float64)
        for start in range(0, len(matrix), BLOCK_ROWS):
            block = matrix[start:start + BLOCK_ROWS]
            energy += np.einsum("ij,ij->j", block, block)
        columns = np.sort(np.argsort(-energy, kind="stable")[: max(1, int(matrix.shape[1] * NARROW_SHARE))])
        buffer: Matrix = np.empty((max(room, len(matrix)), len(columns)), dtype=np.float32)
        first = cls(columns, buffer)
        for start in range(0, len(matrix), BLOCK_ROWS):
            first.appended(start, matrix[start:start + BLOCK_ROWS])
        return first

    def matrix(self, rows: int) -> Matrix:
        return self.buffer[:rows]

    def appended(self, start: int, new_rows: Matrix) -> FirstPass | None:
        """This copy with `new_rows` written from row `start` on, where there is room (else None:
        the next search builds a new one)."""
        if len(self.buffer) < start + len(new_rows):
            return None
        np.take(new_rows, self.columns, axis=1, out=self.buffer[start:start + len(new_rows)])
        return self


def current_generation(conn: sqlite3.Connection) -> str:
    return snapshot_reads.generation(conn)


def load_snapshot(conn: sqlite3.Connection, backend: Backend, dim: int | None, prev: Snapshot | None = None) -> Snapshot:
    """A fresh snapshot; with `prev`, only what changed is read (an edit costs milliseconds, not a reload)."""
    generation = current_generation(conn)
    owner = snapshot_reads.chunk_owners(conn)
    ids, matrix = _vectors(conn, backend, dim, prev)
    notes = np.fromiter((owner.get(int(i), -1) for i in ids), dtype=np.int64, count=len(ids))
    keep = notes >= 0  # a vector whose chunk vanished (crash between deletes) is ignored
    signature = graph_signature(conn)
    graph = prev.graph if prev is not None and prev.graph_signature == signature else load_graph(conn)
    note_ids = note_ids_by_path(conn)
    attachments = attachment_paths(conn)
    if not keep.all():  # a boolean index copies the matrix: only when there is a row to drop
        ids, matrix, notes = ids[keep], matrix[keep], notes[keep]
    repeated = snapshot_reads.boilerplate_chunks(conn, BOILERPLATE_MIN_NOTES)
    sections = Counter(owner.values())
    return Snapshot(generation, ids, matrix, notes, graph, len(owner), note_ids, attachments, signature,
                    sections=dict(sections), boilerplate=repeated, boilerplate_keys=frozenset(repeated.values()),
                    buffer=_room(matrix))


def _with_headroom(rows: int, width: int) -> Matrix:
    """The one headroom rule: a buffer for `rows` rows and room to append HEADROOM_SHARE more (at least
    MIN_HEADROOM) after them. The matrix is its first rows; _room finds it again from the matrix."""
    return np.empty((rows + max(MIN_HEADROOM, int(HEADROOM_SHARE * rows)), width), dtype=np.float32)


def _room(matrix: Matrix) -> Matrix | None:
    """The larger array `matrix` is the first rows of (a buffer from _with_headroom), if any."""
    base = matrix.base
    if isinstance(base, np.ndarray) and base.ndim == 2 and base.dtype == matrix.dtype and \
            base.shape[1] == matrix.shape[1] and len(base) > len(matrix) and \
            base.__array_interface__["data"][0] == matrix.__array_interface__["data"][0]:
        return base
    return None


HEADROOM_SHARE = 0.03  # room kept for appended rows: a compaction (one copy of the matrix) every ~3% of edits
MIN_HEADROOM = 256
MAX_DEAD_SHARE = 0.05  # past this share of dead rows (and MIN_HEADROOM of them), the next change compacts
FULL_RELOAD_SHARE = 0.2  # past this share of new vectors, one sequential read beats many lookups


def _vectors(conn: sqlite3.Connection, backend: Backend, dim: int | None,
             prev: Snapshot | None) -> tuple[npt.NDArray[np.int64], Matrix]:
    if not dim:
        return np.zeros(0, np.int64), np.zeros((0, 1), np.float32)
    table = VectorTable(conn, backend)
    if prev is None or len(prev.vector_ids) == 0 or prev.matrix.shape[1] != dim:
        return table.load(dim, _with_headroom)
    current = np.fromiter(sorted(table.ids()), dtype=np.int64)
    live = prev.vector_notes >= 0  # a dead row's id may be in use again, by another chunk
    added = np.setdiff1d(current, prev.vector_ids[live], assume_unique=True)
    if len(added) > FULL_RELOAD_SHARE * max(len(current), 1):
        return table.load(dim, _with_headroom)
    kept = np.isin(prev.vector_ids, current, assume_unique=True) & live
    new_ids, new_rows = table.load_ids(added.tolist(), dim)
    ids = np.concatenate([prev.vector_ids[kept], new_ids])
    # One new matrix, written in place: `matrix[kept]` first would be a second full-size copy.
    matrix = _with_headroom(len(ids), dim)[:len(ids)]
    np.compress(kept, prev.matrix, axis=0, out=matrix[: len(ids) - len(new_ids)])
    matrix[len(ids) - len(new_ids):] = new_rows
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")  # rows_for() needs sorted ids; SQLite may reuse a freed id
        ids, matrix = ids[order], matrix[order]
    return ids, matrix


@dataclass(frozen=True, slots=True)
class NoteChanges:
    """What one run of the indexer over given paths did, for follow_changes()."""

    before: str  # the generation the run started from
    notes: frozenset[int]  # ids of the notes written, renamed, dropped or deleted
    structural: bool  # notes appeared, went or moved: other notes' links may resolve anew


def follow_changes(prev: Snapshot, conn: sqlite3.Connection, backend: Backend, dim: int | None,
                   changes: NoteChanges) -> Snapshot | None:
    """`prev` advanced by what a run over a few notes wrote, reading only those notes' rows; None
    where that cannot be done safely (another writer came between, or a chunk id was reused)."""
    if prev.generation != changes.before or not dim or (len(prev.vector_ids) and prev.matrix.shape[1] != dim):
        return None  # without a model the vectors say nothing of what went: a reload is as cheap
    ids = json.dumps(sorted(changes.notes))
    rows = snapshot_reads.chunks_of_notes(conn, ids)
    current = {int(r[0]): int(r[1]) for r in rows}
    touched = np.fromiter(changes.notes, dtype=np.int64, count=len(changes.notes))
    old_rows = np.flatnonzero(np.isin(prev.vector_notes, touched))
    dying = old_rows[~np.isin(prev.vector_ids[old_rows], np.fromiter(current, np.int64, len(current)))]
    have = set(prev.vector_ids[old_rows].tolist())
    new_ids, new_rows = VectorTable(conn, backend).load_ids(sorted(set(current) - have), dim)
    if len(new_ids) and len(prev.vector_ids) and new_ids[0] <= prev.vector_ids[-1]:
        return None  # SQLite gave a freed id out again: rows would no longer be in id order
    vector_ids, matrix, vector_notes, dead, buffer = _appended(
        prev, dying, new_ids, new_rows, np.fromiter((current[int(i)] for i in new_ids), np.int64, len(new_ids)))
    first_pass = prev.first_pass.appended(len(prev.vector_ids), new_rows) \
        if prev.first_pass is not None and buffer is prev.buffer else None  # rows appended in place, like the buffer's
    sections = dict(prev.sections)
    for note in changes.notes:
        sections.pop(note, None)
    sections.update(Counter(current.values()))
    graph, signature = (prev.graph, prev.graph_signature) if _same_edges(prev, conn, changes, ids) else \
        (load_graph(conn), graph_signature(conn))
    boilerplate = _followed_boilerplate(prev, conn, {int(r[0]): str(r[2]) for r in rows},
                                        set(prev.vector_ids[dying].tolist()))
    return Snapshot(current_generation(conn), vector_ids, matrix, vector_notes, graph,
                    prev.chunk_count - sum(prev.sections.get(n, 0) for n in changes.notes) + len(current),
                    _followed_note_ids(prev, conn, changes, ids), prev.attachments, signature,
                    sections=sections, boilerplate=boilerplate, boilerplate_keys=frozenset(boilerplate.values()),
                    dead_rows=dead, buffer=buffer, first_pass=first_pass)


def _appended(prev: Snapshot, dying: npt.NDArray[np.int64], new_ids: npt.NDArray[np.int64], new_rows: Matrix,
              new_notes: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], Matrix, npt.NDArray[np.int64], int,
                                                         Matrix | None]:
    """The rows after marking `dying` dead and appending the new ones: into the buffer's free room
    when there is some (nothing is copied), else compacted into a new buffer with room to spare."""
    notes = prev.vector_notes.copy()
    notes[dying] = -1
    dead = prev.dead_rows + len(dying)
    n, extra = len(prev.vector_ids), len(new_ids)
    room = prev.buffer is not None and len(prev.buffer) >= n + extra and prev.buffer.shape[1] == new_rows.shape[1]
    if room and dead <= max(MIN_HEADROOM, MAX_DEAD_SHARE * n):
        assert prev.buffer is not None
        prev.buffer[n:n + extra] = new_rows
        return np.concatenate([prev.vector_ids, new_ids]), prev.buffer[:n + extra], \
            np.concatenate([notes, new_notes]), dead, prev.buffer
    live = notes >= 0
    kept = int(live.sum())
    buffer = _with_headroom(kept + extra, new_rows.shape[1])
    if kept:
        np.compress(live, prev.matrix, axis=0, out=buffer[:kept])
    buffer[kept:kept + extra] = new_rows
    return np.concatenate([prev.vector_ids[live], new_ids]), buffer[:kept + extra], \
        np.concatenate([notes[live], new_notes]), 0, buffer


def _same_edges(prev: Snapshot, conn: sqlite3.Connection, changes: NoteChanges, ids: str) -> bool:
    """The changed notes link to what they linked to before, and no note came or went: the graph
    (and its PageRank) stays as it is."""
    if changes.structural:
        return False
    edges: dict[int, set[int]] = {}
    for source, target in snapshot_reads.edges_from(conn, ids):
        edges.setdefault(int(source), set()).add(int(target))
    return all(edges.get(n, set()) == prev.graph.out_links.get(n, set()) for n in changes.notes)


def _followed_note_ids(prev: Snapshot, conn: sqlite3.Connection, changes: NoteChanges, ids: str) -> dict[str, int]:
    if not changes.structural:
        return prev.note_ids  # no path changed
    note_ids = {path: i for path, i in prev.note_ids.items() if i not in changes.notes}
    note_ids.update((str(r[0]), int(r[1])) for r in snapshot_reads.note_paths_of(conn, ids))
    return note_ids


def _followed_boilerplate(prev: Snapshot, conn: sqlite3.Connection, written: dict[int, str],
                          gone: set[int]) -> Mapping[int, str]:
    """Only the templates the change touched are counted again: a footer may have become boilerplate
    (a third note has it) or stopped being one (a note lost it)."""
    templates = {t for t in written.values() if t} | {prev.boilerplate[i] for i in gone if i in prev.boilerplate}
    if not templates and not gone & prev.boilerplate.keys():
        return prev.boilerplate
    boilerplate = {i: t for i, t in prev.boilerplate.items() if t not in templates and i not in gone}
    boilerplate.update((int(r[0]), str(r[1])) for r in snapshot_reads.boilerplate_chunks_among(
        conn, json.dumps(sorted(templates)), BOILERPLATE_MIN_NOTES))
    return boilerplate


class SnapshotCache:
    def __init__(self) -> None:
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()

    def get(self, conn: sqlite3.Connection, backend: Backend, dim: int | None) -> Snapshot:
        generation = current_generation(conn)
        snap = self._snapshot
        if snap is not None and snap.generation == generation:
            return snap
        with self._lock:  # one thread reloads; the others wait and reuse it
            if not conn.in_transaction:  # a writer's run may have ended while this waited: take what it followed to
                generation = current_generation(conn)
            snap = self._snapshot
            if snap is None or snap.generation != generation:
                snap = load_snapshot(conn, backend, dim, prev=snap)
                self._snapshot = snap
            return snap

    def reloaded(self, conn: sqlite3.Connection, backend: Backend, dim: int | None) -> SnapshotCache:
        """A new cache holding a snapshot loaded now at `dim` (the model came after the lexical snapshot),
        keeping what does not depend on the vectors from this cache's snapshot: the link graph."""
        fresh = SnapshotCache()
        fresh._snapshot = load_snapshot(conn, backend, dim, prev=self._snapshot)
        return fresh

    @contextmanager
    def following(self, conn: sqlite3.Connection, backend: Backend, dim: int | None) -> Iterator[list[NoteChanges]]:
        """Around a writer's run over a few notes (on its connection): readers that see the new
        generation meanwhile wait here, then get the snapshot advanced by what the run reported."""
        reported: list[NoteChanges] = []
        with self._lock:
            yield reported
            snap = self._snapshot
            if snap is not None and reported:
                self._snapshot = follow_changes(snap, conn, backend, dim, reported[0]) or \
                    load_snapshot(conn, backend, dim, prev=snap)

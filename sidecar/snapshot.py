"""What search keeps in memory between queries: the vector matrix, chunk -> note map and link graph.

Reloaded when the index generation changes (the indexer bumps it on every commit that
changes data), so every reader process -- serve, `mcp --stdio`, the CLI -- sees new notes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from sidecar.boilerplate import MIN_NOTES as BOILERPLATE_MIN_NOTES
from sidecar.boilerplate import WEIGHT as BOILERPLATE_WEIGHT
from sidecar.db import Backend
from sidecar.graph import Graph, graph_signature, load_graph
from sidecar.linkres import PathIndex
from sidecar.vectors import Matrix, VectorTable


@dataclass
class Snapshot:
    generation: str
    vector_ids: npt.NDArray[np.int64]  # chunk id per matrix row (sorted)
    matrix: Matrix  # unit-norm float32, one row per chunk that has a vector
    vector_notes: npt.NDArray[np.int64]  # note id per matrix row
    graph: Graph
    chunk_count: int
    note_ids: dict[str, int] = field(default_factory=dict)  # path -> note id
    attachments: list[str] = field(default_factory=list)
    graph_signature: tuple[int, int] = (0, 0)
    term_counts: dict[str, int] = field(default_factory=dict)  # FTS document counts, for this generation
    thresholds: tuple[float, float] | None = None  # (high, low) as stored in meta for this generation
    sections: dict[int, int] = field(default_factory=dict)  # note id -> its number of sections
    boilerplate: frozenset[int] = frozenset()  # chunk ids of sections repeated across notes (boilerplate.py)
    boilerplate_keys: frozenset[str] = frozenset()  # their template keys, for unsaved buffers

    @cached_property
    def row_weights(self) -> npt.NDArray[np.float32]:
        """Per matrix row: 1, or boilerplate.WEIGHT for a section repeated across notes."""
        weights = np.ones(len(self.vector_ids), dtype=np.float32)
        if self.boilerplate:
            ids = np.fromiter(self.boilerplate, dtype=np.int64, count=len(self.boilerplate))
            weights[np.isin(self.vector_ids, ids, assume_unique=True)] = BOILERPLATE_WEIGHT
        return weights

    @cached_property
    def path_index(self) -> PathIndex:
        """Link resolution for unsaved buffers; built once per generation, not per keystroke."""
        return PathIndex([*self.note_ids, *self.attachments])

    def rows_for(self, chunk_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Matrix row of each chunk id, -1 where the chunk has no vector."""
        pos = np.searchsorted(self.vector_ids, chunk_ids)
        pos = np.clip(pos, 0, max(len(self.vector_ids) - 1, 0))
        found = (len(self.vector_ids) > 0) & (self.vector_ids[pos] == chunk_ids) if len(self.vector_ids) else np.zeros(len(chunk_ids), bool)
        return np.where(found, pos, -1)


def current_generation(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return "0" if row is None else str(row[0])


def load_snapshot(conn: sqlite3.Connection, backend: Backend, dim: int | None, prev: Snapshot | None = None) -> Snapshot:
    """A fresh snapshot; with `prev`, only what changed is read (an edit costs milliseconds, not a reload)."""
    generation = current_generation(conn)
    owner = dict(conn.execute("SELECT id, note_id FROM chunks").fetchall())
    ids, matrix = _vectors(conn, backend, dim, prev)
    notes = np.fromiter((owner.get(int(i), -1) for i in ids), dtype=np.int64, count=len(ids))
    keep = notes >= 0  # a vector whose chunk vanished (crash between deletes) is ignored
    signature = graph_signature(conn)
    graph = prev.graph if prev is not None and prev.graph_signature == signature else load_graph(conn)
    note_ids = {str(r[0]): int(r[1]) for r in conn.execute("SELECT path, id FROM notes")}
    attachments = [str(r[0]) for r in conn.execute("SELECT path FROM attachments")]
    if not keep.all():  # a boolean index copies the matrix: only when there is a row to drop
        ids, matrix, notes = ids[keep], matrix[keep], notes[keep]
    repeated = conn.execute(
        "SELECT id, template FROM chunks WHERE template IN (SELECT template FROM chunks WHERE template != ''"
        " GROUP BY template HAVING count(DISTINCT note_id) >= ?)", (BOILERPLATE_MIN_NOTES,)).fetchall()
    sections = Counter(owner.values())
    return Snapshot(generation, ids, matrix, notes, graph, len(owner), note_ids, attachments, signature,
                    sections=dict(sections), boilerplate=frozenset(int(r[0]) for r in repeated),
                    boilerplate_keys=frozenset(str(r[1]) for r in repeated))


FULL_RELOAD_SHARE = 0.2  # past this share of new vectors, one sequential read beats many lookups


def _vectors(conn: sqlite3.Connection, backend: Backend, dim: int | None,
             prev: Snapshot | None) -> tuple[npt.NDArray[np.int64], Matrix]:
    if not dim:
        return np.zeros(0, np.int64), np.zeros((0, 1), np.float32)
    table = VectorTable(conn, backend)
    if prev is None or len(prev.vector_ids) == 0 or prev.matrix.shape[1] != dim:
        return table.load(dim)
    current = np.fromiter(sorted(table.ids()), dtype=np.int64)
    added = np.setdiff1d(current, prev.vector_ids, assume_unique=True)
    if len(added) > FULL_RELOAD_SHARE * max(len(current), 1):
        return table.load(dim)
    kept = np.isin(prev.vector_ids, current, assume_unique=True)
    new_ids, new_rows = table.load_ids(added.tolist(), dim)
    ids = np.concatenate([prev.vector_ids[kept], new_ids])
    # One new matrix, written in place: `matrix[kept]` first would be a second full-size copy.
    matrix: Matrix = np.empty((len(ids), dim), dtype=np.float32)
    np.compress(kept, prev.matrix, axis=0, out=matrix[: len(ids) - len(new_ids)])
    matrix[len(ids) - len(new_ids):] = new_rows
    if len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        order = np.argsort(ids, kind="stable")  # rows_for() needs sorted ids; SQLite may reuse a freed id
        ids, matrix = ids[order], matrix[order]
    return ids, matrix


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
            snap = self._snapshot
            if snap is None or snap.generation != generation:
                snap = load_snapshot(conn, backend, dim, prev=snap)
                self._snapshot = snap
            return snap

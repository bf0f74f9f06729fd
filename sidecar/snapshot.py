"""What search keeps in memory between queries: the vector matrix, chunk -> note map and link graph.

Reloaded when the index generation changes (the indexer bumps it on every commit that
changes data), so every reader process -- serve, `mcp --stdio`, the CLI -- sees new notes.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from sidecar.db import Backend
from sidecar.graph import Graph, load_graph
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


def load_snapshot(conn: sqlite3.Connection, backend: Backend, dim: int | None) -> Snapshot:
    generation = current_generation(conn)
    table = VectorTable(conn, backend)
    if dim:
        ids, matrix = table.load(dim)
    else:
        ids, matrix = np.zeros(0, np.int64), np.zeros((0, 1), np.float32)
    owner = dict(conn.execute("SELECT id, note_id FROM chunks").fetchall())
    notes = np.fromiter((owner.get(int(i), -1) for i in ids), dtype=np.int64, count=len(ids))
    keep = notes >= 0  # a vector whose chunk vanished (crash between deletes) is ignored
    chunk_count = len(owner)
    note_ids = {str(r[0]): int(r[1]) for r in conn.execute("SELECT path, id FROM notes")}
    attachments = [str(r[0]) for r in conn.execute("SELECT path FROM attachments")]
    return Snapshot(generation, ids[keep], matrix[keep], notes[keep], load_graph(conn), chunk_count, note_ids, attachments)


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
                snap = load_snapshot(conn, backend, dim)
                self._snapshot = snap
            return snap

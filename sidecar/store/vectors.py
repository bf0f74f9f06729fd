"""Where chunk vectors live, and the in-memory matrix that search multiplies against.

Stored as int8 (per-row scaled; cosine ignores scale) to keep the index small: 256 bytes a
chunk instead of 1 KB. With sqlite-vec loaded they go into a vec0 table (usable for KNN in
SQL, as the seeds' baseline does); without it, into a plain BLOB table. Search itself uses
numpy over a float32 matrix: measured 7x faster than vec0 KNN at 50k rows, same top-30.
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sidecar.store.db import Backend

Matrix = npt.NDArray[np.float32]
VEC0_TABLE = "chunk_vec0"
BLOB_TABLE = "chunk_vec_blob"
log = logging.getLogger(__name__)


def quantize(matrix: Matrix) -> npt.NDArray[np.int8]:
    scale = np.abs(matrix).max(axis=1, keepdims=True)
    scale[scale == 0] = 1.0
    rows: npt.NDArray[np.int8] = np.clip(np.rint(matrix / scale * 127.0), -127, 127).astype(np.int8)
    return rows


BLOCK_ROWS = 8192  # rows read and converted at a time: bounds the temporaries, not the result


def dequantize(rows: npt.NDArray[np.int8], buffer: Matrix | None = None) -> Matrix:
    """int8 rows -> unit-length float32 rows (einsum norms: 8x faster than linalg.norm here), a block
    at a time into the result, so no second full-size float32 copy exists even for a moment.
    With a buffer (float32, at least as many rows), the result is its first rows (its `.base`)."""
    out: Matrix = (np.empty(rows.shape, dtype=np.float32) if buffer is None else buffer)[:len(rows)]
    for start in range(0, len(rows), BLOCK_ROWS):
        block = out[start:start + BLOCK_ROWS]
        block[:] = rows[start:start + BLOCK_ROWS]
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        norms[norms == 0] = 1.0
        block /= norms[:, None]
    return out


def _read_rows(cursor: Iterable[tuple[int, bytes]], dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """(rowid, embedding) rows -> (ids, int8 matrix), read in blocks: a list of every row as
    Python objects would cost more memory than the matrix itself."""
    id_parts = [np.zeros(0, dtype=np.int64)]
    row_parts = [np.zeros((0, dim), dtype=np.int8)]
    rows = iter(cursor)
    while batch := list(itertools.islice(rows, BLOCK_ROWS)):
        id_parts.append(np.fromiter((r[0] for r in batch), dtype=np.int64, count=len(batch)))
        row_parts.append(np.frombuffer(b"".join(r[1] for r in batch), dtype=np.int8).reshape(len(batch), dim))
    return np.concatenate(id_parts), np.concatenate(row_parts)


# sqlite-vec versions whose vec0 storage vec0_storage reads (a row-by-row scan of the table otherwise).
VEC0_LAYOUTS = frozenset({"v0.1.9"})
SPOT_CHECKS = 3  # rows compared with what the vec0 table itself returns for them


def vec0_storage(conn: sqlite3.Connection, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]] | None:
    """Every vector of the vec0 table, ordered by id, read from the table's own storage: 1,024 rows a
    chunk, each chunk a blob of vectors, a blob of row ids and a validity bitmap (sqlite-vec's
    ARCHITECTURE.md). The table read row by row costs a GIL round trip a row: 3-5x slower alone, far
    slower beside a busy thread (docs/benchmarks.md). None when the storage is not what this expects
    (the caller scans the table then): other sizes, another count than the table's, or rows that
    differ from what the table returns for them."""
    stored = _checked_storage(conn, dim)
    if isinstance(stored, str):
        log.warning("reading the vectors row by row: sqlite-vec's storage is not as expected (%s)", stored)
        return None
    return stored


def _checked_storage(conn: sqlite3.Connection, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]] | str:
    shadows = tuple(f"{VEC0_TABLE}_{name}" for name in ("chunks", "vector_chunks00", "rowids"))
    found = conn.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({','.join('?' * len(shadows))})",
                         shadows).fetchone()[0]
    if found != len(shadows):
        return "its shadow tables are named otherwise"
    stored = _live_chunk_rows(conn, dim)
    if isinstance(stored, str):
        return stored
    ids, rows = stored
    (count,) = conn.execute(f"SELECT count(*) FROM {VEC0_TABLE}_rowids").fetchone()
    if count != len(ids):
        return f"{len(ids)} live rows in its chunks, {count} in the table"
    order = np.argsort(ids, kind="stable")
    ids, rows = ids[order], rows[order]
    for pos in np.unique(np.linspace(0, len(ids) - 1, SPOT_CHECKS).astype(np.int64)) if len(ids) else ():
        row = conn.execute(f"SELECT embedding FROM {VEC0_TABLE} WHERE rowid = ?", (int(ids[pos]),)).fetchone()
        if row is None or bytes(row[0]) != rows[pos].tobytes():
            return f"row {int(ids[pos])} differs from the table's"
    return ids, rows


def _live_chunk_rows(conn: sqlite3.Connection, dim: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]] | str:
    """(ids, int8 rows) of every chunk's live slots, or why a chunk is not what it should be."""
    id_parts, row_parts = [np.zeros(0, dtype=np.int64)], [np.zeros((0, dim), dtype=np.int8)]
    chunks = conn.execute(f"SELECT chunk_id, size, validity, rowids FROM {VEC0_TABLE}_chunks ORDER BY chunk_id")
    for chunk_id, size, validity, rowids in chunks.fetchall():
        vectors = conn.execute(f"SELECT vectors FROM {VEC0_TABLE}_vector_chunks00 WHERE rowid = ?", (chunk_id,)).fetchone()
        if vectors is None or len(vectors[0]) != size * dim or len(rowids) != 8 * size or 8 * len(validity) < size:
            return f"chunk {chunk_id} does not hold {size} rows of {dim}"
        live = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        id_parts.append(np.frombuffer(rowids, dtype="<i8")[live].astype(np.int64))
        row_parts.append(np.frombuffer(vectors[0], dtype=np.int8).reshape(size, dim)[live])
    return np.concatenate(id_parts), np.concatenate(row_parts)


@dataclass
class VectorTable:
    conn: sqlite3.Connection
    backend: Backend

    @property
    def table(self) -> str:
        return VEC0_TABLE if self.backend.vec_version else BLOB_TABLE

    def exists(self) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (self.table,)).fetchone()
        return row is not None

    def create(self, dim: int) -> None:
        if self.backend.vec_version:
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {VEC0_TABLE} USING vec0(embedding int8[{dim}] distance_metric=cosine)"
            )
        else:
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {BLOB_TABLE}(rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")

    def drop(self) -> None:
        """Forget every vector (the model changed): vectors of two models must never mix."""
        self.conn.execute(f"DROP TABLE IF EXISTS {self.table}")

    def put(self, ids: Sequence[int], matrix: Matrix) -> None:
        rows = quantize(matrix)
        self.delete(ids)  # vec0 rejects INSERT OR REPLACE: delete, then insert
        if self.backend.vec_version:
            sql = f"INSERT INTO {VEC0_TABLE}(rowid, embedding) VALUES (?, vec_int8(?))"
        else:
            sql = f"INSERT INTO {BLOB_TABLE}(rowid, embedding) VALUES (?, ?)"
        self.conn.executemany(sql, ((int(i), row.tobytes()) for i, row in zip(ids, rows, strict=True)))

    def delete(self, ids: Iterable[int]) -> None:
        if not self.exists():
            return
        self.conn.executemany(f"DELETE FROM {self.table} WHERE rowid = ?", ((int(i),) for i in ids))

    def count(self) -> int:
        if not self.exists():
            return 0
        return int(self.conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0])

    def ids(self) -> set[int]:
        if not self.exists():
            return set()
        return {int(r[0]) for r in self.conn.execute(f"SELECT rowid FROM {self.table}")}

    def load(self, dim: int, buffer: Callable[[int, int], Matrix] | None = None) -> tuple[npt.NDArray[np.int64], Matrix]:
        """All vectors as (chunk ids, unit-norm float32 matrix), ordered by chunk id; with `buffer`,
        the matrix is the first rows of `buffer(rows, dim)` (the caller's room to append, see dequantize)."""
        if not self.exists():
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        stored = vec0_storage(self.conn, dim) if self.backend.vec_version in VEC0_LAYOUTS else None
        ids, raw = stored or _read_rows(
            self.conn.execute(f"SELECT rowid, embedding FROM {self.table} ORDER BY rowid"), dim)
        return ids, dequantize(raw, None if buffer is None else buffer(len(raw), dim))

    def load_ids(self, chunk_ids: list[int], dim: int) -> tuple[npt.NDArray[np.int64], Matrix]:
        """The vectors of some chunks (ordered by id), for refreshing the matrix after an edit."""
        if not chunk_ids or not self.exists():
            return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
        rows: list[tuple[int, bytes]] = []
        for start in range(0, len(chunk_ids), 500):
            part = chunk_ids[start:start + 500]
            rows += self.conn.execute(
                f"SELECT rowid, embedding FROM {self.table} WHERE rowid IN ({','.join('?' * len(part))})", part).fetchall()
        ids, raw = _read_rows(sorted(rows), dim)
        return ids, dequantize(raw)

    def knn_sql(self, query: Matrix, k: int) -> list[tuple[int, float]]:
        """vec0 KNN in SQL (the seeds' baseline); returns (chunk id, cosine similarity)."""
        if not self.backend.vec_version:
            raise RuntimeError("vec0 KNN needs the sqlite-vec extension")
        q = quantize(query.reshape(1, -1))[0].tobytes()
        rows = self.conn.execute(
            f"SELECT rowid, distance FROM {VEC0_TABLE} WHERE embedding MATCH vec_int8(?) AND k = ?", (q, k)
        ).fetchall()
        return [(int(r[0]), 1.0 - float(r[1])) for r in rows]

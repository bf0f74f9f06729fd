"""The vectors' store: read back from sqlite-vec's own storage exactly as the vec0 table returns them."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from sidecar.store.db import connect
from sidecar.store.vectors import VEC0_TABLE, VectorTable, _read_rows, vec0_storage

DIM = 16


def unit_rows(n: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture()
def table(tmp_path: Path) -> VectorTable:
    conn, backend = connect(tmp_path / "index.sqlite3")
    if not backend.vec_version:
        pytest.fail("sqlite-vec should load here (sqlean.py + sqlite-vec are pinned dependencies)")
    vectors = VectorTable(conn, backend)
    vectors.create(DIM)
    return vectors


def scanned(table: VectorTable) -> tuple[np.ndarray, np.ndarray]:
    """What the vec0 table itself returns, row by row: the reference."""
    return _read_rows(table.conn.execute(f"SELECT rowid, embedding FROM {VEC0_TABLE} ORDER BY rowid"), DIM)


def test_storage_read_is_the_table_row_by_row(table: VectorTable) -> None:
    # Three chunks of 1,024 slots, holes where rows were deleted, rows written again, ids out of order.
    ids = list(range(1, 2601))
    table.put(ids[::-1], unit_rows(len(ids), 0))
    table.delete(range(5, 2600, 7))
    table.put([3, 1500, 9000, 8999], unit_rows(4, 1))
    stored = vec0_storage(table.conn, DIM)
    assert stored is not None
    want_ids, want_rows = scanned(table)
    assert len(want_ids) == 2600 - len(range(5, 2600, 7)) + 2
    assert np.array_equal(stored[0], want_ids)
    assert np.array_equal(stored[1], want_rows)
    loaded_ids, matrix = table.load(DIM)
    assert np.array_equal(loaded_ids, want_ids)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_an_empty_table_reads_as_no_rows(table: VectorTable) -> None:
    stored = vec0_storage(table.conn, DIM)
    assert stored is not None and len(stored[0]) == 0 and stored[1].shape == (0, DIM)


def test_storage_that_is_not_as_expected_is_scanned_instead(table: VectorTable, caplog: pytest.LogCaptureFixture) -> None:
    table.put([1, 2, 3], unit_rows(3, 2))
    with caplog.at_level(logging.WARNING, logger="sidecar.store.vectors"):
        assert vec0_storage(table.conn, DIM * 2) is None  # chunks of DIM-wide rows read as twice as wide
    assert "does not hold 1024 rows of 32" in caplog.text
    table.conn.execute(f"ALTER TABLE {VEC0_TABLE}_rowids RENAME TO moved_rowids")
    assert vec0_storage(table.conn, DIM) is None
    assert "shadow tables" in caplog.text

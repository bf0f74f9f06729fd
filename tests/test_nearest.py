"""Snapshot.nearest: the narrow first pass plus exact rescoring must find what the full product finds,
with exact similarities, honouring row weights (dead rows, boilerplate) and filters; an edit's
appended rows reach the narrow copy without rebuilding it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

import sidecar.retrieve.related as related_module
import sidecar.retrieve.snapshot as snapshot_module
from sidecar.core import VaultIndex
from sidecar.retrieve.graph import Graph
from sidecar.retrieve.snapshot import FirstPass, Snapshot
from tests.test_live_index import NOTES, index  # noqa: F401  (the fixture)

ROWS, DIM, K = 6000, 64, 40


def _pca_like(rows: int, rng: np.random.Generator) -> npt.NDArray[np.float32]:
    """Unit rows whose columns carry less and less of the variance, as a model2vec model's do."""
    m = rng.normal(size=(rows, DIM)).astype(np.float32) * np.linspace(2.0, 0.2, DIM, dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _snapshot(matrix: npt.NDArray[np.float32], notes: npt.NDArray[np.int64] | None = None, dead: int = 0) -> Snapshot:
    n = len(matrix)
    notes = np.arange(n, dtype=np.int64) if notes is None else notes
    return Snapshot("g", np.arange(1, n + 1, dtype=np.int64), matrix, notes, Graph(), n, dead_rows=dead)


def _full(snap: Snapshot, q: npt.NDArray[np.float32], k: int,
          mask: npt.NDArray[np.bool_] | None = None) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    return snap.nearest(q, k, mask, min_rows=len(snap.vector_ids) + 1)


def test_the_two_passes_find_the_full_products_neighbours_with_exact_scores() -> None:
    rng = np.random.default_rng(3)
    snap = _snapshot(_pca_like(ROWS, rng))
    overlap = []
    for q in _pca_like(20, rng):
        rows, sims = snap.nearest(q, K, min_rows=0)
        assert snap.first_pass is not None  # the narrow pass ran
        exact_rows, _ = _full(snap, q, K)
        assert np.allclose(sims, snap.matrix[rows] @ q, atol=1e-6)  # rescored in full width
        assert list(sims) == sorted(sims, reverse=True) and (sims > 0).all()
        assert rows[0] == exact_rows[0]
        overlap.append(len(set(rows.tolist()) & set(exact_rows.tolist())) / K)
    assert np.mean(overlap) >= 0.99


def test_weights_and_filters_hold_in_the_first_pass() -> None:
    rng = np.random.default_rng(4)
    matrix = _pca_like(ROWS, rng)
    q = matrix[7].copy()
    notes = np.arange(ROWS, dtype=np.int64)
    notes[7] = -1  # row 7 is dead: the query's own vector must not come back
    snap = _snapshot(matrix, notes, dead=1)
    rows, _ = snap.nearest(q, K, min_rows=0)
    assert 7 not in rows.tolist()
    mask = np.zeros(ROWS, dtype=bool)
    mask[::500] = True  # 12 rows allowed, fewer than asked for
    rows, _ = snap.nearest(q, K, mask, min_rows=0)
    assert set(rows.tolist()) <= set(np.flatnonzero(mask).tolist())
    assert rows.tolist() == _full(snap, q, K, mask)[0].tolist()


def test_appended_rows_match_a_fresh_narrow_copy() -> None:
    rng = np.random.default_rng(5)
    matrix = _pca_like(ROWS, rng)
    first = FirstPass.of(matrix[:5000], room=ROWS)
    assert first.appended(5000, matrix[5000:]) is first
    assert np.array_equal(first.matrix(ROWS), matrix[:, first.columns])
    wanted = int(DIM * snapshot_module.NARROW_SHARE)
    assert first.columns.tolist() == list(range(wanted))  # the high-energy columns
    assert first.appended(ROWS, matrix[:1]) is None  # no room left: the next search builds a new copy


def test_an_edit_carries_the_narrow_copy(index: VaultIndex, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr(snapshot_module, "FIRST_PASS_ROWS", 2)
    before = index.snapshot()
    before.narrow()
    vault = index.settings.vault
    (vault / "Tax.md").write_text(NOTES["Tax.md"] + "\n## Refunds\n\nThe VAT refund comes in March.\n", encoding="utf-8")
    index.index_paths(["Tax.md"])
    after = index.snapshot()
    assert after.buffer is before.buffer and after.first_pass is before.first_pass  # carried, not rebuilt
    narrow = after.narrow()
    assert np.array_equal(narrow.matrix(len(after.vector_ids)), after.matrix[:, narrow.columns])
    assert index.embedder is not None
    q = index.embedder.encode_query("VAT refund in March")
    assert len(after.vector_ids) > 4  # more rows than the first pass keeps for k=1
    assert after.nearest(q, 1, min_rows=0)[0].tolist() == _full(after, q, 1)[0].tolist()


def test_small_matrices_read_every_column() -> None:
    snap = _snapshot(_pca_like(500, np.random.default_rng(6)))
    snap.nearest(snap.matrix[0].copy(), K)
    assert snap.first_pass is None


def test_warm_builds_the_narrow_copy_only_where_nearest_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    snap = _snapshot(_pca_like(500, np.random.default_rng(7)))
    snap.warm()
    assert snap.first_pass is None  # below TWO_PASS_MIN_ROWS the full product is read
    monkeypatch.setattr(snapshot_module, "TWO_PASS_MIN_ROWS", 400)
    snap.warm()
    assert snap.first_pass is not None


def test_likely_rows_hold_the_best_rows_of_several_weighted_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    matrix = _pca_like(ROWS, rng)
    notes = np.arange(ROWS, dtype=np.int64)
    notes[11] = -1  # a dead row, the first query's own vector: never a likely row
    snap = _snapshot(matrix, notes, dead=1)
    queries = np.vstack([matrix[11], _pca_like(4, rng)])
    weights = np.array([1.0, 0.6, 0.6, 0.6, 0.6], dtype=np.float32)
    assert snap.likely_rows(queries, weights, 400) is None  # below TWO_PASS_MIN_ROWS every row is scored
    monkeypatch.setattr(snapshot_module, "TWO_PASS_MIN_ROWS", 0)
    rows = snap.likely_rows(queries, weights, 400)
    assert rows is not None and len(rows) == 400 and rows.tolist() == sorted(rows.tolist())
    assert 11 not in rows.tolist()
    exact = (matrix @ (queries * weights[:, None]).T).max(axis=1) * snap.row_weights
    best = np.argsort(-exact)[:K]
    assert len(set(best.tolist()) & set(rows.tolist())) >= K - 1


def test_related_notes_read_through_the_first_pass_as_through_every_row(index: VaultIndex,  # noqa: F811
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = NOTES["Kombucha.md"] + "\n## Bottling\n\nBottle with fruit and burp daily.\n\n## Tyres\n\nPatch the tube.\n"
    every_row = index.related(text=buffer, limit=10)["results"]
    monkeypatch.setattr(snapshot_module, "TWO_PASS_MIN_ROWS", 0)
    # All rows but the least likely: a row taken for its neighbour would name another note.
    monkeypatch.setattr(related_module, "FIRST_PASS_ROWS", len(index.snapshot().vector_ids) - 1)
    first_pass = index.related(text=buffer, limit=10)["results"]
    assert index.snapshot().first_pass is not None  # the narrow pass ran
    assert len(every_row) >= 3
    assert [(r["path"], r["score"], r["reasons"]) for r in first_pass] == \
        [(r["path"], r["score"], r["reasons"]) for r in every_row]


def test_a_querys_background_is_its_mean_cosine_to_the_vault() -> None:
    """Near 0 where the model reads the language; high where every text looks alike (search.BLIND_BACKGROUND)."""
    rng = np.random.default_rng(9)
    spread = _snapshot(_pca_like(ROWS, rng))
    query = _pca_like(1, rng)[0]
    assert abs(spread.background(query, slice(None))) < 0.1
    assert len(spread.background_rows) == snapshot_module.BACKGROUND_ROWS
    blur = _pca_like(ROWS, rng) * 0.3 + query  # every row mostly the same direction as the query
    blur /= np.linalg.norm(blur, axis=1, keepdims=True)
    assert _snapshot(blur).background(query, slice(None)) > 0.8
    assert _snapshot(np.zeros((0, DIM), np.float32)).background(query, slice(None)) == 0.0

"""Load under attack (bench/attack/load.py): 8 clients on both ports while full reindexes run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_eight_clients_during_full_reindexes(tmp_path: Path) -> None:
    result = load("load").run(quick=True, out=tmp_path, seconds=6.0, clients=8, files=200)
    assert result.ok, result.failures[:5]
    assert result.figures["full_reindexes_requested"] >= 1 and not result.figures["errors"]
    assert result.figures["calls"] > 50  # throughput is the script's figure; here: the clients really ran


def test_a_commit_in_the_middle_of_a_search_does_not_break_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load, a search during a full rebuild failed with KeyError (an internal error): the vector
    snapshot and the BM25 candidates named chunks that the next statement no longer saw."""
    from sidecar.config import Settings
    from sidecar.core import VaultIndex
    from sidecar.retrieve.search import Searcher

    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(6):
        (vault / f"n{i}.md").write_text(f"# N{i}\n\nsourdough starter notes, part {i}\n")
    core = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx"))
    try:
        core.index()
        original = Searcher._chunk_rows

        def writer_commits_first(self: Searcher, chunk_ids: list[int]) -> object:
            with core.store.transaction():  # the writer's own connection deletes every chunk, as a rebuild does
                core.store.conn.execute("DELETE FROM notes")
            return original(self, chunk_ids)

        monkeypatch.setattr(Searcher, "_chunk_rows", writer_commits_first)
        result = core.search("sourdough starter", limit=5)
        assert len(result["results"]) == 5  # the answer from the state the search started in
    finally:
        core.close()

"""Crash safety under attack (bench/attack/crash.py): kill -9 during indexing, then restart."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.store.indexer import Progress
from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_a_handful_of_kills_leave_a_sound_index_that_restarts_to_a_clean_rebuild(tmp_path: Path) -> None:
    result = load("crash").run(quick=True, out=None, files=150, kills=4)
    assert result.ok, result.failures[:5]
    assert result.figures["integrity_failures"] == 0 and result.figures["restart_not_equal"] == 0


def links(core: VaultIndex) -> list[tuple[str, str | None]]:
    return sorted(core.reader().execute("SELECT target_raw, target_path FROM links").fetchall())


def test_a_run_stopped_after_the_notes_resolves_links_on_the_next_run(tmp_path: Path) -> None:
    """A run that dies (or is cancelled) after writing notes but before resolving links used to leave every
    link unresolved for good: the next run saw no changed file and resolved nothing."""
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(5):
        (vault / f"n{i}.md").write_text(f"# N{i}\nsee [[n{(i + 1) % 5}]]\n")
    core = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx"), load_model=False)
    try:
        cancel = threading.Event()

        def stop_after_notes(p: Progress) -> None:
            if p.phase == "notes" and p.done == p.total:
                cancel.set()

        assert core.index(progress=stop_after_notes, cancel=cancel).cancelled
        # The batch's own links are committed resolved with it now; the last pass is still owed.
        assert core.store.get_meta("links_pending") == "1" and core.status()["complete"] is False
        core.store.conn.execute("UPDATE links SET target_path = NULL, target_id = NULL")  # as an older run left them
        core.index()
        assert links(core) == sorted((f"n{(i + 1) % 5}", f"n{(i + 1) % 5}.md") for i in range(5))
    finally:
        core.close()

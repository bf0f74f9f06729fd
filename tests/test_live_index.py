"""Event-driven indexing: a few notes indexed without a scan, and the search snapshot advanced by what
was written (snapshot.follow_changes) instead of reloaded. The followed snapshot must always equal a
fresh load of the same index; these tests compare the two after every kind of change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sidecar.core import VaultIndex
from sidecar.ingest.vault import Vault
from sidecar.retrieve.snapshot import (
    HEADROOM_SHARE,
    MIN_HEADROOM,
    NoteChanges,
    Snapshot,
    _appended,
    _room,
    _vectors,
    follow_changes,
    load_snapshot,
)
from tests.conftest import open_index
from tests.test_boilerplate import FOOTER

NOTES = {
    "Kombucha.md": "# Kombucha\n\nBrew sweet tea, add the scoby. See [[Second Ferment]].\n",
    "Second Ferment.md": "# Second ferment\n\nBottle the kombucha with fruit; burp daily. Back to [[Kombucha]].\n",
    "Bike/Puncture.md": "# Puncture\n\nLever the tyre off, find the hole with soapy water, patch the tube.\n",
    "Tax.md": "# Tax return\n\nCollect the invoices, sum the deductible expenses, file before July.\n",
}
FOOTED = ("Kombucha.md", "Second Ferment.md", "Tax.md")  # exactly boilerplate.MIN_NOTES notes share the footer


def _live(snap: Snapshot) -> dict[int, tuple[int, bytes]]:
    """chunk id -> (note id, vector bytes) for the rows that are not dead."""
    return {int(i): (int(n), snap.matrix[r].tobytes())
            for r, (i, n) in enumerate(zip(snap.vector_ids, snap.vector_notes, strict=True)) if n >= 0}


def assert_same_as_fresh(index: VaultIndex) -> None:
    followed = index.snapshot()
    fresh = load_snapshot(index.reader(), index.backend, index.embedder.dim if index.embedder else None)
    assert followed.generation == fresh.generation
    assert _live(followed) == _live(fresh)
    assert (followed.chunk_count, followed.sections, followed.note_ids) == (fresh.chunk_count, fresh.sections, fresh.note_ids)
    assert dict(followed.boilerplate) == dict(fresh.boilerplate) and followed.boilerplate_keys == fresh.boilerplate_keys
    assert {k: v for k, v in followed.graph.out_links.items() if v} == {k: v for k, v in fresh.graph.out_links.items() if v}
    assert followed.graph.authority == pytest.approx(fresh.graph.authority)
    assert followed.graph_signature == fresh.graph_signature
    for row in np.flatnonzero(followed.vector_notes < 0):  # a dead row weighs nothing and is found by no id
        assert followed.row_weights[row] == 0
        assert followed.rows_for(followed.vector_ids[row:row + 1])[0] == -1


@pytest.fixture()
def index(tmp_path: Path) -> VaultIndex:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        path = vault / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + (FOOTER.format(slug=rel[:-3]) if rel in FOOTED else ""), encoding="utf-8")
    idx = open_index(vault, tmp_path / "index")
    idx.index()
    idx.snapshot()
    return idx


def test_every_kind_of_change_leaves_the_snapshot_as_a_fresh_load(index: VaultIndex) -> None:
    vault = index.settings.vault
    loads = 0
    real_load = load_snapshot

    def counting(*args: object, **kwargs: object) -> Snapshot:
        nonlocal loads
        loads += 1
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    import sidecar.retrieve.snapshot as snapshot_module
    snapshot_module.load_snapshot = counting  # type: ignore[assignment]
    try:
        steps: list[tuple[str, list[str]]] = []

        def change(what: str, *paths: str) -> None:
            steps.append((what, list(paths)))
            index.index_paths(list(paths))
            assert_same_as_fresh(index)

        (vault / "Tax.md").write_text(NOTES["Tax.md"].replace("July", "the end of June, zqjune") +
                                      FOOTER.format(slug="Tax"), encoding="utf-8")
        change("a body edit, same links", "Tax.md")
        assert [r["path"] for r in index.search("zqjune")["results"]][:1] == ["Tax.md"]
        (vault / "Bike/Puncture.md").write_text(NOTES["Bike/Puncture.md"] + "\nAfter the ride: [[Tax]].\n",
                                                encoding="utf-8")
        change("a link added", "Bike/Puncture.md")
        (vault / "Tax.md").write_text(NOTES["Tax.md"], encoding="utf-8")
        assert len(index.snapshot().boilerplate) == 3
        change("a footer removed: the two others stop being boilerplate", "Tax.md")
        assert not index.snapshot().boilerplate
        (vault / "Bike/Tyres.md").write_text("# Tyres\n\nTubeless tyres seal small holes. [[Puncture]]\n" +
                                             FOOTER.format(slug="Bike/Tyres"), encoding="utf-8")
        change("a note added with the footer: boilerplate again", "Bike/Tyres.md")
        assert len(index.snapshot().boilerplate) == 3
        (vault / "Bike/Tyres.md").rename(vault / "Bike/Tubeless.md")
        change("a rename", "Bike/Tyres.md", "Bike/Tubeless.md")
        (vault / "Second Ferment.md").unlink()
        change("a delete", "Second Ferment.md")
        (vault / "Bike/Tubeless.md").unlink()
        change("the newest note deleted", "Bike/Tubeless.md")
        (vault / "Fresh.md").write_text("# Fresh\n\nA new note whose sections may get freed ids back.\n", encoding="utf-8")
        change("a note added after the newest went (SQLite may reuse its ids)", "Fresh.md")
        index.index_paths(["Nothing Here.md"])
        assert_same_as_fresh(index)
    finally:
        snapshot_module.load_snapshot = real_load
    assert loads <= 2, f"{loads} full loads for {len(steps)} changes: the snapshot was reloaded, not followed"


def test_a_search_on_an_older_snapshot_is_unaffected_by_later_rows(index: VaultIndex) -> None:
    vault = index.settings.vault
    before = index.snapshot()
    rows = before.matrix.copy()
    (vault / "Tax.md").write_text(NOTES["Tax.md"] + "\n## More\n\nA second section about VAT refunds.\n", encoding="utf-8")
    index.index_paths(["Tax.md"])
    after = index.snapshot()
    assert after is not before and after.buffer is before.buffer is not None  # appended in place, not copied
    assert len(after.vector_ids) > len(before.vector_ids)
    assert np.array_equal(before.matrix, rows)  # what an in-flight search holds did not move


def _snapshot_with(n: int, dim: int, room: int, dead: int = 0) -> Snapshot:
    from sidecar.retrieve.graph import Graph

    buffer = np.zeros((n + room, dim), dtype=np.float32)
    buffer[:n] = np.eye(n, dim, dtype=np.float32)
    notes = np.arange(n, dtype=np.int64) // 2
    notes[:dead] = -1
    return Snapshot("g1", np.arange(1, n + 1, dtype=np.int64), buffer[:n], notes, Graph(), n, dead_rows=dead,
                    buffer=buffer if room else None)


def test_rows_are_appended_into_room_and_compacted_when_there_is_none() -> None:
    prev = _snapshot_with(8, 8, room=4)
    new_ids, new_rows, new_notes = np.array([9, 10]), np.ones((2, 8), np.float32), np.array([7, 7])
    ids, matrix, notes, dead, buffer = _appended(prev, np.array([0, 1]), new_ids, new_rows, new_notes)
    assert buffer is prev.buffer and dead == 2 and len(matrix) == 10 and list(notes[:2]) == [-1, -1]
    assert list(prev.vector_notes[:2]) == [0, 0]  # the older snapshot keeps its own notes
    full = _snapshot_with(8, 8, room=0, dead=0)
    ids, matrix, notes, dead, buffer = _appended(full, np.array([0, 1]), new_ids, new_rows, new_notes)
    assert dead == 0 and list(ids) == [3, 4, 5, 6, 7, 8, 9, 10] and buffer is not None
    assert len(buffer) == _with_room(len(matrix))
    assert np.array_equal(matrix[0], np.eye(8, dtype=np.float32)[2])


def _with_room(rows: int) -> int:
    """The headroom rule, written out: 3% more rows, at least 256."""
    return rows + max(MIN_HEADROOM, int(HEADROOM_SHARE * rows))


def test_a_load_and_an_incremental_reload_leave_the_same_room(index: VaultIndex) -> None:
    """Every buffer is sized by one rule (the store's load and the reload each had a copy; the compaction's
    is checked above)."""
    assert index.embedder is not None
    conn, dim = index.reader(), index.embedder.dim
    fresh = load_snapshot(conn, index.backend, dim)
    assert fresh.buffer is not None and len(fresh.buffer) == _with_room(len(fresh.matrix)) > len(fresh.matrix)
    reloaded = _room(_vectors(conn, index.backend, dim, fresh)[1])  # nothing new: kept rows, copied into a new buffer
    assert reloaded is not None and len(reloaded) == _with_room(len(fresh.matrix))


def test_a_snapshot_from_another_generation_is_not_followed(index: VaultIndex) -> None:
    snap = index.snapshot()
    changes = NoteChanges(before="not this one", notes=frozenset({1}), structural=False)
    assert follow_changes(snap, index.reader(), index.backend, index.embedder.dim if index.embedder else 0,
                          changes) is None


@pytest.fixture()
def vault(tmp_path: Path) -> Vault:
    (tmp_path / "Folder").mkdir()
    (tmp_path / "Folder" / "Note.md").write_text("x", encoding="utf-8")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".indexignore").write_text("Private/\n", encoding="utf-8")
    return Vault(tmp_path)


def test_event_paths_names_notes_and_asks_for_a_scan_otherwise(vault: Vault) -> None:
    root = vault.root
    assert vault.event_paths([str(root / "Folder/Note.md"), str(root / "Gone.md")]) == ["Folder/Note.md", "Gone.md"]
    assert vault.event_paths([str(root / ".obsidian/workspace.md"), str(root / "Private/Diary.md"),
                              str(root / ".hidden.md")]) == []  # hidden or ignored: not ours to index
    for needs_scan in (root / "Folder", root / "Moved Folder", root / "picture.png", root / ".indexignore",
                       root / ".obsidian/app.json", Path("/elsewhere/Note.md")):
        assert vault.event_paths([str(root / "Folder/Note.md"), str(needs_scan)]) is None, needs_scan



def test_an_editors_temporary_file_asks_for_no_scan_unless_the_index_held_it(vault: Vault) -> None:
    """With the watcher now waking for any path that comes or goes (a dotted folder, an attachment), a temp
    file written and renamed away within one batch would have scanned the vault at every save."""
    root = vault.root
    held = {"Books v1.0", "attachments/diagram.png"}.__contains__
    batch = [str(root / "Folder/Note.md"), str(root / "Folder/Note.md.tmp-1234")]
    assert vault.event_paths(batch, held) == ["Folder/Note.md"]
    assert vault.event_paths(batch) is None  # nothing to ask: any other path is looked at by a scan
    for gone_but_held in ("Books v1.0", "attachments/diagram.png"):
        assert vault.event_paths([str(root / gone_but_held)], held) is None, gone_but_held

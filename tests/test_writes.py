"""The write path in process: a NoteWriter over a copy of the demo vault and its real index (no model).
What a write refuses it refuses before anything is logged or written; an edit that fails partway records
exactly what it changed; undo leaves no trash copy or empty folder behind; paths resolve as reads do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.errors import Conflict, InvalidParams, NotFound, SidecarError
from sidecar.protocol_types import EditRecord
from sidecar.write.files import VaultFiles
from sidecar.write.writes import NoteWriter

CLIENT = "test client"


@pytest.fixture()
def core(demo_copy: Path, tmp_path: Path) -> Iterator[VaultIndex]:
    index = VaultIndex(Settings(vault=demo_copy, index_dir=tmp_path / "index", allow_writes=True), load_model=False)
    index.index()
    yield index
    index.close()


@pytest.fixture()
def writer(core: VaultIndex) -> NoteWriter:
    assert core.writes is not None
    return core.writes


@pytest.fixture()
def events(writer: NoteWriter) -> list[EditRecord]:
    told: list[EditRecord] = []
    writer.on_edit = told.append
    return told


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def edit_count(writer: NoteWriter) -> int:
    return writer.history.edits(1, 0)[1]


def refused(call: Any, *args: Any) -> SidecarError:
    with pytest.raises(SidecarError) as caught:
        call(*args)
    return caught.value


# ---- text no note can hold ------------------------------------------------------------------------------
BAD_TEXT = ["a\x00b", "a\ud800b", "\udfff"]


@pytest.mark.parametrize("content", BAD_TEXT)
def test_text_no_note_can_hold_is_refused_before_anything_is_logged(writer: NoteWriter, demo_copy: Path,
                                                                   events: list[EditRecord], content: str) -> None:
    before = snapshot(demo_copy)
    home = writer.hash_of("Home.md")
    attempts = [(writer.create, "New.md", content, CLIENT),
                (writer.append, "Home.md", content, home, CLIENT),
                (writer.replace_section, "Home.md", "Areas", f"## Areas\n\n{content}\n", home, CLIENT)]
    for call, *args in attempts:
        error = refused(call, *args)
        assert isinstance(error, InvalidParams) and error.data == {"field": "content"}, (call, error)
    for properties in ({"status": content}, {"tags": ["a", content]}, {"nested": {content: 1}}):
        error = refused(writer.update_properties, "Home.md", properties, home, CLIENT)
        assert isinstance(error, InvalidParams) and error.data == {"field": "properties"}, (properties, error)
    assert snapshot(demo_copy) == before and edit_count(writer) == 0 and events == []


def test_a_redaction_placeholder_is_refused_in_every_write_properties_too(writer: NoteWriter, demo_copy: Path,
                                                                           events: list[EditRecord]) -> None:
    """Reads show a credential as [REDACTED:...]: an agent echoing back the properties it read replaced
    the user's password with the placeholder, for good (content was checked, properties were not)."""
    before = snapshot(demo_copy)
    home = writer.hash_of("Home.md")
    placeholder = "[REDACTED:generic_secret]"
    assert isinstance(refused(writer.append, "Home.md", f"password: {placeholder}", home, CLIENT), InvalidParams)
    for properties in ({"password": placeholder}, {"keys": ["a", f"x {placeholder}"]}, {"nested": {"k": placeholder}}):
        error = refused(writer.update_properties, "Home.md", properties, home, CLIENT)
        assert isinstance(error, InvalidParams) and error.data == {"field": "properties"}, (properties, error)
        assert "placeholder" in error.message
    assert snapshot(demo_copy) == before and edit_count(writer) == 0 and events == []


def test_an_edit_of_properties_says_which_it_set_and_which_it_removed(writer: NoteWriter) -> None:
    home = writer.hash_of("Home.md")
    done = writer.update_properties("Home.md", {"status": "done", "reviewed": "yes"}, home, CLIENT)
    done = writer.update_properties("Home.md", {"status": None, "due": "2026-12-24"}, done["content_hash"], CLIENT)
    assert done["summary"] == "set due; removed status in Home.md"


def test_a_note_that_became_binary_is_a_clear_error_in_every_write(writer: NoteWriter, demo_copy: Path) -> None:
    inbox = writer.hash_of("Inbox.md")
    appended = writer.append("Inbox.md", "one more line", inbox, CLIENT)
    home = writer.hash_of("Home.md")
    (demo_copy / "Home.md").write_bytes(b"# Home\n\x00\x01 binary now\n")  # the user's tool rewrote them
    (demo_copy / "Inbox.md").write_bytes(b"\x00" * 10)
    for call, *args in ((writer.hash_of, "Home.md"), (writer.append, "Home.md", "x", home, CLIENT),
                        (writer.delete, "Home.md", home, CLIENT)):
        error = refused(call, *args)
        assert isinstance(error, InvalidParams) and error.data == {"field": "path"}, (call, error)
        assert "is not text" in error.message and "edit it in Obsidian" in error.message
    undo = refused(writer.undo, appended["edit"], CLIENT)
    assert isinstance(undo, Conflict) and "changed since" in undo.message and "is not text" in undo.message
    assert edit_count(writer) == 1 and (demo_copy / "Inbox.md").read_bytes() == b"\x00" * 10


# ---- names a note cannot have ---------------------------------------------------------------------------
BAD_NAMES = {
    "Inbox/new\nline.md": "U+000A", "tab\there.md": "U+0009", "bell\x07.md": "U+0007", "del\x7f.md": "U+007F",
    "a|b.md": "'|'", "[[x]].md": "'['", "x].md": "']'", "#tag.md": "'#'", "a^b.md": "'^'", "Time: 10.md": "':'",
    "what?.md": "'?'", "star*.md": "'*'", 'say "hi".md': "'\"'", "a<b.md": "'<'", "a>b.md": "'>'",
    "CON.md": "Windows reserves", "con.md": "Windows reserves", "Nul.txt.md": "Windows reserves",
    "COM1.md": "Windows reserves", "lpt9.md": "Windows reserves", "aux/Note.md": "Windows reserves",
    "New#Folder/Note.md": "'#'", "a\ud800.md": "cannot be written", "n" * 300 + ".md": "255",
    "é" * 130 + ".md": "255",  # 130 characters, 260 bytes
    "/".join(["f" * 200] * 5) + "/x.md": "1,000",  # every name short, the path too long
    "Ho\u200bme.md": "invisible", "\u202egnp.md": "text-reversing", "Inbox\ufeff.md": "invisible",  # look-alikes
    "Home.md": "exists: pick another name",  # an agent told what to do instead
}


@pytest.mark.parametrize("path", list(BAD_NAMES))
def test_a_name_obsidian_or_the_disk_cannot_hold_is_refused_for_new_notes_and_moves(
        writer: NoteWriter, demo_copy: Path, events: list[EditRecord], path: str) -> None:
    before, made = snapshot(demo_copy), folders(demo_copy)
    error = refused(writer.create, path, "# t\n", CLIENT)
    assert isinstance(error, InvalidParams) and error.data == {"field": "path"}, error
    assert BAD_NAMES[path] in error.message, error.message
    moved = refused(writer.move, "Inbox.md", path, writer.hash_of("Inbox.md"), CLIENT)
    assert isinstance(moved, InvalidParams) and moved.data == {"field": "new_path"}, moved
    assert snapshot(demo_copy) == before and folders(demo_copy) == made and edit_count(writer) == 0 and events == []


def test_names_obsidian_allows_are_written_and_existing_folders_are_kept_as_they_are(
        writer: NoteWriter, demo_copy: Path) -> None:
    (demo_copy / "C#").mkdir()  # the user's own folder: new notes may go in it
    for path in ("C#/Generics.md", "CONTACTS.md", "COM10.md", "Thinking, Fast & Slow (2).md", "n" * 252 + ".md",
                 "Travel/成都 notes.md", "Family 👨\u200d👩\u200d👧.md", "می\u200cخواهم.md"):  # ZWJ, ZWNJ
        done = writer.create(path, "# t\n", CLIENT)
        assert done["path"] == path and (demo_copy / path).read_text(encoding="utf-8") == "# t\n"


# ---- paths that differ only in case ---------------------------------------------------------------------
def test_writes_resolve_a_path_as_reads_do(core: VaultIndex, writer: NoteWriter, demo_copy: Path) -> None:
    for ref in ("HOME.md", "home", "Start here"):
        assert core.resolve_note(ref) == "Home.md"  # the read path's rule
        done = writer.append(ref, f"from {ref}", writer.hash_of("Home.md"), CLIENT)
        assert done["path"] == "Home.md" and (demo_copy / "Home.md").read_text(encoding="utf-8").endswith(
            f"from {ref}\n")
    assert not (demo_copy / "HOME.md").exists()
    missing = refused(writer.append, "Nowhere.md", "x", "0" * 24, CLIENT)
    assert isinstance(missing, NotFound) and missing.data["field"] == "path"


@pytest.mark.parametrize(("path", "twin"), [("home.md", "Home.md"), ("cooking/New.md", "Cooking"),
                                            ("Cooking/SHAKSHUKA.md", "Cooking/Shakshuka.md"),
                                            ("attachments/DIAGRAM.PNG.md", None), ("ARCHIVE/old/x.md", "Archive")])
def test_a_new_path_that_differs_from_an_existing_one_only_in_case_is_refused(
        writer: NoteWriter, demo_copy: Path, path: str, twin: str | None) -> None:
    if twin is None:  # not a twin: diagram.png is not diagram.png.md
        assert writer.create(path, "# t\n", CLIENT)["path"] == path
        return
    before = snapshot(demo_copy)
    error = refused(writer.create, path, "# t\n", CLIENT)
    assert isinstance(error, InvalidParams) and f"{twin!r} exists" in error.message, error
    moved = refused(writer.move, "Inbox.md", path, writer.hash_of("Inbox.md"), CLIENT)
    assert isinstance(moved, InvalidParams) and moved.data == {"field": "new_path"}
    assert snapshot(demo_copy) == before and edit_count(writer) == 0


def test_a_note_may_be_renamed_to_another_case_of_its_own_name(writer: NoteWriter, demo_copy: Path) -> None:
    done = writer.move("Inbox.md", "INBOX.md", writer.hash_of("Inbox.md"), CLIENT)
    assert done["path"] == "INBOX.md" and [p.name for p in demo_copy.iterdir() if p.name.lower() == "inbox.md"] == [
        "INBOX.md"]


# ---- edits that change nothing --------------------------------------------------------------------------
def test_an_edit_that_changes_nothing_is_refused_and_logged_nowhere(writer: NoteWriter, demo_copy: Path,
                                                                    events: list[EditRecord]) -> None:
    before = snapshot(demo_copy)
    home = writer.hash_of("Home.md")
    empty = refused(writer.update_properties, "Home.md", {}, home, CLIENT)
    assert isinstance(empty, InvalidParams) and empty.data == {"field": "properties"}
    for properties in ({"not_there": None}, {"title": "Home"}):
        error = refused(writer.update_properties, "Home.md", properties, home, CLIENT)
        assert isinstance(error, InvalidParams) and "changes nothing" in error.message, properties
    appended = refused(writer.append, "Home.md", "", home, CLIENT)
    assert isinstance(appended, InvalidParams) and "changes nothing" in appended.message
    assert snapshot(demo_copy) == before and edit_count(writer) == 0 and events == []


def test_restoring_the_version_a_note_holds_is_refused(writer: NoteWriter) -> None:
    first = writer.append("Inbox.md", "added", writer.hash_of("Inbox.md"), CLIENT)
    version = writer.history.versions("Inbox.md", 1, 0)[0][0]["version"]
    restored = writer.restore("Inbox.md", version, first["content_hash"], CLIENT)
    again = refused(writer.restore, "Inbox.md", version, restored["content_hash"], CLIENT)
    assert isinstance(again, InvalidParams) and again.data == {"field": "version"} and edit_count(writer) == 2


# ---- an edit that fails partway -------------------------------------------------------------------------
def test_an_edit_that_fails_before_changing_a_file_leaves_no_record(writer: NoteWriter, demo_copy: Path,
                                                                   events: list[EditRecord],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = VaultFiles.write

    def user_saves_there_first(files: VaultFiles, rel: str, data: bytes, must_be_new: bool) -> str | None:
        (demo_copy / rel).write_text("typed in Obsidian meanwhile\n", encoding="utf-8")
        return real_write(files, rel, data, must_be_new)

    monkeypatch.setattr(VaultFiles, "write", user_saves_there_first)
    error = refused(writer.create, "Idea.md", "# Idea\n", CLIENT)
    assert isinstance(error, Conflict) and "edit" not in error.data
    assert (demo_copy / "Idea.md").read_text(encoding="utf-8") == "typed in Obsidian meanwhile\n"
    assert edit_count(writer) == 0 and events == []
    assert writer.history.conn.execute("SELECT count(*) FROM versions").fetchone()[0] == 0


def test_an_edit_that_fails_partway_records_what_it_changed_and_undo_puts_it_back(
        writer: NoteWriter, demo_copy: Path, events: list[EditRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(demo_copy)
    real_move = VaultFiles.move

    def user_takes_the_name(files: VaultFiles, src: str, dst: str) -> str | None:
        if dst == "Reading/Sayings.md":  # after the three linking notes were rewritten, before the note moves
            (demo_copy / dst).write_text("typed in Obsidian meanwhile\n", encoding="utf-8")
        return real_move(files, src, dst)

    monkeypatch.setattr(VaultFiles, "move", user_takes_the_name)
    error = refused(writer.move, "Reading/Quotes.md", "Reading/Sayings.md", writer.hash_of("Reading/Quotes.md"), CLIENT)
    edit_id = error.data.get("edit")
    assert isinstance(error, Conflict) and isinstance(edit_id, int), error
    assert f"Edit {edit_id} holds the 3 files it changed" in error.message and f"undo_edit {edit_id}" in error.message
    record = writer.history.edit(edit_id)
    assert record is not None and record["undone_by"] is None
    relinked = ["Home.md", "Projects/Search Engine/Parser Test Cases.md", "Reading/Reading List.md"]
    assert sorted(c["before"] for c in record["changes"]) == relinked
    assert "![[Sayings#^quote-kay]]" in (demo_copy / "Home.md").read_text(encoding="utf-8")
    assert [e["edit"] for e in events] == [edit_id] and events[0]["paths"] == relinked
    assert (demo_copy / "Reading/Quotes.md").read_bytes() == before["Reading/Quotes.md"]
    undone = writer.undo(edit_id, CLIENT)
    assert sorted(undone["paths"]) == relinked
    (demo_copy / "Reading/Sayings.md").unlink()
    assert snapshot(demo_copy) == before


def test_an_edit_that_changed_no_file_cannot_be_undone(writer: NoteWriter, demo_copy: Path) -> None:
    edit_id, _versions = writer.history.begin(CLIENT, "create", "created x.md", [None])  # as older versions left it
    before = snapshot(demo_copy)
    error = refused(writer.undo, edit_id, CLIENT)
    assert isinstance(error, InvalidParams) and error.data == {"field": "edit"} and "nothing to undo" in error.message
    record = writer.history.edit(edit_id)
    assert record is not None and record["undone_by"] is None
    assert edit_count(writer) == 1 and snapshot(demo_copy) == before


# ---- undo leaves nothing behind ---------------------------------------------------------------------------
DAL = "Cooking/Weeknight Dal.md"


def test_undoing_a_delete_takes_its_copy_back_out_of_the_trash(writer: NoteWriter, demo_copy: Path) -> None:
    before = snapshot(demo_copy)
    for _cycle in range(3):
        deleted = writer.delete(DAL, writer.hash_of(DAL), CLIENT)
        record = writer.history.edit(deleted["edit"])
        assert deleted["path"] == DAL and deleted["content_hash"] is None  # the note it moved away
        assert record is not None and record["changes"][0]["trashed"] == ".trash/Weeknight Dal.md"
        assert (demo_copy / ".trash" / "Weeknight Dal.md").read_bytes() == before[DAL]
        undone = writer.undo(deleted["edit"], CLIENT)
        assert snapshot(demo_copy) == before
    redo = writer.undo(undone["edit"], CLIENT)  # undoing the undo deletes it again
    assert redo["paths"] == [DAL] and not (demo_copy / DAL).exists()
    assert (demo_copy / ".trash" / "Weeknight Dal.md").read_bytes() == before[DAL]


def test_a_trash_copy_changed_since_stays_and_the_note_comes_from_the_history(writer: NoteWriter,
                                                                              demo_copy: Path) -> None:
    original = (demo_copy / DAL).read_bytes()
    deleted = writer.delete(DAL, writer.hash_of(DAL), CLIENT)
    copy = demo_copy / ".trash" / "Weeknight Dal.md"
    copy.write_bytes(original + b"edited in the trash\n")
    writer.undo(deleted["edit"], CLIENT)
    assert (demo_copy / DAL).read_bytes() == original
    assert copy.read_bytes() == original + b"edited in the trash\n"


def test_an_older_delete_record_without_its_trash_path_still_undoes(writer: NoteWriter, demo_copy: Path) -> None:
    original = (demo_copy / DAL).read_bytes()
    deleted = writer.delete(DAL, writer.hash_of(DAL), CLIENT)
    record = writer.history.edit(deleted["edit"])
    assert record is not None
    old_shape = [{k: c[k] for k in ("before", "after", "version", "hash_after")} for c in record["changes"]]
    writer.history.conn.execute("UPDATE edits SET changes = ? WHERE id = ?", (json.dumps(old_shape), deleted["edit"]))
    writer.undo(deleted["edit"], CLIENT)
    assert (demo_copy / DAL).read_bytes() == original
    assert (demo_copy / ".trash" / "Weeknight Dal.md").read_bytes() == original  # as before: it stays


def test_undoing_a_move_removes_the_folder_it_made_and_no_other(writer: NoteWriter, demo_copy: Path) -> None:
    before, made = snapshot(demo_copy), folders(demo_copy)
    moved = writer.move("Cooking/Shakshuka.md", "Cooking/Breakfast/Shakshuka.md", writer.hash_of("Cooking/Shakshuka.md"),
                        CLIENT)
    writer.undo(moved["edit"], CLIENT)
    assert snapshot(demo_copy) == before and folders(demo_copy) == made
    into = writer.move("Cooking/Shakshuka.md", "Travel/Shakshuka.md", writer.hash_of("Cooking/Shakshuka.md"), CLIENT)
    writer.undo(into["edit"], CLIENT)  # a folder that was there stays, empty or not
    assert folders(demo_copy) == made
    nested = writer.move("Inbox.md", "Later/Maybe/Inbox.md", writer.hash_of("Inbox.md"), CLIENT)
    (demo_copy / "Later" / "Mine.md").write_text("the user's\n", encoding="utf-8")
    writer.undo(nested["edit"], CLIENT)
    assert folders(demo_copy) == {*made, "Later"} and (demo_copy / "Later" / "Mine.md").exists()


def test_undoing_a_create_removes_the_folder_it_made(writer: NoteWriter, demo_copy: Path) -> None:
    made = folders(demo_copy)
    created = writer.create("Ideas/2027/Idea.md", "# Idea\n", CLIENT)
    writer.undo(created["edit"], CLIENT)
    assert folders(demo_copy) == made


def test_a_new_note_is_measured_as_written_with_its_final_newline(writer: NoteWriter, demo_copy: Path) -> None:
    """Content of exactly the size limit became a file one byte over it (the newline added on writing),
    which the index then skipped as too large."""
    limit = writer.vault.max_file_bytes
    error = refused(writer.create, "Inbox/At the limit.md", "x" * limit, CLIENT)
    assert isinstance(error, InvalidParams) and f"would be {limit + 1:,} bytes" in error.message
    assert not (demo_copy / "Inbox" / "At the limit.md").exists() and edit_count(writer) == 0
    made = writer.create("Inbox/At the limit.md", "x" * (limit - 1), CLIENT)
    assert (demo_copy / made["path"]).stat().st_size == limit

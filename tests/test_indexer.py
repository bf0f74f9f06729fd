"""The indexing pipeline end to end: real files, real SQLite (+ sqlite-vec), the real model."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.ingest.redact import redact
from sidecar.store.db import SCHEMA_VERSION
from sidecar.store.indexer import MERGE_AFTER_NOTES, Progress
from tests import demo_facts
from tests.conftest import DEMO_VAULT, WriteNote, open_index


def index_files(index_dir: Path) -> list[Path]:
    return [p for p in index_dir.iterdir() if p.name.startswith("index.sqlite3")]


def dump_text(index: VaultIndex) -> str:
    conn = index.reader()
    parts = []
    for table, cols in (("notes", "path, title, frontmatter, aliases, headings, warnings"),
                        ("chunks", "heading, body, context, cjk"), ("links", "target_raw, anchor, display"),
                        ("tags", "tag"), ("skipped", "path, reason")):
        for row in conn.execute(f"SELECT {cols} FROM {table}"):
            parts += [str(v) for v in row]
    return "\n".join(parts)


def test_demo_vault_indexes_every_note_and_nothing_else(demo_index: VaultIndex) -> None:
    paths = {r[0] for r in demo_index.reader().execute("SELECT path FROM notes")}
    assert paths == set(demo_facts.INDEXABLE_NOTES)
    status = demo_index.status()
    assert status["complete"] is True
    assert status["chunks_without_vectors"] == 0
    assert status["chunks"] == status["chunks_with_vectors"] > len(paths)


def test_excluded_words_are_nowhere_in_the_index(demo_index: VaultIndex) -> None:
    text = dump_text(demo_index).lower()
    for word in demo_facts.FORBIDDEN_WORDS:
        assert word.lower() not in text
    raw = b"".join(p.read_bytes() for p in index_files(demo_index.settings.index_dir)).lower()
    for word in demo_facts.FORBIDDEN_WORDS:
        assert word.lower().encode() not in raw


def secret_fragments(vault: Path) -> set[str]:
    """The planted secret values, recovered as what redaction removed from each line (8+ chars)."""
    fragments: set[str] = set()
    for path in vault.rglob("*.md"):
        text = path.read_text(encoding="utf-8", errors="replace")
        cleaned = redact(text)
        for finding in cleaned.findings:
            before = re.split(r"[\s\"'`=:,@/]+", text.split("\n")[finding.line - 1])
            after = cleaned.text.split("\n")[finding.line - 1]
            fragments |= {tok for tok in before if len(tok) >= 8 and tok not in after}
    return fragments


def test_no_secret_survives_in_the_index_files(demo_index: VaultIndex) -> None:
    fragments = secret_fragments(DEMO_VAULT)
    assert len(fragments) >= 20  # the vault plants 27 secrets of 26 kinds
    assert redact(dump_text(demo_index)).findings == ()
    raw = b"".join(p.read_bytes() for p in index_files(demo_index.settings.index_dir))
    leaked = sorted(f for f in fragments if f.encode() in raw)
    assert leaked == [], f"secret bytes in the index files: {len(leaked)}"
    kinds = {(r[0], r[1], r[2]) for r in demo_index.reader().execute(
        "SELECT n.path, f.line, f.kind FROM findings f JOIN notes n ON n.id = f.note_id")}
    assert kinds == set(demo_facts.SECRETS)


def test_second_run_changes_nothing(demo_index: VaultIndex) -> None:
    report = demo_index.index()
    assert (report.added, report.updated, report.deleted, report.renamed, report.embedded) == (0, 0, 0, 0, 0)


def test_incremental_edit_add_delete_rename(tmp_path: Path, write_note: WriteNote) -> None:
    one = "## One\n" + "alpha text about gardens and the plants that grow in them. " * 3 + "\n\n"
    write_note("A.md", "# A\n\n" + one + "## Two\n" + "links to [[B]] and [[C]] " * 3 + "\n")
    write_note("B.md", "# B\nbeta text about boats\n")
    vault = tmp_path / "vault"
    index = open_index(vault, tmp_path / "idx")
    first = index.index()
    assert first.added == 2
    conn = index.reader()
    a_chunks = dict(conn.execute("SELECT hash, c.id FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = 'A.md'").fetchall())

    write_note("A.md", "# A\n\n" + one + "## Two\n" + "now about zeppelins, links [[B]] and [[C]] " * 3 + "\n")
    report = index.index()
    assert report.updated == 1 and report.added == 0
    after = dict(conn.execute("SELECT hash, c.id FROM chunks c JOIN notes n ON n.id = c.note_id WHERE n.path = 'A.md'").fetchall())
    kept = set(a_chunks) & set(after)
    assert kept and all(a_chunks[h] == after[h] for h in kept)  # unchanged section kept its row and vector
    assert report.embedded == len(set(after) - set(a_chunks))
    assert index.search("zeppelins", mode="lexical")["results"][0]["path"] == "A.md"

    unresolved = conn.execute("SELECT count(*) FROM links WHERE target_raw = 'C' AND target_id IS NULL").fetchone()[0]
    assert unresolved == 3  # [[C]] written three times
    write_note("C.md", "# C\ngamma\n")
    assert index.index().added == 1
    assert conn.execute("SELECT count(*) FROM links WHERE target_raw = 'C' AND target_id IS NOT NULL").fetchone()[0] == 3

    b_id = conn.execute("SELECT id FROM notes WHERE path = 'B.md'").fetchone()[0]
    os.rename(vault / "B.md", vault / "Boats.md")
    report = index.index()
    assert (report.renamed, report.added, report.deleted) == (1, 0, 0)
    assert conn.execute("SELECT id FROM notes WHERE path = 'Boats.md'").fetchone()[0] == b_id
    # [[B]] no longer resolves after the rename: links are re-resolved
    assert conn.execute("SELECT target_id FROM links WHERE target_raw = 'B'").fetchone()[0] is None

    (vault / "C.md").unlink()
    report = index.index()
    assert report.deleted == 1
    assert conn.execute("SELECT count(*) FROM notes WHERE path = 'C.md'").fetchone()[0] == 0
    assert index.search("gamma", mode="lexical")["results"] == []
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'gamma'").fetchone()[0] == 0


def test_bad_inputs_are_skipped_or_indexed_never_fatal(tmp_path: Path, write_note: WriteNote) -> None:
    vault = tmp_path / "vault"
    write_note("ok.md", "# Fine\nordinary note")
    write_note("empty.md", "")
    (vault / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (vault / "latin1.md").write_bytes("caf\xe9 au lait".encode("latin-1"))
    write_note("bomb.md", "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
               "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
               "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n---\nbody of the bomb\n")
    write_note("malformed.md", "---\ntitle: [unclosed\ntags: : :\n---\nthe body survives malformed frontmatter\n")
    (vault / "huge.md").write_bytes(b"word " * 4_000_000)  # 20 MB
    write_note("longline.md", "x" * 1_000_000)
    index = open_index(vault, tmp_path / "idx")
    report = index.index()
    skipped = {s.path: s.reason for s in report.skipped}
    assert set(skipped) == {"binary.md", "huge.md"}
    assert "binary" in skipped["binary.md"] and "too large" in skipped["huge.md"]
    notes = {r[0]: r[1] for r in index.reader().execute("SELECT path, warnings FROM notes")}
    assert set(notes) == {"ok.md", "empty.md", "latin1.md", "bomb.md", "malformed.md", "longline.md"}
    assert "malformed frontmatter" in notes["malformed.md"]
    assert index.search("survives", mode="lexical")["results"][0]["path"] == "malformed.md"
    assert index.search("bomb", mode="lexical")["results"][0]["path"] == "bomb.md"
    assert {s["path"] for s in index.status()["skipped"]} == {"binary.md", "huge.md"}


def test_cancelled_run_leaves_a_usable_index_that_the_next_run_completes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    index = VaultIndex(open_index(vault, tmp_path / "idx").settings.__class__(
        vault=vault, index_dir=tmp_path / "idx", notes_per_transaction=5))
    cancel = threading.Event()
    calls = 0

    def stop_after_two(p: object) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            cancel.set()

    report = index.index(progress=stop_after_two, cancel=cancel)
    assert report.cancelled
    partial = index.reader().execute("SELECT count(*) FROM notes").fetchone()[0]
    assert 0 < partial < len(demo_facts.INDEXABLE_NOTES)
    path, title = index.reader().execute(  # a note the cancelled run committed, with text to find
        "SELECT n.path, n.title FROM notes n JOIN chunks c ON c.note_id = n.id ORDER BY n.id LIMIT 1").fetchone()
    assert path in [r["path"] for r in index.search(title, mode="lexical", limit=20)["results"]]  # usable mid-way
    index.index()
    clean = open_index(vault, tmp_path / "clean")
    clean.index()
    assert snapshot(index) == snapshot(clean)


def snapshot(index: VaultIndex) -> tuple[set[tuple[str, str]], set[tuple[str, str]], int]:
    conn = index.reader()
    notes = set(conn.execute("SELECT path, content_hash FROM notes").fetchall())
    chunks = set(conn.execute("SELECT n.path, c.hash FROM chunks c JOIN notes n ON n.id = c.note_id").fetchall())
    return notes, chunks, index.status()["chunks_with_vectors"]  # type: ignore[return-value]


def test_fts_and_sqlite_integrity(demo_index: VaultIndex) -> None:
    conn = demo_index.reader()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


def test_without_the_vector_extension_vectors_live_in_a_blob_table(tmp_path: Path) -> None:
    index = open_index(DEMO_VAULT, tmp_path / "idx", vectors=False)
    assert index.backend.vec_version is None
    assert "numpy over BLOBs" in index.status()["backend"]  # type: ignore[operator]
    index.index()
    assert index.status()["complete"] is True
    res = index.search("how do I keep bread dough rising", mode="semantic")
    assert res["vectors_available"] is True and res["results"]


def test_without_a_model_search_is_lexical_and_says_so(tmp_path: Path) -> None:
    index = open_index(DEMO_VAULT, tmp_path / "idx", load_model=False)
    index.index()
    status = index.status()
    assert status["complete"] is False and status["vectors_available"] is False
    res = index.search("sourdough starter")
    assert res["vectors_available"] is False and res["mode"] == "lexical"
    assert "lexical results only" in res["caveat"]
    assert res["results"]


def test_a_different_model_reembeds_everything(tmp_path: Path) -> None:
    from sidecar.ingest.embed import DEFAULT_MODEL_DIR

    other = tmp_path / "other-model"
    shutil.copytree(DEFAULT_MODEL_DIR.parent / "minilm-l6-m2v-256-int8", other)  # one part of the default pair
    weights = other / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one int8 weight differs: a different model, same shape
    weights.write_bytes(bytes(data))
    first = open_index(DEMO_VAULT, tmp_path / "idx")
    first.index()
    fingerprint = first.status()["model"]["fingerprint"]  # type: ignore[index]
    first.close()
    settings = first.settings.__class__(vault=DEMO_VAULT, index_dir=tmp_path / "idx", model=str(other))
    second = VaultIndex(settings)
    report = second.index()
    status = second.status()
    assert status["model"]["fingerprint"] != fingerprint  # type: ignore[index]
    assert report.embedded == status["chunks"] and status["complete"] is True


def test_index_inside_the_vault_is_refused(tmp_path: Path, write_note: WriteNote) -> None:
    write_note("a.md", "x")
    with pytest.raises(ValueError, match="inside the vault"):
        open_index(tmp_path / "vault", tmp_path / "vault" / ".index")
    assert not (tmp_path / "vault" / ".index").exists()


def test_the_vault_is_never_written(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in vault.rglob("*")}
    index = open_index(vault, tmp_path / "idx")
    index.index()
    index.search("anything at all")
    after = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in vault.rglob("*")}
    assert before == after


STOCK_SQLITE = """
import json, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
print(json.dumps({"tables": [r[0] for r in db.execute("SELECT name FROM sqlite_master")],
                  "user_version": db.execute("PRAGMA user_version").fetchone()[0]}))
"""


def test_sqlite_files_are_valid_databases(demo_index: VaultIndex) -> None:
    # A stock SQLite (the standard library's) reads the index from a process of its own: closed in this
    # process, a second SQLite library would delete the WAL under demo_index's connections (db._OpenFiles).
    out = subprocess.run([sys.executable, "-c", STOCK_SQLITE, str(demo_index.settings.db_path)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    stock = json.loads(out.stdout)
    assert {"notes", "chunks", "chunks_fts", "links", "tags", "findings", "skipped"} <= set(stock["tables"])
    assert stock["user_version"] == SCHEMA_VERSION
    assert {p.name for p in index_files(demo_index.settings.index_dir)} >= {"index.sqlite3-wal", "index.sqlite3-shm"}


def test_a_full_rebuild_never_shows_a_half_empty_index(tmp_path: Path) -> None:
    index = VaultIndex(open_index(DEMO_VAULT, tmp_path / "idx").settings.__class__(
        vault=DEMO_VAULT, index_dir=tmp_path / "idx", notes_per_transaction=5))
    index.index()
    reader = open_index(DEMO_VAULT, tmp_path / "idx")  # another connection, as the server's readers are
    seen: list[int] = []

    def check(_p: object) -> None:
        seen.append(reader.reader().execute("SELECT count(*) FROM notes").fetchone()[0])

    report = index.index(full=True, progress=check)
    assert report.updated == len(demo_facts.INDEXABLE_NOTES) and report.embedded == index.status()["chunks"]
    assert seen and min(seen) == len(demo_facts.INDEXABLE_NOTES)


def test_a_run_that_changes_nothing_keeps_the_generation(demo_index: VaultIndex) -> None:
    from sidecar.retrieve.snapshot import current_generation

    demo_index.index()
    before = current_generation(demo_index.reader())
    demo_index.index()
    assert current_generation(demo_index.reader()) == before  # readers keep their snapshot


def test_a_write_that_fails_midway_leaves_nothing_and_the_writer_usable(tmp_path: Path, write_note: WriteNote) -> None:
    write_note("a.md", "# A\n\nalpha")
    index = open_index(tmp_path / "vault", tmp_path / "idx")
    index.index()
    store = index.store
    generation = store.get_meta("generation")
    # The driver's IntegrityError (sqlean, sqlite3 or apsw): notes has NOT NULL columns.
    with pytest.raises(Exception, match="NOT NULL"), store.transaction():
        store.set_meta("half_written", "1")
        store.conn.execute("INSERT INTO notes(id) VALUES (NULL)")
    assert not store.conn.in_transaction
    assert store.get_meta("half_written") is None and store.get_meta("generation") == generation
    with store.transaction() as tx:  # the one writer connection still writes
        tx.changed = False
        store.set_meta("written", "1")
    assert store.get_meta("written") == "1" and store.get_meta("generation") == generation
    write_note("b.md", "# B\n\nbeta")
    assert index.index().added == 1


def test_a_renamed_note_without_a_title_of_its_own_takes_its_new_name(tmp_path: Path, write_note: WriteNote) -> None:
    write_note("Draft.md", "Nothing but a paragraph about gondolas and their ropes.\n")
    index = open_index(tmp_path / "vault", tmp_path / "idx")
    index.index()
    os.rename(tmp_path / "vault" / "Draft.md", tmp_path / "vault" / "Airships.md")
    report = index.index()
    assert report.renamed == 1
    hit = index.search("airships", mode="lexical")["results"][0]  # the title is indexed with each chunk
    assert (hit["path"], hit["title"]) == ("Airships.md", "Airships")
    assert index.status()["chunks_without_vectors"] == 0


@pytest.mark.parametrize(("heading_chars", "body_chars"), [(1_900_000, 10), (300_000, 60_000)])
def test_the_index_of_a_note_with_a_huge_heading_stays_near_its_size(tmp_path: Path, heading_chars: int,
                                                                     body_chars: int) -> None:
    """`# ` + 1.9 MB gave a 2.27 GB index (59 s, 2.3 GB RSS); 300 KB on a 60 KB body gave 143 MB."""
    vault = tmp_path / "vault"
    vault.mkdir()
    text = "# " + "heading " * (heading_chars // 8) + "\n\n" + "".join(
        f"## Part {i}\n\nbody words for part {i}\n\n" for i in range(body_chars // 30))
    (vault / "huge.md").write_text(text)
    core = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx"), load_model=False)
    try:
        core.index()
        stored = core.reader().execute(
            "SELECT sum(length(heading) + length(body) + length(context)) FROM chunks").fetchone()[0]
        per_note = core.reader().execute("SELECT length(title) + length(headings) FROM notes").fetchone()[0]
        assert stored + per_note < 3 * len(text), (stored, per_note, len(text))
    finally:
        core.close()


def resolved_links(index: VaultIndex) -> set[tuple[str, str, str]]:
    return set(index.reader().execute(
        "SELECT n.path, l.target_raw, l.target_path FROM links l JOIN notes n ON n.id = l.source_id"
        " WHERE l.target_path IS NOT NULL").fetchall())


@pytest.mark.parametrize("full", [True, False], ids=["full-rebuild", "first-index"])
def test_a_run_stopped_mid_way_leaves_the_links_of_its_notes_resolved(tmp_path: Path, full: bool) -> None:
    """After a kill -9 mid-run, readers saw 8,086-10,514 of 12,089 links resolved until the next run:
    each batch of notes is now committed with its own links resolved."""
    vault = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    settings = Settings(vault=vault, index_dir=tmp_path / "idx", notes_per_transaction=5)
    complete = open_index(vault, tmp_path / "complete", load_model=False)
    complete.index()
    expected = resolved_links(complete)
    index = VaultIndex(settings)  # with the model: "complete" also needs every vector
    if full:
        index.index()
    cancel = threading.Event()
    batches = 0

    def stop_after_three_batches(p: Progress) -> None:
        nonlocal batches
        batches += p.phase == "notes"
        if batches == 3:
            cancel.set()

    assert index.index(full=full, progress=stop_after_three_batches, cancel=cancel).cancelled
    if full:
        assert resolved_links(index) == expected  # a rebuild in place never shows a partial graph
    else:  # links to notes of later batches wait for the last pass: status says so
        committed = {str(r[0]) for r in index.reader().execute("SELECT path FROM notes")}
        assert 0 < len(resolved_links(index)) < len({link for link in expected if link[0] in committed})
    assert index.status()["complete"] is False
    index.index()
    assert resolved_links(index) == expected and index.status()["complete"] is True


def fts_segments(index: VaultIndex) -> int:
    return int(index.reader().execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def test_a_big_run_leaves_the_keyword_index_in_one_segment_and_an_edit_does_not_wait_for_a_merge(
        tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    for i in range(MERGE_AFTER_NOTES):
        (vault / f"note {i}.md").write_text(f"# Note {i}\n\nword{i} shared text about topic {i % 7}\n", encoding="utf-8")
    index = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx", notes_per_transaction=10))
    assert len(index.index().changed_paths) == MERGE_AFTER_NOTES
    assert fts_segments(index) == 1  # 20 batches committed, then merged
    for i in range(3):
        (vault / f"note {i}.md").write_text(f"# Note {i}\n\nedited{i} text\n", encoding="utf-8")
        index.index()
    assert fts_segments(index) > 1  # small runs are left to FTS5's automerge
    assert index.search("edited2", mode="lexical")["results"][0]["path"] == "note 2.md"

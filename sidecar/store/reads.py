"""Every read the upper layers ask of the index, as functions over a reader's connection: the name
says the question, the answer is plain values or rows. The SQL is written once, here; health's and
search's and the snapshot's own reads sit beside it (health_reads.py, search_reads.py,
snapshot_reads.py)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sidecar.protocol_types import SkippedFile


def packed_rows(conn: sqlite3.Connection, sql: str, columns: str, params: Sequence[object] = ()) -> list[list[Any]]:
    """The rows of `sql` (a SELECT of `columns`) in one step, as lists (REAL values to 15 significant digits).

    SQLite releases the GIL around every row it steps, and taking it back waits behind any thread
    busy in Python, up to the interpreter's switch interval (5 ms) a row: reading 16,894 notes' paths
    took 15 ms alone and 5.8 s beside a busy thread (the start-up scan beside the model's load),
    23 ms packed into one row of JSON. For whole-table reads; a few rows gain nothing."""
    (packed,) = conn.execute(f"SELECT json_group_array(json_array({columns})) FROM ({sql})", params).fetchone()
    rows: list[list[Any]] = json.loads(packed)
    return rows


@contextlib.contextmanager
def read_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One state of the index for every read in the block, even while the writer commits; inside a
    transaction already open, that one."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")  # nothing was written: this only ends the read snapshot


# ---- the database itself (doctor) -------------------------------------------------------------
def fts5_compiled(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])


def integrity_check(conn: sqlite3.Connection) -> str:
    """SQLite's own verdict on the file: "ok", or what is wrong."""
    return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def check_fts_integrity(conn: sqlite3.Connection) -> None:
    """Raises when the full-text index disagrees with the chunks it indexes."""
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")


# ---- counts -------------------------------------------------------------------------------------
def note_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def attachment_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM attachments").fetchone()[0])


# ---- chunks ---------------------------------------------------------------------------------
def chunk_ids(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT id FROM chunks ORDER BY id")]


def chunk_body(conn: sqlite3.Connection, chunk_id: int) -> str:
    (body,) = conn.execute("SELECT body FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return str(body)


def band_meta(conn: sqlite3.Connection) -> dict[str, str]:
    """What the last calibration recorded: band_source, band_chunks, band_measured_with (those set)."""
    return dict(conn.execute(
        "SELECT key, value FROM meta WHERE key IN ('band_source', 'band_chunks', 'band_measured_with')").fetchall())


# ---- notes --------------------------------------------------------------------------------------
def note_id_at(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


def note_id_title(conn: sqlite3.Connection, path: str) -> tuple[int, str] | None:
    row = conn.execute("SELECT id, title FROM notes WHERE path = ?", (path,)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def notes_by_recency(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """(id, path, title, mtime_ns, frontmatter JSON) of every note, the newest first."""
    return conn.execute("SELECT id, path, title, mtime_ns, frontmatter FROM notes ORDER BY mtime_ns DESC").fetchall()


def notes_by_path(conn: sqlite3.Connection) -> Iterable[tuple[Any, ...]]:
    """(id, path, title, frontmatter JSON) of every note in path order."""
    return conn.execute("SELECT id, path, title, frontmatter FROM notes ORDER BY path")


def all_tags(conn: sqlite3.Connection) -> Iterable[tuple[Any, ...]]:
    """(note id, tag as written) of every tag."""
    return conn.execute("SELECT note_id, tag FROM tags")


def note_ids_by_path(conn: sqlite3.Connection) -> dict[str, int]:
    return {str(r[0]): int(r[1]) for r in conn.execute("SELECT path, id FROM notes")}


def attachment_paths(conn: sqlite3.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT path FROM attachments")]


def holds_path(conn: sqlite3.Connection, path: str) -> bool:
    """The index has this attachment, or notes or attachments in this folder ("0" sorts right after "/")."""
    inside = (f"{path}/", f"{path}0")
    row = conn.execute("SELECT EXISTS(SELECT 1 FROM attachments WHERE path = ? OR (path >= ? AND path < ?)) OR "
                       "EXISTS(SELECT 1 FROM notes WHERE path >= ? AND path < ?)", (path, *inside, *inside)).fetchone()
    return bool(row[0])


# ---- links ------------------------------------------------------------------------------------
def outlink_rows(conn: sqlite3.Connection, note_id: int) -> Iterable[tuple[Any, ...]]:
    """(target_raw, target_path, anchor, kind, line, ambiguous) of each link the note writes, by line."""
    return conn.execute(
        "SELECT target_raw, target_path, anchor, kind, line, ambiguous FROM links WHERE source_id = ? ORDER BY line",
        (note_id,))


def backlink_rows(conn: sqlite3.Connection, note_id: int) -> Iterable[tuple[Any, ...]]:
    """(source path, source title, line, kind, anchor) of each link from another note to this one."""
    return conn.execute(
        "SELECT n.path, n.title, l.line, l.kind, l.anchor FROM links l JOIN notes n ON n.id = l.source_id"
        " WHERE l.target_id = ? AND l.source_id != ? ORDER BY n.path, l.line", (note_id, note_id))


def links_into(conn: sqlite3.Connection, path: str) -> list[tuple[Any, ...]]:
    """(source path, line, target as written) of every link that resolves to the note at `path`."""
    return conn.execute(
        "SELECT n.path, l.line, l.target_raw FROM links l JOIN notes n ON n.id = l.source_id"
        " JOIN notes t ON t.id = l.target_id WHERE t.path = ? ORDER BY n.path, l.line", (path,)).fetchall()


def name_is_free(conn: sqlite3.Connection, name_lower: str, besides: str) -> bool:
    """No note but the one at `besides` has this lower-case file name (a bare [[name]] stays unique)."""
    return int(conn.execute("SELECT count(*) FROM notes WHERE name_lower = ? AND path != ?",
                            (name_lower, besides)).fetchone()[0]) == 0


def notes_linking_two_or_more(conn: sqlite3.Connection) -> Iterable[tuple[Any, ...]]:
    """(id, path, JSON array of target paths) of every note linking to at least two other notes."""
    return conn.execute(
        "SELECT n.id, n.path, json_group_array(DISTINCT t.path) FROM notes n JOIN links l ON l.source_id = n.id"
        " JOIN notes t ON t.id = l.target_id WHERE l.target_id != n.id GROUP BY n.id HAVING count(DISTINCT t.id) >= 2")


def link_kind_counts(conn: sqlite3.Connection) -> dict[Any, Any]:
    return dict(conn.execute("SELECT kind, count(*) FROM links GROUP BY kind").fetchall())


def wikilinks_with_folder_path(conn: sqlite3.Connection) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM links WHERE kind IN ('link', 'embed') AND instr(target_raw, '/') > 0"
        " AND target_raw NOT LIKE '%.md'").fetchone()[0])


def link_totals(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(links, unresolved, with an anchor), embeds not counted."""
    row = conn.execute("SELECT count(*), sum(target_id IS NULL), sum(anchor IS NOT NULL) FROM links"
                       " WHERE kind != 'embed'").fetchone()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


# ---- the core's questions: meta, readiness, names, counts ------------------------------------
def meta_value(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def meta_values(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, str]:
    rows = conn.execute(f"SELECT key, value FROM meta WHERE key IN ({','.join('?' * len(keys))})", tuple(keys))
    return {str(k): str(v) for k, v in rows}


def has_notes(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM notes LIMIT 1").fetchone() is not None


def note_exists(conn: sqlite3.Connection, path: str) -> bool:
    return note_id_at(conn, path) is not None


def note_names(conn: sqlite3.Connection) -> list[tuple[str, str, list[str], str]]:
    """(path, title, aliases, lower-case file name) of every note: what a reference can name."""
    rows = conn.execute("SELECT path, title, aliases, name_lower FROM notes").fetchall()
    return [(str(path), str(title), list(json.loads(aliases)), str(name)) for path, title, aliases, name in rows]


def row_counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(notes, chunks)."""
    return note_count(conn), chunk_count(conn)


def skipped_files(conn: sqlite3.Connection) -> list[SkippedFile]:
    return [{"path": str(r[0]), "reason": str(r[1])} for r in conn.execute("SELECT path, reason FROM skipped ORDER BY path")]

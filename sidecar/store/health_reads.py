"""The reads vault health is found from: every note's rows, or (health_cache follows an edit) only
those of some notes. Plain rows out; health turns them into its own records."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from sidecar.ingest.chunk import PROPERTIES_LINE
from sidecar.store.reads import skipped_files


def only_notes(sql: str, column: str, note_ids: Iterable[int] | None, order: str = "") -> tuple[str, tuple[str, ...]]:
    """The query, limited to the given notes' rows when there are any."""
    if note_ids is None:
        return f"{sql}{order}", ()
    return f"{sql} WHERE {column} IN (SELECT value FROM json_each(?)){order}", (json.dumps(sorted(note_ids)),)


def note_rows(conn: sqlite3.Connection, note_ids: Iterable[int] | None) -> Iterable[tuple[Any, ...]]:
    """(id, path, title, aliases, headings, block_ids, warnings (JSON), size, mtime_ns, has frontmatter,
    template variables) of the notes (all: None), in path order."""
    return conn.execute(*only_notes("SELECT id, path, title, aliases, headings, block_ids, warnings, size, mtime_ns,"
                                    " frontmatter != '{}', template_variables FROM notes", "id", note_ids, " ORDER BY path"))


def link_rows(conn: sqlite3.Connection, note_ids: Iterable[int] | None) -> Iterable[tuple[Any, ...]]:
    """(source_id, target_raw, anchor, kind, line, target_path, target_id, ambiguous) of the notes'
    links (all notes: None), by source, line."""
    return conn.execute(*only_notes("SELECT source_id, target_raw, anchor, kind, line, target_path, target_id, ambiguous"
                                    " FROM links", "source_id", note_ids, " ORDER BY source_id, line, id"))


def body_chars(conn: sqlite3.Connection, note_ids: Iterable[int] | None) -> Iterable[tuple[Any, ...]]:
    """(note id, characters of its trimmed section bodies) of the notes (all: None): the text after the
    frontmatter, so the chunk of a note's properties does not count (properties alone make a stub)."""
    text = ("SELECT note_id, sum(length(trim(body))) FROM (SELECT c.note_id, c.body FROM chunks c JOIN notes n"
            f" ON n.id = c.note_id WHERE NOT (c.start_line = {PROPERTIES_LINE} AND n.frontmatter != '{{}}'))")
    return conn.execute(*only_notes(text, "note_id", note_ids, " GROUP BY note_id"))


def tag_rows(conn: sqlite3.Connection, note_ids: Iterable[int] | None) -> Iterable[tuple[Any, ...]]:
    """(note id, tag, lower-case tag) of the notes' tags (all notes: None)."""
    return conn.execute(*only_notes("SELECT note_id, tag, tag_lower FROM tags", "note_id", note_ids))


def link_sources(conn: sqlite3.Connection, link_ids: Iterable[int]) -> set[int]:
    """The notes the given links are written in."""
    return {int(r[0]) for r in conn.execute(*only_notes("SELECT DISTINCT source_id FROM links", "id", link_ids))}


def link_resolutions(conn: sqlite3.Connection) -> dict[int, tuple[int | None, bool]]:
    """link id -> (target note id or None, ambiguous) of every link."""
    return {int(r[0]): (None if r[1] is None else int(r[1]), bool(r[2])) for r in conn.execute(
        "SELECT id, target_id, ambiguous FROM links")}


def note_signatures(conn: sqlite3.Connection) -> dict[int, str]:
    """note id -> one string of what an edit moves (path, content hash, indexed at, size, mtime)."""
    # One string a note, joined by SQLite: building 17k tuples in Python cost 50 ms a call.
    return dict(conn.execute(
        "SELECT id, path || char(0) || content_hash || char(0) || indexed_at || char(0) || size || char(0) || mtime_ns"
        " FROM notes").fetchall())


def skipped_reasons(conn: sqlite3.Connection) -> dict[str, str]:
    """path -> why the index leaves the file out."""
    return {f["path"]: f["reason"] for f in skipped_files(conn)}


def section_bodies(conn: sqlite3.Connection, note_ids: list[int]) -> Iterable[tuple[Any, ...]]:
    """(note id, body) of the notes' sections, in order."""
    return conn.execute("SELECT note_id, body FROM chunks WHERE note_id IN (SELECT value FROM json_each(?))"
                        " ORDER BY note_id, ordinal", (json.dumps(note_ids),))


def credential_findings(conn: sqlite3.Connection) -> Iterable[tuple[Any, ...]]:
    """(note id, kind, line) of every credential the redactor found, by note and line."""
    return conn.execute("SELECT note_id, kind, line FROM findings ORDER BY note_id, line")

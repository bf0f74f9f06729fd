"""The reads search and related notes rank from: the notes a filter allows, lexical candidates
(FTS5, bm25 with the ranking's column weights), term counts, and the rows of the chunks and notes
they show. Plain values out; one statement each, as few round trips as the rankers had."""

from __future__ import annotations

import sqlite3
from typing import Any


# ---- related notes -------------------------------------------------------------------------
def note_id_at(conn: sqlite3.Connection, path: str) -> int | None:
    row = conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
    return None if row is None else int(row[0])


def note_sections(conn: sqlite3.Connection, note_id: int) -> list[tuple[Any, ...]]:
    """(chunk id, heading) of the note's sections, in order."""
    return conn.execute("SELECT id, heading FROM chunks WHERE note_id = ? ORDER BY ordinal", (note_id,)).fetchall()


def note_tags(conn: sqlite3.Connection, note_id: int) -> set[Any]:
    """The note's tags, lower-case."""
    return {r[0] for r in conn.execute("SELECT tag_lower FROM tags WHERE note_id = ?", (note_id,))}


def shared_tag_counts(conn: sqlite3.Connection, tags: set[str]) -> dict[int, int]:
    """note id -> how many of `tags` (lower-case, at least one) it has."""
    marks = ",".join("?" * len(tags))
    rows = conn.execute(f"SELECT note_id, count(*) FROM tags WHERE tag_lower IN ({marks}) GROUP BY note_id",
                        list(tags))
    return {int(r[0]): int(r[1]) for r in rows}


def note_path_title(conn: sqlite3.Connection, note_id: int) -> tuple[Any, ...] | None:
    """(path, title) of the note, None when it is gone."""
    row = conn.execute("SELECT path, title FROM notes WHERE id = ?", (note_id,)).fetchone()
    return None if row is None else tuple(row)


def section_excerpt(conn: sqlite3.Connection, chunk_id: int) -> tuple[str, str, int] | None:
    """(heading, body, start line) of the section."""
    row = conn.execute("SELECT heading, body, start_line FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))


def first_section_excerpt(conn: sqlite3.Connection, note_id: int) -> tuple[str, str, int] | None:
    """(heading, body, start line) of the note's first section."""
    row = conn.execute("SELECT heading, body, start_line FROM chunks WHERE note_id = ? ORDER BY ordinal LIMIT 1",
                       (note_id,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))

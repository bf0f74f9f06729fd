"""The reads search and related notes rank from: the notes a filter allows, lexical candidates
(FTS5, bm25 with the ranking's column weights), term counts, and the rows of the chunks and notes
they show. Plain values out; one statement each, as few round trips as the rankers had."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sidecar.ingest.fold import fold
from sidecar.ingest.parse import is_template
from sidecar.store.db import FOLD_FUNCTION


def json_ids(ids: Collection[int]) -> str:
    """The ids as a JSON array, for `IN (SELECT value FROM json_each(?))`."""
    return "[" + ",".join(str(i) for i in ids) + "]"


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# ---- search: the notes a filter allows -----------------------------------------------------------
# The one spelling of each filter rule, for the notes that pass and for saying which filter nothing passes.
_IN_FOLDER = "path_lower LIKE ? ESCAPE '\\'"  # a note anywhere under the folder
_TAG_OR_CHILD = "tag_lower = ? OR tag_lower LIKE ? ESCAPE '\\'"  # a tag, or one nested under it (#project/x)


def _folder_params(folder: str) -> list[object]:
    return [like_escape(folder) + "/%"]


def _tag_params(tag: str) -> list[object]:
    return [tag, like_escape(tag) + "/%"]


def filtered_note_ids(conn: sqlite3.Connection, folder: str | None, tag: str | None, fields: Mapping[str, str],
                      modified_since_ns: int | None, exclude_path: str | None, exclude_matches: Sequence[str],
                      require_matches: Sequence[str] = ()) -> set[int]:
    """The notes in `folder` (lower-case, no slashes around it), tagged `tag` or a tag under it (lower-case,
    no #), whose frontmatter `fields` equal (or list) the values, modified since, not at `exclude_path`,
    with no section matching any of `exclude_matches` and a section matching each of `require_matches`
    (FTS5 expressions)."""
    clauses: list[str] = []
    params: list[object] = []
    if folder is not None:
        clauses.append(f"({_IN_FOLDER})")
        params += _folder_params(folder)
    if tag is not None:
        clauses.append(f"id IN (SELECT note_id FROM tags WHERE {_TAG_OR_CHILD})")
        params += _tag_params(tag)
    for key, value in fields.items():
        path = '$."' + key.replace('"', "") + '"'
        # A value in ASCII compares by SQLite's lower() (C, every note's value); any other folded whole.
        # A link's value is its note's name too: `type: Cities` finds `type: "[[Cities]]"` (as Bases writes it).
        low, wanted = ("lower" if value.isascii() else FOLD_FUNCTION), fold(value)
        linked = f"[[{wanted}]]"
        clauses.append(
            f"({low}(CAST(json_extract(frontmatter, ?) AS TEXT)) IN (?, ?) OR EXISTS (SELECT 1 FROM"
            f" json_each(notes.frontmatter, ?) WHERE {low}(CAST(json_each.value AS TEXT)) IN (?, ?)))")
        params += [path, wanted, linked, path, wanted, linked]
    if modified_since_ns is not None:
        clauses.append("mtime_ns >= ?")
        params.append(modified_since_ns)
    if exclude_path:
        clauses.append("path != ?")
        params.append(exclude_path)
    for op, match in [*(("NOT IN", m) for m in exclude_matches), *(("IN", m) for m in require_matches)]:
        clauses.append(f"id {op} (SELECT c.note_id FROM chunks_fts f JOIN chunks c ON c.id = f.rowid"
                       " WHERE chunks_fts MATCH ?)")
        params.append(match)
    sql = "SELECT id FROM notes WHERE " + (" AND ".join(clauses) or "1")
    return {int(r[0]) for r in conn.execute(sql, params)}


def filter_misses(conn: sqlite3.Connection, folder: str | None, tag: str | None) -> list[str]:
    """Which of a filter's folder (lower-case) and tag (lower-case, no #) no indexed note has."""
    missing = []
    if folder is not None and conn.execute(f"SELECT NOT EXISTS(SELECT 1 FROM notes WHERE {_IN_FOLDER})",
                                           _folder_params(folder)).fetchone()[0]:
        missing.append("folder")
    if tag is not None and conn.execute(f"SELECT NOT EXISTS(SELECT 1 FROM tags WHERE {_TAG_OR_CHILD})",
                                        _tag_params(tag)).fetchone()[0]:
        missing.append("tag")
    return missing


# ---- search: lexical candidates and term counts ----------------------------------------------------
def bm25_ranked(conn: sqlite3.Connection, match: str, column_weights: Sequence[float], allowed: set[int] | None,
                limit: int, excluded: Collection[int] = ()) -> list[tuple[int, int, float]]:
    """(section id, note id, bm25) of the sections matching the FTS5 expression, best first (lowest bm25):
    only the `allowed` notes' when given, never the `excluded` notes'. The note ids are looked up for the
    `limit` sections kept only."""
    weights = ", ".join(str(w) for w in column_weights)
    where, params = ["chunks_fts MATCH ?"], [match]
    if allowed is not None:
        where.append("f.rowid IN (SELECT id FROM chunks WHERE note_id IN (SELECT value FROM json_each(?)))")
        params.append(json_ids(allowed))
    if excluded:
        where.append("f.rowid NOT IN (SELECT id FROM chunks WHERE note_id IN (SELECT value FROM json_each(?)))")
        params.append(json_ids(excluded))
    best = (f"SELECT f.rowid AS id, bm25(chunks_fts, {weights}) AS s FROM chunks_fts f WHERE {' AND '.join(where)} "
            "ORDER BY s LIMIT ?")
    sql = f"SELECT t.id, c.note_id, t.s FROM ({best}) t JOIN chunks c ON c.id = t.id ORDER BY t.s"
    return [(int(r[0]), int(r[1]), float(r[2])) for r in conn.execute(sql, [*params, limit])]


def match_count(conn: sqlite3.Connection, match: str, cap: int) -> int:
    """Sections matching the FTS5 expression, counted up to `cap` (a common word costs no more)."""
    return int(conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)", (match, cap)).fetchone()[0])


# ---- search: the rows of what is shown -------------------------------------------------------------
CHUNK_ROW_KEYS = ("id", "note_id", "heading", "body", "context", "start_line", "end_line")


def chunk_rows(conn: sqlite3.Connection, chunk_ids: Collection[int]) -> dict[int, dict[str, Any]]:
    """chunk id -> its row (CHUNK_ROW_KEYS) of the sections that still exist."""
    rows = conn.execute(
        "SELECT id, note_id, heading, body, context, start_line, end_line FROM chunks"
        " WHERE id IN (SELECT value FROM json_each(?))", (json_ids(chunk_ids),))
    return {int(r[0]): dict(zip(CHUNK_ROW_KEYS, r, strict=True)) for r in rows}


def chunk_note_ids(conn: sqlite3.Connection, chunk_ids: Collection[int]) -> list[tuple[Any, ...]]:
    """(chunk id, note id) of the sections that still exist."""
    return conn.execute("SELECT id, note_id FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
                        (json_ids(chunk_ids),)).fetchall()


def notes_named(conn: sqlite3.Connection, name: str) -> set[int]:
    """Ids of the notes whose file name, without `.md`, is `name` in lower case."""
    return {int(r[0]) for r in conn.execute("SELECT id FROM notes WHERE name_lower = ?", (name,))}


def note_rows(conn: sqlite3.Connection, note_ids: Collection[int]) -> dict[int, dict[str, Any]]:
    """note id -> {path, title, aliases, mtime_ns, template} of the notes that still exist."""
    rows = conn.execute("SELECT id, path, title, aliases, mtime_ns, template_variables FROM notes"
                        " WHERE id IN (SELECT value FROM json_each(?))", (json_ids(note_ids),))
    return {int(r[0]): {"path": r[1], "title": r[2], "aliases": json.loads(r[3]), "mtime_ns": r[4],
                        "template": is_template(r[1], bool(r[5]))} for r in rows}


# ---- related notes (a note by its path: reads.note_id_at) ----------------------------------------
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


def first_section_excerpt(conn: sqlite3.Connection, note_id: int) -> tuple[str, str, int] | None:
    """(heading, body, start line) of the note's first section."""
    row = conn.execute("SELECT heading, body, start_line FROM chunks WHERE note_id = ? ORDER BY ordinal LIMIT 1",
                       (note_id,)).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))

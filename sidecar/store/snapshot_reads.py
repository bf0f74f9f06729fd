"""The reads a snapshot (vectors' owners, the link graph, paths, boilerplate) is built and followed
from: one reader connection, plain rows out."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sidecar.store.reads import meta_value, packed_rows

# Every resolved edge between two different notes, once: what the link graph is built from.
EDGES_SQL = "SELECT DISTINCT source_id, target_id FROM links WHERE target_id IS NOT NULL AND target_id != source_id"


def generation(conn: sqlite3.Connection) -> str:
    """The index's generation ("0" before the first commit): moves whenever a run changed what readers see."""
    value = meta_value(conn, "generation")
    return "0" if value is None else value


# ---- the link graph ---------------------------------------------------------------------------
def note_totals(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """(count, sum of ids) of the notes: moves when a note comes or goes."""
    return tuple(conn.execute("SELECT count(*), coalesce(sum(id), 0) FROM notes").fetchone())


def edge_totals(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """(count, a checksum) of the graph's edges: moves when an edge comes or goes."""
    return tuple(conn.execute(
        f"SELECT count(*), coalesce(sum(source_id * 1000003 + target_id), 0) FROM ({EDGES_SQL})").fetchone())


def note_ids(conn: sqlite3.Connection) -> list[int]:
    return [int(r[0]) for r in packed_rows(conn, "SELECT id FROM notes", "id")]


def edges(conn: sqlite3.Connection) -> Iterable[Sequence[Any]]:
    """(source id, target id) of every edge."""
    return packed_rows(conn, EDGES_SQL, "source_id, target_id")


def edges_from(conn: sqlite3.Connection, ids: str) -> Iterable[tuple[Any, ...]]:
    """(source id, target id) of the edges leaving the notes in `ids` (a JSON array)."""
    return conn.execute(f"{EDGES_SQL} AND source_id IN (SELECT value FROM json_each(?))", (ids,))


# ---- chunks, paths, boilerplate -----------------------------------------------------------------
def chunk_owners(conn: sqlite3.Connection) -> dict[Any, Any]:
    """chunk id -> note id, every chunk."""
    return {int(r[0]): int(r[1]) for r in packed_rows(conn, "SELECT id, note_id FROM chunks", "id, note_id")}


def chunks_of_notes(conn: sqlite3.Connection, ids: str) -> list[tuple[Any, ...]]:
    """(chunk id, note id, template) of the chunks of the notes in `ids` (a JSON array)."""
    return conn.execute("SELECT id, note_id, template FROM chunks WHERE note_id IN (SELECT value FROM json_each(?))",
                        (ids,)).fetchall()


def note_paths_of(conn: sqlite3.Connection, ids: str) -> Iterable[tuple[Any, ...]]:
    """(path, id) of the notes in `ids` (a JSON array)."""
    return conn.execute("SELECT path, id FROM notes WHERE id IN (SELECT value FROM json_each(?))", (ids,))


def boilerplate_chunks(conn: sqlite3.Connection, min_notes: int) -> dict[int, str]:
    """chunk id -> template of every chunk whose template at least `min_notes` notes share."""
    return {int(r[0]): str(r[1]) for r in packed_rows(conn,
        "SELECT id, template FROM chunks WHERE template IN (SELECT template FROM chunks WHERE template != ''"
        " GROUP BY template HAVING count(DISTINCT note_id) >= ?)", "id, template", (min_notes,))}


def boilerplate_chunks_among(conn: sqlite3.Connection, templates: str, min_notes: int) -> Iterable[tuple[Any, ...]]:
    """(chunk id, template) of the chunks with one of `templates` (a JSON array) that at least
    `min_notes` notes share."""
    return conn.execute(
        "SELECT id, template FROM chunks WHERE template IN (SELECT template FROM chunks WHERE template IN"
        " (SELECT value FROM json_each(?)) GROUP BY template HAVING count(DISTINCT note_id) >= ?)",
        (templates, min_notes))

"""The history of agent edits: every version a write replaced, and a log of who edited what.

One SQLite file beside the index (never inside the vault), 0600 in a 0700 folder. Versions are
the exact bytes of the file as it was (encoding, line endings and all), so a restore gives back
precisely what was there; that includes any credential the note held, which is why this file is
as private as the index and is never served, only restored. Bounded: versions older than the
retention or beyond the size budget are dropped, oldest first, after each edit.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sidecar.private import private_file

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS edits (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, client TEXT NOT NULL, op TEXT NOT NULL, summary TEXT NOT NULL,
    changes TEXT NOT NULL DEFAULT '[]', undone_by INTEGER);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY, edit_id INTEGER NOT NULL, path TEXT NOT NULL, content BLOB NOT NULL, saved_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS versions_path ON versions(path, id);
"""


@dataclass(frozen=True, slots=True)
class Change:
    """What one edit did to one file: `before` None is a creation, `after` None a deletion. Records
    from before `trashed` and `made_folder` existed lack them: they read as None."""

    before: str | None
    after: str | None
    version: int | None  # the saved previous content (None for a creation)
    hash_after: str | None  # the content hash it left, to tell whether it was changed since
    trashed: str | None = None  # a deletion: where in the vault's .trash/ the file went (undo moves it back)
    made_folder: str | None = None  # the topmost folder the edit created for `after` (undo removes it if empty)

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "version": self.version, "hash_after": self.hash_after,
                "trashed": self.trashed, "made_folder": self.made_folder}


class History:
    def __init__(self, path: Path, max_bytes: int, keep_days: float) -> None:
        private_file(path)
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")  # as the index: durable across crashes of the app
        self.conn.executescript(SCHEMA)
        self.max_bytes = max_bytes
        self.keep_days = keep_days

    def hash_key(self) -> bytes:
        """A secret key for content hashes, kept across restarts: a plain hash of a note would let a
        client that knows all of a note but one short secret in it test guesses offline."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'hash_key'").fetchone()
        if row is not None:
            return bytes(row[0])
        key = secrets.token_bytes(32)
        self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('hash_key', ?)", (key,))
        return bytes(self.conn.execute("SELECT value FROM meta WHERE key = 'hash_key'").fetchone()[0])

    def begin(self, client: str, op: str, summary: str, previous: list[tuple[str, bytes] | None]) -> tuple[
            int, list[int | None]]:
        """Log an edit and save the versions it is about to replace, in one transaction, before any
        file is touched; returns the edit's id and each version's (None where nothing is replaced)."""
        with self.conn:
            edit_id = int(self.conn.execute("INSERT INTO edits(at, client, op, summary) VALUES (?, ?, ?, ?)",
                                            (time.time(), client[:200], op, summary[:500])).lastrowid or 0)
            ids = [None if p is None else int(self.conn.execute(
                "INSERT INTO versions(edit_id, path, content, saved_at) VALUES (?, ?, ?, ?)",
                (edit_id, p[0], p[1], time.time())).lastrowid or 0) for p in previous]
        return edit_id, ids

    def finish(self, edit_id: int, changes: list[Change], undoes: int | None = None) -> None:
        with self.conn:
            self.conn.execute("UPDATE edits SET changes = ? WHERE id = ?",
                              (json.dumps([c.to_json() for c in changes]), edit_id))
            if undoes is not None:
                self.conn.execute("UPDATE edits SET undone_by = ? WHERE id = ?", (edit_id, undoes))
        self.prune()

    def discard(self, edit_id: int) -> None:
        """Forget an edit that changed no file (it failed first): its log entry and the versions it saved."""
        with self.conn:
            self.conn.execute("DELETE FROM versions WHERE edit_id = ?", (edit_id,))
            self.conn.execute("DELETE FROM edits WHERE id = ?", (edit_id,))

    def prune(self) -> None:
        with self.conn:
            self.conn.execute("DELETE FROM versions WHERE saved_at < ?", (time.time() - self.keep_days * 86400,))
            total = 0
            for version_id, size in self.conn.execute(
                    "SELECT id, length(content) FROM versions ORDER BY id DESC").fetchall():
                total += int(size)
                if total > self.max_bytes:
                    self.conn.execute("DELETE FROM versions WHERE id <= ?", (version_id,))
                    break

    def version(self, version_id: int) -> tuple[str, bytes] | None:
        row = self.conn.execute("SELECT path, content FROM versions WHERE id = ?", (version_id,)).fetchone()
        return None if row is None else (str(row[0]), bytes(row[1]))

    def versions(self, path: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        total = int(self.conn.execute("SELECT count(*) FROM versions WHERE path = ?", (path,)).fetchone()[0])
        rows = self.conn.execute(
            "SELECT v.id, v.saved_at, length(v.content), e.id, e.client, e.op FROM versions v JOIN edits e"
            " ON e.id = v.edit_id WHERE v.path = ? ORDER BY v.id DESC LIMIT ? OFFSET ?", (path, limit, offset))
        return [{"version": r[0], "saved_at": r[1], "bytes": r[2], "edit": r[3], "client": r[4], "op": r[5]}
                for r in rows], total

    def edit(self, edit_id: int) -> dict[str, Any] | None:
        rows = self._edits("WHERE id = ?", (edit_id,))
        return rows[0] if rows else None

    def edits(self, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
        total = int(self.conn.execute("SELECT count(*) FROM edits").fetchone()[0])
        return self._edits("ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)), total

    def _edits(self, where: str, args: tuple[object, ...]) -> list[dict[str, Any]]:
        rows = self.conn.execute(f"SELECT id, at, client, op, summary, changes, undone_by FROM edits {where}", args)
        return [{"id": r[0], "at": r[1], "client": r[2], "op": r[3], "summary": r[4], "changes": json.loads(r[5]),
                 "undone_by": r[6]} for r in rows]

    def close(self) -> None:
        self.conn.close()

"""All SQL that writes or reads index rows. One writer at a time (the indexer's connection)."""

from __future__ import annotations

import contextlib
import json
import posixpath
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sidecar.ingest.boilerplate import template_key
from sidecar.ingest.cjk import cjk_tokens
from sidecar.ingest.linkres import PathIndex
from sidecar.ingest.vault import Skip, VaultFile
from sidecar.notes import Chunk, Finding, ParsedNote
from sidecar.store.db import Backend
from sidecar.store.reads import chunk_count, has_notes, meta_value, note_id_at, packed_rows
from sidecar.store.vectors import Matrix, VectorTable


@dataclass(frozen=True, slots=True)
class FileState:
    note_id: int
    size: int
    mtime_ns: int
    content_hash: str
    indexed_at: float = 0.0  # when the content was last read (Unix seconds)


@dataclass(frozen=True, slots=True)
class PendingVector:
    chunk_id: int
    text: str  # what gets embedded: title, heading path, body


def embed_text(title: str, heading: str, body: str) -> str:
    return f"{title}\n{heading}\n{body}" if heading else f"{title}\n{body}"


@dataclass(slots=True)
class Transaction:
    changed: bool = True  # False: bookkeeping only, readers keep their snapshot


class Store:
    def __init__(self, conn: sqlite3.Connection, backend: Backend) -> None:
        self.conn = conn
        self.backend = backend
        self.vectors = VectorTable(conn, backend)
        self._paths: tuple[dict[str, int], PathIndex] | None = None
        self.paths_version = 0  # moves whenever the set of paths changes (links may resolve differently)

    # ---- transactions -------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """BEGIN IMMEDIATE ... COMMIT; ROLLBACK when the block (or the commit) raises, so a failed
        write never leaves the one writer connection inside a transaction that blocks every later run.
        Readers cache vectors and the graph per generation: a commit that changed what they read
        moves it on; bookkeeping alone (set `changed = False`) does not make every reader reload."""
        self.conn.execute("BEGIN IMMEDIATE")
        tx = Transaction()
        try:
            yield tx
            if tx.changed:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key)"
                    " DO UPDATE SET value = CAST(value AS INTEGER) + 1")
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def checkpoint(self) -> None:
        """Fold the WAL back into the database after a run, so the index is one file of honest size."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()  # busy readers: it just returns

    def merge_fts_segments(self) -> None:
        """Merge the keyword index into one segment. Each commit adds an FTS5 segment and automerge
        leaves many after a big run (18 after indexing 50k sections): every query term is looked up
        in each of them, about 5% of a hybrid search's CPU."""
        self.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")

    @contextlib.contextmanager
    def secure_deletes(self) -> Iterator[None]:
        """Deletes inside the block leave zeros, in the WAL too (text the old redaction let through)."""
        self.conn.execute("PRAGMA secure_delete=ON")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA secure_delete=OFF")

    def purge_deleted_text(self) -> None:
        """FTS5 keeps deleted tokens in old segments until they are merged ('optimize'); SQLite keeps
        deleted rows in free pages: VACUUM rewrites the file from live rows only."""
        self.merge_fts_segments()
        self.conn.execute("VACUUM")

    # ---- meta ---------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        return meta_value(self.conn, key)

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def delete_meta(self, key: str) -> None:
        self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    # ---- counts -------------------------------------------------------------------------
    def has_notes(self) -> bool:
        return has_notes(self.conn)

    def chunk_count(self) -> int:
        return chunk_count(self.conn)

    def note_ids(self, paths: list[str]) -> list[int]:
        ids: list[int] = []
        for start in range(0, len(paths), 500):  # under SQLite's limit on bound parameters
            part = paths[start:start + 500]
            rows = self.conn.execute(f"SELECT id FROM notes WHERE path IN ({','.join('?' * len(part))})", part)
            ids += [int(r[0]) for r in rows]
        return ids

    # ---- notes --------------------------------------------------------------------------
    def file_states(self, paths: list[str] | None = None) -> dict[str, FileState]:
        """Every note's state, or only these paths' (a write through the sidecar: 1 ms, not 60)."""
        columns = "path, id, size, mtime_ns, content_hash, indexed_at"
        rows: Iterable[Sequence[Any]]
        if paths is None:
            rows = packed_rows(self.conn, f"SELECT {columns} FROM notes", columns)
        else:
            rows = self.conn.execute(f"SELECT {columns} FROM notes WHERE path IN ({','.join('?' * len(paths))})", paths)
        return {r[0]: FileState(r[1], r[2], r[3], r[4], r[5]) for r in rows}

    def touch(self, note_id: int, file: VaultFile) -> None:
        self.conn.execute("UPDATE notes SET size = ?, mtime_ns = ?, indexed_at = ? WHERE id = ?",
                          (file.size, file.mtime_ns, time.time(), note_id))

    def rename(self, note_id: int, new_path: str, file: VaultFile) -> None:
        self.conn.execute(
            "UPDATE notes SET path = ?, path_lower = ?, name_lower = ?, size = ?, mtime_ns = ? WHERE id = ?",
            (new_path, new_path.lower(), _name_lower(new_path), file.size, file.mtime_ns, note_id),
        )
        self._paths_changed()

    def delete_note(self, note_id: int) -> None:
        chunk_ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))]
        self.vectors.delete(chunk_ids)
        self.conn.execute("DELETE FROM notes WHERE id = ?", (note_id,))  # cascades; FTS via trigger
        self.conn.execute("UPDATE links SET target_id = NULL WHERE target_id = ?", (note_id,))
        self._paths_changed()

    def upsert_note(
        self, file: VaultFile, content_hash: str, note: ParsedNote, chunks: Sequence[Chunk],
        findings: Sequence[Finding], lines: int, chars: int, reuse_chunks: bool = True,
    ) -> list[PendingVector]:
        """Write one note; returns the chunks that need a vector (new content, or all of them on a rebuild)."""
        note_id = self._write_note_row(file, content_hash, note, lines, chars)
        self._replace_children(note_id, note, findings)
        return self._sync_chunks(note_id, note.title, chunks, reuse_chunks)

    def _write_note_row(self, file: VaultFile, content_hash: str, note: ParsedNote, lines: int, chars: int) -> int:
        values = (
            file.path, file.path.lower(), _name_lower(file.path), note.title,
            json.dumps(note.frontmatter, ensure_ascii=False, default=str), json.dumps(list(note.aliases), ensure_ascii=False),
            json.dumps([[h.level, h.text, h.line] for h in note.headings], ensure_ascii=False),
            json.dumps(list(note.block_ids)), json.dumps(list(note.warnings), ensure_ascii=False),
            file.size, file.mtime_ns, content_hash, chars, lines, time.time(), int(note.template_variables),
        )
        note_id = note_id_at(self.conn, file.path)
        if note_id is None:
            cur = self.conn.execute(
                "INSERT INTO notes(path, path_lower, name_lower, title, frontmatter, aliases, headings, block_ids,"
                " warnings, size, mtime_ns, content_hash, chars, lines, indexed_at, template_variables)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
            self._paths_changed()
            return int(cur.lastrowid or 0)
        self.conn.execute(
            "UPDATE notes SET path=?, path_lower=?, name_lower=?, title=?, frontmatter=?, aliases=?, headings=?,"
            " block_ids=?, warnings=?, size=?, mtime_ns=?, content_hash=?, chars=?, lines=?, indexed_at=?,"
            " template_variables=? WHERE id = ?", (*values, note_id))
        return note_id

    def _replace_children(self, note_id: int, note: ParsedNote, findings: Sequence[Finding]) -> None:
        for table, column in (("links", "source_id"), ("tags", "note_id"), ("findings", "note_id")):
            self.conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (note_id,))
        self.conn.executemany(
            "INSERT INTO links(source_id, target_raw, anchor, display, kind, line) VALUES (?,?,?,?,?,?)",
            [(note_id, ln.target, ln.anchor, ln.display, ln.kind, ln.line) for ln in note.links],
        )
        self.conn.executemany(
            "INSERT INTO tags(note_id, tag, tag_lower) VALUES (?,?,?)", [(note_id, t, t.lower()) for t in note.tags]
        )
        self.conn.executemany(
            "INSERT INTO findings(note_id, kind, line) VALUES (?,?,?)", [(note_id, f.kind, f.line) for f in findings]
        )

    def _sync_chunks(self, note_id: int, title: str, chunks: Sequence[Chunk], reuse: bool = True) -> list[PendingVector]:
        """Keep rows (and their vectors) whose content hash is unchanged; replace the rest (all, when not reuse)."""
        old: dict[str, list[int]] = {}
        for chunk_id, chunk_hash in self.conn.execute("SELECT id, hash FROM chunks WHERE note_id = ?", (note_id,)):
            old.setdefault(chunk_hash if reuse else f"stale:{chunk_id}", []).append(chunk_id)
        pending: list[PendingVector] = []
        for chunk in chunks:
            heading = " > ".join(chunk.heading_path)
            kept = old.get(chunk.content_hash)
            if kept:
                chunk_id = kept.pop()
                self.conn.execute(
                    "UPDATE chunks SET ordinal = ?, start_line = ?, end_line = ? WHERE id = ?",
                    (chunk.ordinal, chunk.start_line, chunk.end_line, chunk_id))
                continue
            cur = self.conn.execute(
                "INSERT INTO chunks(note_id, ordinal, heading, body, context, cjk, start_line, end_line, hash, template)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                (note_id, chunk.ordinal, heading, chunk.text, chunk.context,
                 cjk_tokens(f"{chunk.context}\n{heading}\n{chunk.text}"),
                 chunk.start_line, chunk.end_line, chunk.content_hash, template_key(heading, chunk.text)))
            pending.append(PendingVector(int(cur.lastrowid or 0), embed_text(title, heading, chunk.text)))
        stale = [i for ids in old.values() for i in ids]
        self.vectors.delete(stale)
        self.conn.executemany("DELETE FROM chunks WHERE id = ?", ((i,) for i in stale))
        return pending

    # ---- vectors ------------------------------------------------------------------------
    def put_vectors(self, ids: Sequence[int], matrix: Matrix) -> None:
        if ids:
            self.vectors.create(matrix.shape[1])
            self.vectors.put(ids, matrix)

    def _without_vector(self) -> str:
        """SQL for chunk ids that have no vector (an anti-join; no row leaves SQLite otherwise)."""
        if not self.vectors.exists():
            return "SELECT id FROM chunks"
        return f"SELECT id FROM chunks WHERE id NOT IN (SELECT rowid FROM {self.vectors.table})"

    def chunks_missing_vectors(self, limit: int | None = None) -> list[PendingVector]:
        rows = self.conn.execute(
            "SELECT c.id, n.title, c.heading, c.body FROM chunks c JOIN notes n ON n.id = c.note_id"
            f" WHERE c.id IN ({self._without_vector()}) ORDER BY c.id LIMIT ?", (limit or -1,))
        return [PendingVector(r[0], embed_text(r[1], r[2], r[3])) for r in rows]

    def count_missing_vectors(self) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM ({self._without_vector()})").fetchone()[0])

    # ---- skips and attachments ------------------------------------------------------------
    def replace_skipped(self, skipped: Iterable[Skip]) -> None:
        self.conn.execute("DELETE FROM skipped")
        self.conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)",
                              ((s.path, s.reason) for s in skipped))

    def update_skipped(self, paths: Sequence[str], skipped: Iterable[Skip]) -> None:
        """The skip list for just these paths (an event-driven run): the others' entries stay."""
        self.conn.executemany("DELETE FROM skipped WHERE path = ?", ((p,) for p in paths))
        self.conn.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)",
                              ((s.path, s.reason) for s in skipped))

    def replace_attachments(self, paths: Iterable[str]) -> bool:
        """Store the vault's non-note files; True when the set changed (links may resolve differently)."""
        wanted = set(paths)
        if wanted == {str(r[0]) for r in self.conn.execute("SELECT path FROM attachments")}:
            return False
        self.conn.execute("DELETE FROM attachments")
        self.conn.executemany("INSERT INTO attachments(path, path_lower) VALUES (?, ?)", ((p, p.lower()) for p in wanted))
        self._paths_changed()
        return True

    # ---- links --------------------------------------------------------------------------
    def _paths_changed(self) -> None:
        """The set of paths changed: links resolve against the new one."""
        self._paths = None
        self.paths_version += 1

    def _path_index(self, fresh: bool) -> tuple[dict[str, int], PathIndex]:
        """Paths -> ids and the resolver over them; rebuilt when files were added, removed or renamed
        (every such write drops it, and `fresh` asks for a new one), reused while only note contents
        change (an edit resolves its own links in ms)."""
        if fresh or self._paths is None:
            notes = {str(r[0]): int(r[1]) for r in packed_rows(self.conn, "SELECT path, id FROM notes", "path, id")}
            attachments = [str(r[0]) for r in packed_rows(self.conn, "SELECT path FROM attachments", "path")]
            self._paths = (notes, PathIndex([*notes, *attachments]))
        return self._paths

    def resolve_links(self, only_sources: Iterable[int] | None = None, skip_sources: frozenset[int] = frozenset(),
                      names: frozenset[str] | None = None) -> int:
        """(Re)resolve stored links against the current set of files; returns links updated. Links of
        `skip_sources` are left as they are (resolved against this very set of paths already); with
        `names`, only links whose target has one of these file names (lower case, no .md): the only
        ones a few notes appearing or vanishing can change."""
        ids = None if only_sources is None else list(only_sources)
        if ids == []:
            return 0  # nothing changed: no need to build the path index
        notes, index = self._path_index(fresh=ids is None)
        sql = ("SELECT l.id, l.target_raw, l.kind, n.path, n.id FROM links l JOIN notes n ON n.id = l.source_id")
        if ids is not None:
            sql += f" WHERE l.source_id IN ({','.join('?' * len(ids))})"
            rows = self.conn.execute(sql, ids).fetchall()
        else:
            rows = self.conn.execute(sql).fetchall()
        updates = []
        for link_id, raw, kind, source, source_id in rows:
            if source_id in skip_sources or (names is not None and _name_lower(raw) not in names):
                continue
            res = index.resolve(raw, source, kind)
            updates.append((res.path, notes.get(res.path) if res.path else None, int(res.ambiguous), link_id))
        self.conn.executemany("UPDATE links SET target_path = ?, target_id = ?, ambiguous = ? WHERE id = ?", updates)
        return len(updates)


def _name_lower(path: str) -> str:
    name = posixpath.basename(path).lower()
    return name[:-3] if name.endswith(".md") else name

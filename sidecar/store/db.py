"""Open the index database: pick a SQLite driver that can load sqlite-vec, apply pragmas and the schema.

Order of preference (first that works wins, and `backend` says which):
1. sqlean.py (bundles a recent SQLite with extension loading on Linux, macOS, Windows)
2. the standard library sqlite3, when it was built with extension loading
3. apsw (through sidecar/store/apsw_compat.py), which can load extensions where sqlite3 cannot
4. any of them without the extension: vectors live in a BLOB table, searched with numpy
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sqlite3
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sidecar.ingest.fold import fold
from sidecar.private import private_file

log = logging.getLogger(__name__)

SCHEMA_VERSION = 11  # 2: the cjk column holds character bigrams; 3: chunks.template; 4: emoji in the cjk column;
# 5: the folded forms of words unicode61 does not fold in the cjk column; 6: a bare template variable in
# frontmatter (`created: {{date}}`) is read as text, properties are read by YAML 1.2's core schema, and a
# note's properties are a chunk when they say more than its body; 7: notes.template_variables; 8: Arabic words
# without their article in the cjk column; 9: a variable in a sentence makes no template (an older index is
# rebuilt); 10: Thai, Lao, Myanmar and Khmer runs as character triples in the cjk column; 11: Persian yeh and
# keheh folded to Arabic's, and words joined by a zero-width non-joiner written joined, in the cjk column
BUSY_TIMEOUT_MS = 5000  # the single writer commits in small transactions; 5 s covers a slow disk

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    path_lower TEXT NOT NULL,
    name_lower TEXT NOT NULL,
    title TEXT NOT NULL,
    frontmatter TEXT NOT NULL,
    aliases TEXT NOT NULL,
    headings TEXT NOT NULL,
    block_ids TEXT NOT NULL,
    warnings TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    chars INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    indexed_at REAL NOT NULL,
    template_variables INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY,
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    heading TEXT NOT NULL,
    body TEXT NOT NULL,
    context TEXT NOT NULL,
    cjk TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,
    template TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS notes_name ON notes(name_lower);
CREATE INDEX IF NOT EXISTS chunks_note ON chunks(note_id, ordinal);
CREATE INDEX IF NOT EXISTS chunks_template ON chunks(template, note_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, heading, context, cjk,
    content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, body, heading, context, cjk)
    VALUES (new.id, new.body, new.heading, new.context, new.cjk);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, body, heading, context, cjk)
    VALUES ('delete', old.id, old.body, old.heading, old.context, old.cjk);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE OF body, heading, context, cjk ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, body, heading, context, cjk)
    VALUES ('delete', old.id, old.body, old.heading, old.context, old.cjk);
    INSERT INTO chunks_fts(rowid, body, heading, context, cjk)
    VALUES (new.id, new.body, new.heading, new.context, new.cjk);
END;
CREATE TABLE IF NOT EXISTS links(
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    target_raw TEXT NOT NULL,
    anchor TEXT,
    display TEXT,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL,
    target_path TEXT,
    target_id INTEGER,
    ambiguous INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS links_source ON links(source_id);
CREATE INDEX IF NOT EXISTS links_target ON links(target_id);
CREATE TABLE IF NOT EXISTS tags(
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    tag_lower TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tags_note ON tags(note_id);
CREATE INDEX IF NOT EXISTS tags_lower ON tags(tag_lower);
CREATE TABLE IF NOT EXISTS findings(
    note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    line INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS findings_note ON findings(note_id);
CREATE TABLE IF NOT EXISTS skipped(path TEXT PRIMARY KEY, reason TEXT NOT NULL, size INTEGER, mtime_ns INTEGER);
CREATE TABLE IF NOT EXISTS attachments(path TEXT PRIMARY KEY, path_lower TEXT NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class Backend:
    driver: str  # "sqlean" or "sqlite3"
    sqlite_version: str
    vec_version: str | None  # None: sqlite-vec not loaded, vectors as BLOBs searched by numpy

    @property
    def description(self) -> str:
        vec = f"sqlite-vec {self.vec_version}" if self.vec_version else "no vector extension (numpy over BLOBs)"
        return f"{self.driver} (SQLite {self.sqlite_version}) + {vec}"


DRIVERS = {"sqlean": "sqlean", "sqlite3": "sqlite3", "apsw": "sidecar.store.apsw_compat"}


def _driver_modules(prefer: str | None) -> list[tuple[str, ModuleType]]:
    names = list(DRIVERS)
    if prefer:
        if prefer not in DRIVERS:
            raise ValueError(f"unknown SQLite driver {prefer!r}: choose one of {', '.join(DRIVERS)}")
        names = [prefer]  # an explicit choice is not silently replaced by another driver
    found: list[tuple[str, ModuleType]] = []
    for name in names:
        try:
            found.append((name, importlib.import_module(DRIVERS[name])))
        except ImportError:
            continue
    return found


# sqlite-vec keeps the SQLite API table of the library that loaded it in a process-wide global: loaded
# into a second SQLite copy (apsw and sqlean each bundle one), it would call the wrong library and crash.
# So one process binds it to one driver; another driver in the same process runs without it.
_vec_driver: str | None = None


def _load_vec(conn: Any, driver: str) -> str | None:
    global _vec_driver  # noqa: PLW0603  (a fact about the whole process, by nature global)
    if not hasattr(conn, "enable_load_extension"):
        return None
    if _vec_driver not in (None, driver):
        log.warning("sqlite-vec is already bound to %s in this process; %s runs without it", _vec_driver, driver)
        return None
    try:
        import sqlite_vec  # noqa: PLC0415  (optional: absent on platforms without a wheel)

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        _vec_driver = driver
        return str(conn.execute("SELECT vec_version()").fetchone()[0])
    except Exception as exc:  # any failure means "no extension", never a crash
        log.debug("sqlite-vec not loaded: %s", exc)
        return None


def connect(path: Path | str, *, prefer: str | None = None, vectors: bool = True,
            readonly: bool = False) -> tuple[sqlite3.Connection, Backend]:
    """Open (and create) the index; `vectors=False` forces the no-extension fallback (tests, doctor).

    The file is opened by one driver only: which one loads sqlite-vec is asked of an in-memory database
    first, because opening and closing the file with the drivers that lose would corrupt it (_OpenFiles)."""
    drivers = _driver_modules(prefer)
    if vectors and len(drivers) > 1:
        drivers = _vec_capable_first(drivers)
    last_error: Exception | None = None
    for name, module in drivers:
        try:
            conn = _open(name, module, path, readonly)
        except Exception as exc:
            last_error = exc
            continue
        backend = Backend(name, str(module.sqlite_version), _load_vec(conn, name) if vectors else None)
        try:
            if not readonly:
                _apply_schema(conn)
        except Exception:
            conn.close()  # a refused index leaves no connection behind
            raise
        return conn, backend
    raise RuntimeError(f"cannot open the index at {path}: {last_error}")


def _vec_capable_first(drivers: list[tuple[str, ModuleType]]) -> list[tuple[str, ModuleType]]:
    capable = next((d for d in drivers if d[0] == _vec_driver), None) if _vec_driver else \
        next((d for d in drivers if _loads_vec(*d)), None)
    return drivers if capable is None else [capable, *(d for d in drivers if d is not capable)]


_vec_probes: dict[str, bool] = {}  # driver -> it loads sqlite-vec: asked once a process (a failure too)


def _loads_vec(name: str, module: ModuleType) -> bool:
    if name not in _vec_probes:
        _vec_probes[name] = _probe_vec(name, module)
    return _vec_probes[name]


def _probe_vec(name: str, module: ModuleType) -> bool:
    try:
        conn = module.connect(":memory:", check_same_thread=False)
    except Exception:
        return False
    try:
        return _load_vec(conn, name) is not None
    finally:
        conn.close()


class _OpenFiles:
    """Which SQLite library has each index file open in this process: one at a time, never two.

    SQLite's POSIX locks belong to the process, and each library (sqlean, the standard library and apsw
    bundle their own) works around that only for its own connections. When a second library closes its
    descriptor, the kernel drops the first one's locks; finding no connection of its own, the closing
    library then checkpoints and deletes the -wal and -shm files under the first one's open connections,
    and later connections read pages that are not there ("database disk image is malformed"). See
    https://www.sqlite.org/howtocorrupt.html section 2.2.1. Several connections of one library are safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[int, int], tuple[str, weakref.WeakSet[Any]]] = {}

    def connect(self, name: str, module: ModuleType, path: Path | str, target: str, uri: bool) -> Any:
        with self._lock:  # the check and the open are one step: another thread may open the same file
            holder = self._holder(path)
            if holder not in (None, name):
                raise RuntimeError(f"{path} is already open in this process with {holder}: opening it with {name} "
                                   "as well would corrupt it (SQLite's file locks are per process); use one driver")
            conn = module.connect(target, uri=uri, check_same_thread=False, isolation_level=None,
                                  timeout=BUSY_TIMEOUT_MS / 1000, factory=_referable(module))
            key = _file_key(path)
            if key is not None:
                if holder is None:
                    self._open[key] = (name, weakref.WeakSet())
                self._open[key][1].add(conn)
            return conn

    def _holder(self, path: Path | str) -> str | None:
        key = _file_key(path)
        if key not in self._open:
            return None
        name, conns = self._open[key]
        if any(_is_open(c) for c in conns):
            return name
        del self._open[key]  # every connection was closed or collected: any driver may open it now
        return None


def _file_key(path: Path | str) -> tuple[int, int] | None:
    """The file itself (device, inode), whatever the spelling of its path; None: not a file (yet)."""
    if str(path) == ":memory:":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _is_open(conn: Any) -> bool:
    try:
        conn.in_transaction  # noqa: B018  (raises once the connection is closed)
    except Exception:
        return False
    return True


@functools.cache
def _referable(module: ModuleType) -> type:
    """The driver's own Connection class, subclassed: sqlite3's takes no weak references, a subclass does."""
    return type("Connection", (module.Connection,), {})


_open_files = _OpenFiles()


FOLD_FUNCTION = "sidecar_fold"  # SQL: fold.py's form of a text value (NULL and other types as they are)


def _fold_value(value: object) -> object:
    return fold(value) if isinstance(value, str) else value


def _open(name: str, module: ModuleType, path: Path | str, readonly: bool) -> Any:
    if not readonly and str(path) != ":memory:":
        private_file(Path(path))  # made 0600 before SQLite creates it 0644; the WAL and SHM copy its mode
    target = f"file:{path}?mode=ro" if readonly else str(path)
    conn = _open_files.connect(name, module, path, target, uri=readonly)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        # SQLite's lower() folds ASCII only: a filter on "Übersetzt" compares the whole value folded.
        conn.create_function(FOLD_FUNCTION, 1, _fold_value, deterministic=True)
        if not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across app crashes
    except Exception:
        conn.close()
        raise
    return conn


def _apply_schema(conn: Any) -> None:
    row = conn.execute("PRAGMA user_version").fetchone()
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"this index was written by a newer Vault Sidecar (schema {version} > {SCHEMA_VERSION}); "
            "upgrade, or delete the index folder to rebuild it"
        )
    drop = _drop_everything(conn) if 0 < version < SCHEMA_VERSION else ""
    # One script, one transaction: a crash mid-way leaves the previous schema intact.
    conn.executescript(f"BEGIN IMMEDIATE;\n{drop}{SCHEMA}\nPRAGMA user_version={SCHEMA_VERSION};\nCOMMIT;")
    if drop:
        _forget_dropped(conn)


def _forget_dropped(conn: Any) -> None:
    """The dropped tables' pages are free but still hold the old text, redacted by older rules (the WAL
    holds them too): the file is rewritten from the empty schema and the WAL emptied, so nothing that
    newer rules would have redacted outlives the rebuild. A reader holding the file open only delays it."""
    try:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except Exception as exc:  # busy or locked: the next rules change purges as usual
        log.warning("could not compact the index after the rebuild (%s): its free pages keep old text "
                    "until the next compaction", exc)


def _drop_everything(conn: Any) -> str:
    """An index of an older schema is a cache of the vault: it is rebuilt, never half-migrated.
    Triggers go first, then virtual tables (they drop their own shadow tables), then the rest."""
    log.warning("the index was written with an older schema: cleared, and rebuilt from the vault by the next "
                "index run (`sidecar index`, or `sidecar serve`)")
    triggers = [str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    rows = conn.execute("SELECT name, sql LIKE 'CREATE VIRTUAL TABLE%' FROM sqlite_master"
                        " WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
    tables = [str(name) for name, _virtual in sorted(rows, key=lambda r: not r[1])]
    return "".join([f'DROP TRIGGER IF EXISTS "{name}";\n' for name in triggers] +
                   [f'DROP TABLE IF EXISTS "{name}";\n' for name in tables])

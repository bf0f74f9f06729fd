"""apsw behind the small part of the sqlite3 interface the index uses.

The third driver in db.py's fallback chain: where neither sqlean.py nor the standard library
can load extensions (macOS system Python, for one), apsw usually can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import apsw

sqlite_version: str = apsw.sqlite_lib_version()


class Cursor:
    def __init__(self, conn: apsw.Connection, cursor: apsw.Cursor) -> None:
        self._conn = conn
        self._cursor = cursor

    def fetchone(self) -> Any:
        return next(self._cursor, None)

    def fetchall(self) -> list[Any]:
        return list(self._cursor)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    @property
    def lastrowid(self) -> int:
        return int(self._conn.last_insert_rowid())


class Connection:
    def __init__(self, path: str, uri: bool = False, timeout: float = 5.0) -> None:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | (apsw.SQLITE_OPEN_URI if uri else 0)
        self._conn = apsw.Connection(path, flags=flags)
        self._conn.set_busy_timeout(int(timeout * 1000))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return Cursor(self._conn, self._conn.execute(sql, tuple(params)))

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> Cursor:
        rows = [tuple(p) for p in seq]
        if not rows:
            return Cursor(self._conn, self._conn.execute("SELECT 1 WHERE 0"))
        return Cursor(self._conn, self._conn.executemany(sql, rows))

    def executescript(self, sql: str) -> None:
        self._conn.execute(sql)  # apsw runs every statement of a string

    @property
    def in_transaction(self) -> bool:
        return not self._conn.get_autocommit()

    def enable_load_extension(self, enabled: bool) -> None:
        self._conn.enable_load_extension(enabled)

    def load_extension(self, path: str) -> None:
        self._conn.load_extension(path)

    def create_function(self, name: str, narg: int, func: Callable[..., Any], *, deterministic: bool = False) -> None:
        self._conn.create_scalar_function(name, func, narg, deterministic=deterministic)

    def close(self) -> None:
        self._conn.close()


def connect(path: str, uri: bool = False, check_same_thread: bool = False, isolation_level: None = None,
            timeout: float = 5.0, factory: type[Connection] = Connection) -> Connection:
    del check_same_thread, isolation_level  # apsw connections are serialized and always autocommit
    return factory(path, uri, timeout)

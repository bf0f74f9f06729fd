import sqlite3

import apsw
import sqlean

from sidecar.errors import Busy, busy_from


def test_sqlite_busy_from_any_driver_is_the_retryable_busy_error() -> None:
    for exc in (sqlite3.OperationalError("database is locked"), sqlean.OperationalError("database is busy"),
                sqlite3.OperationalError("locking protocol"), apsw.ProtocolError("ProtocolError")):
        busy = busy_from(exc)
        assert isinstance(busy, Busy) and busy.code == -32011 and busy.data["retryable"] is True


def test_other_errors_are_not_busy() -> None:
    assert busy_from(sqlite3.OperationalError("no such table: notes")) is None
    assert busy_from(ValueError("locked")) is None

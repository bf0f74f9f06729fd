"""The driver fallback chain: each driver opens the same schema, and says what it can do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sidecar.app import VaultIndex
from sidecar.config import Settings
from sidecar.db import SCHEMA_VERSION, connect
from tests.conftest import DEMO_VAULT


def test_default_chain_loads_sqlite_vec(tmp_path: Path) -> None:
    conn, backend = connect(tmp_path / "a.db")
    assert backend.driver == "sqlean" and backend.vec_version
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_stdlib_sqlite3_reports_what_it_cannot_do(tmp_path: Path) -> None:
    _conn, backend = connect(tmp_path / "b.db", prefer="sqlite3")
    assert backend.driver == "sqlite3"
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert backend.vec_version
    else:  # this machine's Python: no extension loading, so vectors go to the BLOB table
        assert backend.vec_version is None and "numpy over BLOBs" in backend.description


def test_unknown_driver_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown SQLite driver"):
        connect(tmp_path / "c.db", prefer="postgres")


@pytest.mark.parametrize("driver", ["apsw", "sqlite3"])
def test_every_driver_indexes_and_searches_the_demo_vault(tmp_path: Path, driver: str) -> None:
    index = VaultIndex(Settings(vault=DEMO_VAULT, index_dir=tmp_path / "idx", sqlite_driver=driver))
    assert index.backend.driver == driver
    index.index()
    status = index.status()
    assert status["complete"] is True and driver in str(status["backend"])
    res = index.search("how do I keep bread dough rising")
    assert res["vectors_available"] is True
    assert res["results"][0]["path"].startswith("Cooking/")
    assert index.search("SQLITE_BUSY", mode="lexical")["results"]

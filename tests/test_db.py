"""The driver fallback chain: each driver opens the same schema, and says what it can do.

Each driver runs in its own process: sqlite-vec may be bound to one SQLite library per process
(db.py refuses a second one, which would crash), exactly as in production."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlean

from sidecar.store.db import SCHEMA_VERSION, connect
from sidecar.store.reads import packed_rows
from tests.conftest import DEMO_VAULT

PROBE = """
import json, sys
from pathlib import Path
from sidecar.core import VaultIndex
from sidecar.config import Settings
index = VaultIndex(Settings(vault=Path(sys.argv[1]), index_dir=Path(sys.argv[2]), sqlite_driver=sys.argv[3]))
index.index()
semantic = index.search("how do I keep bread dough rising")
print(json.dumps({"backend": index.backend.description, "driver": index.backend.driver,
                  "vec": index.backend.vec_version, "status": index.status(),
                  "semantic_top": semantic["results"][0]["path"], "vectors": semantic["vectors_available"],
                  "lexical": len(index.search("SQLITE_BUSY", mode="lexical")["results"])}, default=str))
"""


def probe(driver: str, tmp_path: Path) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(DEMO_VAULT), str(tmp_path / driver), driver],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_default_chain_loads_sqlite_vec(tmp_path: Path) -> None:
    conn, backend = connect(tmp_path / "a.db")
    assert backend.driver == "sqlean" and backend.vec_version
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_unknown_driver_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown SQLite driver"):
        connect(tmp_path / "c.db", prefer="postgres")


@pytest.mark.parametrize("driver", ["apsw", "sqlite3", "sqlean"])
def test_every_driver_indexes_and_searches_the_demo_vault(tmp_path: Path, driver: str) -> None:
    result = probe(driver, tmp_path)
    status = result["status"]
    assert result["driver"] == driver and isinstance(status, dict)
    assert status["complete"] is True and driver in str(status["backend"])
    assert result["vectors"] is True and str(result["semantic_top"]).startswith("Cooking/")
    assert int(str(result["lexical"])) > 0
    if driver == "sqlite3" and not result["vec"]:
        # this machine's Python has no extension loading: vectors live in the BLOB table
        assert "numpy over BLOBs" in str(result["backend"])
    if driver in ("apsw", "sqlean"):
        assert result["vec"]  # both can load sqlite-vec


def test_a_second_sqlite_library_in_one_process_runs_without_the_extension(tmp_path: Path) -> None:
    script = (
        "from sidecar.store.db import connect\n"
        f"a = connect({str(tmp_path / 'a.db')!r}, prefer='sqlean')[1]\n"
        f"b = connect({str(tmp_path / 'b.db')!r}, prefer='apsw')[1]\n"
        "print(bool(a.vec_version), bool(b.vec_version))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


def test_an_index_file_is_open_in_one_sqlite_library_at_a_time(tmp_path: Path) -> None:
    # Closing a second library's connection would drop this one's locks and delete its WAL and SHM.
    path = tmp_path / "one.db"
    first, backend = connect(path)
    first.execute("CREATE TABLE t(x)")
    first.execute("INSERT INTO t VALUES (1)")
    other = "sqlite3" if backend.driver != "sqlite3" else "sqlean"
    with pytest.raises(RuntimeError, match=f"already open in this process with {backend.driver}"):
        connect(path, prefer=other)
    same, again = connect(path)  # no preference: the library that holds the file
    assert again.driver == backend.driver and same.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert {p.name for p in tmp_path.iterdir()} == {"one.db", "one.db-wal", "one.db-shm"}
    first.close()
    same.close()
    later, after = connect(path, prefer=other)  # once closed, another library may open it
    assert after.driver == other and later.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    later.close()


def test_without_sqlite_vec_the_chain_opens_the_file_with_one_library(tmp_path: Path) -> None:
    # Where no driver loads sqlite-vec, the chain used to open the file with each driver in turn and
    # close the losers: that deleted the SHM under the winner, and the next connection failed.
    script = (
        "import sys\n"
        "sys.modules['sqlite_vec'] = None  # a platform without a sqlite-vec wheel\n"
        "from pathlib import Path\n"
        "from sidecar.store.db import connect\n"
        "path = Path(sys.argv[1])\n"
        "connect(path)[0].close()\n"
        "writer, backend = connect(path)\n"
        "writer.execute('CREATE TABLE t(x)')\n"
        "writer.executemany('INSERT INTO t VALUES (?)', [(i,) for i in range(100)])\n"
        "reader = connect(path)[0]\n"
        "print(backend.vec_version, sorted(p.name for p in path.parent.iterdir()),\n"
        "      reader.execute('SELECT count(*) FROM t').fetchone()[0], reader.execute('PRAGMA integrity_check').fetchone()[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "i.db")], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["None", "['i.db',", "'i.db-shm',", "'i.db-wal']", "100", "ok"]


@pytest.mark.parametrize("driver", [sqlite3, sqlean], ids=["sqlite3", "sqlean"])
def test_packed_rows_are_the_rows_a_plain_select_gives(driver: Any) -> None:
    conn = driver.connect(":memory:")
    conn.execute("CREATE TABLE t (id INTEGER, path TEXT, mtime_ns INTEGER, seen REAL, note TEXT)")
    rows = [(1, 'Notes/"quoted" \\ path.md', 1_796_158_659_097_929_500, 1796158659.5, None),
            (2, "日本語/ノート.md", -1, 0.25, "line one\nline two\ttab \u2028 end \x00 nul"),
            (3, "", 9_223_372_036_854_775_807, -3.0, "emoji 🙂")]
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)", rows)
    sql = "SELECT id, path, mtime_ns, seen, note FROM t WHERE id >= ? ORDER BY id"
    assert [tuple(r) for r in packed_rows(conn, sql, "id, path, mtime_ns, seen, note", (1,))] == rows
    assert packed_rows(conn, "SELECT id FROM t WHERE id > 9", "id") == []
    # REAL comes back to 15 significant digits: indexed_at (Unix seconds) keeps about 10 us
    conn.execute("INSERT INTO t VALUES (4, 'x', 0, 1796158659.0979295, '')")
    (seen,) = packed_rows(conn, "SELECT seen FROM t WHERE id = 4", "seen")[0]
    assert seen == pytest.approx(1796158659.0979295, abs=1e-4)

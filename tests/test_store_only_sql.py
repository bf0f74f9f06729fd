"""Every SQL statement lives in sidecar/store/: the layers above ask it questions by name
(store/reads.py and its siblings), so a schema change is one package's business."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIDECAR = ROOT / "sidecar"
STORE = SIDECAR / "store"
RUNS_SQL = frozenset({"execute", "executemany", "executescript"})
SQL_START = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|PRAGMA|BEGIN|COMMIT|ROLLBACK)\b")


def sql_in(source: str) -> list[str]:
    """Where the source runs a statement or holds one: `line: what`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RUNS_SQL:
            found.append(f"{node.lineno}: .{node.func.attr}(")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_START.match(node.value):
            found.append(f"{node.lineno}: {node.value[:60]!r}")
    return found


def test_the_check_sees_a_statement_run_or_written() -> None:
    assert sql_in('conn.execute(q)\nc.executemany(q, rows)\ndb.executescript(s)') == \
        ["1: .execute(", "2: .executemany(", "3: .executescript("]
    assert len(sql_in('Q = "SELECT id FROM notes"\nf"  DELETE FROM {t}"\nX = "BEGIN"')) == 3
    assert sql_in('"Select a note"\n"selected"\nx.run("COMMITTED")') == []  # prose, other words
    assert sql_in((STORE / "rows.py").read_text(encoding="utf-8"))  # the store does hold SQL


def test_no_module_outside_the_store_runs_or_writes_sql() -> None:
    offenders = {}
    for path in sorted(SIDECAR.rglob("*.py")):
        if STORE in path.parents:
            continue
        found = sql_in(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert not offenders, f"move these into a function of sidecar/store/ (reads.py and siblings): {offenders}"

"""`python3 build.py settings [--check]`: write the tables of docs/settings.md from sidecar/config.py.

sidecar/config.py declares every setting and environment variable; the tables between the markers
in docs/settings.md are generated from it (the prose around them is written by hand). `--check`
exits 1 when the page differs; tests/test_settings.py makes the same comparison.
"""

from __future__ import annotations

import subprocess
import sys

from build_tasks.common import ROOT, say, venv_bin

PAGE = ROOT / "docs" / "settings.md"
BEGIN = "<!-- settings:begin (generated from sidecar/config.py by `python3 build.py settings`; edits here are lost) -->"
END = "<!-- settings:end -->"


def spliced(page: str, tables: str) -> str:
    """The page with the tables between the markers replaced."""
    head, _, rest = page.partition(BEGIN)
    _, found, tail = rest.partition(END)
    if not found:
        raise SystemExit(f"{PAGE}: the markers {BEGIN!r} ... {END!r} are missing")
    return f"{head}{BEGIN}\n{tables}{END}{tail}"


def run(args: list[str]) -> int:
    python = venv_bin("python")
    if not python.exists():
        raise SystemExit("no .venv yet: run `python3 build.py setup` first")
    tables = subprocess.run([str(python), "-c", "from sidecar.config import settings_markdown; print(settings_markdown(), end='')"],
                            cwd=ROOT, check=True, capture_output=True, text=True).stdout
    page = PAGE.read_text(encoding="utf-8")
    wanted = spliced(page, tables)
    if "--check" in args:
        if wanted != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date with sidecar/config.py: run `python3 build.py settings`",
                  file=sys.stderr)
            return 1
        return 0
    if wanted != page:
        PAGE.write_text(wanted, encoding="utf-8")
        say(f"wrote {PAGE.relative_to(ROOT)}")
    return 0

"""Reliability and security suites: path confinement, HTTP rules, crash safety, watcher convergence,
hostile notes, secrets, load.

    python3 build.py attack [--quick] [--only paths,crash] [--out DIR]

Runs bench/attack/run_all.py with .venv's Python (options pass through; see its --help). The full
run takes about half an hour on 2 cores; --quick about 2 minutes. Figures land in
bench/out/attack/*.json and summary.md (not committed); docs/security.md says what each suite does.
"""

from __future__ import annotations

from build_tasks.common import ROOT, say, sh, venv_bin
from build_tasks.setup import ensure_venv


def run(args: list[str]) -> int:
    ensure_venv()
    say("attack suites with .venv; they only ever talk to 127.0.0.1")
    return sh(venv_bin("python"), ROOT / "bench" / "attack" / "run_all.py", *args, check=False)

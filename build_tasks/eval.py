"""Development evaluation: every query set we have, per set and per query kind (standard library only).

    python3 build.py eval [--sets NAMES] [--configs NAMES] [--set NAME=VALUE ...]

Runs bench/eval_vaults.py with .venv's Python (options pass through; see its --help). The demo
set always runs; the shared evaluation vaults (../shared/eval-vaults/) run when that folder is
present. Figures land in bench/out/eval-results.json and .md; docs/ranking.md holds the latest.
"""

from __future__ import annotations

from build_tasks.common import ROOT, sh, venv_bin
from build_tasks.setup import ensure_venv


def run(args: list[str]) -> int:
    ensure_venv()
    return sh(venv_bin("python"), ROOT / "bench" / "eval_vaults.py", *args, check=False)

#!/usr/bin/env python3
"""Project tasks, standard library only, so they run before any venv exists.

    python3 build.py demo              set up .venv, index the demo vault, search it
    python3 build.py test              set up .venv (+ plugin deps), lint, type-check, run every test
    python3 build.py setup             create .venv and install the locked dependencies
    python3 build.py model             rebuild the embedded model (throwaway venv, torch)
    python3 build.py model-multilingual [--clean] [--naive]  build the multilingual model (build venv, teacher)
    python3 build.py protocol [--check]  generate Python/TypeScript types from protocol/
    python3 build.py settings [--check]  write docs/settings.md's tables from sidecar/config.py
    python3 build.py plugin [--install VAULT]  build the Obsidian plugin (and install it)
    python3 build.py release [--out DIR] [--wheelhouse]  dist/: the plugin (files, zip, versions.json), wheel, sdist
    python3 build.py bench [...]       run the benchmark scripts in bench/
    python3 build.py eval [...]        search quality per set and query kind (demo + shared eval vaults)
    python3 build.py attack [--quick]  run the reliability and security suites in bench/attack/
    python3 build.py lock              re-pin requirements.lock from the current .venv

Each task lives in build_tasks/<name>.py and exposes run(args) -> int.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

TASKS = ("demo", "test", "setup", "model", "model-multilingual", "protocol", "settings", "plugin", "release", "bench", "eval", "attack", "lock")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TASKS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    task = importlib.import_module(f"build_tasks.{argv[0].replace('-', '_')}")
    return int(task.run(argv[1:]))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

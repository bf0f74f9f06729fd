"""Paths and small helpers shared by the build tasks (standard library only)."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements.lock"
PLUGIN = ROOT / "obsidian-plugin"
DEMO_VAULT = ROOT / "examples" / "demo-vault"


def venv_bin(name: str) -> Path:
    sub = "Scripts" if os.name == "nt" else "bin"
    suffix = ".exe" if os.name == "nt" else ""
    return VENV / sub / f"{name}{suffix}"


def say(message: str) -> None:
    print(f"[build] {message}", file=sys.stderr, flush=True)


def sh(*cmd: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None, check: bool = True) -> int:
    say(" ".join(str(c) for c in cmd))
    full_env = {**os.environ, **(env or {})}
    code = subprocess.call([str(c) for c in cmd], cwd=cwd, env=full_env)
    if check and code != 0:
        raise SystemExit(code)
    return code


def python_ok() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036  (build.py runs on whatever python3 the user has)
        raise SystemExit(f"Python 3.11 or newer is needed (this is {sys.version.split()[0]}).")


def build_venv(env_dir: Path, pins: Sequence[str]) -> Path:
    """A throwaway venv for build-time tools (torch, the teacher model): created once, pins installed; its python."""
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not python.exists():
        say(f"creating build venv {env_dir}")
        venv.EnvBuilder(with_pip=True).create(env_dir)
    sh(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *pins)
    return python

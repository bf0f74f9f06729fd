"""Create .venv and install the locked dependencies plus this package (editable)."""

from __future__ import annotations

import hashlib
import venv

from build_tasks.common import LOCK, ROOT, VENV, python_ok, say, sh, venv_bin

STAMP = VENV / ".lock-sha256"


def ensure_venv() -> None:
    """Idempotent: re-installs only when requirements.lock or pyproject.toml changed."""
    python_ok()
    wanted = hashlib.sha256(LOCK.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted and venv_bin("python").exists():
        return
    if not venv_bin("python").exists():
        say(f"creating {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = (venv_bin("python"), "-m", "pip")
    sh(*pip, "install", "--quiet", "--disable-pip-version-check", "-r", LOCK)
    sh(*pip, "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", ROOT)
    STAMP.write_text(wanted)


def run(args: list[str]) -> int:
    ensure_venv()
    say(f"ready: {venv_bin('sidecar')}")
    return 0

"""Everything CI checks, in the order a failure is cheapest to find: lint, types, protocol drift,
the plugin's checks, then the Python test suite (its summary line closes the run)."""

from __future__ import annotations

import os
import shutil

from build_tasks.common import PLUGIN, ROOT, say, sh, venv_bin
from build_tasks.setup import ensure_venv

PY_PATHS = ("sidecar", "tests", "build_tasks", "build.py", "bench")


def ensure_chromium() -> None:
    """The picture tests need Debian's chromium; install it where we may (CI runs as root)."""
    if shutil.which("chromium") or os.environ.get("SIDECAR_NO_APT"):
        return
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        sh("apt-get", "update", "-qq", check=False)
        sh("apt-get", "install", "-y", "-qq", "chromium", env={"DEBIAN_FRONTEND": "noninteractive"}, check=False)
    if not shutil.which("chromium"):
        say("chromium not found: the plugin's picture tests will say so and fail; install Debian's chromium")


def plugin_checks() -> None:
    if not (PLUGIN / "package.json").exists():
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed for the plugin's checks (Node.js 20 or newer)")
    if not (PLUGIN / "node_modules" / ".package-lock.json").exists():
        sh(npm, "ci", "--no-audit", "--no-fund", cwd=PLUGIN)
    sh(npm, "run", "typecheck", cwd=PLUGIN)
    sh(npm, "run", "lint", cwd=PLUGIN)
    sh(npm, "test", cwd=PLUGIN, env={"SIDECAR_PYTHON": str(venv_bin("python"))})


def run(args: list[str]) -> int:
    ensure_venv()
    python = str(venv_bin("python"))
    paths = [p for p in PY_PATHS if (ROOT / p).exists()]
    sh(python, "-m", "ruff", "check", *paths)
    sh(python, "-m", "mypy")
    sh(str(venv_bin("lint-imports")), "--no-cache")  # the layers, the adapters' independence, no cycles (pyproject.toml)
    if (ROOT / "build_tasks" / "protocol.py").exists():
        sh(python, "build.py", "protocol", "--check")
    ensure_chromium()
    plugin_checks()
    return sh(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, check=False)

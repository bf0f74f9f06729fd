"""`python3 build.py release`, built once for this module: the plugin as Obsidian installs it, and the
sidecar's wheel installed into a fresh venv with no package index at all, then indexing the demo vault.

The wheel's own dependencies (numpy, aiohttp, ...) are not what this checks, and no index may be used:
the fresh venv sees the locked set already installed in .venv through a .pth file pointing at a folder of
links to them (without this project's editable install), so pip finds them satisfied and installs only the
wheel, from the file, exactly as `pip install --no-index FILE.whl`. The model must come from the wheel.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import DEMO_VAULT

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "obsidian-plugin"
HAS_NPM = shutil.which("npm") is not None
OURS = ("vault_sidecar", "__editable__", "sidecar", "pip", "setuptools", "_distutils_hack")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, str(ROOT / "build.py"), "release", "--out", str(out), *([] if HAS_NPM else ["--skip-plugin"])]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def only(folder: Path, pattern: str) -> Path:
    found = list(folder.glob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.skipif(not HAS_NPM, reason="npm is needed to build the plugin")
def test_the_plugin_files_are_complete_and_agree(dist: Path) -> None:
    manifest = json.loads((dist / "manifest.json").read_text())
    assert manifest == json.loads((PLUGIN / "manifest.json").read_text())
    assert json.loads((PLUGIN / "package.json").read_text())["version"] == manifest["version"]
    assert json.loads((dist / "versions.json").read_text())[manifest["version"]] == manifest["minAppVersion"]
    assert (dist / "main.js").stat().st_size > 10_000 and b"require(\"obsidian\")" in (dist / "main.js").read_bytes()
    assert (dist / "styles.css").read_bytes() == (PLUGIN / "styles.css").read_bytes()
    wheel = only(dist, "*.whl")
    with zipfile.ZipFile(dist / f"{manifest['id']}-{manifest['version']}.zip") as zf:
        assert sorted(zf.namelist()) == sorted(f"{manifest['id']}/{n}" for n in
                                               ("main.js", "manifest.json", "styles.css", wheel.name))
        assert zf.read(f"{manifest['id']}/main.js") == (dist / "main.js").read_bytes()


def test_checksums_and_the_model_in_both_packages(dist: Path) -> None:
    for line in (dist / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((dist / name).read_bytes()).hexdigest() == digest, name
    models = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "sidecar" / "models").rglob("*") if p.is_file())
    with zipfile.ZipFile(only(dist, "*.whl")) as zf:
        assert set(models) <= set(zf.namelist())
    with tarfile.open(only(dist, "*.tar.gz")) as tf:
        inside = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert set(models) <= inside and "pyproject.toml" in inside


def deps_folder(target: Path) -> Path:
    """Links to the locked dependencies installed in .venv, without this project itself."""
    site = Path(sysconfig.get_paths()["purelib"])
    target.mkdir()
    for entry in site.iterdir():
        if not entry.name.startswith(OURS) and entry.suffix != ".pth":
            (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return target


def test_the_wheel_installs_without_an_index_and_indexes_the_demo_vault(dist: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    fresh_site = Path(subprocess.check_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                              text=True).strip())
    (fresh_site / "locked-deps.pth").write_text(str(deps_folder(tmp_path / "deps")) + "\n")
    # No configuration files (this machine's pip.conf names local mirrors) and no index: the file only.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "SIDECAR_"))}
    env |= {"PIP_CONFIG_FILE": os.devnull, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "XDG_CONFIG_HOME": str(tmp_path / "config")}
    wheel = only(dist, "*.whl")
    pip = subprocess.run([python, "-m", "pip", "install", "--no-index", str(wheel)], capture_output=True, text=True, check=False,
                         env=env, cwd=tmp_path, timeout=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = subprocess.check_output([python, "-c", "import sidecar; print(sidecar.__file__)"], env=env, cwd=tmp_path,
                                    text=True)
    assert Path(where.strip()).is_relative_to(fresh_site)
    vault = tmp_path / "demo"
    shutil.copytree(DEMO_VAULT, vault)
    index = subprocess.run([env_dir / "bin" / "sidecar", "index", "--vault", str(vault), "--json"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert index.returncode == 0, index.stderr
    status = json.loads(index.stdout)["status"]
    assert status["complete"] and status["notes"] > 60 and status["model"]["available"]
    assert Path(status["index_dir"]).is_relative_to(tmp_path / "cache")

"""`python3 build.py release [--out DIR] [--skip-plugin] [--wheelhouse]`: everything a release publishes, in dist/.

    main.js, manifest.json, styles.css   the plugin as Obsidian installs it (the GitHub release assets the
                                         community store and BRAT download)
    versions.json                        plugin version -> minimum Obsidian version (store and BRAT read it)
    vault-sidecar-VERSION.zip            vault-sidecar/ with the three files and the sidecar's wheel: unzip into
                                         VAULT/.obsidian/plugins/; the plugin finds the wheel beside itself
    vault_sidecar-VERSION-py3-none-any.whl, vault_sidecar-VERSION.tar.gz
                                         the sidecar with its model inside (`pip install FILE.whl`)
    wheelhouse/                          with --wheelhouse: the locked dependencies as wheels for this platform,
                                         so `pip install --no-index --find-links wheelhouse FILE.whl` needs no network
    SHA256SUMS

Refuses to build when the versions disagree (manifest.json, package.json, versions.json, sidecar.__version__:
the plugin offers an upgrade when its sidecar's version differs from its own) or when a model file is
missing from the wheel. The Python packages are built by pypa/build in a build venv (build/release-venv),
each in an isolated environment with the pinned setuptools.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path

from build_tasks import protocol
from build_tasks.common import LOCK, PLUGIN, ROOT, build_venv, say, sh
from build_tasks.plugin import ARTIFACTS, npm, plugin_id

BUILD_PINS = ("build==1.6.1",)
BUILD_VENV = ROOT / "build" / "release-venv"
MODELS = ROOT / "sidecar" / "models"


def versions() -> dict[str, str]:
    """Every place a version is written, by file."""
    init = (ROOT / "sidecar" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"', init, re.MULTILINE)
    return {
        "obsidian-plugin/manifest.json": json.loads((PLUGIN / "manifest.json").read_text(encoding="utf-8"))["version"],
        "obsidian-plugin/package.json": json.loads((PLUGIN / "package.json").read_text(encoding="utf-8"))["version"],
        "sidecar/__init__.py": match.group(1) if match else "?",
    }


def check_versions() -> tuple[str, str]:
    """(version, minAppVersion), or SystemExit saying which file disagrees."""
    found = versions()
    if len(set(found.values())) != 1:
        raise SystemExit("versions disagree: " + ", ".join(f"{k} {v}" for k, v in found.items()))
    version = next(iter(found.values()))
    manifest = json.loads((PLUGIN / "manifest.json").read_text(encoding="utf-8"))
    listed = json.loads((PLUGIN / "versions.json").read_text(encoding="utf-8"))
    if listed.get(version) != manifest["minAppVersion"]:
        raise SystemExit(f"obsidian-plugin/versions.json must map {version} to {manifest['minAppVersion']} "
                         f"(manifest.json's minAppVersion); it has {listed.get(version)!r}")
    return version, str(manifest["minAppVersion"])


def build_plugin(out: Path) -> None:
    exe = npm()
    if not (PLUGIN / "node_modules" / ".package-lock.json").exists():  # never wipe a tree in use
        sh(exe, "ci", "--no-audit", "--no-fund", cwd=PLUGIN)
    if protocol.run(["--check"]) != 0:
        raise SystemExit("protocol types are stale: run `python3 build.py protocol`")
    sh(exe, "run", "build", cwd=PLUGIN)
    for name in (*ARTIFACTS, "versions.json"):
        shutil.copy2(PLUGIN / name, out / name)


def build_python(out: Path, python: Path) -> tuple[Path, Path]:
    staging = out / ".python"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    # Not from ROOT: `-m build` there would run our own build.py.
    sh(python, "-m", "build", "--sdist", "--wheel", "--outdir", staging, ROOT, cwd=staging)
    wheel, sdist = next(staging.glob("*.whl")), next(staging.glob("*.tar.gz"))
    missing = missing_models(wheel)
    if missing:
        raise SystemExit(f"{wheel.name} lacks model files: {', '.join(missing[:5])}")
    moved = shutil.move(wheel, out / wheel.name), shutil.move(sdist, out / sdist.name)
    staging.rmdir()
    return Path(moved[0]), Path(moved[1])


def missing_models(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        inside = set(zf.namelist())
    wanted = [p.relative_to(ROOT).as_posix() for p in MODELS.rglob("*") if p.is_file()]
    return [name for name in wanted if name not in inside]


def plugin_zip(out: Path, version: str, wheel: Path) -> Path:
    folder = plugin_id()
    target = out / f"{folder}-{version}.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ARTIFACTS:
            zf.write(out / name, f"{folder}/{name}")
        zf.write(wheel, f"{folder}/{wheel.name}", compress_type=zipfile.ZIP_STORED)  # already compressed
    return target


def wheelhouse(out: Path, python: Path) -> None:
    sh(python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "-r", LOCK, "-w", out / "wheelhouse")


def checksums(out: Path) -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(out).as_posix()}"
             for p in sorted(out.rglob("*")) if p.is_file() and p.name != "SHA256SUMS"]
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 build.py release")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where to put everything (default dist/)")
    parser.add_argument("--skip-plugin", action="store_true", help="the Python packages only (no npm)")
    parser.add_argument("--wheelhouse", action="store_true", help="also the locked dependencies as wheels")
    opts = parser.parse_args(args)
    out, skip_plugin = opts.out.resolve(), opts.skip_plugin
    version, min_app = check_versions()
    out.mkdir(parents=True, exist_ok=True)
    python = build_venv(BUILD_VENV, BUILD_PINS)
    wheel, sdist = build_python(out, python)
    if not skip_plugin:
        build_plugin(out)
        plugin_zip(out, version, wheel)
    if opts.wheelhouse:
        wheelhouse(out, python)
    checksums(out)
    say(f"release {version} (Obsidian >= {min_app}) in {out}: {wheel.name}, {sdist.name}"
        + ("" if skip_plugin else ", the plugin files and its zip"))
    return 0

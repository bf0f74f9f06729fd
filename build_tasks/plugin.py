"""`python3 build.py plugin [--install VAULT]`: build the Obsidian plugin (and install it into a vault).

Steps: `npm ci` in obsidian-plugin/, regenerate the protocol types (the protocol task), `npm run build`,
then copy main.js, manifest.json and styles.css to obsidian-plugin/release/. With `--install VAULT`, also
copy them to VAULT/.obsidian/plugins/vault-sidecar/ (Obsidian picks them up after "Reload app" or
turning the plugin off and on).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from build_tasks import protocol
from build_tasks.common import PLUGIN, say, sh

RELEASE = PLUGIN / "release"
ARTIFACTS = ("main.js", "manifest.json", "styles.css")


def npm() -> str:
    exe = shutil.which("npm")
    if not exe:
        raise SystemExit("npm was not found: install Node.js 20.19 or newer (it brings npm).")
    return exe


def plugin_id() -> str:
    manifest = json.loads((PLUGIN / "manifest.json").read_text(encoding="utf-8"))
    return str(manifest["id"])


def install(vault: Path) -> Path:
    if not vault.is_dir():
        raise SystemExit(f"not a folder: {vault}")
    if not (vault / ".obsidian").is_dir():
        raise SystemExit(f"{vault} has no .obsidian folder: open it once in Obsidian first, so it is a vault.")
    target = vault / ".obsidian" / "plugins" / plugin_id()
    target.mkdir(parents=True, exist_ok=True)
    for name in ARTIFACTS:
        shutil.copy2(RELEASE / name, target / name)
    return target


def run(args: list[str]) -> int:
    vault: Path | None = None
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--install" and rest:
            vault = Path(rest.pop(0)).expanduser().resolve()
        elif arg.startswith("--install="):
            vault = Path(arg.split("=", 1)[1]).expanduser().resolve()
        else:
            print("usage: python3 build.py plugin [--install VAULT]", file=sys.stderr)
            return 2

    exe = npm()
    sh(exe, "ci", "--no-audit", "--no-fund", cwd=PLUGIN)
    if protocol.run([]) != 0:
        return 1
    sh(exe, "run", "build", cwd=PLUGIN)

    RELEASE.mkdir(exist_ok=True)
    for name in ARTIFACTS:
        shutil.copy2(PLUGIN / name, RELEASE / name)
    say(f"plugin built: {RELEASE.relative_to(PLUGIN.parent)}/ ({', '.join(ARTIFACTS)})")

    if vault is not None:
        target = install(vault)
        say(f"installed into {target}; in Obsidian: Settings > Community plugins > enable Vault Sidecar")
    return 0

"""The user's vaults, from Obsidian's own list (`obsidian.json` in Obsidian's config folder).

Obsidian keeps every vault it has opened in `obsidian.json`:
`{"vaults": {"<id>": {"path": "/home/me/Notes", "ts": 1700000000000, "open": true}}}`.
Its config folder depends on the system and on how Obsidian was installed (Flatpak and Snap keep
their own). Only that one file is read, never anything inside a vault's `.obsidian/`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sidecar.config import OBSIDIAN_CONFIG_ENV

LIST_FILE = "obsidian.json"


@dataclass(frozen=True)
class KnownVault:
    path: Path
    last_opened_ms: int
    open: bool
    exists: bool

    @property
    def name(self) -> str:
        return self.path.name


def config_dirs(platform: str = sys.platform, env: Mapping[str, str] = os.environ,
                home: Path | None = None) -> list[Path]:
    """Where Obsidian may keep obsidian.json on `platform` (sys.platform values), most likely first."""
    home = home or Path.home()
    if env.get(OBSIDIAN_CONFIG_ENV):  # a folder holding obsidian.json: tests, portable installs
        return [Path(env[OBSIDIAN_CONFIG_ENV])]
    if platform == "win32":
        appdata = env.get("APPDATA") or str(home / "AppData" / "Roaming")
        return [Path(appdata) / "obsidian"]
    if platform == "darwin":
        return [home / "Library" / "Application Support" / "obsidian"]
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return [xdg / "obsidian",
            home / ".var" / "app" / "md.obsidian.Obsidian" / "config" / "obsidian",  # Flatpak
            home / "snap" / "obsidian" / "current" / ".config" / "obsidian"]  # Snap


class VaultListUnreadable(ValueError):
    """An obsidian.json is there but cannot be read as Obsidian's vault list (a ValueError: exit 2)."""


def known_vaults(dirs: list[Path] | None = None) -> list[KnownVault]:
    """Every vault in the first obsidian.json found, most recently opened first (missing folders last).
    A file that is not Obsidian's list is passed over; when no list is found, it is the error (so init
    does not say "no list found" about a file it found and could not read)."""
    unreadable: list[str] = []
    for folder in dirs if dirs is not None else config_dirs():
        try:
            listed = read_vault_list(folder / LIST_FILE)
        except VaultListUnreadable as exc:
            unreadable.append(str(exc))
            continue
        if listed is not None:
            return sorted(listed, key=lambda v: (not v.exists, -v.last_opened_ms))
    if unreadable:
        raise VaultListUnreadable(f"{'; '.join(unreadable)}: fix it, or pass --vault PATH")
    return []


def read_vault_list(path: Path) -> list[KnownVault] | None:
    """The vaults in one obsidian.json; None when there is no such file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise VaultListUnreadable(f"found {path}, but it cannot be read: {exc.strerror}") from None
    except ValueError as exc:  # JSON, or UTF-8
        raise VaultListUnreadable(f"found {path}, but it is not valid JSON ({exc})") from None
    vaults = data.get("vaults") if isinstance(data, dict) else None
    if not isinstance(vaults, dict):
        raise VaultListUnreadable(f'found {path}, but it is not Obsidian\'s vault list (no "vaults" object)')
    out = []
    for entry in vaults.values():
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and entry["path"]:
            folder = Path(entry["path"]).expanduser()
            ts = entry.get("ts")
            out.append(KnownVault(folder, ts if isinstance(ts, int) else 0, entry.get("open") is True, folder.is_dir()))
    return out

"""Settings, declared once: name, default, environment variable and help.

The CLI builds its options from SETTINGS, the service reports them in `status`, and the
docs list them; nothing else defines a default.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, field, fields
from pathlib import Path

import platformdirs

APP_NAME = "vault-sidecar"


def _meta(help_text: str, env: str | None = None) -> dict[str, str | None]:
    return {"help": help_text, "env": env}


@dataclass(frozen=True)
class Settings:
    vault: Path
    index_dir: Path = field(default=Path(), metadata=_meta("folder holding this vault's index (default: per-vault folder in the user cache)", "SIDECAR_INDEX_DIR"))
    model: str | None = field(default=None, metadata=_meta("Model2Vec model: a local folder or a hub id (default: the embedded model)", "SIDECAR_MODEL"))
    chunk_chars: int = field(default=1600, metadata=_meta("largest chunk in characters; sections split at H3, H4, paragraphs beyond it"))
    max_file_bytes: int = field(default=2_000_000, metadata=_meta("notes larger than this are skipped with a reason (ordinary notes are < 100 KB; 2 MB of text is about 1,300 chunks, 2 s to index)"))
    exclude: tuple[str, ...] = field(default=(), metadata=_meta("extra gitignore-style patterns, on top of .indexignore and Obsidian's excluded files"))
    sqlite_driver: str | None = field(default=None, metadata=_meta("force a SQLite driver: sqlean, sqlite3 or apsw (default: the first that loads sqlite-vec)", "SIDECAR_SQLITE_DRIVER"))
    embed_batch: int = field(default=512, metadata=_meta("chunks per embedding batch"))
    notes_per_transaction: int = field(default=200, metadata=_meta("notes written per transaction during a full index"))
    allow_writes: bool = field(default=False, metadata=_meta("let MCP clients create, edit, move and delete notes (every write keeps the previous version in the history)"))
    history_max_bytes: int = field(default=200_000_000, metadata=_meta("size budget of the edit history beside the index; the oldest versions go first"))
    history_days: float = field(default=90.0, metadata=_meta("versions in the edit history are kept this many days"))
    allow_hardlinks: bool = field(default=False, metadata=_meta("index notes whose file has other names (hard links), which may lie outside the vault or in excluded folders: 1 to allow", "SIDECAR_ALLOW_HARDLINKS"))

    def __post_init__(self) -> None:
        if self.index_dir == Path():
            object.__setattr__(self, "index_dir", default_index_dir(self.vault))

    @property
    def db_path(self) -> Path:
        return self.index_dir / "index.sqlite3"


def setting_help() -> dict[str, tuple[str, str | None]]:
    return {f.name: (str(f.metadata.get("help", "")), f.metadata.get("env")) for f in fields(Settings) if f.metadata}


def from_env(vault: Path, **overrides: object) -> Settings:
    """Flags win over environment variables, which win over defaults."""
    values: dict[str, object] = {}
    for f in fields(Settings):
        env = f.metadata.get("env") if f.metadata else None
        if env and os.environ.get(env):
            values[f.name] = _from_text(f.type, os.environ[env])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(vault=vault.expanduser().resolve(), **values)  # type: ignore[arg-type]


def _from_text(annotation: object, text: str) -> object:
    """An environment variable's text as the setting's type (annotations are strings here)."""
    if annotation == "Path":
        return Path(text)
    if annotation == "bool":
        return text.strip().lower() in ("1", "true", "yes", "on")
    return text


def default_index_dir(vault: Path) -> Path:
    """A per-vault folder in the user's cache directory, never inside the vault."""
    real = str(vault.expanduser().resolve())
    digest = hashlib.sha256(real.encode()).hexdigest()[:12]
    name = unicodedata.normalize("NFKD", Path(real).name)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:40] or "vault"
    return Path(platformdirs.user_cache_dir(APP_NAME)) / f"{slug}-{digest}"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))

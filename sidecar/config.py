"""Settings, declared once: name, type, default, environment variable, flag and help.

Every setting is a field of `Settings`; its metadata says how people reach it. The CLI builds its
flags from SETTINGS, `from_env` reads the variables, docs/settings.md lists both (generated:
`python3 build.py settings`), and tests/test_settings.py keeps the page and this module in step.
Every environment variable the sidecar reads is named here, and read through `env_text`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import types
import unicodedata
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

import platformdirs

APP_NAME = "vault-sidecar"
ENV_PREFIX = "SIDECAR_"
WRITE_COMMANDS = ("serve", "mcp")  # the commands that can serve writes: the only ones with write flags

# Variables read outside Settings. Names live here only; the modules that read them import them.
RPC_TOKEN_ENV = "SIDECAR_RPC_TOKEN"  # noqa: S105  (a variable name, not a secret)
MCP_TOKEN_ENV = "SIDECAR_MCP_TOKEN"  # noqa: S105
OBSIDIAN_CONFIG_ENV = "OBSIDIAN_CONFIG_DIR"
HOLD_MODEL_ENV = "SIDECAR_TEST_HOLD_MODEL"
THREAD_ENVS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

OTHER_ENVIRONMENT: dict[str, str] = {
    RPC_TOKEN_ENV: "the JSON-RPC token (the plugin passes a fresh one per run); unset: a new one per run, "
                   "written 0600 to `rpc-token` in the index folder",
    MCP_TOKEN_ENV: "the MCP token, at least 16 characters; unset: a persistent one in `mcp-token` (0600) "
                   "in the user's config folder",
    OBSIDIAN_CONFIG_ENV: "the folder holding Obsidian's `obsidian.json` (the vault list `sidecar init` offers); "
                         "unset: the system's place (APPDATA, ~/Library/Application Support, XDG_CONFIG_HOME)",
    HOLD_MODEL_ENV: "TEST HOOK, not a setting: the model waits until this file exists (at most a minute), "
                    "so tests see the loading state",
    **{name: "BLAS threads; set to 1 unless already set (a query is one memory-bound product)" for name in THREAD_ENVS},
}


def _meta(help_text: str, *, env: bool = True, flag: str | None = None, minimum: float | None = None,
          commands: tuple[str, ...] | None = None, shown_default: str | None = None) -> dict[str, Any]:
    """How a setting is reached: `env=False` for no variable, `flag` when it is not --the-name,
    `commands` when only those take the flag (None: every command); `shown_default` says what a
    default of None (or a placeholder) means."""
    return {"help": help_text, "env": env, "flag": flag, "minimum": minimum, "commands": commands,
            "shown_default": shown_default}


@dataclass(frozen=True)
class Settings:
    vault: Path = field(metadata=_meta("the Obsidian vault folder"))
    index_dir: Path = field(default=Path(), metadata=_meta("folder holding this vault's index; never inside the vault", flag="--index", shown_default="a per-vault folder in the user cache"))
    model: str | None = field(default=None, metadata=_meta("Model2Vec model: a local folder or a hub id", shown_default="the embedded model"))
    chunk_chars: int = field(default=1600, metadata=_meta("largest chunk in characters; sections split at H3, H4, paragraphs beyond it", minimum=100))
    max_file_bytes: int = field(default=2_000_000, metadata=_meta("notes larger than this are skipped with a reason (ordinary notes are < 100 KB; 2 MB of text is about 1,300 chunks, 2 s to index)", minimum=1))
    exclude: tuple[str, ...] = field(default=(), metadata=_meta("extra gitignore-style patterns, on top of .indexignore and Obsidian's excluded files (flag: repeatable; variable: comma-separated)"))
    sqlite_driver: str | None = field(default=None, metadata=_meta("force a SQLite driver: sqlean, sqlite3 or apsw", shown_default="the first that loads sqlite-vec"))
    embed_batch: int = field(default=512, metadata=_meta("chunks per embedding batch", minimum=1))
    notes_per_transaction: int = field(default=200, metadata=_meta("notes written per transaction during a full index", minimum=1))
    # No variable: write permission is given per run, so a variable left in the shell that starts
    # Obsidian cannot turn writes on behind the plugin's setting.
    allow_writes: bool = field(default=False, metadata=_meta("let MCP clients create, edit, move and delete notes (every write keeps the previous version in the history)", env=False, commands=WRITE_COMMANDS))
    history_max_bytes: int = field(default=200_000_000, metadata=_meta("size budget of the edit history beside the index; the oldest versions go first", minimum=0, commands=WRITE_COMMANDS))
    history_days: float = field(default=90.0, metadata=_meta("versions in the edit history are kept this many days", minimum=0, commands=WRITE_COMMANDS))
    allow_hardlinks: bool = field(default=False, metadata=_meta("index notes whose file has other names (hard links), which may lie outside the vault or in excluded folders"))

    def __post_init__(self) -> None:
        for s in SETTINGS:
            value = getattr(self, s.name)
            reach = ", ".join(x for x in (s.flag, s.env) if x)
            if isinstance(value, float) and not math.isfinite(value):  # nan passes any comparison, inf any minimum
                raise ValueError(f"{s.name} ({reach}) must be a finite number, not {value}")
            if s.minimum is not None and value < s.minimum:
                raise ValueError(f"{s.name} ({reach}) must be at least {s.minimum:g}, not {value}")
        if self.index_dir == Path():
            object.__setattr__(self, "index_dir", default_index_dir(self.vault))

    @property
    def db_path(self) -> Path:
        return self.index_dir / "index.sqlite3"


@dataclass(frozen=True)
class Setting:
    """One field of Settings as people meet it."""

    name: str
    kind: type  # what the text of a flag or variable becomes: Path, str, int, float, bool or tuple
    default: object  # MISSING: required
    help: str
    shown_default: str | None
    env: str | None
    flag: str
    minimum: float | None
    commands: tuple[str, ...] | None

    @property
    def required(self) -> bool:
        return self.default is MISSING

    def parse(self, text: str) -> object:
        """A flag's or variable's text as this setting's value; a clear error when it is not one."""
        try:
            return _PARSERS[self.kind](text)
        except ValueError:
            raise ValueError(f"expected {_KIND_WORDS[self.kind]}, got {text!r}") from None


def _boolean(text: str) -> bool:
    word = text.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(word)


_PARSERS: dict[type, Callable[[str], object]] = {
    Path: lambda t: Path(t).expanduser(), str: str, int: int, float: float, bool: _boolean,
    tuple: lambda t: tuple(p.strip() for p in t.split(",") if p.strip()),
}
_KIND_NAMES = {Path: "path", str: "text", int: "integer", float: "number", bool: "boolean", tuple: "patterns"}
_KIND_WORDS = {Path: "a path", str: "text", int: "a whole number", float: "a number",
               bool: "1/0, true/false, yes/no or on/off", tuple: "comma-separated patterns"}


def _kind(hint: object) -> type:
    """Path, str, int, float, bool or tuple from an annotation such as `str | None` or `tuple[str, ...]`."""
    if get_origin(hint) is types.UnionType:
        hint = next(a for a in get_args(hint) if a is not type(None))
    origin = get_origin(hint) or hint
    assert isinstance(origin, type) and origin in _PARSERS, f"no parser for a setting of type {hint}"
    return origin


def _declared() -> tuple[Setting, ...]:
    hints = get_type_hints(Settings)
    return tuple(
        Setting(name=f.name, kind=_kind(hints[f.name]), default=f.default, help=f.metadata["help"],
                shown_default=f.metadata["shown_default"],
                env=ENV_PREFIX + f.name.upper() if f.metadata["env"] else None,
                flag=f.metadata["flag"] or "--" + f.name.replace("_", "-"), minimum=f.metadata["minimum"],
                commands=f.metadata["commands"])
        for f in fields(Settings))


SETTINGS = _declared()
SETTING = {s.name: s for s in SETTINGS}
VAULT_ENV = str(SETTING["vault"].env)  # the vault is the one setting that is positional in from_env


def environment() -> dict[str, str]:
    """Every variable the sidecar reads, with what it does."""
    from_settings = {s.env: f"the `{s.name}` setting" for s in SETTINGS if s.env}
    return {**from_settings, **OTHER_ENVIRONMENT}


def env_text(name: str) -> str | None:
    """The one read of the environment: a variable's text, or None when it is unset or blank."""
    return os.environ.get(name, "").strip() or None


def from_env(vault: Path, **overrides: object) -> Settings:
    """Flags win over environment variables, which win over defaults (an override of None: not given)."""
    values: dict[str, object] = {}
    for s in SETTINGS:
        text = env_text(s.env) if s.env and s.name != "vault" else None
        if text is not None:
            try:
                values[s.name] = s.parse(text)
            except ValueError as exc:
                raise ValueError(f"{s.env}: {exc}") from None
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(vault=vault.expanduser().resolve(), **values)  # type: ignore[arg-type]


def default_text(s: Setting) -> str:
    """A default as the docs and --help show it."""
    if s.shown_default:
        return s.shown_default
    if s.required:
        return "(required)"
    if s.default is None or s.default == ():
        return "(none)"
    if isinstance(s.default, bool):
        return "on" if s.default else "off"
    return f"{s.default:,}" if s.kind is int else str(s.default)


def settings_markdown() -> str:
    """The tables of docs/settings.md (python3 build.py settings writes them there)."""
    rows = ["| Setting | Type | Default | Environment variable | Flag | Commands | What it does |",
            "|---|---|---|---|---|---|---|"]
    rows += [f"| `{s.name}` | {_KIND_NAMES[s.kind]} | {default_text(s)} | {f'`{s.env}`' if s.env else '(none)'} | "
             f"`{s.flag}` | {', '.join(s.commands) if s.commands else 'all'} | {s.help} |" for s in SETTINGS]
    rows += ["", "| Environment variable | What it reads |", "|---|---|"]
    rows += [f"| `{name}` | {what} |" for name, what in environment().items()]
    return "\n".join(rows) + "\n"


def default_index_dir(vault: Path) -> Path:
    """A per-vault folder in the user's cache directory, never inside the vault."""
    real = str(vault.expanduser().resolve())
    digest = hashlib.sha256(real.encode()).hexdigest()[:12]
    name = unicodedata.normalize("NFKD", Path(real).name)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:40] or "vault"
    return Path(platformdirs.user_cache_dir(APP_NAME)) / f"{slug}-{digest}"


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME))

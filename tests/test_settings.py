"""Settings are declared once (sidecar/config.py): every one reachable by flag and by variable,
docs/settings.md generated from the declarations, and no variable named anywhere else."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from build_tasks.settings import PAGE, spliced
from sidecar.commands.cli import build_parser, settings_from
from sidecar.config import SETTING, SETTINGS, Setting, Settings, environment, from_env, settings_markdown

ROOT = Path(__file__).resolve().parent.parent
SIDECAR = ROOT / "sidecar"


def test_docs_settings_page_lists_what_config_declares() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert spliced(page, settings_markdown()) == page, (
        "docs/settings.md is out of date with sidecar/config.py: run `python3 build.py settings`")


def test_the_page_names_every_setting_and_variable() -> None:
    """The generated block really carries each name (a broken generator cannot pass the test above)."""
    page = PAGE.read_text(encoding="utf-8")
    for s in SETTINGS:
        assert re.search(rf"^\| `{s.name}` \|.*\| `{re.escape(s.flag)}` \|", page, re.MULTILINE), s.name
    for name in environment():
        assert re.search(rf"^\| `{name}` \|", page, re.MULTILINE), name


def _other_value(s: Setting, tmp_path: Path) -> tuple[str, object]:
    """A value unlike the default, as text and as the setting holds it."""
    if s.kind is Path:
        return str(tmp_path / s.name), tmp_path / s.name
    if s.kind is bool:
        return ("0", False) if s.default else ("1", True)
    if s.kind is tuple:
        return "drafts/**,*.tmp", ("drafts/**", "*.tmp")
    if s.kind is str:
        return "sqlite3", "sqlite3"
    number = s.kind(s.default) * 2 + 1
    return str(number), number


def _command_for(s: Setting) -> str:
    return s.commands[0] if s.commands else "status"


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.name != "vault"], ids=lambda s: s.name)
def test_every_setting_is_reachable_by_flag(setting: Setting, tmp_path: Path) -> None:
    text, value = _other_value(setting, tmp_path)
    argv = [_command_for(setting), "--vault", str(tmp_path)]
    if setting.kind is bool:
        argv.append(setting.flag if value else "--no-" + setting.flag.removeprefix("--"))
    elif setting.kind is tuple:
        argv += [x for pattern in str(text).split(",") for x in (setting.flag, pattern)]
    else:
        argv += [setting.flag, text]
    settings = settings_from(build_parser().parse_args(argv))
    assert getattr(settings, setting.name) == value
    assert value != setting.default


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.env and s.name != "vault"], ids=lambda s: s.name)
def test_every_setting_with_a_variable_is_reachable_by_it(setting: Setting, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    assert setting.env
    text, value = _other_value(setting, tmp_path)
    monkeypatch.setenv(setting.env, text)
    assert getattr(from_env(tmp_path), setting.name) == value
    default = settings_from(build_parser().parse_args([_command_for(setting), "--vault", str(tmp_path)]))
    assert getattr(default, setting.name) == value, "a flag not given must leave the variable's value"


def test_the_vault_comes_from_its_flag_or_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = SETTING["vault"].env
    assert env
    monkeypatch.delenv(env, raising=False)
    with pytest.raises(ValueError, match=f"which vault.*{env}"):
        settings_from(build_parser().parse_args(["status"]))
    monkeypatch.setenv(env, str(tmp_path))
    assert settings_from(build_parser().parse_args(["status"])).vault == tmp_path.resolve()
    (tmp_path / "other").mkdir()
    flag = settings_from(build_parser().parse_args(["status", "--vault", str(tmp_path / "other")]))
    assert flag.vault == (tmp_path / "other").resolve()


def test_a_flag_wins_over_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIDECAR_CHUNK_CHARS", "900")
    monkeypatch.setenv("SIDECAR_ALLOW_HARDLINKS", "yes")
    args = build_parser().parse_args(["index", "--vault", str(tmp_path), "--chunk-chars", "700", "--no-allow-hardlinks"])
    settings = settings_from(args)
    assert (settings.chunk_chars, settings.allow_hardlinks) == (700, False)


def test_writes_are_allowed_by_flag_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable left in the shell that starts Obsidian must not turn writes on behind the plugin."""
    monkeypatch.setenv("SIDECAR_ALLOW_WRITES", "1")
    assert SETTING["allow_writes"].env is None
    assert from_env(tmp_path).allow_writes is False
    with pytest.raises(SystemExit):  # not a flag of a read-only command
        build_parser().parse_args(["search", "q", "--vault", str(tmp_path), "--allow-writes"])


@pytest.mark.parametrize(("env", "text", "message"), [
    ("SIDECAR_CHUNK_CHARS", "many", "SIDECAR_CHUNK_CHARS: expected a whole number, got 'many'"),
    ("SIDECAR_ALLOW_HARDLINKS", "maybe", "SIDECAR_ALLOW_HARDLINKS: expected 1/0"),
    ("SIDECAR_EMBED_BATCH", "0", r"embed_batch \(--embed-batch, SIDECAR_EMBED_BATCH\) must be at least 1"),
    ("SIDECAR_HISTORY_DAYS", "nan", r"history_days \(--history-days, SIDECAR_HISTORY_DAYS\) must be a finite number, not nan"),
    ("SIDECAR_HISTORY_DAYS", "inf", "history_days .* must be a finite number, not inf"),
])
def test_a_bad_variable_is_a_clear_error(env: str, text: str, message: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(env, text)
    with pytest.raises(ValueError, match=message):
        from_env(tmp_path)


def test_a_bad_flag_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["index", "--vault", str(tmp_path), "--history-days", "x"])
    assert "unrecognized arguments: --history-days" in capsys.readouterr().err  # a write setting: serve, mcp only
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--vault", str(tmp_path), "--history-days", "x"])
    assert "argument --history-days: expected a number, got 'x'" in capsys.readouterr().err


def test_a_number_flag_that_is_not_finite_is_refused(tmp_path: Path) -> None:
    """Before, `--history-days inf` and `nan` passed the minimum check (nan compares false with anything)."""
    for text in ("inf", "nan", "-inf"):
        args = build_parser().parse_args(["serve", "--vault", str(tmp_path), f"--history-days={text}"])
        with pytest.raises(ValueError, match=r"history_days \(--history-days, SIDECAR_HISTORY_DAYS\) must be a finite number"):
            settings_from(args)


def test_defaults_elsewhere_are_read_from_the_declarations() -> None:
    """A literal default in a signature would drift from config.py: chunk and vault read Settings."""
    from sidecar.ingest.chunk import chunk_note
    from sidecar.ingest.vault import Vault

    assert chunk_note.__defaults__ is not None and chunk_note.__defaults__[0] == Settings.chunk_chars
    assert Vault.__init__.__defaults__ == ((), Settings.max_file_bytes, Settings.allow_hardlinks)


# Reading os.environ outside config.env_text, with why it is allowed.
ENVIRON_USERS = {
    "config.py": "env_text: the one read",
    "__init__.py": "sets the BLAS thread variables before numpy loads (a write, not a read)",
    "commands/vaults.py": "config_dirs takes the environment as an argument, so tests pass their own",
}


def _modules() -> list[Path]:
    return sorted(p for p in SIDECAR.rglob("*.py") if "models" not in p.relative_to(SIDECAR).parts)


def test_variables_are_named_only_in_config() -> None:
    """No module but config.py spells a variable's name as a string of its own: they import it."""
    names = set(environment()) | {"SIDECAR_ALLOW_WRITES"}
    spelled = []
    for path in _modules():
        if path.name == "config.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value in names or re.fullmatch(r"SIDECAR_[A-Z0-9_]+", node.value)):
                spelled.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
    assert spelled == []


def test_the_environment_is_read_in_config_only() -> None:
    readers = set()
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "environb"):
                readers.add(str(path.relative_to(SIDECAR)))
    assert readers <= set(ENVIRON_USERS), readers - set(ENVIRON_USERS)
    assert "config.py" in readers

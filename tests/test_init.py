"""`sidecar init`: Obsidian's vault list on each system, the pick, and the whole run in a real child
process with a fake Obsidian config folder (the hook it prints is run too)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sidecar.commands.init import InitStopped, pick_vault
from sidecar.commands.vaults import KnownVault, VaultListUnreadable, config_dirs, known_vaults
from sidecar.config import OBSIDIAN_CONFIG_ENV as CONFIG_ENV
from tests.test_ports import small_vault

HOME = Path("/home/me")


def test_config_dirs_on_each_system() -> None:
    assert config_dirs("linux", {}, HOME) == [
        HOME / ".config/obsidian", HOME / ".var/app/md.obsidian.Obsidian/config/obsidian",
        HOME / "snap/obsidian/current/.config/obsidian"]
    assert config_dirs("linux", {"XDG_CONFIG_HOME": "/x"}, HOME)[0] == Path("/x/obsidian")
    assert config_dirs("darwin", {}, HOME) == [HOME / "Library/Application Support/obsidian"]
    assert config_dirs("win32", {"APPDATA": "C:/Users/me/AppData/Roaming"}, HOME) == [
        Path("C:/Users/me/AppData/Roaming/obsidian")]
    assert config_dirs("win32", {}, HOME) == [HOME / "AppData/Roaming/obsidian"]
    assert config_dirs("darwin", {CONFIG_ENV: "/portable"}, HOME) == [Path("/portable")]


def write_list(folder: Path, vaults: dict[str, dict[str, object]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "obsidian.json").write_text(json.dumps({"vaults": vaults, "frame": "hidden"}), encoding="utf-8")
    return folder


def test_known_vaults_recent_first_missing_last_and_the_first_list_found(tmp_path: Path) -> None:
    old, new = small_vault(tmp_path / "Old"), small_vault(tmp_path / "New")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "obsidian.json").write_text("{not json")
    listed = write_list(tmp_path / "cfg", {
        "1": {"path": str(old), "ts": 100}, "2": {"path": str(new), "ts": 200, "open": True},
        "3": {"path": str(tmp_path / "Gone"), "ts": 300}, "4": {"ts": 5}})
    vaults = known_vaults([tmp_path / "none", broken, listed])
    assert [(v.name, v.exists, v.open) for v in vaults] == [("New", True, True), ("Old", True, False), ("Gone", False, False)]
    assert known_vaults([tmp_path / "none"]) == []


def test_a_vault_list_that_is_not_valid_json_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before, a corrupt obsidian.json gave "no Obsidian vault list found (looked in DIR)", as if there were none."""
    from sidecar.commands.cli import main

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "obsidian.json").write_text("{bad")
    with pytest.raises(VaultListUnreadable, match=f"found {broken / 'obsidian.json'}, but it is not valid JSON"):
        known_vaults([tmp_path / "none", broken])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "obsidian.json").write_text('{"vaults": []}')
    with pytest.raises(VaultListUnreadable, match="is not Obsidian's vault list"):
        known_vaults([tmp_path / "other"])
    monkeypatch.delenv("SIDECAR_VAULT", raising=False)
    assert main(["init", "--obsidian-config", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "is not valid JSON" in err and "no Obsidian vault list found" not in err


def test_pick_vault() -> None:
    a, b = KnownVault(Path("/a"), 2, True, True), KnownVault(Path("/b"), 1, False, True)
    gone = KnownVault(Path("/gone"), 3, False, False)
    assert pick_vault([gone, a], lambda _q: pytest.fail("one vault: nothing to ask"), []) == Path("/a")
    assert pick_vault([a, b], lambda _q: "2\n", []) == Path("/b")
    assert pick_vault([a, b], lambda _q: "\n", []) == Path("/a")
    with pytest.raises(InitStopped, match="not one of 1-2"):
        pick_vault([a, b], lambda _q: "3", [])
    with pytest.raises(InitStopped, match="pass --vault"):
        pick_vault([gone], lambda _q: "1", [Path("/cfg")])


def run_init(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "HF_HUB_OFFLINE": "1"}
    env.pop("SIDECAR_VAULT", None)
    return subprocess.run([sys.executable, "-m", "sidecar", "init", *args], input=stdin, capture_output=True, check=False,
                          text=True, env=env, timeout=300, cwd=tmp_path)


def test_init_picks_checks_indexes_and_prints_a_hook_that_works(tmp_path: Path) -> None:
    first, second = small_vault(tmp_path / "First"), small_vault(tmp_path / "Second")
    (second / "Harbour.md").write_text("# Harbour\n\nThe ferry to the lighthouse leaves at nine.\n", encoding="utf-8")
    cfg = write_list(tmp_path / "obsidian", {"a": {"path": str(first), "ts": 2}, "b": {"path": str(second), "ts": 1}})
    done = run_init(tmp_path, "--obsidian-config", str(cfg), "--json", stdin="2\n")
    assert done.returncode == 0, done.stderr
    assert "1. First" in done.stderr and "2. Second" in done.stderr and "[ok  ] model" in done.stderr
    assert "index: done" in done.stderr  # the progress, on stderr
    out = json.loads(done.stdout)
    assert out["status"]["vault"] == str(second.resolve()) and out["status"]["notes"] == 3
    assert out["status"]["complete"] and out["report"]["added"] == 3
    assert out["mcp"]["stdio"]["command"][-4:] == ["--vault", str(second.resolve()), "--index", out["status"]["index_dir"]]
    hook = out["hook"]
    assert out["hook"]["claude_code"]["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"] == hook["command"]
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "when does the ferry leave?"})
    context = subprocess.run(shlex.split(hook["command"]), input=event, capture_output=True, text=True, check=False,
                             timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert context.returncode == 0, context.stderr
    assert "Harbour.md" in context.stdout and "lighthouse" in context.stdout


def test_init_without_an_answer_or_a_list_says_pass_vault(tmp_path: Path) -> None:
    cfg = write_list(tmp_path / "obsidian", {"a": {"path": str(small_vault(tmp_path / "A")), "ts": 1},
                                             "b": {"path": str(small_vault(tmp_path / "B")), "ts": 2}})
    no_answer = run_init(tmp_path, "--obsidian-config", str(cfg))
    assert no_answer.returncode == 2 and "pass --vault" in no_answer.stderr and not no_answer.stdout
    no_list = run_init(tmp_path, "--obsidian-config", str(tmp_path / "nowhere"))
    assert no_list.returncode == 2 and "no Obsidian vault list found" in no_list.stderr

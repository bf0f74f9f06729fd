import codecs
import json
import os
import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sidecar.ingest.vault import UnreadableNote, Vault, decode_note, read_small_file


@pytest.fixture()
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": ["Archive/Old/", "/\\.draft\\.md$/"]}))
    (root / ".obsidian" / "workspace.md").write_text("secret workspace")
    (root / ".git").mkdir()
    (root / ".git" / "notes.md").write_text("git")
    (root / "Private").mkdir()
    (root / "Private" / "diary.md").write_text("zanzibarquokka")
    (root / "Archive" / "Old").mkdir(parents=True)
    (root / "Archive" / "Old" / "x.md").write_text("old")
    (root / "Archive" / "keep.md").write_text("keep")
    (root / "a.draft.md").write_text("draft")
    (root / "Note.md").write_text("# Note\nhello")
    (root / "img.png").write_bytes(b"\x89PNG")
    (root / ".indexignore").write_text("Private/\n*.tmp.md\n")
    (root / "scratch.tmp.md").write_text("tmp")
    (root / "big.md").write_text("x" * 2000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside secret")
    (tmp_path / "vault-evil").mkdir()
    (tmp_path / "vault-evil" / "x.md").write_text("evil sibling")
    os.symlink(outside / "secret.md", root / "link-out.md")
    os.symlink(outside, root / "linked-folder")
    os.symlink(root / "Note.md", root / "link-in.md")
    return Vault(root, max_file_bytes=1000)


def test_scan_applies_every_ignore_rule(vault: Vault) -> None:
    scan = vault.scan()
    assert sorted(f.path for f in scan.notes) == ["Archive/keep.md", "Note.md", "link-in.md"]
    assert scan.attachments == ["img.png"]
    # the links the walk does not follow are said too: a note behind one would be missing unsaid
    assert sorted((s.path, s.reason.split(":")[0]) for s in scan.skipped) == [
        ("big.md", "too large"), ("link-out.md", "a link out of the vault, to a hidden or excluded file, or to nothing"),
        ("linked-folder", "a link to a folder")]


def test_exclusion_reasons(vault: Vault) -> None:
    assert vault.exclusion_reason(".obsidian/app.json") == "hidden folder or file"
    assert vault.exclusion_reason("Private/diary.md") == "excluded by .indexignore"
    assert vault.exclusion_reason("Archive/Old/x.md") == "excluded in Obsidian settings (Excluded files)"
    assert vault.exclusion_reason("a.draft.md") == "excluded in Obsidian settings (Excluded files)"
    assert vault.exclusion_reason("Note.md") is None


@pytest.mark.parametrize("bad", [
    "../outside/secret.md", "/etc/passwd", "~/x.md", "C:/x.md", "Note.md\x00", "..\\outside\\secret.md",
    "link-out.md", "linked-folder/secret.md", ".obsidian/workspace.md", ".OBSIDIAN/workspace.md",
    ".git/notes.md", "Private/diary.md", "Note.md.", "Note.md ", "../vault-evil/x.md", "Archive/Old/x.md",
    "", "Nope.md", "Archive/../../outside/secret.md", "Note\ud800.md", "\udcff/Note.md",
])
def test_confine_refuses_everything_outside_or_excluded(vault: Vault, bad: str) -> None:
    assert vault.confine(bad) is None


def test_a_name_no_file_can_have_is_nowhere_not_an_error(vault: Vault) -> None:
    assert vault.confine_new("New\ud800.md") is None  # the OS calls raised UnicodeEncodeError on it


def test_confine_accepts_real_notes(vault: Vault) -> None:
    assert vault.confine("Note.md") == "Note.md"
    assert vault.confine("./Archive//keep.md") == "Archive/keep.md"
    assert vault.confine("link-in.md") == "link-in.md"


def test_read_note_too_large_is_a_reason_not_a_crash(vault: Vault) -> None:
    with pytest.raises(UnreadableNote, match="too large"):
        vault.read_note("big.md")


def test_decode_variants() -> None:
    assert decode_note(codecs.BOM_UTF8 + b"hi\r\nthere\rend").text == "hi\nthere\nend"
    utf16 = decode_note(codecs.BOM_UTF16_LE + "olá".encode("utf-16-le"))
    assert utf16.text == "olá" and "UTF-16" in utf16.warnings[0]
    bad = decode_note(b"caf\xe9 ok")
    assert bad.text == "caf\ufffd ok" and bad.warnings
    with pytest.raises(UnreadableNote, match="binary"):
        decode_note(b"\x00\x01\x02PNG")


def _in_thread(fn: Callable[[], object]) -> object:
    """Run fn where a hang cannot take the test run with it: a blocked open of a FIFO never returns.
    The join's timeout only detects that hang; it bounds no work."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(_outcome(fn)), daemon=True)
    worker.start()
    worker.join(60)
    assert out, "blocked (a FIFO opened for reading waits for a writer forever)"
    return out[0]


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Exception as exc:
        return exc


def test_a_note_replaced_by_a_fifo_is_refused_without_blocking(vault: Vault) -> None:
    """Two reads blocked on a FIFO and search, read_note and related timed out on both ports."""
    assert "Note.md" in [f.path for f in vault.scan().notes]
    (vault.root / "Note.md").unlink()
    os.mkfifo(vault.root / "Note.md")
    outcome = _in_thread(lambda: vault.read_note("Note.md"))
    assert isinstance(outcome, UnreadableNote) and "not a regular file" in str(outcome)
    assert _in_thread(lambda: vault.confine("Note.md")) is None
    assert "Note.md" not in [f.path for f in _in_thread(vault.scan).notes]  # type: ignore[attr-defined]


def test_settings_files_that_are_fifos_do_not_block_loading_the_rules(vault: Vault) -> None:
    (vault.root / ".indexignore").unlink()
    os.mkfifo(vault.root / ".indexignore")
    (vault.root / ".obsidian" / "app.json").unlink()
    os.mkfifo(vault.root / ".obsidian" / "app.json")
    assert _in_thread(vault.reload_rules) is None
    assert read_small_file(vault.root / ".indexignore") is None


def test_a_folder_it_cannot_read_is_a_skip_with_its_reason_and_an_unreadable_vault_an_error(
        vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, an unreadable folder (chmod 000, another user's) was left out unsaid: the index was
    "complete" without its notes, and an unreadable vault folder indexed 0 notes "complete"."""
    (vault.root / "Locked").mkdir()
    (vault.root / "Locked" / "Inside.md").write_text("# Inside")
    scandir, locked = os.scandir, {"Locked"}

    def guarded(path: str) -> Any:
        if Path(path).name in locked:
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", guarded)
    result = vault.scan()
    assert "Locked/Inside.md" not in [f.path for f in result.notes]
    assert [(s.path, s.reason) for s in result.skipped if s.path == "Locked"] == [
        ("Locked", "cannot read this folder (Permission denied): its notes are not indexed")]
    locked.add(vault.root.name)
    with pytest.raises(OSError, match="cannot read the vault folder"):
        vault.scan()


def test_an_app_json_that_is_not_json_keeps_the_last_excluded_files(vault: Vault,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """A half-written save or a sync conflict dropped every Obsidian exclusion at once, silently:
    Archive/Old/ was indexed and served within a second."""
    signature = vault.rules_signature
    (vault.root / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["Archive/Old/",]}')
    vault.reload_rules()
    assert vault.exclusion_reason("Archive/Old/x.md") is not None and vault.rules_signature == signature
    assert "not valid JSON" in caplog.text
    (vault.root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": []}))
    vault.reload_rules()  # fixed: its rules again, and a report kept on the old ones is found anew
    assert vault.exclusion_reason("Archive/Old/x.md") is None and vault.rules_signature != signature


def test_ignore_rules_apply_whatever_the_unicode_form(tmp_path: Path) -> None:
    """macOS writes NFD names and people type NFC: `Privé/` in NFD left Privé/p.md indexed."""
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    nfd, nfc_ = unicodedata.normalize("NFD", "é"), unicodedata.normalize("NFC", "é")
    (root / f"Priv{nfc_}").mkdir()
    (root / f"Priv{nfc_}" / "p.md").write_text("private")
    (root / f"R{nfd}gex").mkdir()  # an NFD name on disk, as macOS makes it
    (root / f"R{nfd}gex" / "z.md").write_text("regex")
    (root / f"Esc{nfc_}").mkdir()
    (root / f"Esc{nfc_}" / "e.md").write_text("escaped")
    (root / "Kept.md").write_text("kept")
    (root / ".indexignore").write_text(f"Priv{nfd}/\n")
    filters = [f"/R{nfc_}gex/", "/Esce\\u0301/"]  # NFC typed for an NFD name; an accent as a regex escape
    (root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": filters}))
    vault = Vault(root)
    assert [f.path for f in vault.scan().notes] == ["Kept.md"]
    for rel in (f"Priv{nfc_}/p.md", f"Priv{nfd}/p.md", f"R{nfd}gex/z.md", f"R{nfc_}gex/z.md", f"Esc{nfc_}/e.md"):
        assert vault.confine(rel) is None, rel
        assert vault.exclusion_reason(unicodedata.normalize("NFC", rel)) is not None, rel


def test_hardlinks_are_refused_unless_allowed(tmp_path: Path) -> None:
    """A hard link inside the vault served a file outside it, in .obsidian/ and in an ignored folder."""
    root = tmp_path / "vault"
    (root / "Private").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / ".indexignore").write_text("Private/\n")
    outside = tmp_path / "outside.md"
    outside.write_text("outside canary")
    (root / "Private" / "diary.md").write_text("diary canary")
    (root / ".obsidian" / "workspace.md").write_text("workspace canary")
    for name, target in (("out.md", outside), ("diary.md", root / "Private" / "diary.md"),
                         ("ws.md", root / ".obsidian" / "workspace.md")):
        os.link(target, root / name)
    (root / "plain.md").write_text("plain")
    vault = Vault(root)
    scan = vault.scan()
    assert [f.path for f in scan.notes] == ["plain.md"]
    assert sorted(s.path for s in scan.skipped if s.reason.startswith("hard-linked")) == ["diary.md", "out.md", "ws.md"]
    for name in ("out.md", "diary.md", "ws.md"):
        assert vault.confine(name) is None
        with pytest.raises(UnreadableNote, match="hard-linked"):
            vault.read_note(name)
    allowed = Vault(root, allow_hardlinks=True)
    assert sorted(f.path for f in allowed.scan().notes) == ["diary.md", "out.md", "plain.md", "ws.md"]
    assert allowed.read_note("out.md").text == "outside canary"


def test_the_hardlink_setting_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sidecar.config import from_env

    monkeypatch.setenv("SIDECAR_ALLOW_HARDLINKS", "0")
    assert from_env(tmp_path).allow_hardlinks is False
    monkeypatch.setenv("SIDECAR_ALLOW_HARDLINKS", "1")
    assert from_env(tmp_path).allow_hardlinks is True
    assert Vault.for_settings(from_env(tmp_path)).allow_hardlinks is True


def test_a_credential_in_a_file_or_folder_name_is_never_stored_or_served(tmp_path: Path) -> None:
    """Secrets in file and folder names were stored and served as the note's path."""
    root = tmp_path / "vault"
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ2c4D"
    (root / f"keys {token}").mkdir(parents=True)
    (root / f"keys {token}" / "n.md").write_text("# N\n")
    (root / f"{token}.md").write_text("# T\n")
    (root / f"{token}.png").write_bytes(b"\x89PNG")
    (root / "plain.md").write_text("# P\n")
    vault = Vault(root)
    scan = vault.scan()
    assert [f.path for f in scan.notes] == ["plain.md"] and scan.attachments == []
    assert len(scan.skipped) == 3 and all(token not in s.path and "[REDACTED:github]" in s.path for s in scan.skipped)
    assert vault.confine(f"{token}.md") is None

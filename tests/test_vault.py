import codecs
import json
import os
from pathlib import Path

import pytest

from sidecar.vault import UnreadableNote, Vault, decode_note


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
    assert [(s.path, s.reason.split(":")[0]) for s in scan.skipped] == [("big.md", "too large")]


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
    "", "Nope.md", "Archive/../../outside/secret.md",
])
def test_confine_refuses_everything_outside_or_excluded(vault: Vault, bad: str) -> None:
    assert vault.confine(bad) is None


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

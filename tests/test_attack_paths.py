"""Path confinement under attack (bench/attack/paths.py): the quick suite on both ports, plus the
regressions it found, pinned at the Vault level."""

from __future__ import annotations

import os
import threading
import unicodedata
from pathlib import Path

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.ingest.vault import UnreadableNote, Vault
from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_quick_suite_on_both_ports(tmp_path: Path) -> None:
    result = load("paths").run(quick=True, out=tmp_path, race_seconds=2.0)
    assert result.ok, result.failures[:10]
    assert result.figures["inputs"] >= 100 and result.figures["leaks"] == 0
    assert result.figures["answers_differing_present_vs_absent"] == 0


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "Private").mkdir(parents=True)
    (root / ".indexignore").write_text("Private/\n")
    (root / "Private" / "secret.md").write_text("EXCLUDEDCANARY")
    (root / "Note.md").write_text("# Note\ninside text\n")
    (tmp_path / "outside.md").write_text("OUTSIDECANARY")
    return root


def test_symlink_to_an_excluded_file_is_neither_indexed_nor_read(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    (root / "InLink.md").symlink_to(Path("Private") / "secret.md")
    vault = Vault(root)
    assert [f.path for f in vault.scan().notes] == ["Note.md"]
    assert vault.confine("InLink.md") is None
    with pytest.raises(UnreadableNote):
        vault.read_note("InLink.md")


def test_nfd_file_names_are_indexed_and_readable_by_their_nfc_path(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    (root / unicodedata.normalize("NFD", "Noël.md")).write_text("# Noël\nNFDTEXT\n")
    core = VaultIndex(Settings(vault=root, index_dir=tmp_path / "idx"), load_model=False)
    try:
        report = core.index()
        assert not report.skipped, report.skipped
        assert "NFDTEXT" in core.read_note("Noël.md")["text"]
        assert core.read_note(unicodedata.normalize("NFD", "Noël.md"))["path"] == "Noël.md"
    finally:
        core.close()


def test_a_symlink_swapped_during_reads_never_yields_the_outside_file(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    link = root / "Race.md"
    link.symlink_to("Note.md")
    vault = Vault(root)
    stop = threading.Event()

    def swap() -> None:
        tmp = root / ".swap"
        while not stop.is_set():
            for target in (tmp_path / "outside.md", Path("Note.md")):
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(target)
                os.replace(tmp, link)

    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    reads = attempts = 0
    try:
        # Bounded by work, not by a clock: 20,000 attempts, stopping once 200 reads have been checked.
        while attempts < 20_000 and reads < 200:
            attempts += 1
            if vault.confine("Race.md") is None:
                continue
            try:
                text = vault.read_note("Race.md").text
            except UnreadableNote:
                continue
            reads += 1
            assert "OUTSIDECANARY" not in text
    finally:
        stop.set()
        thread.join()
    assert reads > 0

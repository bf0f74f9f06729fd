"""Secrets under attack (bench/attack/secrets_leak.py): redaction per kind, false positives, zero
secret bytes in answers and index files, and nothing left after a redaction-rule change."""

from __future__ import annotations

import re
import secrets
import string
from pathlib import Path

import pytest

import sidecar.ingest.redact as redact_module
from sidecar.config import Settings
from sidecar.core import REDACTION_RULES, VaultIndex, redaction_rules
from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_quick_suite(tmp_path: Path) -> None:
    result = load("secrets_leak").run(quick=True, out=tmp_path, hub=False)
    assert result.ok, result.failures[:5]
    assert result.figures["min_kind_pct"] >= 99.0 and result.figures["fp_per_10k_lines"] <= 1.0
    assert result.figures["secret_bytes_in_answers"] == 0 and result.figures["secret_bytes_in_index_files"] == 0
    assert result.figures["rule_change_found_before"] > 0 and result.figures["rule_change_left_after"] == 0


def test_a_rule_change_leaves_no_old_secret_in_the_index_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unchanged files were skipped by size+mtime, so text stored under the old rules stayed; and what
    was rewritten stayed in FTS5 segments, free pages and the WAL."""
    suite = load("secrets_leak")
    token = "ACME-" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "launch.md").write_text(f"# Launch\n\nThe launch phrase is {token} today.\n\n" + "words here. " * 400)
    (vault / "other.md").write_text("# Other\n\nnothing to see\n")
    core = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx"), load_model=False)
    try:
        core.index()
        assert suite.scan_bytes(suite.index_files(tmp_path / "idx"), [token])  # the stock rules miss it
        assert core.store.get_meta(REDACTION_RULES) == redaction_rules()
        stricter = redact_module._Rule("generic_secret", 95, re.compile(r"ACME-[A-Za-z0-9]{32}"), lambda m: m.span())
        monkeypatch.setattr(redact_module, "_RULES", (*redact_module._RULES, stricter))
        assert core.store.get_meta(REDACTION_RULES) != redaction_rules()
        report = core.index()
        assert report.updated == 2 or report.full
        assert suite.scan_bytes(suite.index_files(tmp_path / "idx"), [token]) == []
        assert "[REDACTED:generic_secret]" in core.read_note("launch.md")["text"]
        assert core.store.get_meta(REDACTION_RULES) == redaction_rules()
    finally:
        core.close()

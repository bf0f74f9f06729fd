"""Watcher convergence under attack (bench/attack/watcher.py): bursts against a live server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex
from tests.attacksuite import load

pytestmark = pytest.mark.slow


def test_bursts_converge_on_the_disk(tmp_path: Path) -> None:
    result = load("watcher").run(quick=True, out=None, runs=2, ops=600, reconcile=2.0)
    assert result.ok, result.failures[:5]
    assert result.figures["converged"] == 2


def test_a_same_size_rewrite_within_one_timestamp_tick_is_not_lost(tmp_path: Path) -> None:
    """Coarse file clocks: a rewrite right after the indexer read the file can keep size and mtime."""
    vault = tmp_path / "vault"
    vault.mkdir()
    note = vault / "a.md"
    note.write_text("# A\nversion AAAA\n")
    core = VaultIndex(Settings(vault=vault, index_dir=tmp_path / "idx"), load_model=False)
    try:
        core.index()
        st = note.stat()
        note.write_text("# A\nversion BBBB\n")
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same tick: size and mtime unchanged
        assert core.index().updated == 1
        assert [r["path"] for r in core.search("BBBB", mode="lexical")["results"]] == ["a.md"]
    finally:
        core.close()


def test_serve_has_a_reconcile_interval_flag() -> None:
    from sidecar.commands.cli import build_parser

    args = build_parser().parse_args(["serve", "--vault", ".", "--reconcile-seconds", "2.5"])
    assert args.reconcile_seconds == 2.5

"""Shared fixtures: real vaults on disk, real indexes, the real model. Nothing of ours is mocked."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sidecar.config import Settings
from sidecar.core import VaultIndex

ROOT = Path(__file__).resolve().parent.parent
DEMO_VAULT = ROOT / "examples" / "demo-vault"

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the product never needs the hub; prove it


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    """The demo vault, indexed once per session (read-only use)."""
    index = VaultIndex(Settings(vault=DEMO_VAULT, index_dir=tmp_path_factory.mktemp("demo-index")))
    index.index()
    yield index
    index.close()


@pytest.fixture()
def demo_copy(tmp_path: Path) -> Path:
    """A writable copy of the demo vault, for tests that edit notes."""
    target = tmp_path / "vault"
    shutil.copytree(DEMO_VAULT, target, symlinks=True)
    return target


WriteNote = Callable[[str, str], Path]


@pytest.fixture()
def write_note(tmp_path: Path) -> WriteNote:
    root = tmp_path / "vault"
    root.mkdir(exist_ok=True)

    def write(rel: str, text: str) -> Path:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


def open_index(vault: Path, index_dir: Path, **kwargs: object) -> VaultIndex:
    return VaultIndex(Settings(vault=vault, index_dir=index_dir), **kwargs)  # type: ignore[arg-type]


@contextlib.contextmanager
def vault_of(tmp_path: Path, notes: dict[str, str], **kwargs: object) -> Iterator[VaultIndex]:
    """A vault of these notes (vault path -> text) under tmp_path, indexed; closed after."""
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    for path, text in notes.items():
        (vault / path).parent.mkdir(parents=True, exist_ok=True)
        (vault / path).write_text(text, encoding="utf-8")
    index = open_index(vault, tmp_path / "index", **kwargs)
    try:
        index.index()
        yield index
    finally:
        index.close()

"""Index, WAL, SHM and token files are 0600 in 0700 folders whatever the umask (docs/security.md)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.commands.cli import main
from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.serve.tokens import rpc_token


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def loose_umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def test_a_new_index_is_private_whatever_the_umask(tmp_path: Path, loose_umask: int) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nsecret plans\n")
    existing = tmp_path / "home-cache"
    existing.mkdir()
    os.chmod(existing, 0o755)
    index_dir = existing / "vault-sidecar" / "deeper" / "idx"
    core = VaultIndex(Settings(vault=vault, index_dir=index_dir), load_model=False)
    try:
        core.index()
        core.reader().execute("SELECT count(*) FROM chunks").fetchone()
        token, token_file = rpc_token(index_dir)
        assert token and token_file is not None
        files = [index_dir / "index.sqlite3", index_dir / "index.sqlite3-wal", index_dir / "index.sqlite3-shm",
                 token_file]
        assert all(f.exists() for f in files), sorted(p.name for p in index_dir.iterdir())
        assert {f.name: oct(mode(f)) for f in files} == {f.name: "0o600" for f in files}
        for folder in (index_dir, index_dir.parent, index_dir.parent.parent):  # every folder we made
            assert mode(folder) == 0o700, folder
        assert mode(existing) == 0o755  # a folder that was there (~/.cache) stays as the user has it
    finally:
        core.close()


def test_an_index_made_readable_by_an_older_version_is_tightened(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    index_dir = tmp_path / "idx"
    core = VaultIndex(Settings(vault=vault, index_dir=index_dir), load_model=False)
    core.close()
    db = index_dir / "index.sqlite3"
    os.chmod(db, 0o644)
    os.chmod(index_dir, 0o755)
    (index_dir / "rpc-token").write_text("old\n")
    os.chmod(index_dir / "rpc-token", 0o644)
    core = VaultIndex(Settings(vault=vault, index_dir=index_dir), load_model=False)
    try:
        assert mode(db) == 0o600 and mode(index_dir) == 0o700
        os.environ.pop("SIDECAR_RPC_TOKEN", None)
        rpc_token(index_dir)
        assert mode(index_dir / "rpc-token") == 0o600
    finally:
        core.close()


def test_a_folder_of_the_users_own_files_is_never_taken_for_the_index(tmp_path: Path) -> None:
    """`--index ~` (or any folder holding other files) would make that folder 0700: refused, untouched."""
    vault, own = tmp_path / "vault", tmp_path / "documents"
    vault.mkdir()
    own.mkdir(mode=0o755)
    os.chmod(own, 0o755)
    (own / "readme.txt").write_text("mine\n")
    with pytest.raises(ValueError, match="holds other files and no index"):
        VaultIndex(Settings(vault=vault, index_dir=own), load_model=False)
    assert mode(own) == 0o755 and sorted(p.name for p in own.iterdir()) == ["readme.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    VaultIndex(Settings(vault=vault, index_dir=empty), load_model=False).close()  # a new or empty folder is taken
    assert mode(empty) == 0o700


def test_reading_commands_never_make_an_index_where_a_mistyped_path_points(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    vault, typo = tmp_path / "vault", tmp_path / "idnex"
    vault.mkdir()
    for command in (["status"], ["search", "anything"], ["health"], ["related", "Home"], ["context", "anything"]):
        assert main([*command, "--vault", str(vault), "--index", str(typo)]) == 1
        assert f"index not built yet: run `sidecar index --vault {vault} --index {typo}`" in capsys.readouterr().err
    assert not typo.exists()

"""Files only the user can read: 0700 folders and 0600 files, whatever the umask.

The index holds the text of every note, the token files open both ports: other local users are
in the threat model (docs/security.md). The modes are set explicitly after creating, because a
umask only ever removes bits and some (0o777) would leave the owner locked out as well.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")  # SQLite gives these the database file's mode


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as 0700; an existing folder of ours is tightened too.
    Parents that already existed (~/.cache) are left as the user has them."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for folder in missing:
        os.chmod(folder, DIR_MODE)
    if path not in missing and path.stat().st_uid == os.getuid():  # never someone else's folder (/tmp)
        with contextlib.suppress(PermissionError):
            os.chmod(path, DIR_MODE)
    return path


def private_file(path: Path) -> None:
    """Create `path` as an empty 0600 file if it is missing, and make it (and any SQLite companion
    files next to it) 0600 if it exists."""
    private_dir(path.parent)
    if not os.path.lexists(path):
        # Only when missing: closing any descriptor of an open database drops every POSIX lock this
        # process's SQLite connections hold on it (fcntl locks belong to the process), and another
        # process then takes itself for the last user and deletes the -shm under them (disk I/O error).
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    for candidate in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_COMPANIONS)):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(candidate, FILE_MODE)


def write_private(path: Path, value: str) -> None:
    """Write a small text file (a token) that only the user can read."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)  # an older file keeps its mode through O_CREAT
        handle.write(value + "\n")

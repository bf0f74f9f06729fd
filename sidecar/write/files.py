"""File operations inside the vault that cannot be steered out of it.

Every operation walks from the vault root one folder at a time with O_NOFOLLOW and works
relative to the folder's descriptor, so a folder or file swapped for a symlink between a check
and the write makes the write fail instead of landing outside. Writes go to a hidden temporary
file in the same folder (the scan and the watcher ignore dot-files) that is renamed over the
note: a reader, Obsidian included, sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY = getattr(os, "O_DIRECTORY", 0)
TRASH = ".trash"  # Obsidian's own "move to the vault's trash" folder
# Every call below works relative to a folder descriptor; where the OS cannot (Windows), writes stay off.
SUPPORTED = {os.open, os.stat, os.mkdir, os.rename, os.unlink, os.rmdir} <= os.supports_dir_fd  # (replace: as rename)


class UnsafePath(Exception):
    """A path component is a symlink or not what it should be: refused, nothing written."""


class VaultFiles:
    """`locate` maps a vault path (NFC) to its spelling on disk (names made on macOS are often NFD)."""

    def __init__(self, root: Path, locate: Callable[[str], str] = lambda rel: rel) -> None:
        self.root = root
        self.locate = locate

    @contextlib.contextmanager
    def folder(self, rel_folder: str, create: bool = False, made: list[str] | None = None) -> Iterator[int]:
        """The folder's descriptor; `create` makes missing folders, and `made` gets the topmost one made."""
        fd = os.open(self.root, os.O_RDONLY | DIRECTORY)
        try:
            walked: list[str] = []
            for part in [p for p in rel_folder.split("/") if p]:
                walked.append(part)
                child, new = _open_child(fd, part, create)
                if new and made is not None and not made:
                    made.append("/".join(walked))
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def read(self, rel: str) -> bytes:
        folder, name = split(self.locate(rel))
        with self.folder(folder) as dir_fd:
            try:
                fd = os.open(name, os.O_RDONLY | NOFOLLOW, dir_fd=dir_fd)
            except OSError as exc:
                if isinstance(exc, FileNotFoundError):
                    raise
                raise UnsafePath(rel) from exc
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    raise UnsafePath(rel)
                return handle.read()

    def write(self, rel: str, data: bytes, must_be_new: bool) -> str | None:
        """Returns the topmost folder it had to make for a new note (None: none)."""
        folder, name = split(self.locate(rel))
        made: list[str] = []
        with self.folder(folder, create=must_be_new, made=made) as dir_fd:
            mode = self._existing_mode(dir_fd, name, must_be_new)
            temp = f".sidecar-{secrets.token_hex(6)}.tmp"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o644, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                    if mode is not None:
                        os.fchmod(handle.fileno(), mode)
                if must_be_new and _exists(dir_fd, name):
                    raise FileExistsError(rel)
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
        return made[0] if made else None

    @staticmethod
    def _existing_mode(dir_fd: int, name: str, must_be_new: bool) -> int | None:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            if must_be_new:
                return None
            raise
        if must_be_new:
            raise FileExistsError(name)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(name)
        return stat.S_IMODE(st.st_mode)

    def move(self, src: str, dst: str) -> str | None:
        """Rename within the vault; the destination must not exist (folders are made as needed).
        Returns the topmost folder it made (None: none)."""
        (src_folder, src_name), (dst_folder, dst_name) = split(self.locate(src)), split(self.locate(dst))
        made: list[str] = []
        with self.folder(src_folder) as src_fd, self.folder(dst_folder, create=True, made=made) as dst_fd:
            if _exists(dst_fd, dst_name):
                raise FileExistsError(dst)
            if stat.S_ISLNK(os.stat(src_name, dir_fd=src_fd, follow_symlinks=False).st_mode):
                raise UnsafePath(src)
            os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return made[0] if made else None

    def remove_empty(self, rel_folder: str, top: str) -> None:
        """Remove `rel_folder`, then each parent up to and including `top`, while they are empty: the
        folders an edit made, left behind when its undo moves the note out. Never a folder above `top`."""
        if rel_folder != top and not rel_folder.startswith(f"{top}/"):
            return
        parts = self.locate(rel_folder).split("/")
        for depth in range(len(parts), len(top.split("/")) - 1, -1):
            parent, name = "/".join(parts[:depth - 1]), parts[depth - 1]
            try:
                with self.folder(parent) as parent_fd:
                    os.rmdir(name, dir_fd=parent_fd)
            except (OSError, UnsafePath):  # not empty (the user put something there), or gone: leave it
                return

    def trash(self, rel: str) -> str:
        """Move a note into the vault's .trash/ as Obsidian does; returns where it went."""
        name = split(self.locate(rel))[1]
        with self.folder(TRASH, create=True) as trash_fd:
            stem, suffix = os.path.splitext(name)
            candidate, n = name, 1
            while _exists(trash_fd, candidate):
                candidate, n = f"{stem} {n}{suffix}", n + 1
        target = f"{TRASH}/{candidate}"
        self.move(rel, target)
        return target


def _open_child(fd: int, part: str, create: bool) -> tuple[int, bool]:
    """The child folder's descriptor, and whether it was made just now."""
    try:
        return os.open(part, os.O_RDONLY | DIRECTORY | NOFOLLOW, dir_fd=fd), False
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:  # ELOOP / ENOTDIR: a symlink or a file where a folder should be
        raise UnsafePath(part) from exc
    os.mkdir(part, 0o755, dir_fd=fd)
    return os.open(part, os.O_RDONLY | DIRECTORY | NOFOLLOW, dir_fd=fd), True


def split(rel: str) -> tuple[str, str]:
    folder, _, name = rel.rpartition("/")
    return folder, name


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True

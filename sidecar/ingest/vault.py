"""The vault on disk: which files count, reading them safely, and path confinement.

Every path that leaves this module is vault-relative, uses forward slashes and is NFC.
Nothing here ever writes into the vault.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import pathspec

from sidecar.config import SETTING, Settings
from sidecar.ingest.redact import redact

log = logging.getLogger(__name__)

INDEXIGNORE = ".indexignore"
NOTE_SUFFIX = ".md"
# Sniffing the head is enough: a NUL in real text notes means a binary file named .md.
SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class VaultFile:
    path: str  # vault-relative, "/" separated, NFC
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Skip:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class ScanResult:
    notes: list[VaultFile]
    attachments: list[str]  # other files, for resolving embeds of images/PDFs
    skipped: list[Skip]


@dataclass(frozen=True, slots=True)
class NoteText:
    text: str  # decoded, "\n" line endings
    warnings: tuple[str, ...]


class UnreadableNote(Exception):
    """A note that cannot be indexed; the message is the skip reason shown to the user."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _link_refusal(entry: os.DirEntry[str]) -> str | None:
    """Why the walk leaves out what it met (None: a folder it walks, or a file not named as a note)."""
    try:
        if entry.is_symlink() and entry.is_dir(follow_symlinks=True):
            return "a link to a folder: the index never follows one (it could lead anywhere); move the folder in"
        if entry.is_dir(follow_symlinks=False) or not entry.name.lower().endswith(NOTE_SUFFIX):
            return None
        if entry.is_symlink():
            return "a link out of the vault, to a hidden or excluded file, or to nothing: not indexed"
    except OSError:
        return None  # vanished meanwhile
    return "not a regular file (a pipe or a device): not indexed"


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


class Vault:
    def __init__(self, root: Path, extra_excludes: tuple[str, ...] = (), max_file_bytes: int = Settings.max_file_bytes,
                 allow_hardlinks: bool = Settings.allow_hardlinks) -> None:
        self.root = root.expanduser().resolve()
        refuse_unusable_vault(self.root)
        self.max_file_bytes = max_file_bytes
        self.allow_hardlinks = allow_hardlinks
        self._path_secrets: dict[str, str | None] = {}
        self.extra_excludes = extra_excludes
        self._obsidian_prefixes: tuple[str, ...] = ()  # Obsidian's Excluded files: the last ones read (reload_rules)
        self._obsidian_regexes: tuple[re.Pattern[str], ...] = ()
        self.reload_rules()

    @classmethod
    def for_settings(cls, settings: Settings) -> Vault:
        return cls(settings.vault, settings.exclude, settings.max_file_bytes, settings.allow_hardlinks)

    # ---- ignore rules -------------------------------------------------------------------
    def reload_rules(self) -> None:
        """Re-read .indexignore and Obsidian's excluded files (they can change while serving)."""
        lines = list(self.extra_excludes)
        ignore_text = read_small_file(self.root / INDEXIGNORE)
        if ignore_text is not None:
            lines += ignore_text.splitlines()
        # Paths here are NFC (macOS writes NFD names, people type NFC): so is every rule.
        self._spec = pathspec.GitIgnoreSpec.from_lines([nfc(line) for line in lines])
        filters = _obsidian_filters(self.root)
        if filters is None:  # a half-written save or a sync conflict: the last rules read stay in force
            log.warning(".obsidian/app.json is not valid JSON: the Excluded files read before it (if any) stay in force")
        else:
            self._obsidian_prefixes, self._obsidian_regexes = filters
        # What the rules are, for reports kept between calls (the health report): equal rules, equal signature.
        self.rules_signature = hash((tuple(lines), self._obsidian_prefixes,
                                     tuple(rx.pattern for rx in self._obsidian_regexes)))

    def exclusion_reason(self, rel: str) -> str | None:
        """Why a vault-relative path is not served, or None when it may be."""
        # Asked for every file of every scan: string tests first, the pattern matcher only if there are patterns.
        if rel.startswith(".") or "/." in rel:  # a component starting with a dot (.indexignore too)
            return "hidden folder or file"
        # Both forms: a rule can spell an accent as an escape (`e\u0301`), which no normalisation reaches.
        spellings = (rel,) if rel.isascii() else (rel, unicodedata.normalize("NFD", rel))
        if self._spec.patterns and any(self._spec.match_file(p) for p in spellings):
            return "excluded by .indexignore"
        if rel.startswith(self._obsidian_prefixes) or any(rx.search(p) for rx in self._obsidian_regexes
                                                           for p in spellings):
            return "excluded in Obsidian settings (Excluded files)"
        return None

    # ---- scanning -----------------------------------------------------------------------
    def event_paths(self, changed: Iterable[str], indexed: Callable[[str], bool] | None = None) -> list[str] | None:
        """The notes a batch of file events names, vault-relative, for indexing just those; None when
        only a scan can tell what changed: a folder came or went (its notes with it), an attachment
        did (links may resolve to it), the ignore rules changed, or a name needs the scan's own rules
        (a link, a credential in the name). Hidden, excluded and outside paths are left out, and so is
        a file that is not a note and is gone again when `indexed` (does the index hold this attachment,
        or notes in this folder?) says the index never had it: an editor's temporary file."""
        notes: list[str] = []
        for path in changed:
            try:
                rel = nfc(Path(path).relative_to(self.root).as_posix())
            except ValueError:
                return None  # the watcher spells the vault another way (a symlinked folder): let the scan look
            if rel in (INDEXIGNORE, ".obsidian/app.json"):
                return None
            if self.exclusion_reason(rel):
                continue
            full = self.root / rel
            if indexed is not None and not rel.lower().endswith(NOTE_SUFFIX) and not os.path.lexists(full) \
                    and not indexed(rel):
                continue
            if not rel.lower().endswith(NOTE_SUFFIX) or os.path.islink(full) or os.path.isdir(full):
                return None
            if self._path_with_secret(rel) is not None:
                return None
            notes.append(rel)
        return notes

    def scan(self) -> ScanResult:
        notes: list[VaultFile] = []
        attachments: list[str] = []
        skipped: list[Skip] = []
        def refused(rel: str, why: str) -> None:
            if not self.exclusion_reason(rel):
                skipped.append(Skip(self.shown_path(rel), why))

        for rel, st in self.walk(refused):
            if self.exclusion_reason(rel):
                continue
            if (shown := self._path_with_secret(rel)) is not None:  # never stored or served under that name
                skipped.append(Skip(shown, "the file or folder name contains a credential: rename it to index it"))
                continue
            if not rel.lower().endswith(NOTE_SUFFIX):
                attachments.append(rel)
            elif (refusal := self.file_refusal(st)) is not None:
                skipped.append(Skip(rel, refusal))
            else:
                notes.append(VaultFile(rel, st.st_size, st.st_mtime_ns))
        return ScanResult(notes, attachments, skipped)

    def _path_with_secret(self, rel: str) -> str | None:
        """The path redacted when a name in it holds a credential (a pasted token as a file name),
        else None. Remembered per path: a scan asks for every file, and names rarely change."""
        if rel not in self._path_secrets:
            if len(self._path_secrets) > 500_000:
                self._path_secrets.clear()
            redacted = redact(rel.replace("/", "\n")) if _may_hold_secret(rel) else None
            if redacted is None or not redacted.findings:
                self._path_secrets[rel] = None
                return None
            self._path_secrets[rel] = redacted.text.replace("\n", "/")
        return self._path_secrets[rel]

    def shown_path(self, rel: str) -> str:
        """The path as the index stores and serves it: redacted where a name holds a credential."""
        return self._path_with_secret(rel) or rel

    def walk(self, refused: Callable[[str, str], None] | None = None) -> Iterator[tuple[str, os.stat_result]]:
        """Files below the root, sorted; hidden folders are pruned, symlinks must stay inside the vault.
        `refused(path, why)` hears of the links not followed and the folders it cannot read (a note behind
        them would be missing unsaid); a vault folder it cannot read at all raises.

        os.scandir hands out each entry's type without another system call, which keeps a
        no-change reconcile of 17k files well under a second."""
        stack = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except FileNotFoundError:
                continue  # vanished since it was listed: the next run looks again
            except OSError as exc:  # unreadable (permissions): said, never "complete" without its notes
                if not prefix:
                    raise OSError(exc.errno, f"cannot read the vault folder: {exc.strerror}", folder) from exc
                if refused is not None:
                    refused(nfc(prefix.rstrip("/")), f"cannot read this folder ({exc.strerror}): its notes are not indexed")
                continue
            for entry in reversed([e for e in entries if self._walkable_dir(e)]):
                stack.append((entry.path, prefix + entry.name + "/"))
            for entry in entries:
                st = self._entry_stat(entry)
                if st is not None:
                    yield nfc(prefix + entry.name), st
                elif refused is not None and not entry.name.startswith(".") and (why := _link_refusal(entry)):
                    refused(nfc(prefix + entry.name), why)

    @staticmethod
    def _walkable_dir(entry: os.DirEntry[str]) -> bool:
        try:  # a symlinked folder could point anywhere: never walk it
            return not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
        except OSError:
            return False

    def _entry_stat(self, entry: os.DirEntry[str]) -> os.stat_result | None:
        try:
            if entry.is_dir(follow_symlinks=False):
                return None
            st = entry.stat(follow_symlinks=True)
        except OSError:
            return None  # vanished between listing and stat, or a dangling link
        if not stat.S_ISREG(st.st_mode):
            return None
        if entry.is_symlink() and not self._servable_real(Path(entry.path).resolve()):
            return None  # a link out of the vault, or to a hidden or excluded file inside it
        return st

    def _inside(self, real: Path) -> bool:
        return real == self.root or self.root in real.parents

    def _servable_real(self, real: Path) -> bool:
        """A real (resolved) path is inside the vault and not hidden or excluded there."""
        if real == self.root or not self._inside(real):
            return False
        return self.exclusion_reason(nfc(real.relative_to(self.root).as_posix())) is None

    def disk_path(self, rel: str) -> Path:
        """The file for a vault-relative NFC path. Names made on macOS are often NFD on disk: where
        the NFC spelling does not exist, each missing component is looked up by its NFC form."""
        full = self.root / rel
        if os.path.lexists(full):
            return full
        current = self.root
        for part in rel.split("/"):
            candidate = current / part
            if not os.path.lexists(candidate):
                try:
                    match = next((name for name in os.listdir(current) if nfc(name) == part), None)
                except OSError:
                    return full
                if match is None:
                    return full
                candidate = current / match
            current = candidate
        return current

    # ---- confinement --------------------------------------------------------------------
    def confine(self, user_path: str) -> str | None:
        """Map untrusted input to a servable vault-relative path, or None.

        None covers "outside the vault", "excluded" and "does not exist" alike, so a caller
        cannot probe what lies outside.
        """
        rel = self._relative(user_path)
        if rel is None:
            return None
        full = self.disk_path(rel)
        try:
            real = full.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if not real.is_file() or not self._servable_real(real) or self.file_refusal(real.stat()) is not None:
            return None  # outside, a link into an excluded place, or a file the index refuses (hardlinks)
        return rel

    def confine_new(self, user_path: str) -> str | None:
        """Map untrusted input to a servable vault-relative path where nothing exists yet (a note to
        create or move to), or None. Every folder on the way must be a real folder, not a link."""
        rel = self._relative(user_path)
        if rel is None or os.path.lexists(self.root / rel):
            return None
        folder = self.root
        for part in rel.split("/")[:-1]:
            folder = folder / part
            if os.path.islink(folder) or (os.path.lexists(folder) and not folder.is_dir()):
                return None
        return rel

    def _relative(self, user_path: str) -> str | None:
        """The path rules of confine(): relative, no `..`, no odd spellings, not hidden or excluded."""
        if not user_path or "\x00" in user_path or "\\" in user_path or len(user_path) > 1024:
            return None
        if not user_path.isascii() and _LONE_SURROGATE.search(user_path):
            return None  # no file can have that name: the OS calls would raise on it
        candidate = nfc(user_path)
        if candidate.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", candidate):
            return None
        parts = [p for p in candidate.split("/") if p not in ("", ".")]
        if not parts or any(p == ".." or p != p.strip() or p.endswith(".") for p in parts):
            return None
        rel = "/".join(parts)
        if self.exclusion_reason(rel) or self._path_with_secret(rel) is not None:
            return None
        return rel

    # ---- reading ------------------------------------------------------------------------
    def read_note(self, rel: str) -> NoteText:
        """Decode a note; raises UnreadableNote with a reason the user can act on."""
        full = self.disk_path(rel)
        try:
            with open_regular(full) as handle:
                if not self._opened_servable(handle.fileno(), full):
                    raise UnreadableNote("links out of the vault or to an excluded file")
                st = os.fstat(handle.fileno())
                refusal = self.file_refusal(st)
                if refusal is not None:
                    raise UnreadableNote(refusal)
                data = handle.read(self.max_file_bytes + 1)
        except FileNotFoundError as exc:
            raise UnreadableNote("vanished while being read") from exc
        except OSError as exc:
            raise UnreadableNote(f"cannot read: {exc.strerror or exc}") from exc
        return decode_note(data)

    def file_refusal(self, st: os.stat_result) -> str | None:
        """Why a note's file (by its stat) is not indexed, or None. The one place for both rules."""
        if st.st_size > self.max_file_bytes:
            return f"too large: {st.st_size:,} bytes (limit {self.max_file_bytes:,}, {SETTING['max_file_bytes'].flag})"
        if st.st_nlink > 1 and not self.allow_hardlinks:
            # The other name may be outside the vault, in .obsidian/ or excluded: nothing here can tell.
            allow = SETTING["allow_hardlinks"]
            return (f"hard-linked ({st.st_nlink} names for one file): not indexed unless "
                    f"{allow.env}=1 or {allow.flag} (docs/security.md)")
        return None


    def _opened_servable(self, fd: int, full: Path) -> bool:
        """Check the file actually opened, not the path: a symlink (or a folder on the way) swapped
        between a check and the open must not hand out a file from outside the vault."""
        opened = _fd_path(fd)
        if opened is not None:
            return self._servable_real(Path(opened))
        try:  # no way to ask the OS: the path must still resolve inside, to the very file we hold
            real = full.resolve(strict=True)
            held, named = os.fstat(fd), os.stat(real)
        except (OSError, RuntimeError):
            return False
        return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino) and self._servable_real(real)


# Every credential the rules know is a long run without spaces that has a digit, or is named.
_TOKENISH = re.compile(r"(?=[^\s/]{0,200}?\d)[^\s/]{16,}")
_NAMED = ("pass", "secret", "token", "key", "sig=", "pin", "pwd", "auth", "://")


def _may_hold_secret(rel: str) -> bool:
    """A cheap test before the redaction rules: most file names cannot hold a credential."""
    lowered = rel.lower()
    return _TOKENISH.search(rel) is not None or any(word in lowered for word in _NAMED)


class NotRegularFile(OSError):
    """A FIFO, socket or device where a note should be: opening or reading it could block forever."""

    def __init__(self) -> None:
        super().__init__(0, "not a regular file (a FIFO, socket or device)")


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading, never blocking: O_NONBLOCK makes the open of a FIFO return at
    once (a plain open waits for a writer, forever), and the fstat refuses it before any read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small_file(path: Path, limit: int = 1_000_000) -> str | None:
    """A settings file (.indexignore, .obsidian/app.json) as text, or None when it is missing, not a
    regular file or unreadable. Bounded: a huge one is read up to `limit` bytes."""
    try:
        with open_regular(path) as handle:
            return handle.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def _fd_path(fd: int) -> str | None:
    """The real path of an open file from the OS (Linux /proc, macOS F_GETPATH), or None."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}").removesuffix(" (deleted)")
    except OSError:
        pass
    try:
        import fcntl  # noqa: PLC0415  (POSIX only)

        if hasattr(fcntl, "F_GETPATH"):
            raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
    except (ImportError, OSError):
        pass
    return None


def decode_note(data: bytes) -> NoteText:
    """UTF-8 (with or without BOM) or UTF-16 with a BOM; invalid bytes are replaced, not fatal."""
    warnings: list[str] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text = data.decode("utf-16", errors="replace")
        warnings.append("decoded as UTF-16")
    else:
        if b"\x00" in data[:SNIFF_BYTES]:
            raise UnreadableNote("binary content (NUL bytes) in a .md file")
        text = data.decode("utf-8-sig", errors="replace")
        if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
            warnings.append("invalid UTF-8 bytes were replaced")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return NoteText(text, tuple(warnings))


def refuse_unusable_vault(root: Path) -> None:
    """The vault is a folder that exists: the one check, for the commands too (before they make anything)."""
    if not root.is_dir():
        raise FileNotFoundError(f"vault folder not found: {root}" if not root.exists()
                                else f"the vault {root} is a file, not a folder: pass --vault with your vault's folder")


def _obsidian_filters(root: Path) -> tuple[tuple[str, ...], tuple[re.Pattern[str], ...]] | None:
    """Obsidian's "Excluded files": plain entries are path prefixes, /.../ entries are regexes. None when
    app.json is there but not JSON."""
    try:
        config = json.loads(read_small_file(root / ".obsidian" / "app.json") or "null")
    except ValueError:
        return None
    entries = config.get("userIgnoreFilters") if isinstance(config, dict) else None
    prefixes: list[str] = []
    regexes: list[re.Pattern[str]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, str) or not entry.strip():
            continue
        if len(entry) > 2 and entry.startswith("/") and entry.endswith("/"):
            try:
                regexes.append(re.compile(nfc(entry[1:-1])))
            except re.error:
                continue
        else:
            prefixes.append(nfc(entry.strip().lstrip("/")))
    return tuple(prefixes), tuple(regexes)

"""Edits to the vault for agents, off unless the user turns them on (`--allow-writes`).

Every edit: targets pass the same confinement as reads (`Vault.confine` for notes that exist,
`Vault.confine_new` for new ones; never hidden, ignored, outside or through a link); names the
content hash of the version it edits (a change made meanwhile is a Conflict, never overwritten);
saves the previous bytes in the history first; writes atomically through `files.VaultFiles`,
keeping encoding, line endings and the trailing newline; is indexed before it answers (through
the indexer's own lock, the single writer); and is logged with the client that made it.

What is refused is refused before anything is logged or written: text no note can hold (NUL, lone
surrogates), names Obsidian cannot hold or link to (`name_refusal`), a path that differs from an
existing one only in case, an edit that changes nothing. An edit that fails partway records exactly
the files it changed (undo_edit reverses them); one that changed nothing leaves no record.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import posixpath
import re
import threading
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from sidecar.errors import Conflict, InvalidParams, NotFound, SidecarError, VaultError
from sidecar.ingest.vault import NOTE_SUFFIX, UnreadableNote, decode_note, nfc
from sidecar.protocol_types import EditRecord, EditsResponse
from sidecar.retrieve.note_reads import find_section
from sidecar.store.history import Change, History
from sidecar.store.reads import links_into, name_is_free
from sidecar.write.files import UnsafePath, VaultFiles

if TYPE_CHECKING:
    from sidecar.retrieve.view import IndexView

    class WritableIndex(IndexView, Protocol):
        """What writes ask of the index beyond reports: the read path's note resolution, so that a
        path resolves for an edit exactly as it did for the read that gave its hash."""

        def resolve_note(self, ref: str) -> str: ...

log = logging.getLogger(__name__)

PLACEHOLDER = "[REDACTED:"  # what reads show instead of a credential
PROPERTY_KEY = re.compile(r"^[^\s:#\-'\"{}\[\],&*!|>%@`][^:\n]{0,99}$")
WIKILINK = re.compile(r"(!?\[\[)([^\]|#\n]*)((?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\])")
MD_LINK = re.compile(r"(!?\[[^\]\n]*\]\()(<[^>\n]*>|[^)\s]+)((?:\s+\"[^\"\n]*\")?\))")
NOT_TEXT = re.compile(r"[\x00\ud800-\udfff]")  # a NUL makes a note binary; a lone surrogate cannot be encoded
NAME_CHARS = '*"\\<>:|?#^[]'  # Obsidian refuses these in a name, or a [[link]] cannot reach it
RESERVED_NAME = re.compile(r"(CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(\..*)?", re.IGNORECASE)  # Windows, any extension
MAX_NAME_BYTES = 255  # one name, on every common file system
MAX_PATH_BYTES = 1000  # the vault's own path still fits under PATH_MAX (macOS: 1,024)


@dataclass(frozen=True, slots=True)
class TextFormat:
    """How a note is stored, so an edit writes it back the same way."""

    bom: bytes
    encoding: str
    newline: str
    final_newline: bool

    def encode(self, text: str) -> bytes:
        if self.final_newline and text and not text.endswith("\n"):
            text += "\n"
        elif not self.final_newline and text.endswith("\n"):
            text = text[:-1]
        return self.bom + text.replace("\n", self.newline).encode(self.encoding)


NEW_NOTE = TextFormat(b"", "utf-8", "\n", True)


def read_format(raw: bytes) -> tuple[str, TextFormat]:
    """The text ("\\n" line ends) and its format; a note that does not decode cleanly is refused: writing
    it back would replace its invalid bytes for good."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                          (codecs.BOM_UTF16_BE, "utf-16-be"), (b"", "utf-8")):
        if raw.startswith(bom):
            try:
                text = raw[len(bom):].decode(encoding)
            except UnicodeDecodeError:
                raise InvalidParams("this note is not valid text in its encoding: edit it in Obsidian",
                                    {"field": "path"}) from None
            break
    newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text else "\n"
    final = text.endswith(("\n", "\r"))
    return text.replace("\r\n", "\n").replace("\r", "\n"), TextFormat(bom, encoding, newline, final)


@dataclass(frozen=True, slots=True)
class Planned:
    """One file of an edit: `before` None creates `after` (from `data`, or by moving back the trash copy
    `trashed`); `after` None trashes `before`; `data` None keeps the bytes (a plain move); `old` is what
    `before` (or `trashed`) must still hold when the edit applies; `tidy`, the folder an undone edit made,
    goes once the move leaves it empty."""

    before: str | None
    after: str | None
    data: bytes | None
    old: bytes | None = None
    trashed: str | None = None
    tidy: str | None = None


@dataclass(frozen=True, slots=True)
class Current:
    path: str
    raw: bytes
    text: str
    fmt: TextFormat


class NoteWriter:
    def __init__(self, core: WritableIndex, history: History) -> None:
        self.core = core
        self.vault = core.vault
        self.files = VaultFiles(self.vault.root, self._on_disk)
        self.history = history
        self._key = history.hash_key()
        self._lock = threading.RLock()  # one edit at a time (an edit can span many files); a batch holds it
        self._echo_lock = threading.Lock()  # the event loop asks about echoes: never behind a whole edit
        self.on_edit: Callable[[EditRecord], None] | None = None  # the server tells the plugin
        self._written: dict[str, tuple[int, int] | None] = {}  # path -> (size, mtime) we left, None: gone

    # ---- hashes -----------------------------------------------------------------------------
    def content_hash(self, text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=self._key, digest_size=12).hexdigest()

    def hash_of(self, path: str) -> str:
        """The hash an edit of this (confined, indexed) note must name."""
        return self._text_hash(path, self._read(path))

    def _text_hash(self, rel: str, raw: bytes) -> str:
        """The hash of a note's bytes as the index reads them; bytes it refuses are a clear error."""
        try:
            return self.content_hash(decode_note(raw).text)
        except UnreadableNote:
            raise InvalidParams(f"path: {rel[:200]!r} is not text (it holds NUL bytes, so Obsidian and the index "
                                "treat it as a binary file): edit it in Obsidian", {"field": "path"}) from None

    def _on_disk(self, rel: str) -> str:
        return self.vault.disk_path(rel).relative_to(self.vault.root).as_posix()

    def _read(self, rel: str) -> bytes:
        """A note's bytes; gone, swapped for a link or unreadable answers as a missing note."""
        try:
            return self.files.read(rel)
        except (FileNotFoundError, UnsafePath):
            raise NotFound(f"no such note: {rel[:200]!r}", {"field": "path"}) from None
        except OSError as exc:
            raise VaultError(f"cannot read {rel[:200]!r}: {exc.strerror or type(exc).__name__}") from None

    # ---- the edits ----------------------------------------------------------------------------
    def create(self, path: str, content: str, client: str) -> dict[str, Any]:
        rel = self._new_target(path, "path")
        data = self._fitting(NEW_NOTE.encode(checked(content, self.vault.max_file_bytes)))
        return self._commit(client, "create", f"created {rel}", [Planned(None, rel, data)])

    def append(self, path: str, content: str, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        addition = checked(content, self.vault.max_file_bytes)
        joined = note.text + ("" if not note.text or note.text.endswith("\n") else "\n") + addition
        return self._rewrite(note, joined, client, "append", f"appended to {note.path}", "content")

    def replace_section(self, path: str, heading: str, content: str, content_hash: str,
                        client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        found = find_section(note.path, note.text, heading)
        if found is None:
            raise NotFound(f"no heading {heading[:200]!r} in {note.path!r}", {"field": "heading"})
        full, first, last = found
        lines = note.text.split("\n")
        body = checked(content, self.vault.max_file_bytes).rstrip("\n").split("\n")
        joined = "\n".join([*lines[:first - 1], *body, *lines[last:]])
        return self._rewrite(note, joined, client, "replace_section", f"replaced {full!r} in {note.path}",
                             "content")

    def update_properties(self, path: str, properties: dict[str, Any], content_hash: str,
                          client: str) -> dict[str, Any]:
        if not properties:
            raise InvalidParams("properties: give at least one property to set (null removes one)",
                                {"field": "properties"})
        for written in strings_in(properties):  # YAML would escape them: the note holds them all the same
            refuse_non_text(written, "properties")
            refuse_placeholder(written, "properties")  # an agent echoing the properties it read back
        note = self._current(path, content_hash)
        text = note.text
        for key, value in properties.items():
            if not PROPERTY_KEY.match(key):
                raise InvalidParams(f"properties: {key[:100]!r} is not a property name", {"field": "properties"})
            text = set_property(text, key, value)
        return self._rewrite(note, text, client, "update_properties", f"{_property_changes(properties)} in {note.path}",
                             "properties")

    def move(self, path: str, new_path: str, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        target = self._new_target(new_path, "new_path", moving=note.path)
        others, own = self._relinked(note.path, target)
        planned = [*others, Planned(note.path, target, own, note.raw)]
        return self._commit(client, "move", f"moved {note.path} to {target}", planned)

    def move_many(self, moves: list[tuple[str, str, str]], client: str) -> list[dict[str, Any]]:
        """Several moves, each its own (undoable) edit. Every hash is checked before the first move; a
        later note's hash may then change only by an earlier move rewriting its links to the moved one."""
        with self._lock:
            for path, _new, content_hash in moves:
                self._current(path, content_hash)
            done: list[dict[str, Any]] = []
            for path, new_path, _hash in moves:
                try:
                    done.append(self.move(path, new_path, self.hash_of(self._existing(path)), client))
                except SidecarError as exc:
                    exc.data["done"] = [d["edit"] for d in done]  # these moves stay made: undo_edit each
                    raise
            return done

    def delete(self, path: str, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        return self._commit(client, "delete", f"moved {note.path} to the vault's .trash", [
            Planned(note.path, None, None, note.raw)])

    def restore(self, path: str, version: int, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        saved = self.history.version(version)
        if saved is None or saved[0] != note.path:
            raise NotFound(f"no version {version} of {note.path!r} (see note_history)", {"field": "version"})
        if saved[1] == note.raw:
            raise InvalidParams(f"version: {note.path!r} holds version {version} already: the restore changes "
                                "nothing", {"field": "version"})
        return self._commit(client, "restore", f"restored version {version} of {note.path}",
                            [Planned(note.path, note.path, saved[1], note.raw)])

    def undo(self, edit_id: int, client: str) -> dict[str, Any]:
        """Put back what one edit changed, if nothing touched those files since."""
        edit = self.history.edit(edit_id)
        if edit is None:
            raise NotFound(f"no edit {edit_id}", {"field": "edit"})
        if edit["undone_by"] is not None:
            raise Conflict(f"edit {edit_id} was already undone by edit {edit['undone_by']}")
        if not edit["changes"]:  # an edit logged before failing (older versions kept those)
            raise InvalidParams(f"edit: edit {edit_id} changed no file: there is nothing to undo", {"field": "edit"})
        planned = [self._reverse(Change(**c)) for c in edit["changes"]]  # distinct files: any order; main last
        return self._commit(client, "undo", f"undid edit {edit_id} ({edit['summary']})", planned, undoes=edit_id)

    def _reverse(self, change: Change) -> Planned:
        current = self._as_left(change.after, change.hash_after) if change.after is not None else None
        saved = self.history.version(change.version) if change.version is not None else None
        if change.version is not None and saved is None:
            raise Conflict(f"the saved version of {change.before!r} was pruned from the history")
        if change.before is not None and change.before != change.after and self.vault.confine_new(change.before) is None:
            raise Conflict(f"{change.before!r} exists again; nothing was undone")
        trash_copy = self._trash_copy(change.trashed, saved[1]) if change.trashed and saved else None
        if trash_copy is not None:  # a delete: its trash copy goes back, none is left behind
            return Planned(None, change.before, None, trash_copy, trashed=change.trashed)
        return Planned(change.after, change.before, saved[1] if saved else None, current, tidy=change.made_folder)

    def _as_left(self, rel: str, hash_after: str | None) -> bytes:
        """The bytes of a file an edit left, if they are still what it left."""
        try:
            raw = self._read(rel)
        except NotFound:
            raise Conflict(f"{rel!r} is gone since; nothing was undone") from None
        try:
            same = self._text_hash(rel, raw) == hash_after
        except InvalidParams as exc:
            raise Conflict(f"{rel!r} was changed since: {exc.message}; nothing was undone") from None
        if not same:
            raise Conflict(f"{rel!r} was changed since; nothing was undone")
        return raw

    def _trash_copy(self, trashed: str, deleted: bytes) -> bytes | None:
        """The trash copy a delete made, if it still holds what was deleted (else it stays where it is)."""
        try:
            raw = self.files.read(trashed)
        except (OSError, UnsafePath):
            return None
        return raw if raw == deleted else None

    # ---- shared steps -------------------------------------------------------------------------
    def _existing(self, path: str) -> str:
        """An indexed note, resolved as reads resolve it (core.resolve_note: the path, else a file name,
        title or alias in any case), so the note read_note answered for a path is the one edited."""
        missing = NotFound(f"no such note: {path[:200]!r}", {"field": "path"})
        if NOT_TEXT.search(path):
            raise missing
        try:
            rel = self.core.resolve_note(path)
        except NotFound as exc:
            raise NotFound(exc.message, {**exc.data, "field": "path"}) from None
        if self.vault.confine(rel) != rel:  # still servable, as at index time
            raise missing
        return rel

    def _current(self, path: str, content_hash: str) -> Current:
        rel = self._existing(path)
        raw = self._read(rel)
        if self._text_hash(rel, raw) != content_hash:
            raise Conflict(f"{rel!r} changed since you read it (its content_hash is not {content_hash[:40]!r}): "
                           "read it again and redo the edit on what is there now", {"field": "content_hash"})
        text, fmt = read_format(raw)
        return Current(rel, raw, text, fmt)

    def _new_target(self, path: str, field: str, moving: str | None = None) -> str:
        """A path for a new note (`moving`: the note a move renames, which its new path may differ from
        only in case)."""
        if not path.lower().endswith(NOTE_SUFFIX):
            raise InvalidParams(f"{field}: a note path ends with .md", {"field": field})
        rel = self.vault.confine_new(path)
        if rel is None and (existing := self.vault.confine(path)) is not None and existing != moving:
            raise InvalidParams(f"{field}: {existing!r} exists: pick another name, or change that note with "
                                "append_to_note, replace_section or update_properties", {"field": field})
        if rel is None:
            raise InvalidParams(f"{field}: {path[:200]!r} cannot be written: it exists, or is outside the vault, "
                                "hidden, ignored, or behind a link", {"field": field})
        self._check_new_names(rel, field, moving)
        return rel

    def _fitting(self, data: bytes) -> bytes:
        """The bytes of a note as written (its final newline and line ends included) within the size the
        index takes: one byte over and the note would be written, then skipped as too large."""
        if len(data) > self.vault.max_file_bytes:
            raise InvalidParams(f"content: the note would be {len(data):,} bytes (limit "
                                f"{self.vault.max_file_bytes:,})", {"field": "content"})
        return data

    def _check_new_names(self, rel: str, field: str, moving: str | None) -> None:
        """Each name the path adds to the vault must be one a note can have (`name_refusal`; folders that
        exist are kept as they are), and none may differ from an existing name only in case: on macOS and
        Windows (or a vault synced there) the two are one file, and [[links]] cannot tell them apart."""
        size = len(rel.encode("utf-8", "surrogatepass"))
        if size > MAX_PATH_BYTES:
            raise InvalidParams(f"{field}: the path is {size:,} bytes (UTF-8); a note's path may have at most "
                                f"{MAX_PATH_BYTES:,}", {"field": field})
        folder: Path | None = self.vault.root
        walked: list[str] = []
        for part in rel.split("/"):
            names = names_in(folder)
            on_disk = next((n for n in names if nfc(n) == part), None)
            if on_disk is None:
                problem = name_refusal(part)
                if problem is not None:
                    raise InvalidParams(f"{field}: {problem}", {"field": field})
                twins = ["/".join([*walked, nfc(n)]) for n in names if nfc(n).casefold() == part.casefold()]
                twin = next((t for t in twins if t != moving), None)
                if twin is not None:
                    raise InvalidParams(f"{field}: {twin!r} exists, and differs only in case: on macOS and Windows "
                                        "they would be one file. Use that spelling, or another name", {"field": field})
            walked.append(part)
            folder = folder / on_disk if folder is not None and on_disk is not None else None

    def _rewrite(self, note: Current, text: str, client: str, op: str, summary: str, field: str) -> dict[str, Any]:
        refuse_non_text(text, field)
        data = note.fmt.encode(text)
        if data == note.raw:
            raise InvalidParams(f"{field}: the edit changes nothing: {note.path!r} already reads so; nothing was "
                                "written", {"field": field})
        self._fitting(data)
        return self._commit(client, op, summary, [Planned(note.path, note.path, data, note.raw)])

    def _commit(self, client: str, op: str, summary: str, planned: list[Planned],
                undoes: int | None = None) -> dict[str, Any]:
        with self._lock:
            for p in planned:
                self._still_as_read(p)
            edit_id, versions = self.history.begin(client, op, summary, [
                (p.before, p.old) if p.before and p.old is not None else None for p in planned])
            changes, failure = self._apply_all(planned, versions)
            if failure is not None and not changes:
                self.history.discard(edit_id)  # nothing changed: nothing to log, nothing to undo
                raise failure
            self.history.finish(edit_id, changes, undoes if failure is None else None)
            touched = sorted({path for c in changes for path in (c.before, c.after) if path})
            self.core.index_paths(touched)
        log.info("edit %d by %s: %s", edit_id, client, summary)
        event = self._announce(edit_id)
        if failure is not None:
            raise partial_failure(edit_id, len(changes), failure) from failure
        main = changes[-1]
        return {**event, "content_hash": main.hash_after}  # `path`: the note, where it is now or was

    def _apply_all(self, planned: list[Planned], versions: list[int | None]) -> tuple[list[Change], Exception | None]:
        """Every file of an edit, in order; on a failure, the changes made before it and the failure."""
        changes: list[Change] = []
        for p, version in zip(planned, versions, strict=True):
            try:
                changes.append(self._apply(p, version))
            except Exception as exc:  # handed back: _commit records what was done, then raises it
                return changes, exc
        return changes, None

    def _announce(self, edit_id: int) -> EditRecord:
        record = self.history.edit(edit_id)
        assert record is not None
        event = edit_record(record)
        if self.on_edit is not None:
            self.on_edit(event)
        return event

    def edits_page(self, limit: int, offset: int) -> EditsResponse:
        edits, total = self.history.edits(limit, offset)
        end = offset + len(edits)
        return {"writes_enabled": True, "edits": [edit_record(e) for e in edits], "total": total,
                "next_offset": end if end < total else None}

    def _still_as_read(self, p: Planned) -> None:
        source = p.before or p.trashed
        if source is None or p.old is None:
            return
        try:
            if self._read(source) == p.old:
                return
        except NotFound:
            pass
        raise Conflict(f"{source!r} changed while the edit was being prepared; nothing was written")

    def _apply(self, p: Planned, version: int | None) -> Change:
        left = p.data if p.data is not None else p.old  # every plan that leaves a file knows its bytes
        # hashed before the file is touched: a hash that cannot be taken must not follow a change
        after = self._text_hash(p.after, left) if p.after and left is not None else None
        trashed, made = self._file_op(p)
        if p.tidy and p.before and p.before != p.after:
            self.files.remove_empty(posixpath.dirname(p.before), p.tidy)
        with self._echo_lock:
            if p.before:
                self._written[p.before] = None
            if p.after:
                self._written[p.after] = self._stat(p.after)
        return Change(p.before, p.after, version, after, trashed, made)

    def _file_op(self, p: Planned) -> tuple[str | None, str | None]:
        """Do one file's part of an edit; returns where a deleted note went in the trash, and the topmost
        folder made for `after`."""
        try:
            if p.before is None and p.after is not None and p.trashed is not None:
                return None, self.files.move(p.trashed, p.after)
            if p.before is None and p.after is not None and p.data is not None:
                return None, self.files.write(p.after, p.data, must_be_new=True)
            if p.before is not None and p.after is None:
                return self.files.trash(p.before), None
            made = None
            if p.before is not None and p.after is not None and p.before != p.after:
                made = self.files.move(p.before, p.after)
            if p.after is not None and p.data is not None:
                self.files.write(p.after, p.data, must_be_new=False)
            return None, made
        except (UnsafePath, FileExistsError, FileNotFoundError) as exc:
            raise Conflict(f"cannot write {p.after or p.before!r}: {type(exc).__name__}") from None
        except OSError as exc:
            raise VaultError(f"cannot write {p.after or p.before!r}: {exc.strerror or type(exc).__name__}") from None

    def _relinked(self, old: str, new: str) -> tuple[list[Planned], bytes | None]:
        """Every other note that links to `old`, rewritten to link to `new` (as Obsidian does on a
        rename), and the moved note's own new bytes when it links to itself."""
        conn = self.core.reader()
        rows = links_into(conn, old)
        by_source: dict[str, list[tuple[int, str]]] = {}
        for source, line, target in rows:
            by_source.setdefault(str(source), []).append((int(line), str(target)))
        name = posixpath.basename(new)[:-len(NOTE_SUFFIX)].lower()
        unique = name_is_free(conn, name, old)
        planned: list[Planned] = []
        own = None
        for source, links in by_source.items():
            raw = self._read(source)
            text, fmt = read_format(raw)
            rewritten = relink(text, links, new if source == old else source, old, new, unique)
            if rewritten == text:
                continue
            if source == old:
                own = fmt.encode(rewritten)  # moved and rewritten in one change
            else:
                planned.append(Planned(source, source, fmt.encode(rewritten), raw))
        return planned, own

    # ---- the watcher's echo ---------------------------------------------------------------------
    def _stat(self, rel: str) -> tuple[int, int] | None:
        try:
            st = os.stat(self.vault.disk_path(rel), follow_symlinks=False)
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns

    def echoes_only(self, paths: set[str]) -> bool:
        """True when every path the watcher reports is one of our own writes, still as we left it
        (so already indexed): the index run it would start has nothing to do."""
        rels = {posixpath.relpath(p, str(self.vault.root)) if p.startswith(str(self.vault.root)) else p
                for p in paths}
        with self._echo_lock:
            mine = bool(rels) and all(r in self._written and self._written[r] == self._stat(r) for r in rels)
            for rel in rels:
                self._written.pop(rel, None)
        return mine


def edit_record(edit: dict[str, Any]) -> EditRecord:
    """An edit as the plugin and agents see it (protocol: EditRecord). Its note (`path`) is the last
    change's (_commit plans the note itself last, after the notes a move relinks): where it is now,
    or where it was when the edit removed it; None for an edit that failed before recording a change."""
    changes = edit["changes"]
    paths = sorted({p for c in changes for p in (c["before"], c["after"]) if p})
    path = (changes[-1]["after"] or changes[-1]["before"]) if changes else None
    return {"edit": edit["id"], "at": edit["at"], "client": edit["client"], "op": edit["op"],
            "summary": edit["summary"], "path": path, "paths": paths, "undone_by": edit["undone_by"]}


def partial_failure(edit_id: int, changed: int, exc: Exception) -> SidecarError:
    """The error of an edit that failed after changing some files: it names the edit that holds them."""
    if isinstance(exc, SidecarError):
        kind, message, data = type(exc), exc.message, exc.data
    else:
        log.error("edit %d failed partway", edit_id, exc_info=exc)
        kind, message, data = VaultError, f"the edit failed partway ({type(exc).__name__})", {}
    held = f"{changed} file{'s' if changed != 1 else ''}"
    return kind(f"{message}. Edit {edit_id} holds the {held} it changed before that: undo_edit {edit_id} puts "
                "them back", {**data, "edit": edit_id})


def refuse_non_text(text: str, field: str) -> None:
    """Text no note can hold: a NUL (the file would be binary to Obsidian and the index) or a lone UTF-16
    surrogate (no encoding can write it)."""
    found = NOT_TEXT.search(text)
    if found is None:
        return
    char = found.group()
    what = "a NUL character" if char == "\x00" else f"a lone surrogate (U+{ord(char):04X})"
    raise InvalidParams(f"{field}: the text holds {what} at character {found.start():,}, which a note cannot "
                        "hold: leave it out", {"field": field})


# Zero-width spaces, bidirectional overrides and isolates, word joiners, the BOM: a name holding one
# shows as another name ("gnp.md" reversed) or as a twin of an existing one. ZWJ and ZWNJ stay: emoji
# sequences and Persian or Indic spelling need them.
DECEPTIVE_CHARS = frozenset("\u061c\u180e\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                            "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff")


def name_refusal(name: str) -> str | None:
    """Why a file or folder name cannot be a new note's (or its folder's), or None. The one place for the
    rule: Obsidian refuses these characters or cannot link through them, Windows reserves these names,
    and file systems hold at most 255 bytes a name."""
    for char in name:
        kind = {"Cc": "a control character", "Cs": "a lone surrogate"}.get(unicodedata.category(char))
        if char in DECEPTIVE_CHARS:
            kind = "an invisible or text-reversing character, which makes a name look like another"
        if kind is not None:
            return f"the name {name[:100]!r} holds {kind} (U+{ord(char):04X})"
        if char in NAME_CHARS:
            return (f"the name {name[:100]!r} holds {char!r}: Obsidian does not allow any of "
                    f"{' '.join(NAME_CHARS)} in a note's name")
    if RESERVED_NAME.fullmatch(name):
        return f"{name[:100]!r} is a name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension)"
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        return f"the name {name[:40]!r}... is {size:,} bytes (UTF-8); a name may have at most {MAX_NAME_BYTES}"
    return None


def strings_in(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def names_in(folder: Path | None) -> list[str]:
    """The names in a folder on disk (none when there is no such folder)."""
    if folder is None:
        return []
    try:
        return os.listdir(folder)
    except OSError:
        return []


def refuse_placeholder(written: str, field: str) -> None:
    """Reads show a credential as a placeholder: a write holding one would replace it for good."""
    if PLACEHOLDER in written:
        raise InvalidParams(f"{field}: it holds a redaction placeholder ([REDACTED:...]); writing it would "
                            "replace the credential for good. Leave that line out, or edit it in Obsidian",
                            {"field": field})


def checked(content: str, max_bytes: int) -> str:
    refuse_non_text(content, "content")
    refuse_placeholder(content, "content")
    if len(content.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InvalidParams(f"content: over {max_bytes:,} bytes", {"field": "content"})
    return content.replace("\r\n", "\n").replace("\r", "\n")


def _property_changes(properties: dict[str, Any]) -> str:
    """"set status, due; removed draft": what an edit of properties did, for its history entry."""
    changes = []
    for verb, names in (("set", [k for k, v in properties.items() if v is not None]),
                        ("removed", [k for k, v in properties.items() if v is None])):
        if names:
            changes.append(f"{verb} {', '.join(names)}")
    return "; ".join(changes)


def set_property(text: str, key: str, value: Any) -> str:
    """Set (or, with None, remove) one top-level frontmatter property, leaving every other line as it is."""
    lines = text.split("\n")
    if lines[0] != "---" or "---" not in lines[1:]:
        if value is None:
            return text
        lines = ["---", "---", *lines]
    close = lines.index("---", 1)
    start = next((i for i in range(1, close) if re.match(rf"{re.escape(key)}\s*:", lines[i])), None)
    new = [] if value is None else yaml.safe_dump({key: value}, allow_unicode=True, sort_keys=False,
                                                  default_flow_style=False).rstrip("\n").split("\n")
    if start is None:
        return "\n".join([*lines[:close], *new, *lines[close:]])
    end = start + 1
    while end < close and (lines[end].startswith((" ", "\t", "- ")) or lines[end] == "-"):
        end += 1
    return "\n".join([*lines[:start], *new, *lines[end:]])


def relink(text: str, links: list[tuple[int, str]], source: str, old: str, new: str, unique: bool) -> str:
    """Rewrite, on the lines the index names, the links whose target (as written) is in `links`."""
    lines = text.split("\n")
    wanted: dict[int, set[str]] = {}
    for line, target in links:
        wanted.setdefault(line, set()).add(target)
    for line, targets in wanted.items():
        if 0 < line <= len(lines):
            lines[line - 1] = _relink_line(lines[line - 1], targets, source, old, new, unique)
    return "\n".join(lines)


def _relink_line(line: str, targets: set[str], source: str, old: str, new: str, unique: bool) -> str:
    def wiki(m: re.Match[str]) -> str:
        written = m.group(2).strip()
        if written not in targets:
            return m.group(0)
        return m.group(1) + wiki_target(written, new, unique) + m.group(3)

    def markdown(m: re.Match[str]) -> str:
        dest = m.group(2)
        angled = dest.startswith("<")
        path, hash_, anchor = dest.strip("<>").partition("#")
        if urllib.parse.unquote(path).strip() not in targets:
            return m.group(0)
        new_dest = markdown_target(urllib.parse.unquote(path).strip(), source, old, new)
        spelled = new_dest if angled else urllib.parse.quote(new_dest, safe="/")
        return m.group(1) + ("<" if angled else "") + spelled + hash_ + anchor + (">" if angled else "") + m.group(3)

    return MD_LINK.sub(markdown, WIKILINK.sub(wiki, line))


def wiki_target(written: str, new: str, unique: bool) -> str:
    """Obsidian's style: the bare name when it is unique (and was written bare), else the path."""
    keep_suffix = written.lower().endswith(NOTE_SUFFIX)
    bare = new if keep_suffix else new[:-len(NOTE_SUFFIX)]
    if "/" not in written and unique:
        return posixpath.basename(bare)
    return bare


def markdown_target(written: str, source: str, old: str, new: str) -> str:
    """Relative to the linking note when the link was relative, else from the vault root."""
    keep_suffix = written.lower().endswith(NOTE_SUFFIX)
    folder = posixpath.dirname(source)
    relative = posixpath.normpath(posixpath.join(folder, written)).lower() in (old.lower(), old[:-3].lower())
    target = new if keep_suffix else new[:-len(NOTE_SUFFIX)]
    if relative and not written.startswith("/"):
        return posixpath.relpath(target, folder or ".")
    return ("/" if written.startswith("/") else "") + target

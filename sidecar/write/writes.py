"""Edits to the vault for agents, off unless the user turns them on (`--allow-writes`).

Every edit: targets pass the same confinement as reads (`Vault.confine` for notes that exist,
`Vault.confine_new` for new ones; never hidden, ignored, outside or through a link); names the
content hash of the version it edits (a change made meanwhile is a Conflict, never overwritten);
saves the previous bytes in the history first; writes atomically through `files.VaultFiles`,
keeping encoding, line endings and the trailing newline; is indexed before it answers (through
the indexer's own lock, the single writer); and is logged with the client that made it.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import os
import posixpath
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from sidecar.errors import Conflict, InvalidParams, NotFound, SidecarError, VaultError
from sidecar.ingest.vault import NOTE_SUFFIX, decode_note
from sidecar.protocol_types import EditRecord, EditsResponse
from sidecar.retrieve.note_reads import find_section
from sidecar.store.history import Change, History
from sidecar.store.reads import links_into, name_is_free, note_exists
from sidecar.write.files import UnsafePath, VaultFiles

if TYPE_CHECKING:
    from sidecar.retrieve.view import IndexView

log = logging.getLogger(__name__)

PLACEHOLDER = "[REDACTED:"  # what reads show instead of a credential
PROPERTY_KEY = re.compile(r"^[^\s:#\-'\"{}\[\],&*!|>%@`][^:\n]{0,99}$")
WIKILINK = re.compile(r"(!?\[\[)([^\]|#\n]*)((?:#[^\]|\n]*)?(?:\|[^\]\n]*)?\]\])")
MD_LINK = re.compile(r"(!?\[[^\]\n]*\]\()(<[^>\n]*>|[^)\s]+)((?:\s+\"[^\"\n]*\")?\))")


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
    """One file of an edit: `before` None creates `after`; `after` None trashes `before`; `data` None
    keeps the bytes (a plain move); `old` is what `before` must still hold when the edit applies."""

    before: str | None
    after: str | None
    data: bytes | None
    old: bytes | None = None


@dataclass(frozen=True, slots=True)
class Current:
    path: str
    raw: bytes
    text: str
    fmt: TextFormat


class NoteWriter:
    def __init__(self, core: IndexView, history: History) -> None:
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
        return self.content_hash(decode_note(self._read(path)).text)

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
        rel = self._new_target(path)
        data = NEW_NOTE.encode(checked(content, self.vault.max_file_bytes))
        return self._commit(client, "create", f"created {rel}", [Planned(None, rel, data)])

    def append(self, path: str, content: str, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        addition = checked(content, self.vault.max_file_bytes)
        joined = note.text + ("" if not note.text or note.text.endswith("\n") else "\n") + addition
        return self._rewrite(note, joined, client, "append", f"appended to {note.path}")

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
        return self._rewrite(note, joined, client, "replace_section", f"replaced {full!r} in {note.path}")

    def update_properties(self, path: str, properties: dict[str, Any], content_hash: str,
                          client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        text = note.text
        for key, value in properties.items():
            if not PROPERTY_KEY.match(key):
                raise InvalidParams(f"properties: {key[:100]!r} is not a property name", {"field": "properties"})
            text = set_property(text, key, value)
        names = ", ".join(properties)
        return self._rewrite(note, text, client, "update_properties", f"set {names} in {note.path}")

    def move(self, path: str, new_path: str, content_hash: str, client: str) -> dict[str, Any]:
        note = self._current(path, content_hash)
        target = self._new_target(new_path)
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
        return self._commit(client, "restore", f"restored version {version} of {note.path}",
                            [Planned(note.path, note.path, saved[1], note.raw)])

    def undo(self, edit_id: int, client: str) -> dict[str, Any]:
        """Put back what one edit changed, if nothing touched those files since."""
        edit = self.history.edit(edit_id)
        if edit is None:
            raise NotFound(f"no edit {edit_id}", {"field": "edit"})
        if edit["undone_by"] is not None:
            raise Conflict(f"edit {edit_id} was already undone by edit {edit['undone_by']}")
        planned = [self._reverse(Change(**c)) for c in edit["changes"]]  # distinct files: any order; main last
        return self._commit(client, "undo", f"undid edit {edit_id} ({edit['summary']})", planned, undoes=edit_id)

    def _reverse(self, change: Change) -> Planned:
        current = None
        if change.after is not None:
            try:
                raw = self._read(change.after)
            except NotFound:
                raise Conflict(f"{change.after!r} is gone since; nothing was undone") from None
            if self.content_hash(decode_note(raw).text) != change.hash_after:
                raise Conflict(f"{change.after!r} was changed since; nothing was undone")
            current = raw
        saved = self.history.version(change.version) if change.version is not None else None
        if change.version is not None and saved is None:
            raise Conflict(f"the saved version of {change.before!r} was pruned from the history")
        if change.before is not None and change.before != change.after and self.vault.confine_new(change.before) is None:
            raise Conflict(f"{change.before!r} exists again; nothing was undone")
        return Planned(change.after, change.before, saved[1] if saved else None, current)

    # ---- shared steps -------------------------------------------------------------------------
    def _existing(self, path: str) -> str:
        rel = self.vault.confine(path)
        if rel is None or not self._indexed(rel):
            raise NotFound(f"no such note: {path[:200]!r}", {"field": "path"})
        return rel

    def _current(self, path: str, content_hash: str) -> Current:
        rel = self._existing(path)
        raw = self._read(rel)
        if self.content_hash(decode_note(raw).text) != content_hash:
            raise Conflict(f"{rel!r} changed since you read it (its content_hash is not {content_hash[:40]!r}): "
                           "read it again and redo the edit on what is there now", {"field": "content_hash"})
        text, fmt = read_format(raw)
        return Current(rel, raw, text, fmt)

    def _new_target(self, path: str) -> str:
        if not path.lower().endswith(NOTE_SUFFIX):
            raise InvalidParams("path: a note path ends with .md", {"field": "path"})
        rel = self.vault.confine_new(path)
        if rel is None:
            raise InvalidParams(f"path: {path[:200]!r} cannot be written: it exists, or is outside the vault, "
                                "hidden, ignored, or behind a link", {"field": "path"})
        return rel

    def _indexed(self, rel: str) -> bool:
        return note_exists(self.core.reader(), rel)

    def _rewrite(self, note: Current, text: str, client: str, op: str, summary: str) -> dict[str, Any]:
        data = note.fmt.encode(text)
        if len(data) > self.vault.max_file_bytes:
            raise InvalidParams(f"content: the note would be {len(data):,} bytes (limit "
                                f"{self.vault.max_file_bytes:,})", {"field": "content"})
        return self._commit(client, op, summary, [Planned(note.path, note.path, data, note.raw)])

    def _commit(self, client: str, op: str, summary: str, planned: list[Planned],
                undoes: int | None = None) -> dict[str, Any]:
        with self._lock:
            for p in planned:
                self._still_as_read(p)
            edit_id, versions = self.history.begin(client, op, summary, [
                (p.before, p.old) if p.before and p.old is not None else None for p in planned])
            changes = [self._apply(p, version) for p, version in zip(planned, versions, strict=True)]
            self.history.finish(edit_id, changes, undoes)
            touched = sorted({path for c in changes for path in (c.before, c.after) if path})
            self.core.index_paths(touched)
        log.info("edit %d by %s: %s", edit_id, client, summary)
        record = self.history.edit(edit_id)
        assert record is not None
        event = edit_record(record)
        if self.on_edit is not None:
            self.on_edit(event)
        main = changes[-1]
        return {**event, "path": main.after, "content_hash": main.hash_after}

    def edits_page(self, limit: int, offset: int) -> EditsResponse:
        edits, total = self.history.edits(limit, offset)
        end = offset + len(edits)
        return {"writes_enabled": True, "edits": [edit_record(e) for e in edits], "total": total,
                "next_offset": end if end < total else None}

    def _still_as_read(self, p: Planned) -> None:
        if p.before is None or p.old is None:
            return
        try:
            if self._read(p.before) == p.old:
                return
        except NotFound:
            pass
        raise Conflict(f"{p.before!r} changed while the edit was being prepared; nothing was written")

    def _apply(self, p: Planned, version: int | None) -> Change:
        try:
            if p.before is None and p.after is not None and p.data is not None:
                self.files.write(p.after, p.data, must_be_new=True)
            elif p.before is not None and p.after is None:
                self.files.trash(p.before)
            elif p.before is not None and p.after is not None:
                if p.before != p.after:
                    self.files.move(p.before, p.after)
                if p.data is not None:
                    self.files.write(p.after, p.data, must_be_new=False)
        except (UnsafePath, FileExistsError, FileNotFoundError) as exc:
            raise Conflict(f"cannot write {p.after or p.before!r}: {type(exc).__name__}") from None
        except OSError as exc:
            raise VaultError(f"cannot write {p.after or p.before!r}: {exc.strerror or type(exc).__name__}") from None
        with self._echo_lock:
            if p.before:
                self._written[p.before] = None
            if p.after:
                self._written[p.after] = self._stat(p.after)
        after = self.content_hash(decode_note(self._read(p.after)).text) if p.after else None
        return Change(p.before, p.after, version, after)

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


def checked(content: str, max_bytes: int) -> str:
    if PLACEHOLDER in content:
        raise InvalidParams("content: it holds a redaction placeholder ([REDACTED:...]); writing it would "
                            "replace the credential for good. Leave that line out, or edit it in Obsidian",
                            {"field": "content"})
    if len(content.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InvalidParams(f"content: over {max_bytes:,} bytes", {"field": "content"})
    return content.replace("\r\n", "\n").replace("\r", "\n")


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

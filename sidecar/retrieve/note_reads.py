"""Read-side questions about single notes: links, content, listings. Shared by every adapter.

Paths from clients are untrusted: everything goes through Vault.confine(), and "outside the
vault", "excluded" and "not indexed" raise the same NotFound.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

from sidecar.errors import NotFound
from sidecar.ingest.parse import parse_note
from sidecar.ingest.redact import redact
from sidecar.ingest.vault import UnreadableNote, Vault
from sidecar.protocol_types import Backlink, NoteLinksResponse, Outlink, UnresolvedLink
from sidecar.store.reads import backlink_rows, note_id_title, notes_by_recency, outlink_rows


def note_row(conn: sqlite3.Connection, path: str) -> tuple[int, str]:
    row = note_id_title(conn, path)
    if row is None:
        raise NotFound("no such note")
    return row


def note_links(conn: sqlite3.Connection, vault: Vault, path: str) -> NoteLinksResponse:
    confined = vault.confine(path)
    if confined is None:
        raise NotFound("no such note")
    note_id, title = note_row(conn, confined)
    outlinks: list[Outlink] = [
        {"target_raw": r[0], "path": r[1], "anchor": r[2], "kind": r[3], "line": r[4], "ambiguous": bool(r[5])}
        for r in outlink_rows(conn, note_id)
    ]
    backlinks: list[Backlink] = [
        {"path": r[0], "title": r[1], "line": r[2], "kind": r[3], "anchor": r[4]}
        for r in backlink_rows(conn, note_id)
    ]
    unresolved: list[UnresolvedLink] = [{"target_raw": o["target_raw"], "line": o["line"], "kind": o["kind"]} for o in outlinks if o["path"] is None]
    return {"path": confined, "title": title, "outlinks": outlinks, "backlinks": backlinks, "unresolved": unresolved}


def read_note(conn: sqlite3.Connection, vault: Vault, path: str, heading: str | None = None) -> dict[str, Any]:
    """The note's current text from disk, redacted again on the way out, optionally one section
    (`heading`: its text or its full heading path "A > B > C", as search returns it)."""
    confined = vault.confine(path)
    if confined is None:
        raise NotFound("no such note")
    _note_id, title = note_row(conn, confined)
    try:
        text = redact(vault.read_note(confined).text).text
    except UnreadableNote as exc:
        raise NotFound("no such note") from exc
    start_line = 1
    if heading:
        found = find_section(confined, text, heading)
        if found is None:
            raise NotFound(f"no heading {heading!r} in this note")
        heading, start_line, end_line = found
        text = "\n".join(text.split("\n")[start_line - 1:end_line]).rstrip()
    return {"path": confined, "title": title, "heading": heading, "start_line": start_line, "text": text,
            "chars": len(text)}


HEADING_SEPARATOR = " > "  # how search joins a heading path


def _key(text: str) -> str:
    return text.strip().lstrip("#").strip().casefold()


def heading_paths(path: str, text: str) -> list[tuple[tuple[str, ...], int, int]]:
    """Every heading as (its heading path, level, line), with the parser's rules (fences, front
    matter), so the paths are the ones search returns."""
    out: list[tuple[tuple[str, ...], int, int]] = []
    stack: list[tuple[int, str]] = []
    for h in parse_note(path, text).headings:
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.text))
        out.append((tuple(t for _, t in stack), h.level, h.line))
    return out


def find_section(path: str, text: str, wanted: str) -> tuple[str, int, int] | None:
    """(full heading path, first line, last line) of the first section whose heading path ends with
    `wanted` ("Deployment", "Alpha > Deployment"); the section runs to the next heading of its
    level or higher."""
    parts = [_key(p) for p in wanted.split(HEADING_SEPARATOR)]
    whole = _key(wanted)
    headings = heading_paths(path, text)
    for i, (trail, level, line) in enumerate(headings):
        keys = [_key(t) for t in trail]
        if keys[-1] == whole or keys[-len(parts):] == parts:
            end = next((ln - 1 for _t, lv, ln in headings[i + 1:] if lv <= level), text.count("\n") + 1)
            return HEADING_SEPARATOR.join(trail), line, end
    return None


def list_notes(conn: sqlite3.Connection, folder: str | None = None, tag: str | None = None,
               note_type: str | None = None, modified_since: float | None = None, limit: int = 100, offset: int = 0,
               hidden: Callable[[str], object] | None = None) -> dict[str, Any]:
    """Notes by recency, a page of `limit` from `offset` (both checked where a call comes in: the MCP tool's schema).
    `hidden(path)`: a note the vault's rules left out since the last index run, never listed (only the page's
    rows are asked: asking every note's path of a big vault would cost more than the listing)."""
    from sidecar.retrieve.search import Filters, allowed_notes  # noqa: PLC0415  (search imports the embedder)

    fields = {"type": note_type} if note_type else {}
    filters = Filters(folder=folder, tag=tag, fields=fields, modified_since=modified_since)
    allowed = allowed_notes(conn, filters)
    rows = notes_by_recency(conn)
    notes: list[dict[str, Any]] = []
    total = 0
    for note_id, path, title, mtime_ns, frontmatter in rows:
        if allowed is not None and note_id not in allowed:
            continue
        total += 1
        if offset < total <= offset + limit:
            if hidden is not None and hidden(path):
                total -= 1
                continue
            fm = json.loads(frontmatter)
            notes.append({"path": path, "title": title, "modified": mtime_ns / 1e9,
                          "type": fm.get("type") if isinstance(fm, dict) else None})
    return {"notes": notes, "total": total, "truncated": total > offset + len(notes)}

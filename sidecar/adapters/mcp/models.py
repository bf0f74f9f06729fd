"""The shapes of MCP answers that the protocol has no result schema for (notes, edits, history, context,
note lists, overview) or answers very differently (status); the SDK publishes each as the tool's
outputSchema. The search, related, note-links and health answers' models are generated from the
protocol's schemas (protocol/mcp-outputs.json -> outputs.py).

Compact on purpose (agents pay for every token): a field that would be null is left out
(`exclude_none`), so every nullable field has a default and is not required; per-signal
scores appear only when asked for with `explain`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from sidecar.adapters.mcp.outputs import Paged
from sidecar.protocol_types import Band


class ContextSource(BaseModel):
    path: str
    heading: str
    start_line: int
    end_line: int
    band: Band


class ContextOut(BaseModel):
    band: Band
    caveat: str | None = None
    chars: int
    markdown: str  # the context block, ready to paste into a prompt
    sources: list[ContextSource]


class NoteOut(BaseModel):
    path: str
    title: str
    heading: str | None = None  # full heading path of the section read; absent for the whole note
    start_line: int  # file lines of this page
    end_line: int
    text: str  # this page, credentials redacted
    offset: int  # where this page starts, in characters of the text read
    next_offset: int | None = None  # pass as `offset` for the next page; absent: this is the last
    remaining_chars: int  # characters after this page
    total_chars: int  # the whole note, section or line range
    truncated: bool
    content_hash: str | None = None  # with writes on: what an edit of this note must name


class EditOut(BaseModel):
    edit: int  # its id in the history: undo_edit takes it
    op: str
    summary: str
    client: str
    paths: list[str]  # every file it changed
    path: str | None = None  # where the note is now; absent after a delete
    content_hash: str | None = None  # of the note now: the next edit names it


class BatchOut(BaseModel):
    edits: list[EditOut]


class VersionInfo(BaseModel):
    version: int
    saved_at: str
    bytes: int
    edit: int
    client: str
    op: str


class EditInfo(BaseModel):
    edit: int
    at: str
    client: str
    op: str
    summary: str
    path: str | None = None  # the note it is about (where it is after the edit)
    paths: list[str]
    undone_by: int | None = None


class HistoryOut(Paged):
    path: str | None = None
    versions: list[VersionInfo] | None = None  # with a path: its saved versions, newest first
    edits: list[EditInfo] | None = None  # without: every agent edit, newest first
    total: int


class ListedNote(BaseModel):
    path: str
    title: str
    modified: str = Field(description="Last modification, ISO 8601 UTC.")
    type: str | None = None  # the frontmatter `type`


class NoteListOut(Paged):
    notes: list[ListedNote]
    total: int = Field(description="How many notes match in all.")
    truncated: bool


class StatusOut(Paged):
    version: str
    notes: int
    chunks: int
    chunks_with_vectors: int
    chunks_without_vectors: int
    vectors_available: bool
    building: bool
    complete: bool
    last_indexed_at: str | None = None  # end of the last index run, ISO 8601 UTC
    model: str | None = None
    model_error: str | None = None
    backend: str
    skipped: int = Field(description="Files not indexed (too large, unreadable, ...).")
    skipped_files: list[dict[str, str]] = Field(description="Skipped files and why, a page at a time.")


class FolderInfo(BaseModel):
    folder: str = Field(description="Top-level folder; '/' is the vault root.")
    notes: int
    subfolders: int
    top_tags: list[str]
    top_types: list[str]
    example_titles: list[str]


class DailyNotes(BaseModel):
    folder: str = Field(description="Folder pattern, e.g. 'Journal/YYYY'.")
    format: str = Field(description="File-name date format in Obsidian (moment.js) spelling, e.g. YYYY-MM-DD.")
    kind: Literal["daily", "weekly", "monthly", "dated"] = Field(description="dated: a date plus a name, "
                                                                             "e.g. '2024-05-01 Kickoff'.")
    notes: int
    first: str
    last: str
    example_path: str


class HubNote(BaseModel):
    path: str
    title: str
    out_links: int
    in_links: int
    why: list[str]


class LinkedNote(BaseModel):
    path: str
    title: str
    in_links: int


class TagCount(BaseModel):
    tag: str
    notes: int


class FieldValue(BaseModel):
    value: str
    notes: int


class FieldInfo(BaseModel):
    field: str
    notes: int
    kind: str
    distinct_values: int
    common_values: list[FieldValue]


class LinkStyle(BaseModel):
    total: int
    style: Literal["wikilinks", "markdown", "mixed", "none"]
    by_kind: dict[str, int]
    wikilinks_with_folder_path: int
    with_heading_or_block_anchor: int
    unresolved: int
    unresolved_share: float


class OverviewOut(BaseModel):
    note_count: int
    folders: list[FolderInfo]
    daily_notes: list[DailyNotes]
    hubs: list[HubNote] = Field(description="Maps of content / index notes: good starting points.")
    most_linked: list[LinkedNote]
    tags: list[TagCount]
    frontmatter_fields: list[FieldInfo]
    links: LinkStyle
    attachments: int

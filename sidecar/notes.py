"""The value types that flow through the pipeline: parse -> chunk -> redact -> store.

Every stage speaks in these frozen dataclasses so that pure stages can be tested
without a database and adapters never see SQL rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

LinkKind = Literal["link", "embed", "markdown", "frontmatter"]


@dataclass(frozen=True, slots=True)
class Link:
    """One reference from a note to another file, as written."""

    target: str  # path part only: no "#anchor", no "|display"; e.g. "folder/Note", "Note.md", "../x.md"
    anchor: str | None  # heading text, or "^blockid" for block references
    display: str | None  # the "|shown" text or the markdown link text
    kind: LinkKind
    line: int  # 1-based line in the file


@dataclass(frozen=True, slots=True)
class Heading:
    level: int  # 1..6
    text: str
    line: int  # 1-based line in the file


@dataclass(frozen=True, slots=True)
class ParsedNote:
    path: str  # vault-relative, forward slashes, NFC
    title: str  # frontmatter "title", else the file name without ".md"
    frontmatter: dict[str, object]  # JSON-safe values only
    aliases: tuple[str, ...]
    tags: tuple[str, ...]  # without "#", nested tags keep "/", de-duplicated case-insensitively
    headings: tuple[Heading, ...]
    block_ids: tuple[str, ...]  # without "^"
    links: tuple[Link, ...]
    body: str  # the text after the frontmatter (line structure kept)
    body_start_line: int  # 1-based file line of the first body line
    warnings: tuple[str, ...] = ()  # e.g. "malformed frontmatter: ..."
    findings: tuple[Finding, ...] = ()  # credentials only the read frontmatter spells (redact.redact_read_values)
    template_variables: bool = False  # `{{date}}` or `<% ... %>` where a form has one: a property, a field line (parse.is_template)


@dataclass(frozen=True, slots=True)
class Chunk:
    ordinal: int  # position in the note, from 0
    heading_path: tuple[str, ...]  # e.g. ("Setup", "Linux")
    text: str
    start_line: int  # 1-based, inclusive, file lines
    end_line: int
    context: str  # title, aliases and tags: searchable with a lower weight
    content_hash: str  # stable identity: same text + heading path + context -> same hash


@dataclass(frozen=True, slots=True)
class Finding:
    """A credential found by redaction. Never carries the value."""

    kind: str
    line: int  # 1-based line in the file


@dataclass(frozen=True, slots=True)
class Redacted:
    text: str  # same number of lines as the input
    findings: tuple[Finding, ...] = field(default=())

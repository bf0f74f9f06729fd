"""MCP adapter: read-only vault tools for agents (Claude Code, Cursor, Codex).

Two transports share one tool set (`build_mcp`):
- streamable HTTP at http://127.0.0.1:PORT/mcp inside `sidecar serve`, behind the same Guard as
  the JSON-RPC port (Host, Origin, bearer token, content type) and the SDK's own DNS-rebinding
  check configured to agree with it;
- stdio for `sidecar mcp --stdio`, where stdout carries MCP frames only.

The HTTP endpoint is stateless (a fresh transport per POST, no Mcp-Session-Id) and answers
plain JSON instead of SSE: every tool is a read-only request/response call that never sends
the client requests or notifications, so sessions would only add state to expire, a GET
stream to keep open and a failure mode ("session not found" after an idle timeout or a
restart of the sidecar) without giving a client anything.

The core is synchronous (SQLite, numpy), so every tool runs it on a worker thread. Tools
return a `CallToolResult` whose structured content is validated against a pydantic model;
the SDK publishes that model as the tool's outputSchema. Errors come back as tool results
with isError set and `{"error": {"code", "message", ...}}` as JSON text, so an agent can correct itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import re
import socket
from collections.abc import Callable, Generator, Mapping
from typing import Annotated, Any, Literal, TypeVar

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sidecar import __version__
from sidecar.app import VaultIndex
from sidecar.connwatch import ConnectionWatch, uvicorn_answering, watched_h11
from sidecar.context import context_band, context_results, format_context, index_not_ready
from sidecar.errors import InvalidParams, NotFound, SidecarError, busy_from
from sidecar.gate import ReadGate
from sidecar.httpguard import MAX_BODY_BYTES, Guard, Rejection
from sidecar.notes_api import HEADING
from sidecar.overview import vault_overview
from sidecar.redact import redact

log = logging.getLogger(__name__)

SERVER_NAME = "vault-sidecar"
MCP_PATH = "/mcp"
MAX_LINKS = 200  # per list in note_links; the counts say how many there are in all
MAX_HEALTH_ITEMS = 5  # per health section: the agent asks for a note, not a report dump
DEFAULT_READ_CHARS = 20_000
MAX_SINCE = 9_000_000_000.0  # Unix seconds, year 2255: nothing on disk is newer
TRUNCATION_MARK = "\n…[truncated: {rest} more characters; ask for one section with `heading`, or a larger max_chars]"

Band = Literal["high", "medium", "low", "none"]
Mode = Literal["hybrid", "lexical", "semantic"]
M = TypeVar("M", bound=BaseModel)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = """\
Read-only access to the user's Obsidian vault (Markdown notes), indexed locally.
- New to this vault? Call vault_overview first: folders, daily-note convention, hub notes, tags, fields.
- To answer a question from the notes: get_context (one ready-to-paste block) or search (ranked hits),
  then read_note for the full text of a hit.
- Every search answer has a confidence band: high = answered by the notes; medium = maybe, read the
  excerpt; low/none = the vault most likely does not answer it. Say so instead of guessing.
- Paths are vault-relative (e.g. "Projects/Alpha.md"); a note title works wherever a note is asked for.
"""


# ---- output models (the SDK turns these into outputSchema) -----------------------------------
class SearchScores(BaseModel):
    fused: float = Field(description="Fusion score after boosts; comparable within one answer only.")
    bm25_rank: int | None = Field(description="Rank in the keyword list, null if not in it.")
    vector_similarity: float | None = Field(description="Cosine similarity of the best section, null if absent.")
    vector_rank: int | None = Field(description="Rank in the meaning (vector) list, null if not in it.")
    graph_boost: float | None
    recency_boost: float | None


class SearchHit(BaseModel):
    path: str = Field(description="Vault-relative path: pass it to read_note, note_links or related_notes.")
    title: str
    heading: str = Field(description="Heading path of the best section, joined with ' > '; empty before the first heading.")
    snippet: str
    start_line: int
    end_line: int
    band: Band
    score: float
    scores: SearchScores
    reason: str = Field(description="Why this matched, in words.")
    text: str | None = Field(default=None, description="The section's text, only when max_tokens was given.")
    truncated: bool = False


class SearchOut(BaseModel):
    query: str
    mode: Mode = Field(description="The mode actually used (lexical when vectors are unavailable).")
    band: Band = Field(description="Confidence of the best hit: high, medium, low or none.")
    caveat: str | None = Field(description="How to read this band; null when the answer is solid.")
    vectors_available: bool
    index_building: bool
    took_ms: float
    results: list[SearchHit]


class ContextSource(BaseModel):
    path: str
    title: str
    heading: str
    start_line: int
    end_line: int
    band: Band


class ContextOut(BaseModel):
    query: str
    band: Band
    caveat: str | None
    max_tokens: int
    chars: int
    markdown: str = Field(description="The context block, ready to paste into a prompt.")
    sources: list[ContextSource]


class NoteOut(BaseModel):
    path: str
    title: str
    heading: str | None
    start_line: int = Field(description="File line of the first line of `text`.")
    text: str = Field(description="The note (or section) text, credentials redacted.")
    chars: int = Field(description="Length of the whole note or section before any cut.")
    truncated: bool


class ListedNote(BaseModel):
    path: str
    title: str
    modified: str = Field(description="Last modification, ISO 8601 UTC.")
    type: str | None = Field(description="The frontmatter `type`, if any.")


class NoteListOut(BaseModel):
    notes: list[ListedNote]
    total: int = Field(description="How many notes match in all.")
    truncated: bool


class RelatedNote(BaseModel):
    path: str
    title: str
    folder: str
    score: float
    band: Literal["high", "medium", "low"]
    heading: str
    excerpt: str
    already_linked: bool
    reasons: list[str]
    similarity: float | None


class RelatedOut(BaseModel):
    source_path: str
    vectors_available: bool
    index_building: bool
    results: list[RelatedNote]


class Outlink(BaseModel):
    target: str = Field(description="The link as written.")
    path: str | None = Field(description="The note it resolves to; null when unresolved.")
    anchor: str | None
    kind: str
    line: int
    ambiguous: bool


class Backlink(BaseModel):
    path: str
    title: str
    line: int
    kind: str
    anchor: str | None


class Unresolved(BaseModel):
    target: str
    line: int
    kind: str


class LinkCounts(BaseModel):
    outlinks: int
    backlinks: int
    unresolved: int


class LinksOut(BaseModel):
    path: str
    title: str
    counts: LinkCounts
    outlinks: list[Outlink]
    backlinks: list[Backlink]
    unresolved: list[Unresolved]
    truncated: bool = Field(description=f"A list was cut at {MAX_LINKS} entries.")


class HealthItem(BaseModel):
    path: str
    line: int | None
    message: str
    fix: str | None


class HealthSection(BaseModel):
    id: str
    title: str
    severity: str
    count: int = Field(description="Findings in all; `items` shows the first few.")
    items: list[HealthItem]


class HealthOut(BaseModel):
    summary: dict[str, int]
    sections: list[HealthSection]


class StatusOut(BaseModel):
    version: str
    notes: int
    chunks: int
    chunks_with_vectors: int
    chunks_without_vectors: int
    vectors_available: bool
    building: bool
    complete: bool
    last_indexed_at: str | None = Field(description="End of the last index run, ISO 8601 UTC.")
    model: str | None
    model_error: str | None
    backend: str
    skipped: int = Field(description="Files not indexed (too large, unreadable, ...).")
    skipped_examples: list[dict[str, str]]


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


# ---- tool parameters ------------------------------------------------------------------------
Query = Annotated[str, Field(min_length=1, max_length=4000, description="What to look for, in words or keywords.")]
Limit50 = Annotated[int, Field(ge=1, le=50, description="How many results, 1-50.")]
SearchMode = Annotated[Mode, Field(description="hybrid (default: keywords + meaning), lexical (exact words, "
                                               "identifiers) or semantic (meaning only).")]
Folder = Annotated[str | None, Field(max_length=1024, description="Only notes under this vault folder, e.g. 'Projects'.")]
Tag = Annotated[str | None, Field(max_length=200, description="Only notes with this tag (nested tags included), e.g. 'project'.")]
NoteType = Annotated[str | None, Field(max_length=200, description="Only notes whose frontmatter `type` is this.")]
Status = Annotated[str | None, Field(max_length=200, description="Only notes whose frontmatter `status` is this.")]
Since = Annotated[str | None, Field(max_length=40, description="Only notes modified since: an ISO date or datetime "
                                                              "(2024-05-01, 2024-05-01T09:00Z) or a span back from "
                                                              "now (7d, 12h, 2w).")]
MaxTokens = Annotated[int | None, Field(ge=50, le=8000, description="Also return each hit's section text, all "
                                                                    "within this many tokens (4 characters each).")]
NotePath = Annotated[str | None, Field(max_length=1024, description="Vault-relative note path, e.g. 'Projects/Alpha.md'.")]
NoteTitle = Annotated[str | None, Field(max_length=1024, description="Note title, file name or alias (instead of path).")]


# ---- results and errors ---------------------------------------------------------------------
class NotAvailable(SidecarError):
    kind = "not_available"


def ok(model: BaseModel, text: str | None = None) -> CallToolResult:
    data = model.model_dump(mode="json")
    body = text if text is not None else json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)


def error_result(exc: SidecarError) -> CallToolResult:
    """isError with `{"error": {...}}` as JSON text, and no structuredContent: clients (the TypeScript
    SDK, hence the MCP Inspector) validate structuredContent against the outputSchema even on errors."""
    payload = {"error": {"code": exc.kind, "message": exc.message, **exc.data}}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
                          is_error=True)


def no_such_note(ref: str, suggestions: list[str] | None = None) -> NotFound:
    """One answer for missing, outside the vault and excluded alike, so nothing can be probed."""
    hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
    message = f"no such note: {ref[:200]!r}.{hint} Use search or list_notes to find notes."
    return NotFound(message, {"suggestions": list(suggestions or [])})


def parse_since(value: str | None, now: dt.datetime | None = None) -> float | None:
    """ISO date/datetime or '7d'/'12h'/'2w' -> Unix seconds; naive times are local time."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    span = re.fullmatch(r"(\d{1,5})\s*([hdw])", text.lower())
    if span:
        hours = int(span.group(1)) * {"h": 1, "d": 24, "w": 168}[span.group(2)]
        return ((now or dt.datetime.now(dt.UTC)) - dt.timedelta(hours=hours)).timestamp()
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParams(f"modified_since {text!r} is not an ISO date (2024-05-01) or a span like 7d") from None
    try:  # year 1 in local time falls before year 1 in UTC: "out of range", a date all the same
        seconds = when.timestamp()
    except (ValueError, OverflowError, OSError):
        seconds = 0.0 if when.year < 1970 else MAX_SINCE
    # The index stores nanoseconds in a signed 64-bit column: years past 2262 would overflow it.
    return min(max(seconds, 0.0), MAX_SINCE)


def iso(ts: float | None) -> str | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


def bounded(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit] + TRUNCATION_MARK.format(rest=len(text) - limit), True


def clean(text: str) -> str:
    """Redaction once more on the way out: the index is redacted, but the disk may have changed."""
    return redact(text).text


# ---- the tools ------------------------------------------------------------------------------
class VaultTools:
    """The tool bodies; each runs the synchronous core on a worker thread."""

    def __init__(self, core: VaultIndex, gate: ReadGate | None = None) -> None:
        self.core = core
        self.gate = gate or ReadGate()
        self._has_notes = False  # sticky: once the index has notes we stop asking
        self._overview: tuple[str, OverviewOut] | None = None

    async def run(self, work: Callable[[], M], text: Callable[[M], str] | None = None,
                  needs_index: bool = True, report: bool = False) -> CallToolResult:
        def guarded() -> M:
            if needs_index:
                self.require_index()
            return work()

        try:
            model = await (self.gate.report(guarded) if report else self.gate.answer(guarded))
        except SidecarError as exc:
            return error_result(exc)
        except Exception as exc:
            busy = busy_from(exc)
            if busy is not None:
                return error_result(busy)
            log.exception("MCP tool failed")
            return error_result(SidecarError("internal error in the sidecar; its log (stderr) has the details"))
        return ok(model, text(model) if text else None)

    def require_index(self) -> None:
        if self._has_notes:
            return
        problem = index_not_ready(self.core.status())
        if problem is not None:
            raise problem
        self._has_notes = True

    def resolve(self, path: str | None, title: str | None) -> str:
        ref = path if path is not None else title
        if ref is None or not ref.strip() or (path is not None and title is not None):
            raise InvalidParams("give exactly one of `path` or `title`")
        try:
            return self.core.resolve_note(ref)
        except NotFound as exc:
            suggestions = exc.data.get("suggestions")
            raise no_such_note(ref, [str(s) for s in suggestions] if isinstance(suggestions, list) else None) from None

    # ---- search and context ---------------------------------------------------------------
    async def search(self, query: Query, limit: Limit50 = 10, mode: SearchMode = "hybrid", folder: Folder = None,
                     tag: Tag = None, type: NoteType = None, status: Status = None,
                     modified_since: Since = None, max_tokens: MaxTokens = None) -> Annotated[CallToolResult, SearchOut]:
        def work() -> SearchOut:
            filters = self.filters(folder, tag, type, status, modified_since)
            result = self.core.search(query, limit=limit, filters=filters, mode=mode, max_tokens=max_tokens)
            return search_out(result)

        return await self.run(work)

    def filters(self, folder: str | None, tag: str | None, note_type: str | None, status: str | None,
                since: str | None) -> dict[str, Any]:
        fields = {k: v for k, v in (("type", note_type), ("status", status)) if v}
        return {"folder": folder, "tag": tag, "fields": fields, "modified_since": parse_since(since)}

    async def get_context(self, query: Query,
                          max_tokens: Annotated[int, Field(ge=100, le=8000, description="Budget for the whole block "
                                                           "in tokens (4 characters each).")] = 1500,
                          limit: Annotated[int, Field(ge=1, le=20, description="At most this many excerpts.")] = 6,
                          mode: SearchMode = "hybrid", folder: Folder = None,
                          tag: Tag = None) -> Annotated[CallToolResult, ContextOut]:
        def work() -> ContextOut:
            result = self.core.search(query, limit=limit, filters=self.filters(folder, tag, None, None, None),
                                      mode=mode, max_tokens=max_tokens)
            return context_out(result, max_tokens)

        return await self.run(work, text=lambda out: out.markdown)

    # ---- single notes ---------------------------------------------------------------------
    async def read_note(self, path: NotePath = None, title: NoteTitle = None,
                        heading: Annotated[str | None, Field(max_length=500, description="Only this section (heading "
                                                             "text, without #), up to the next heading of its level.")] = None,
                        max_chars: Annotated[int, Field(ge=500, le=100_000, description="Cut the text after this "
                                                        "many characters (marked).")] = DEFAULT_READ_CHARS,
                        ) -> Annotated[CallToolResult, NoteOut]:
        def work() -> NoteOut:
            resolved = self.resolve(path, title)
            note = self.read_section(resolved, heading)
            text, cut = bounded(clean(str(note["text"])), max_chars)
            return NoteOut(path=note["path"], title=note["title"], heading=note["heading"],
                           start_line=note["start_line"], text=text, chars=note["chars"],
                           truncated=cut or bool(note["truncated"]))

        return await self.run(work, text=lambda out: out.text)

    def read_section(self, path: str, heading: str | None) -> dict[str, Any]:
        try:
            return self.core.read_note(path, heading)
        except NotFound:
            if not heading:
                raise no_such_note(path) from None
        try:
            whole = str(self.core.read_note(path)["text"])
        except NotFound:
            raise no_such_note(path) from None  # vanished since it was resolved
        headings = [m.group(2) for m in map(HEADING.match, whole.split("\n")) if m][:50]
        raise NotFound(f"no heading {heading[:200]!r} in {path!r}; its headings are: {', '.join(map(repr, headings))}",
                       {"headings": [clean(h) for h in headings]})

    async def note_links(self, path: NotePath = None, title: NoteTitle = None) -> Annotated[CallToolResult, LinksOut]:
        def work() -> LinksOut:
            return links_out(self.core.note_links(self.resolve(path, title)))

        return await self.run(work)

    async def related_notes(self, path: NotePath = None, title: NoteTitle = None,
                            limit: Annotated[int, Field(ge=1, le=50, description="How many notes, 1-50.")] = 10,
                            ) -> Annotated[CallToolResult, RelatedOut]:
        def work() -> RelatedOut:
            return related_out(self.core.related(path=self.resolve(path, title), limit=limit))

        return await self.run(work)

    async def list_notes(self, folder: Folder = None, tag: Tag = None, type: NoteType = None,
                         modified_since: Since = None,
                         limit: Annotated[int, Field(ge=1, le=500, description="How many notes, 1-500.")] = 50,
                         ) -> Annotated[CallToolResult, NoteListOut]:
        def work() -> NoteListOut:
            result = self.core.list_notes(folder, tag, type, parse_since(modified_since), limit)
            notes = [ListedNote(path=n["path"], title=n["title"], modified=iso(n["modified"]) or "",
                                type=n["type"] if isinstance(n["type"], str) else None) for n in result["notes"]]
            return NoteListOut(notes=notes, total=result["total"], truncated=result["truncated"])

        return await self.run(work)

    # ---- the vault as a whole -------------------------------------------------------------
    async def vault_health(self) -> Annotated[CallToolResult, HealthOut]:
        def work() -> HealthOut:
            health = getattr(self.core, "health", None)
            if not callable(health):
                raise NotAvailable("the vault health report is not available in this sidecar version")
            return health_out(health())

        return await self.run(work, report=True)

    async def index_status(self) -> Annotated[CallToolResult, StatusOut]:
        return await self.run(lambda: status_out(self.core.status()), needs_index=False)

    async def vault_overview(self) -> Annotated[CallToolResult, OverviewOut]:
        def work() -> OverviewOut:
            snapshot = self.core.snapshot()
            cached = self._overview
            if cached is not None and cached[0] == snapshot.generation:
                return cached[1]
            out = OverviewOut.model_validate(vault_overview(self.core.reader(), snapshot))
            self._overview = (snapshot.generation, out)
            return out

        return await self.run(work, report=True)


# ---- core answers -> output models --------------------------------------------------------------
def search_out(result: Mapping[str, Any]) -> SearchOut:
    hits = []
    for r in result["results"]:
        hit = SearchHit.model_validate({**r, "snippet": clean(r["snippet"])})
        if r.get("text") is not None:
            hit.text = clean(str(r["text"]))
        hits.append(hit)
    return SearchOut(query=result["query"], mode=result["mode"], band=result["band"], caveat=result["caveat"],
                     vectors_available=result["vectors_available"], index_building=result["index_building"],
                     took_ms=result["took_ms"], results=hits)


def context_out(result: Mapping[str, Any], max_tokens: int) -> ContextOut:
    markdown = clean(format_context(result, max_tokens))
    sources = [ContextSource(path=r["path"], title=r["title"], heading=r["heading"], start_line=r["start_line"],
                             end_line=r["end_line"], band=r["band"]) for r in context_results(result)]
    band, caveat = context_band(result)
    return ContextOut.model_validate({"query": result["query"], "band": band, "caveat": caveat, "max_tokens": max_tokens,
                                      "chars": len(markdown), "markdown": markdown, "sources": sources})


def related_out(result: Mapping[str, Any]) -> RelatedOut:
    results = [RelatedNote.model_validate({**r, "excerpt": clean(r["excerpt"]),
                                           "reasons": [x["label"] for x in r["reasons"]]}) for r in result["results"]]
    return RelatedOut(source_path=result["source_path"], vectors_available=result["vectors_available"],
                      index_building=result["index_building"], results=results)


def links_out(result: Mapping[str, Any]) -> LinksOut:
    outlinks, backlinks, unresolved = result["outlinks"], result["backlinks"], result["unresolved"]
    return LinksOut(
        path=result["path"], title=result["title"],
        counts=LinkCounts(outlinks=len(outlinks), backlinks=len(backlinks), unresolved=len(unresolved)),
        outlinks=[Outlink(target=o["target_raw"], path=o["path"], anchor=o["anchor"], kind=o["kind"], line=o["line"],
                          ambiguous=o["ambiguous"]) for o in outlinks[:MAX_LINKS]],
        backlinks=[Backlink.model_validate(b) for b in backlinks[:MAX_LINKS]],
        unresolved=[Unresolved(target=u["target_raw"], line=u["line"], kind=u["kind"]) for u in unresolved[:MAX_LINKS]],
        truncated=max(len(outlinks), len(backlinks), len(unresolved)) > MAX_LINKS,
    )


def health_out(report: Mapping[str, Any]) -> HealthOut:
    summary = {str(k): int(v) for k, v in dict(report.get("summary") or {}).items() if isinstance(v, int)}
    sections = []
    for s in report.get("sections") or []:
        if not s.get("count"):
            continue  # a clean check is noise for an agent; `summary` still lists it
        items = [HealthItem(path=i["path"], line=i.get("line"), message=clean(str(i.get("message", ""))),
                            fix=i.get("fix")) for i in list(s.get("items") or [])[:MAX_HEALTH_ITEMS]]
        sections.append(HealthSection(id=str(s["id"]), title=str(s.get("title", s["id"])),
                                      severity=str(s.get("severity", "info")), count=int(s.get("count", len(items))),
                                      items=items))
    return HealthOut(summary=summary, sections=sections)


def status_out(s: Mapping[str, Any]) -> StatusOut:
    model = s.get("model") or {}
    skipped = list(s.get("skipped") or [])
    return StatusOut(
        version=s["version"], notes=s["notes"], chunks=s["chunks"], chunks_with_vectors=s["chunks_with_vectors"],
        chunks_without_vectors=s["chunks_without_vectors"], vectors_available=s["vectors_available"],
        building=s["building"], complete=s["complete"], last_indexed_at=iso(s.get("last_indexed_at")),
        model=model.get("name"), model_error=model.get("error"), backend=s["backend"], skipped=len(skipped),
        skipped_examples=[{"path": str(x["path"]), "reason": str(x["reason"])} for x in skipped[:20]],
    )


# ---- the server -----------------------------------------------------------------------------
TOOLS: tuple[tuple[str, str, str], ...] = (
    ("search", "Search the vault",
     "Ranked search over the user's notes (keywords + meaning, link-aware). Use it to find which notes talk "
     "about something, or to locate a fact; then read_note a hit for the full text. Each hit has path, "
     "heading, line range, snippet and scores; the answer's `band` says how much to trust it (low/none: the "
     "vault most likely does not answer this). Filters: folder, tag, frontmatter type/status, modified_since."),
    ("get_context", "Context block for a question",
     "One ready-to-paste Markdown block of the most relevant note excerpts for a question, within a token "
     "budget, each attributed 'Title > Heading (path, lines a-b)' and with the confidence stated first. Use "
     "it when you want grounding for an answer in one call rather than a list of hits."),
    ("read_note", "Read a note",
     "The current text of one note (credentials redacted), by vault path or by title; optionally one "
     "section by heading. Use it after search/get_context to read a hit in full, or to open a note the user "
     "names. Long notes are cut (marked); ask for a section to read less."),
    ("list_notes", "List notes",
     "Notes by folder, tag, frontmatter type or modification time, newest first. Use it to browse (e.g. "
     "'notes changed this week', 'everything tagged #project') rather than to answer a question."),
    ("related_notes", "Notes related to a note",
     "Notes related to one note: similar sections, links to it, shared links and tags, each with the "
     "reasons. Use it to explore around a note or to suggest links the user has not made."),
    ("note_links", "Links of a note",
     "Outgoing links (with what they resolve to), backlinks and unresolved links of one note. Use it to "
     "follow the user's own link structure or check what points to a note."),
    ("vault_health", "Vault health report",
     "Counts and the first findings of the vault health checks: orphans, unresolved and ambiguous links, "
     "broken anchors, near-duplicates, notes containing credentials. Use it when asked to tidy or audit the vault."),
    ("index_status", "Index status",
     "What the index holds (notes, chunks, vectors), whether it is complete or still building, the model "
     "and skipped files. Use it when results look incomplete or a note you expect is missing."),
    ("vault_overview", "Vault overview",
     "How this vault is organised, derived from the index: top folders (with their tags, types and example "
     "titles), the daily-note folder and date format, hub/MOC notes, most linked notes, frequent tags, "
     "frontmatter fields and their common values, and the link style. Call it first in a vault you have not seen."),
)


def build_mcp(core: VaultIndex, gate: ReadGate | None = None) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(SERVER_NAME, title="Vault Sidecar", version=__version__,
                                       instructions=INSTRUCTIONS, log_level="WARNING")
    tools = VaultTools(core, gate)
    for name, title, description in TOOLS:
        server.add_tool(getattr(tools, name), name=name, title=title, description=description,
                        annotations=READ_ONLY.model_copy(update={"title": title}), structured_output=True)
    return server


# ---- HTTP -----------------------------------------------------------------------------------
class GuardMiddleware:
    """Applies the localhost Guard before the SDK sees a request; no CORS headers, ever."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] == "http":
            rejection = self.check(scope)
            if rejection is not None:
                log.info("MCP request refused: %s", rejection.code)
                await reject(rejection, send)
                return
        await self.app(scope, receive, send)

    def check(self, scope: Scope) -> Rejection | None:
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            headers.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))  # first wins, as in the SDK
        return self.guard.check(headers.get("host"), headers.get("origin"), headers.get("authorization"),
                                headers.get("content-type"), scope["method"],
                                scope.get("query_string", b"").decode("latin-1"))


async def reject(rejection: Rejection, send: Send) -> None:
    body = json.dumps({"error": {"code": rejection.code, "message": rejection.message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if rejection.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="vault-sidecar"'))
    start: Message = {"type": "http.response.start", "status": rejection.status, "headers": headers}
    await send(start)
    await send({"type": "http.response.body", "body": body})


def mcp_http_app(core: VaultIndex, token: str, port: int, gate: ReadGate | None = None) -> ASGIApp:
    """Streamable HTTP at /mcp, stateless with JSON answers, behind the Guard for this port."""
    if not token:
        raise ValueError("the MCP endpoint needs a token")
    guard = Guard(port, token)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=sorted(guard.allowed_hosts()), allowed_origins=[])
    inner = build_mcp(core, gate).streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
        transport_security=security, max_request_body_size=MAX_BODY_BYTES)
    return GuardMiddleware(inner, guard)


class McpReady(asyncio.Event):
    """Set once the server accepts connections; `port` is the bound port (the answer to port 0)."""

    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{MCP_PATH}"


class _Uvicorn(uvicorn.Server):
    """uvicorn that leaves signals to the host process, and says when it is listening."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the host owns SIGINT/SIGTERM and stops us by cancelling serve()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.listening.set()


class McpHttpServer:
    """The MCP HTTP endpoint on 127.0.0.1, run on the caller's asyncio loop.

    The socket is bound in the constructor: port 0 resolves to a real port at once, before the
    app exists (its Host check needs the port), and "port in use" fails here, not in a task.
    """

    def __init__(self, core: VaultIndex, token: str, port: int = 0, gate: ReadGate | None = None) -> None:
        self.sock = bind_loopback(port)
        self.port: int = self.sock.getsockname()[1]
        self.watch = ConnectionWatch(uvicorn_answering)  # read timeouts and a connection cap (connwatch.py)
        config = uvicorn.Config(mcp_http_app(core, token, self.port, gate), log_config=None, access_log=False,
                                lifespan="on", ws="none", server_header=False, timeout_graceful_shutdown=2,
                                http=watched_h11(self.watch))
        self._server = _Uvicorn(config)

    async def serve(self, ready: asyncio.Event | None = None) -> None:
        """Serve until cancelled; a cancel shuts down gracefully (open requests get 2 s)."""
        task = asyncio.ensure_future(self._server.serve(sockets=[self.sock]))
        notify = asyncio.ensure_future(self._notify(ready))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            self._server.should_exit = True
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            notify.cancel()
            self.sock.close()

    async def _notify(self, ready: asyncio.Event | None) -> None:
        await self._server.listening.wait()
        if isinstance(ready, McpReady):
            ready.port = self.port
        if ready is not None:
            ready.set()


def bind_loopback(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart on a fixed port despite TIME_WAIT
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(False)
    return sock


async def serve_mcp_http(core: VaultIndex, token: str, port: int, ready: asyncio.Event | None = None,
                         gate: ReadGate | None = None) -> None:
    """Serve MCP over HTTP until cancelled. Pass an `McpReady` to learn the bound port."""
    await McpHttpServer(core, token, port, gate).serve(ready)


async def start_mcp_http(core: VaultIndex, token: str, port: int,
                         gate: ReadGate | None = None) -> tuple[asyncio.Task[None], int]:
    """Start serving in a task; return it and the bound port once the server accepts connections."""
    ready = McpReady()
    task = asyncio.create_task(serve_mcp_http(core, token, port, ready, gate), name="mcp-http")
    waiter = asyncio.ensure_future(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done():
        task.result()  # raises what stopped it
        raise RuntimeError("the MCP server stopped before it was ready")
    assert ready.port is not None
    return task, ready.port


# ---- stdio ----------------------------------------------------------------------------------
async def run_stdio_async(core: VaultIndex) -> None:
    """MCP over this process's stdin/stdout; the SDK points fd 1 at stderr while serving."""
    await build_mcp(core).run_stdio_async()


def run_stdio(core: VaultIndex) -> None:
    asyncio.run(run_stdio_async(core))

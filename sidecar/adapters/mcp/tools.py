"""The MCP tool set: read-only vault tools, note resources and prompts for agents, and the
server class with our argument rules. Transports (HTTP, stdio) live in server.py; the write tools
(writes.py) and stdio subscriptions (subscribe.py) build on this module."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import json
import re
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Protocol, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources.templates import ResourceSecurityError
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError

from sidecar.adapters.mcp.models import ContextOut, ListedNote, NoteListOut, NoteOut, OverviewOut, StatusOut
from sidecar.adapters.mcp.outputs import (
    Backlink,
    HealthItem,
    HealthOut,
    HealthSection,
    LinkCounts,
    LinksOut,
    Outlink,
    RelatedNote,
    RelatedOut,
    SearchHit,
    SearchOut,
    SearchScores,
)
from sidecar.core import VaultIndex
from sidecar.errors import InvalidParams, NotFound, SidecarError
from sidecar.ingest.redact import redact
from sidecar.protocol_types import (
    HEALTH_PAGE_LIMIT_MIN,
    HEALTH_PAGE_SECTION_MAX_LENGTH,
    NOTE_LINKS_PATH_MAX_LENGTH,
    RELATED_LIMIT_MIN,
    SEARCH_FILTERS_FOLDER_MAX_LENGTH,
    SEARCH_LIMIT_DEFAULT,
    SEARCH_LIMIT_MAX,
    SEARCH_LIMIT_MIN,
)
from sidecar.protocol_types import SearchMode as Mode
from sidecar.retrieve import paging
from sidecar.retrieve.context import context_answer
from sidecar.retrieve.note_reads import heading_paths
from sidecar.retrieve.search import MAX_QUERY_CHARS
from sidecar.serve.client_errors import client_error
from sidecar.serve.gate import ReadGate


class Follower(Protocol):
    """What the stdio server runs beside itself to notify subscribers (subscribe.NoteSubscriptions)."""

    async def run(self) -> None: ...


SERVER_NAME = "vault-sidecar"
MCP_PATH = "/mcp"
DEFAULT_READ_CHARS = 6_000  # about 1.5k tokens of prose: one page of a long note
MAX_SEARCH_DEPTH = SEARCH_LIMIT_MAX  # the core ranks at most this many hits; cursors page within them
MAX_SINCE = 9_000_000_000.0  # Unix seconds, year 2255: nothing on disk is newer
TRUNCATION_MARK = "\n…[truncated: {rest:,} more characters, lines {first}-{last}; continue with offset={next}]"

M = TypeVar("M", bound=BaseModel)

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

INSTRUCTIONS = """\
Access to the user's Obsidian vault (Markdown notes), indexed locally; read-only unless writes are on.
- New to this vault? Call vault_overview first: folders, daily-note convention, hub notes, tags, fields.
- To answer a question from the notes: get_context (one ready-to-paste block) or search (ranked hits),
  then read_note for the full text of a hit.
- Every search answer has a confidence band: high = answered by the notes; medium = maybe, read the
  excerpt; low/none = the vault most likely does not answer it. Say so instead of guessing.
- Paths are vault-relative (e.g. "Projects/Alpha.md"); a note title works wherever a note is asked for.
"""


# ---- tool parameters ------------------------------------------------------------------------
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")]
Limit50 = Annotated[int, Field(ge=SEARCH_LIMIT_MIN, le=50)]  # tighter than the protocol's: agents pay per token
SearchMode = Annotated[Mode, Field(description="hybrid: keywords + meaning; lexical: exact words; semantic: meaning.")]
Folder = Annotated[str | None, Field(max_length=SEARCH_FILTERS_FOLDER_MAX_LENGTH, description="Only notes under this folder.")]
Tag = Annotated[str | None, Field(max_length=200, description="Only notes with this tag (or a nested one).")]
NoteType = Annotated[str | None, Field(max_length=200, description="Frontmatter type.")]
Status = Annotated[str | None, Field(max_length=200, description="Frontmatter status.")]
Since = Annotated[str | None, Field(max_length=40, description="Modified since: ISO date/time, or 7d, 12h, 2w back.")]
MaxTokens = Annotated[int | None, Field(ge=50, le=8000, description="Also each hit's section text, within this budget.")]
NotePath = Annotated[str | None, Field(max_length=NOTE_LINKS_PATH_MAX_LENGTH, description="Vault path, e.g. 'Projects/Alpha.md'.")]
NoteTitle = Annotated[str | None, Field(max_length=NOTE_LINKS_PATH_MAX_LENGTH, description="Title, file name or alias, instead of path.")]
Explain = Annotated[bool, Field(description="Add title, scores and reason.")]
Cursor = Annotated[str | None, Field(max_length=paging.MAX_CURSOR_CHARS, description="next_cursor of the last page.")]


# ---- results and errors ---------------------------------------------------------------------
class NotAvailable(SidecarError):
    kind = "not_available"  # MCP only, not a JSON-RPC kind: the generic server error's code
    code = SidecarError.code


def ok(model: BaseModel, text: str | None = None) -> CallToolResult:
    data = model.model_dump(mode="json", exclude_none=True)
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
        raise InvalidParams(f"modified_since: {text[:40]!r} is not an ISO date (2024-05-01) or a span like 7d",
                            {"field": "modified_since"}) from None
    try:  # year 1 in local time falls before year 1 in UTC: "out of range", a date all the same
        seconds = when.timestamp()
    except (ValueError, OverflowError, OSError):
        seconds = 0.0 if when.year < 1970 else MAX_SINCE
    # The index stores nanoseconds in a signed 64-bit column: years past 2262 would overflow it.
    return min(max(seconds, 0.0), MAX_SINCE)


def iso(ts: float | None) -> str | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds")


def clean(text: str) -> str:
    """Redaction once more on the way out: the index is redacted, but the disk may have changed."""
    return _clean_short(text) if len(text) <= CLEAN_CACHED_CHARS else redact(text).text


CLEAN_CACHED_CHARS = 2000  # snippets, headings, excerpts: ~40 us of rules each, 11 a search page (0.4 ms)
CLEAN_CACHED = 2048  # texts kept: 4 MB at most


@functools.lru_cache(maxsize=CLEAN_CACHED)  # redaction is a function of the text alone: a snippet shown again
def _clean_short(text: str) -> str:  # (a query retyped, the next page, another agent asking) costs a lookup
    return redact(text).text


# ---- the tools ------------------------------------------------------------------------------
class VaultTools:
    """The tool bodies; each runs the synchronous core on a worker thread."""

    def __init__(self, core: VaultIndex, gate: ReadGate | None = None) -> None:
        self.core = core
        self.gate = gate or ReadGate()
        self._overview: tuple[str, OverviewOut] | None = None

    async def run(self, work: Callable[[], M], text: Callable[[M], str] | None = None,
                  needs_index: bool = True, report: bool = False, write: bool = False,
                  keywords: bool = False) -> CallToolResult:
        """`report` runs in the reports' lane of the gate, `keywords` (no vectors) in the keyword lane;
        `write` beside them (writes take the writer's lock)."""
        def guarded() -> M:
            if needs_index:
                self.core.require_index()
            return work()

        try:
            if write:
                model = await asyncio.to_thread(guarded)
            else:
                lane = self.gate.report if report else self.gate.keywords if keywords else self.gate.answer
                model = await lane(guarded)
        except Exception as exc:
            return error_result(client_error(exc))
        return ok(model, text(model) if text else None)

    def resolve(self, path: str | None, title: str | None) -> str:
        ref = path if path is not None else title
        if ref is None or not ref.strip() or (path is not None and title is not None):
            raise InvalidParams("path: give exactly one of `path` or `title`", {"field": "path"})
        try:
            return self.core.resolve_note(ref)
        except NotFound as exc:
            suggestions = exc.data.get("suggestions")
            raise no_such_note(ref, [str(s) for s in suggestions] if isinstance(suggestions, list) else None) from None

    # ---- search and context ---------------------------------------------------------------
    async def search(self, query: Query, limit: Limit50 = SEARCH_LIMIT_DEFAULT, mode: SearchMode = "hybrid", folder: Folder = None,
                     tag: Tag = None, type: NoteType = None, status: Status = None,
                     modified_since: Since = None, max_tokens: MaxTokens = None,
                     explain: Explain = False, cursor: Cursor = None) -> Annotated[CallToolResult, SearchOut]:
        def work() -> SearchOut:
            where = paging.scope("search", query=query, mode=mode, folder=folder, tag=tag, type=type, status=status,
                                 modified_since=modified_since, max_tokens=max_tokens)
            offset = paging.decode_cursor(cursor, where)
            if offset >= MAX_SEARCH_DEPTH:
                raise InvalidParams(f"cursor: search pages reach {MAX_SEARCH_DEPTH} hits deep", {"field": "cursor"})
            depth = min(offset + limit + 1, MAX_SEARCH_DEPTH)  # one more than shown: is there a next page?
            filters = self.filters(folder, tag, type, status, modified_since)
            result = self.core.search(query, limit=depth, filters=filters, mode=mode, max_tokens=max_tokens)
            found = len(result["results"])
            result["results"] = result["results"][offset:offset + limit]
            return search_out(result, paging.next_cursor(offset, len(result["results"]), found, where), explain)

        return await self.run(work, keywords=mode == "lexical")

    def filters(self, folder: str | None, tag: str | None, note_type: str | None, status: str | None,
                since: str | None) -> dict[str, Any]:
        fields = {k: v for k, v in (("type", note_type), ("status", status)) if v}
        return {"folder": folder, "tag": tag, "fields": fields, "modified_since": parse_since(since)}

    async def get_context(self, query: Query,
                          max_tokens: Annotated[int, Field(ge=100, le=8000)] = 1500,
                          limit: Annotated[int, Field(ge=1, le=20)] = 6,
                          mode: SearchMode = "hybrid", folder: Folder = None,
                          tag: Tag = None) -> Annotated[CallToolResult, ContextOut]:
        def work() -> ContextOut:
            result = self.core.search(query, limit=limit, filters=self.filters(folder, tag, None, None, None),
                                      mode=mode, max_tokens=max_tokens)
            return context_out(result, max_tokens)

        return await self.run(work, text=lambda out: out.markdown)

    # ---- single notes ---------------------------------------------------------------------
    async def read_note(self, path: NotePath = None, title: NoteTitle = None,
                        heading: Annotated[str | None, Field(max_length=1000, description="A heading or heading path 'A > B'.")] = None,
                        start_line: Annotated[int | None, Field(ge=1)] = None,
                        end_line: Annotated[int | None, Field(ge=1)] = None,
                        offset: Annotated[int, Field(ge=0, description="next_offset of the last page.")] = 0,
                        max_chars: Annotated[int, Field(ge=200, le=100_000)]
                        = DEFAULT_READ_CHARS,
                        ) -> Annotated[CallToolResult, NoteOut]:
        def work() -> NoteOut:
            if heading is not None and (start_line is not None or end_line is not None):
                raise InvalidParams("give `heading` or a line range (start_line, end_line), not both",
                                    {"field": "heading"})
            note = self.read_section(self.resolve(path, title), heading)
            text, first = line_range(clean(str(note["text"])), int(note["start_line"]), start_line, end_line)
            page = note_page(note, text, first, offset, max_chars)
            if self.core.writes is not None:
                page.content_hash = self.core.writes.hash_of(page.path)
            return page

        return await self.run(work, text=read_text)

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
        headings = [" > ".join(trail) for trail, _level, _line in heading_paths(path, whole)][:50]
        raise NotFound(f"no heading {heading[:200]!r} in {path!r}; its headings are: {', '.join(map(repr, headings))}",
                       {"headings": [clean(h) for h in headings]})

    async def note_links(self, path: NotePath = None, title: NoteTitle = None,
                         direction: Annotated[Literal["both", "out", "in"], Field()] = "both",
                         limit: Annotated[int, Field(ge=1, le=200)] = 25,
                         cursor: Cursor = None) -> Annotated[CallToolResult, LinksOut]:
        def work() -> LinksOut:
            resolved = self.resolve(path, title)
            where = paging.scope("note_links", path=resolved, direction=direction)
            return links_out(self.core.note_links(resolved), direction, paging.decode_cursor(cursor, where), limit,
                             where)

        return await self.run(work)

    async def related_notes(self, path: NotePath = None, title: NoteTitle = None,
                            limit: Annotated[int, Field(ge=RELATED_LIMIT_MIN, le=50)] = 8,
                            explain: Explain = False) -> Annotated[CallToolResult, RelatedOut]:
        def work() -> RelatedOut:
            return related_out(self.core.related(path=self.resolve(path, title), limit=limit), explain)

        return await self.run(work)

    async def list_notes(self, folder: Folder = None, tag: Tag = None, type: NoteType = None,
                         modified_since: Since = None,
                         limit: Annotated[int, Field(ge=1, le=500)] = 30,
                         cursor: Cursor = None) -> Annotated[CallToolResult, NoteListOut]:
        def work() -> NoteListOut:
            where = paging.scope("list_notes", folder=folder, tag=tag, type=type, modified_since=modified_since)
            offset = paging.decode_cursor(cursor, where)
            result = self.core.list_notes(folder, tag, type, parse_since(modified_since), limit, offset)
            notes = [ListedNote(path=n["path"], title=n["title"], modified=iso(n["modified"]) or "",
                                type=n["type"] if isinstance(n["type"], str) else None) for n in result["notes"]]
            return NoteListOut(notes=notes, total=result["total"], truncated=result["truncated"],
                               next_cursor=paging.next_cursor(offset, len(notes), result["total"], where))

        return await self.run(work)

    # ---- the vault as a whole -------------------------------------------------------------
    async def vault_health(self, section: Annotated[str | None, Field(max_length=HEALTH_PAGE_SECTION_MAX_LENGTH,
                                                                      description="A section id.")] = None,
                           limit: Annotated[int, Field(ge=HEALTH_PAGE_LIMIT_MIN, le=100)] = 1,
                           cursor: Cursor = None) -> Annotated[CallToolResult, HealthOut]:
        def work() -> HealthOut:
            summary_of, page_of = getattr(self.core, "health_summary", None), getattr(self.core, "health_page", None)
            if not (callable(summary_of) and callable(page_of)):
                raise NotAvailable("the vault health report is not available in this sidecar version")
            if section is None and cursor is not None:
                raise InvalidParams("cursor: vault_health pages within one `section`", {"field": "cursor"})
            where = paging.scope("vault_health", section=section)
            offset = paging.decode_cursor(cursor, where)
            summary = summary_of()  # the kept findings, advanced by what changed (health_cache.py)
            if section is None:  # every section with findings, its first items; a clean check is noise here
                return health_out(summary, [page_of(s["id"], limit) for s in summary["sections"] if s["count"]], None)
            start = paging.encode_cursor(offset, paging.scope("health.page", section=section)) if offset else None
            page = page_of(section, limit, start)
            return health_out(summary, [page], paging.next_cursor(offset, len(page["items"]), page["count"], where))

        return await self.run(work, report=True)

    async def index_status(self, limit: Annotated[int, Field(ge=1, le=200)] = 10,
                           cursor: Cursor = None) -> Annotated[CallToolResult, StatusOut]:
        def work() -> StatusOut:
            where = paging.scope("index_status")
            return status_out(self.core.status(), paging.decode_cursor(cursor, where), limit, where)

        return await self.run(work, needs_index=False)

    async def vault_overview(self) -> Annotated[CallToolResult, OverviewOut]:
        def work() -> OverviewOut:
            snapshot = self.core.snapshot()
            cached = self._overview
            if cached is not None and cached[0] == snapshot.generation:
                return cached[1]
            out = OverviewOut.model_validate(self.core.overview(snapshot))
            self._overview = (snapshot.generation, out)
            return out

        return await self.run(work, report=True)


# ---- core answers -> output models --------------------------------------------------------------
def search_out(result: Mapping[str, Any], cursor: str | None, explain: bool) -> SearchOut:
    return SearchOut(mode=result["mode"], band=result["band"], caveat=result["caveat"],
                     index_building=result["index_building"] or None, next_cursor=cursor,
                     results=[search_hit(r, explain) for r in result["results"]])


def search_hit(r: Mapping[str, Any], explain: bool) -> SearchHit:
    hit = SearchHit(path=r["path"], heading=r["heading"], start_line=r["start_line"], end_line=r["end_line"],
                    band=r["band"], snippet=clean(r["snippet"]))
    if r.get("text") is not None:
        hit.text, hit.truncated = clean(str(r["text"])), bool(r.get("truncated")) or None
    if explain:
        hit.title, hit.score, hit.reason = r["title"], r["score"], r["reason"]
        hit.scores = SearchScores.model_validate(r["scores"])
    return hit


def context_out(result: Mapping[str, Any], max_tokens: int) -> ContextOut:
    return ContextOut.model_validate(context_answer(result, max_tokens))  # sources' titles are CLI only


def related_out(result: Mapping[str, Any], explain: bool) -> RelatedOut:
    results = []
    for r in result["results"]:
        note = RelatedNote(path=r["path"], band=r["band"], heading=r["heading"], excerpt=clean(r["excerpt"]),
                           already_linked=r["already_linked"], reasons=[x["label"] for x in r["reasons"]])
        if explain:
            note.title, note.score, note.similarity, note.standout = r["title"], r["score"], r["similarity"], r["standout"]
        results.append(note)
    return RelatedOut(source_path=result["source_path"], index_building=result["index_building"] or None,
                      results=results)


def read_text(out: NoteOut) -> str:
    """The page as the model reads it; with writes on, the hash an edit must name comes last."""
    return out.text if out.content_hash is None else f"{out.text}\n…[content_hash={out.content_hash}]"


def line_range(text: str, first_line: int, start: int | None, end: int | None) -> tuple[str, int]:
    """File lines start..end (inclusive) of a text that begins at file line first_line."""
    if start is None and end is None:
        return text, first_line
    lines = text.split("\n")
    last_line = first_line + len(lines) - 1
    start = max(start or first_line, first_line)
    end = min(end or last_line, last_line)
    if start > last_line:
        raise InvalidParams(f"start_line: {start} is past the end (last line {last_line})",
                            {"field": "start_line", "maximum": last_line})
    if end < start:
        raise InvalidParams(f"end_line: {end} is before start_line {start}", {"field": "end_line", "minimum": start})
    return "\n".join(lines[start - first_line:end - first_line + 1]), start


def note_page(note: Mapping[str, Any], text: str, first_line: int, offset: int, max_chars: int) -> NoteOut:
    """One page of the text read, the cut marked in the text itself with where to go on."""
    page = paging.page_text(text, offset, max_chars)
    start = first_line + text.count("\n", 0, offset)
    shown = page.text.removesuffix("\n")  # a page that ends a line: its line break is not a line of its own
    end = start + shown.count("\n")
    body = page.text
    if page.next_offset is not None:
        resume = end + 1 if page.text.endswith("\n") else end  # a cut inside a line resumes on that line
        body = shown + TRUNCATION_MARK.format(rest=page.remaining, first=resume,
                                                                last=first_line + text.count("\n"),
                                                                next=page.next_offset)
    return NoteOut(path=note["path"], title=note["title"], heading=note["heading"], start_line=start, end_line=end,
                   text=body, offset=offset, next_offset=page.next_offset, remaining_chars=page.remaining,
                   total_chars=len(text), truncated=page.next_offset is not None)


def links_out(result: Mapping[str, Any], direction: str, offset: int, limit: int, where: str) -> LinksOut:
    """One page over the outgoing links (in file order), then the backlinks (by note)."""
    outlinks = result["outlinks"] if direction in ("both", "out") else []
    backlinks = result["backlinks"] if direction in ("both", "in") else []
    shown_out = outlinks[offset:offset + limit]
    rest = limit - len(shown_out)
    back_from = max(0, offset - len(outlinks))
    shown_back = backlinks[back_from:back_from + rest] if rest > 0 else []
    total = len(outlinks) + len(backlinks)
    return LinksOut(
        path=result["path"], title=result["title"],
        counts=LinkCounts(outlinks=len(result["outlinks"]), backlinks=len(result["backlinks"]),
                          unresolved=len(result["unresolved"])),
        outlinks=[Outlink(target=o["target_raw"], path=o["path"], anchor=o["anchor"], kind=o["kind"], line=o["line"],
                          ambiguous=o["ambiguous"] or None) for o in shown_out],
        backlinks=[Backlink.model_validate(b) for b in shown_back],
        next_cursor=paging.next_cursor(offset, len(shown_out) + len(shown_back), total, where),
    )


def health_out(summary: Mapping[str, Any], pages: list[Mapping[str, Any]], cursor: str | None) -> HealthOut:
    """The counts of every section, and the given pages of section items (health.page answers)."""
    counts = {str(k): int(v) for k, v in dict(summary.get("summary") or {}).items() if isinstance(v, int)}
    sections = [HealthSection(id=str(p["id"]), title=str(p["title"]), severity=str(p["severity"]), count=int(p["count"]),
                              items=[HealthItem(path=i["path"], line=i.get("line"), message=clean(str(i.get("message", ""))),
                                                fix=i.get("fix")) for i in p["items"]])
                for p in pages]
    return HealthOut(summary=counts, sections=sections, next_cursor=cursor)


def status_out(s: Mapping[str, Any], offset: int, limit: int, where: str) -> StatusOut:
    model = s.get("model") or {}
    skipped = list(s.get("skipped") or [])
    shown = [{"path": str(x["path"]), "reason": str(x["reason"])} for x in skipped[offset:offset + limit]]
    return StatusOut(
        version=s["version"], notes=s["notes"], chunks=s["chunks"], chunks_with_vectors=s["chunks_with_vectors"],
        chunks_without_vectors=s["chunks_without_vectors"], vectors_available=s["vectors_available"],
        building=s["building"], complete=s["complete"], last_indexed_at=iso(s.get("last_indexed_at")),
        model=model.get("name"), model_error=model.get("error"), backend=s["backend"], skipped=len(skipped),
        skipped_files=shown, next_cursor=paging.next_cursor(offset, len(shown), len(skipped), where),
    )


# ---- the server -----------------------------------------------------------------------------
TOOLS: tuple[tuple[str, str, str], ...] = (
    ("search", "Search the vault",
     "Ranked search over the notes (keywords + meaning, link-aware). Each hit: path, heading path, lines, band, "
     "snippet; read_note(path, heading) reads it. The answer's band is its confidence: low/none means the vault "
     "most likely does not answer this, so say so. Filters: folder, tag, type, status, modified_since."),
    ("get_context", "Context block for a question",
     "One Markdown block of the best excerpts for a question within max_tokens, each attributed "
     "'Title > Heading (path, lines a-b)', confidence first: grounding for an answer in one call."),
    ("read_note", "Read a note",
     "A note's current text (credentials redacted) by path or title: whole, one section (its heading or the "
     "heading path search gives) or a line range, one page at a time (continue with next_offset)."),
    ("list_notes", "List notes",
     "Notes by folder, tag, frontmatter type or modification time, newest first: for browsing, not answering."),
    ("related_notes", "Notes related to a note",
     "Notes related to one note (similar sections, links, shared links and tags) with the reasons: to explore "
     "around a note or suggest links the user has not made."),
    ("note_links", "Links of a note",
     "A note's outgoing links (and what they resolve to), then its backlinks."),
    ("vault_health", "Vault health report",
     "Counts and first findings of the vault checks (orphans, unresolved links, broken anchors, "
     "near-duplicates, notes with credentials); one section at a time with `section`."),
    ("index_status", "Index status",
     "What the index holds, whether it is complete or still building, the model, skipped files: when results "
     "look incomplete."),
    ("vault_overview", "Vault overview",
     "How the vault is organised: folders, daily-note convention, hub notes, most linked notes, tags, "
     "frontmatter fields, link style. Call it first in a vault you have not seen."),
)


def slim_schema(schema: Any) -> Any:
    """The schema without what costs tokens and says nothing: pydantic's per-field titles and
    `X or null` unions (an absent field is the null)."""
    if isinstance(schema, list):
        return [slim_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs"):
            out[key] = {name: slim_schema(sub) for name, sub in value.items()}
        else:
            out[key] = slim_schema(value)
    alternatives = out.get("anyOf")
    if isinstance(alternatives, list) and len(alternatives) == 2 and {"type": "null"} in alternatives:
        other = next(a for a in alternatives if a != {"type": "null"})
        del out["anyOf"]
        if out.get("default", 0) is None:
            del out["default"]
        out = {**other, **out}
    return out


def outline_schema(schema: dict[str, Any], defs: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """An output schema one level deep: the answer's fields with their types; the objects inside are
    just objects (each answer names their fields, the tool description says what matters). It was
    most of tools/list: 4.9k of 7.9k tokens (docs/mcp.md)."""
    if "$ref" in schema:
        return outline_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, depth)
    kind = schema.get("type")
    if kind == "object" and "properties" in schema:
        if depth >= 1:
            return {"type": "object"}
        out: dict[str, Any] = {"type": "object", "properties": {
            name: outline_schema(sub, defs, depth + 1) for name, sub in schema["properties"].items()}}
        if schema.get("required"):
            out["required"] = schema["required"]
        return out
    if kind == "array" and isinstance(schema.get("items"), dict):
        return {"type": "array", "items": outline_schema(schema["items"], defs, depth)}
    return {k: v for k, v in schema.items() if k not in ("description", "default")}


class VaultMCP(MCPServer[Any]):
    """The SDK's server with our argument rules: an unknown tool is a protocol error (invalid params); unknown,
    missing, out-of-range or wrongly typed arguments are a tool error naming the field and what it allows (the
    SDK would ignore unknown ones, coerce types and answer the rest with pydantic's own text). Prompts: an
    unknown one or argument, or a missing argument, is invalid params naming it."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            names = ", ".join(t.name for t in self._tool_manager.list_tools())
            raise MCPError(code=INVALID_PARAMS, message=f"unknown tool {name[:100]!r}; the tools are: {names}")
        problem = argument_problem(tool.parameters, arguments, tool.fn_metadata.validate_arguments)
        if problem is not None:
            return error_result(problem)
        return await super().call_tool(name, arguments, context)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None) -> GetPromptResult | InputRequiredResult:
        """The SDK answers these mistakes with JSON-RPC code 0 and logs a traceback, as for a bug."""
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            names = [p.name for p in self._prompt_manager.list_prompts()]
            raise protocol_error(InvalidParams(f"unknown prompt {name[:100]!r}; the prompts are: {', '.join(names)}",
                                               {"field": "name", "allowed": names}))
        problem = prompt_argument_problem(prompt, arguments or {})
        if problem is not None:
            raise protocol_error(problem)
        return await super().get_prompt(name, arguments, context)

    async def _handle_list_resources(self, ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        """Every note as a resource, a page at a time (the SDK's own list has no cursor)."""
        assert self.notes is not None
        return await self.notes.list_page(params.cursor if params else None)

    notes: NoteResources | None = None
    note_subscriptions: Follower | None = None  # stdio only (build_mcp: subscribe.NoteSubscriptions)

    def note_path_of(self, uri: str) -> str | None:
        """The note path a `vault:///` URI names, decoded as resources/read decodes it (the SDK's template)."""
        for template in self._resource_manager.list_templates():
            try:
                params = template.matches(uri)
            except ResourceSecurityError:
                return None
            if params is not None:
                path = params.get("path")
                return path if isinstance(path, str) else None
        return None

    def slim_tool(self, name: str) -> None:
        """Publish our schema for a tool, and hold its arguments to the JSON types that schema names."""
        tool = self._tool_manager.get_tool(name)  # the SDK has no public way to publish a schema of our own
        assert tool is not None
        tool.parameters = {**slim_schema(tool.parameters), "additionalProperties": False}
        tool.fn_metadata = StrictArguments(**{field: getattr(tool.fn_metadata, field)
                                              for field in FuncMetadata.model_fields})
        output = slim_schema(tool.output_schema)
        tool.__dict__["output_schema"] = outline_schema(output, output.get("$defs", {}))  # a cached_property


class StrictArguments(FuncMetadata):
    """A tool's argument model, applied strictly: the SDK's lax reading took "3" and true for the integers 3
    and 1, "yes" for true, and any string that parses as JSON ("null", "[1]") for that value instead."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        arguments = whole_numbers(arguments_to_validate, self.arg_model)
        return self.arg_model.model_validate(arguments, strict=True).model_dump_one_level()


def whole_numbers(arguments: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """3.0 as 3 where an integer is asked for: to JSON Schema 3.0 is an integer, to pydantic's strict mode not."""
    fields = model.model_fields

    def integer(name: str) -> bool:
        return name in fields and fields[name].annotation in (int, int | None)

    return {name: int(value) if isinstance(value, float) and value.is_integer() and integer(name) else value
            for name, value in arguments.items()}


class NoteResources:
    """Notes as MCP resources (`vault:///Projects/Alpha.md`): listable with a cursor, read whole and
    redacted (the text is read from disk each time). Subscriptions only over stdio (subscribe.py):
    the HTTP endpoint is stateless, so there is no stream to notify on and a client rereads."""

    PAGE = 100

    def __init__(self, tools: VaultTools) -> None:
        self.tools = tools

    async def list_page(self, cursor: str | None) -> ListResourcesResult:
        def work() -> ListResourcesResult:
            where = paging.scope("resources")
            try:
                offset = paging.decode_cursor(cursor, where)
            except InvalidParams as exc:
                raise MCPError(code=INVALID_PARAMS, message=exc.message) from None
            listed = self.tools.core.list_notes(limit=self.PAGE, offset=offset)
            resources = [Resource(uri=note_uri(n["path"]), name=n["path"], title=n["title"], mime_type=MARKDOWN)
                         for n in listed["notes"]]
            return ListResourcesResult(resources=resources,
                                       next_cursor=paging.next_cursor(offset, len(resources), listed["total"], where))

        return await self.tools.gate.answer(work)

    async def read(self, path: str) -> str:
        try:
            return await self.tools.gate.answer(lambda: self.text_of(self.note_path(path)))
        except Exception as exc:
            error = client_error(exc)
            if isinstance(error, NotFound):
                raise ResourceNotFoundError(error.message) from None
            raise resource_error(error) from None

    def note_path(self, path: str) -> str:
        """The indexed note a URI's path names (a title works too), else NotFound or IndexNotReady."""
        if not path.strip():
            raise InvalidParams("uri: the URI names no note; a note's URI is vault:/// and its vault path, "
                                "e.g. vault:///Projects/Alpha.md", {"field": "uri"})
        self.tools.core.require_index()
        return self.tools.resolve(path, None)

    def text_of(self, path: str) -> str:
        return clean(str(self.tools.core.read_note(path)["text"]))


def resource_error(error: SidecarError, uri: str | None = None) -> MCPError:
    """A resource request that failed for a reason other than "no such note" (the index not built yet,
    busy and worth a retry, a bug), as `protocol_error`, naming the URI."""
    return protocol_error(error, {"uri": uri} if uri is not None else {})


def protocol_error(error: SidecarError, extra: Mapping[str, object] | None = None) -> MCPError:
    """A failure answered as a JSON-RPC error, not a tool result: its own code and kind, as the JSON-RPC
    port would say it."""
    return MCPError(code=error.code, message=error.message, data={"kind": error.kind, **error.data, **(extra or {})})


MARKDOWN = "text/markdown"
NOTE_URI = "vault:///{+path}"


def note_uri(path: str) -> str:
    return "vault:///" + urllib.parse.quote(path, safe="/")


def answer_from_vault(question: str) -> str:
    """Answer a question from the vault, citing path and lines, saying so when the vault does not answer."""
    return (f"Answer this from my Obsidian vault: {question[:4000]}\n\nCall get_context (or search, then "
            "read_note) first. Cite every claim as (path, lines a-b). If the band is low or none, say the vault "
            "does not answer it instead of guessing.")


def suggest_links(note: str) -> str:
    """Links this note should have and does not: from related notes and its current links."""
    return (f"Suggest links for my note {note[:1024]!r}.\n\nCall related_notes and note_links, then propose the "
            "notes it should link to and does not yet: one line each, with the reason and the exact [[wikilink]].")


def add_prompts(server: MCPServer[Any]) -> None:
    server.prompt(title="Answer from my vault, with citations")(answer_from_vault)
    server.prompt(title="What to link from this note")(suggest_links)


def unknown_argument(name: str, allowed: list[str], taker: str) -> InvalidParams:
    takes = ", ".join(allowed) or "no arguments"
    return InvalidParams(f"{name[:100]}: unknown argument; {taker} takes {takes}",
                         {"field": name[:100], "allowed": allowed})


def prompt_argument_problem(prompt: Prompt, arguments: Mapping[str, Any]) -> InvalidParams | None:
    names = [a.name for a in prompt.arguments or []]
    unknown = sorted(set(arguments) - set(names))
    if unknown:
        return unknown_argument(unknown[0], names, f"the prompt {prompt.name}")
    missing = [a.name for a in prompt.arguments or [] if a.required and a.name not in arguments]
    if missing:
        return InvalidParams(f"{missing[0]}: required by the prompt {prompt.name}", {"field": missing[0]})
    return None


def argument_problem(schema: Mapping[str, Any], arguments: Mapping[str, Any],
                     validate: Callable[[dict[str, Any]], Any]) -> InvalidParams | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        return unknown_argument(unknown[0], list(properties), "this tool")
    try:
        validate(dict(arguments))
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            return InvalidParams(f"{field}: required", {"field": field})
        if len(error["loc"]) > 1:  # inside a list or object: pydantic's one-line reason, without its links
            return InvalidParams(f"{field}: {error['msg']}", {"field": field})
        rule = properties.get(field, {})
        return InvalidParams(f"{field}: {expectation(rule, error['type'] == 'string_type')}",
                             {"field": field, **bounds(rule)})
    return None


def expectation(rule: Mapping[str, Any], not_a_string: bool = False) -> str:
    """What a field accepts, in words, from its published schema. For a value that is no string at all, a
    length would read as the complaint: it only says the type."""
    if "enum" in rule:
        return "must be one of " + ", ".join(map(str, rule["enum"]))
    if not_a_string:
        return "must be a string"
    kind = {"integer": "an integer", "string": "text", "boolean": "true or false", "number": "a number",
            "object": "an object", "array": "a list"}.get(str(rule.get("type")), "a valid value")
    if "minimum" in rule and "maximum" in rule:
        return f"must be {kind} from {rule['minimum']} to {rule['maximum']}"
    if "minimum" in rule:
        return f"must be {kind} of at least {rule['minimum']}"
    for least, most, unit in (("minLength", "maxLength", "characters"), ("minItems", "maxItems", "items"),
                              ("minProperties", "maxProperties", "properties")):
        if most in rule:
            low = f"{rule[least]} to " if least in rule else "at most "
            return f"must be {kind} of {low}{rule[most]} {unit}"
        if least in rule:
            return f"must be {kind} of at least {rule[least]} {unit}"
    return f"must be {kind}"


def bounds(rule: Mapping[str, Any]) -> dict[str, object]:
    named = {"minimum": "minimum", "maximum": "maximum", "minLength": "min_length", "maxLength": "max_length",
             "minItems": "min_items", "maxItems": "max_items", "minProperties": "min_properties",
             "maxProperties": "max_properties", "enum": "allowed", "type": "type"}
    return {ours: rule[theirs] for theirs, ours in named.items() if theirs in rule}



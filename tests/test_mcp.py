"""The MCP adapter end to end: a real vault, a real index with the real model, the official MCP client.

Over HTTP the server runs inside the test's own event loop (port 0); over stdio it is the real
`python -m sidecar mcp --stdio` child process. Security checks send raw HTTP requests.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import string
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from mcp_types.version import LATEST_MODERN_VERSION

from sidecar.adapters.mcp.server import McpHttpServer, McpReady, build_mcp, mcp_http_app, serve_mcp_http
from sidecar.adapters.mcp.tools import CLEAN_CACHED_CHARS, clean
from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.ingest.redact import redact
from sidecar.retrieve.context import format_context
from tests.serverproc import start_sidecar

TOOLS = {"search", "get_context", "read_note", "list_notes", "related_notes", "note_links", "vault_health",
         "index_status", "vault_overview"}
SECRET = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))
MARKERS = ("HIDDEN-PLAN-MARKER", "OBSIDIAN-CONFIG-MARKER", "OUTSIDE-MARKER")
pytestmark = pytest.mark.slow

TIMEOUT = 120  # seconds for a whole test: a hang fails instead of blocking the suite

NOTES = {
    "Projects/Alpha.md": f"""---
type: project
status: active
tags: [project, infra]
---
# Alpha

Alpha is the payments rewrite. See [[Beta]] and [[Home MOC]].

## Deployment

Alpha deploys with the zephyr pipeline to the staging cluster every Tuesday.
deploy token: {SECRET}

## Risks

Vendor lock-in and a slow queue in the zephyr pipeline.
""",
    "Projects/Beta.md": """---
type: project
status: done
tags: [project]
---
# Beta

Beta migrated the billing database to Postgres. It depends on [[Alpha#Deployment]] and [[Missing Note]].
""",
    "Home MOC.md": """---
type: moc
---
# Home

- [[Alpha]]
- [[Beta]]
- [[2024-05-01]]
- [[Sourdough]]
""",
    "Daily/2024-05-01.md": "# 2024-05-01\n\nStand-up notes. Worked on [[Alpha]] rollout.\n",
    "Daily/2024-05-02.md": "# 2024-05-02\n\nReviewed [[Beta]] migration scripts.\n",
    "Daily/2024-05-03.md": "# 2024-05-03\n\nPlanning for the next quarter.\n",
    "Sourdough.md": "# Sourdough\n\nFeed the starter with rye flour; bake at 250 C for 40 minutes.\n",
    "Reference/Glossary.md": "# Glossary\n\n" + "".join(f"- Term {i}: what term number {i} means here.\n" for i in range(80)),
    "Private/Hidden Plan.md": "# Hidden Plan\n\nHIDDEN-PLAN-MARKER: the surprise party.\n",
}


def write_vault(root: Path, outside: Path) -> None:
    for rel, text in NOTES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text('{"marker": "OBSIDIAN-CONFIG-MARKER"}', encoding="utf-8")
    (root / ".indexignore").write_text("Private/\n", encoding="utf-8")
    outside.write_text("# Outside\n\nOUTSIDE-MARKER\n", encoding="utf-8")
    (root / "Escape.md").symlink_to(outside)


class Vault:
    def __init__(self, root: Path, index_dir: Path, core: VaultIndex) -> None:
        self.root, self.index_dir, self.core = root, index_dir, core


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("mcp")
    root = base / "vault"
    write_vault(root, base / "outside.md")
    index_dir = base / "index"
    core = VaultIndex(Settings(vault=root.resolve(), index_dir=index_dir))
    report = core.index()
    assert report.added == 8, report.to_json()  # 8 notes: Private/ is ignored, the symlink leaves the vault
    yield Vault(root.resolve(), index_dir, core)
    core.close()


# ---- helpers --------------------------------------------------------------------------------
@asynccontextmanager
async def running_server(core: VaultIndex, token: str) -> AsyncIterator[McpReady]:
    ready = McpReady()
    task = asyncio.create_task(serve_mcp_http(core, token, 0, ready))
    waiter = asyncio.ensure_future(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done():
        task.result()
    try:
        yield ready
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        yield session


def stdio_params(vault: Vault, index_dir: Path | None = None, *extra: str) -> StdioServerParameters:
    args = ["-m", "sidecar", "mcp", "--stdio", "--vault", str(vault.root), "--index", str(index_dir or vault.index_dir)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIDECAR_")}
    env["HF_HUB_OFFLINE"] = "1"
    return StdioServerParameters(command=sys.executable, args=[*args, *extra], env=env)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def error_of(result: CallToolResult) -> dict[str, Any]:
    """A tool error: isError, the error object as JSON text, and no structuredContent (see error_result)."""
    assert result.is_error and result.structured_content is None, result
    text = result.content[0].text  # type: ignore[union-attr]
    payload = json.loads(text)
    assert set(payload) == {"error"}
    return dict(payload["error"])


def dump(result: CallToolResult) -> str:
    """Everything a client receives from one call, as text."""
    return result.model_dump_json(by_alias=True) + "".join(getattr(c, "text", "") for c in result.content)


async def check_tool_list(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.idempotent_hint is True, tool.name
        assert tool.annotations.open_world_hint is False, tool.name
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert tool.description and 40 < len(tool.description) < 400, tool.name
    search = tools["search"].input_schema["properties"]
    assert search["limit"]["maximum"] == 50 and search["limit"]["minimum"] == 1
    assert set(search) == {"query", "limit", "mode", "folder", "tag", "type", "status", "modified_since", "max_tokens",
                           "explain", "cursor"}
    assert tools["search"].input_schema["required"] == ["query"]
    assert "band" in tools["search"].output_schema["properties"]


async def check_resources_and_prompts(session: ClientSession) -> None:
    listed = await session.list_resources()
    assert {r.name for r in listed.resources} == {p for p in NOTES if not p.startswith("Private/")}
    assert listed.next_cursor is None
    templates = (await session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["vault:///{+path}"]
    alpha = await session.read_resource("vault:///Projects/Alpha.md")
    text = alpha.contents[0].text  # type: ignore[union-attr]
    assert text.startswith("---\ntype: project") and "[REDACTED:github]" in text and SECRET not in text
    home = await session.read_resource("vault:///Home%20MOC.md")
    assert "[[Sourdough]]" in home.contents[0].text  # type: ignore[union-attr]
    for uri in ("vault:///.obsidian/app.json", "vault:///Private/Hidden%20Plan.md", "vault:///Escape.md",
                "vault:///Nope.md"):
        with pytest.raises(MCPError) as refused:
            await session.read_resource(uri)
        assert refused.value.error.message.startswith("no such note: "), uri
    prompts = {p.name: p for p in (await session.list_prompts()).prompts}
    assert set(prompts) == {"answer_from_vault", "suggest_links"}
    prompt = await session.get_prompt("answer_from_vault", {"question": "how does alpha deploy"})
    assert "how does alpha deploy" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def exercise_all_tools(session: ClientSession) -> list[CallToolResult]:
    """Call every tool and check its structured answer; returns every result for leak checks."""
    results: list[CallToolResult] = []

    async def call(name: str, **args: Any) -> dict[str, Any]:
        result = await session.call_tool(name, args)
        results.append(result)
        assert not result.is_error, (name, result.content)
        return structured(result)

    found = await call("search", query="zephyr pipeline deployment", limit=5, max_tokens=400)
    assert found["results"][0]["path"] == "Projects/Alpha.md"
    assert found["band"] in ("high", "medium") and (found["band"] == "high") == ("caveat" not in found)
    top = found["results"][0]
    assert set(top) == {"path", "heading", "start_line", "end_line", "band", "snippet", "text"}  # compact by default
    assert top["start_line"] >= 1 and top["end_line"] >= top["start_line"] and "zephyr" in top["text"]
    explained = (await call("search", query="zephyr pipeline deployment", limit=5, explain=True))["results"][0]
    assert explained["scores"]["bm25_rank"] == 1 and explained["title"] == "Alpha" and explained["reason"]
    page1 = await call("search", query="project planning notes", limit=2)
    page2 = await call("search", query="project planning notes", limit=2, cursor=page1["next_cursor"])
    both = await call("search", query="project planning notes", limit=4)
    assert [r["path"] for r in page1["results"] + page2["results"]] == [r["path"] for r in both["results"]]

    filtered = await call("search", query="migration", type="project", status="done", folder="Projects")
    assert [r["path"] for r in filtered["results"]] == ["Projects/Beta.md"]

    context = await call("get_context", query="how does alpha deploy", max_tokens=300)
    markdown = context["markdown"]
    assert markdown.startswith("## Vault context for: how does alpha deploy\nConfidence ")
    assert "### Alpha > Deployment (Projects/Alpha.md, lines " in markdown
    assert len(markdown) <= 300 * 4 and context["chars"] == len(markdown)
    assert context["sources"][0]["path"] == "Projects/Alpha.md"

    note = await call("read_note", title="Alpha", heading="Deployment")
    assert note["path"] == "Projects/Alpha.md" and note["start_line"] == 10
    assert note["text"].startswith("## Deployment") and "[REDACTED:github]" in note["text"]
    whole = await call("read_note", path="Projects/Alpha.md", max_chars=500)
    assert "## Risks" in whole["text"] and not whole["truncated"]
    cut = await call("read_note", path="Reference/Glossary", max_chars=500)
    assert cut["path"] == "Reference/Glossary.md" and cut["truncated"] is True and cut["total_chars"] > 2000
    assert cut["text"].startswith("# Glossary") and len(cut["text"]) < 700
    assert cut["remaining_chars"] == cut["total_chars"] - cut["next_offset"]
    assert cut["text"].endswith(f"; continue with offset={cut['next_offset']}]")
    rest = await call("read_note", path="Reference/Glossary.md", offset=cut["next_offset"], max_chars=100_000)
    assert rest["start_line"] == cut["end_line"] + 1 and rest.get("next_offset") is None and not rest["truncated"]
    assert rest["offset"] + len(rest["text"]) == rest["total_chars"] == cut["total_chars"]
    lines = await call("read_note", path="Reference/Glossary.md", start_line=5, end_line=6)
    assert lines["text"] == "- Term 2: what term number 2 means here.\n- Term 3: what term number 3 means here."
    assert (lines["start_line"], lines["end_line"]) == (5, 6)
    by_path = await call("read_note", title="Alpha", heading="Alpha > Deployment")
    assert by_path["heading"] == "Alpha > Deployment" and by_path["start_line"] == 10

    listed = await call("list_notes", folder="Daily", limit=2)
    assert listed["total"] == 3 and len(listed["notes"]) == 2 and listed["truncated"] is True
    more = await call("list_notes", folder="Daily", limit=2, cursor=listed["next_cursor"])
    assert len(more["notes"]) == 1 and more.get("next_cursor") is None and more["truncated"] is False
    assert {n["path"] for n in listed["notes"] + more["notes"]} == {f"Daily/2024-05-0{i}.md" for i in (1, 2, 3)}
    assert all(n["path"].startswith("Daily/") and n["modified"].endswith("+00:00") for n in listed["notes"])
    recent = await call("list_notes", modified_since="7d")
    assert recent["total"] == 8

    related = await call("related_notes", title="Alpha", limit=5)
    assert related["source_path"] == "Projects/Alpha.md"
    assert "Projects/Beta.md" in [r["path"] for r in related["results"]]

    links = await call("note_links", path="Projects/Beta.md")
    assert {o.get("path") for o in links["outlinks"]} == {"Projects/Alpha.md", None}
    assert [o["target"] for o in links["outlinks"] if "path" not in o] == ["Missing Note"]
    assert links["counts"] == {"outlinks": 2, "backlinks": 3, "unresolved": 1} and links.get("next_cursor") is None
    first = await call("note_links", path="Projects/Beta.md", limit=3)
    second = await call("note_links", path="Projects/Beta.md", limit=3, cursor=first["next_cursor"])
    assert len(first["outlinks"]) == 2 and len(first["backlinks"]) == 1 and second["outlinks"] == []
    assert first["backlinks"] + second["backlinks"] == links["backlinks"] and second.get("next_cursor") is None
    assert {b["path"] for b in links["backlinks"]} == {"Projects/Alpha.md", "Home MOC.md", "Daily/2024-05-02.md"}

    health = await call("vault_health")
    assert health["summary"]["notes"] == 8 and health["summary"]["secrets"] == 1
    assert "unresolved_links" in {s["id"] for s in health["sections"]}
    several = next(s for s in health["sections"] if s["count"] >= 2)  # paged a section at a time, one item a page
    pages = [await call("vault_health", section=several["id"], limit=1)]
    while pages[-1].get("next_cursor"):
        pages.append(await call("vault_health", section=several["id"], limit=1, cursor=pages[-1]["next_cursor"]))
    assert len(pages) == several["count"] and all(len(p["sections"][0]["items"]) == 1 for p in pages)
    assert len({(i["path"], i.get("line"), i["message"]) for p in pages for i in p["sections"][0]["items"]}) == several["count"]

    status = await call("index_status")
    assert status["notes"] == 8 and status["complete"] is True and status["vectors_available"] is True

    overview = await call("vault_overview")
    assert overview["note_count"] == 8
    assert {f["folder"]: f["notes"] for f in overview["folders"]} == {"Daily": 3, "/": 2, "Projects": 2, "Reference": 1}
    assert overview["daily_notes"][0]["folder"] == "Daily" and overview["daily_notes"][0]["format"] == "YYYY-MM-DD"
    assert overview["hubs"][0]["path"] == "Home MOC.md"
    assert overview["links"]["style"] == "wikilinks"
    assert {k: overview["frontmatter_fields"][0][k] for k in ("field", "notes")} == {"field": "type", "notes": 3}
    assert overview["tags"][0] == {"tag": "project", "notes": 2}
    return results


async def check_errors(session: ClientSession) -> None:
    wrong = await session.call_tool("read_note", {"title": "Alpah"})
    assert wrong.is_error
    error = error_of(wrong)
    assert error["code"] == "not_found" and error["suggestions"] == ["Alpha"] and "Did you mean 'Alpha'" in error["message"]
    heading = await session.call_tool("read_note", {"title": "Alpha", "heading": "Rollback"})
    assert error_of(heading)["headings"] == ["Alpha", "Alpha > Deployment", "Alpha > Risks"]
    both = await session.call_tool("read_note", {})
    assert error_of(both) == {"code": "invalid_params", "field": "path",
                              "message": "path: give exactly one of `path` or `title`"}
    for args, expected in ARGUMENT_ERRORS:
        result = await session.call_tool("search", args)
        assert "pydantic" not in dump(result) and "validation error" not in dump(result), args
        assert error_of(result) == {"code": "invalid_params", **expected}, args
    with pytest.raises(MCPError) as unknown:
        await session.call_tool("delete_everything", {})
    assert unknown.value.error.code == -32602 and "unknown tool 'delete_everything'" in unknown.value.error.message


SEARCH_ARGS = ["query", "limit", "mode", "folder", "tag", "type", "status", "modified_since", "max_tokens", "explain",
               "cursor"]
ARGUMENT_ERRORS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"query": "x", "limit": 51}, {"field": "limit", "message": "limit: must be an integer from 1 to 50",
                                   "minimum": 1, "maximum": 50, "type": "integer"}),
    ({"query": "x", "limit": "many"}, {"field": "limit", "message": "limit: must be an integer from 1 to 50",
                                       "minimum": 1, "maximum": 50, "type": "integer"}),
    ({"query": "x", "mode": "fuzzy"}, {"field": "mode", "message": "mode: must be one of hybrid, lexical, semantic",
                                       "allowed": ["hybrid", "lexical", "semantic"], "type": "string"}),
    ({"query": ""}, {"field": "query", "message": "query: must be text of 1 to 4000 characters", "min_length": 1,
                     "max_length": 4000, "type": "string"}),
    ({}, {"field": "query", "message": "query: required"}),
    ({"query": "x", "bogus": 1}, {"field": "bogus", "allowed": SEARCH_ARGS,
                                  "message": f"bogus: unknown argument; this tool takes {', '.join(SEARCH_ARGS)}"}),
    ({"query": "x", "cursor": "not-a-cursor"}, {"field": "cursor", "message": (
        "cursor: not a cursor this server gave out; pass next_cursor from the previous answer unchanged, or leave "
        "it out for the first page")}),
    ({"query": "x", "modified_since": "last tuesday"}, {"field": "modified_since", "message": (
        "modified_since: 'last tuesday' is not an ISO date (2024-05-01) or a span like 7d")}),
]


# ---- (a) HTTP in-process, official client ----------------------------------------------------
async def test_http_official_client_lists_and_calls_every_tool(vault: Vault) -> None:
    token = secrets.token_urlsafe(32)
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready:
        assert ready.port and ready.port > 0 and ready.url == f"http://127.0.0.1:{ready.port}/mcp"
        async with http_session(ready.url, token) as session:
            init = await session.initialize()
            assert init.server_info.name == "vault-sidecar"
            assert init.instructions and "vault_overview" in init.instructions
            caps = init.capabilities  # announced only what is served; no subscriptions on a stateless endpoint
            assert caps.resources is not None and not caps.resources.subscribe and not caps.resources.list_changed
            assert caps.prompts is not None and not caps.prompts.list_changed
            await check_resources_and_prompts(session)
            await check_tool_list(session)
            results = await exercise_all_tools(session)
            await check_errors(session)
    assert not any(SECRET in dump(r) for r in results)


async def test_http_server_stops_and_frees_its_port_when_cancelled(vault: Vault) -> None:
    token = secrets.token_urlsafe(32)
    async with asyncio.timeout(TIMEOUT):
        async with running_server(vault.core, token) as ready:
            port = ready.port
            async with http_session(ready.url, token) as session:
                await session.initialize()
        with pytest.raises(OSError):
            _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()


async def test_http_client_on_the_current_protocol_lists_and_calls_every_tool(vault: Vault) -> None:
    """The SDK's own `Client` speaks 2026-07-28 by default (server/discover, then one self-contained POST
    a request, no initialize): the same tools, answers and errors as on the handshake protocol."""
    token = secrets.token_urlsafe(32)
    async with (
        asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(ready.url, http_client=http)) as client,
    ):
        assert client.protocol_version == LATEST_MODERN_VERSION
        assert client.instructions and "vault_overview" in client.instructions
        caps = client.server_capabilities
        assert caps.resources is not None and not caps.resources.subscribe
        await check_resources_and_prompts(client.session)
        await check_tool_list(client.session)
        results = await exercise_all_tools(client.session)
        await check_errors(client.session)
    assert not any(SECRET in dump(r) for r in results)


# ---- (b) stdio child process, official client ------------------------------------------------
async def test_stdio_official_client_lists_and_calls_every_tool(vault: Vault) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        stdio_client(stdio_params(vault)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await check_tool_list(session)
        results = await exercise_all_tools(session)
        await check_errors(session)
    assert not any(SECRET in dump(r) for r in results)


async def test_stdio_client_on_the_current_protocol_lists_and_calls_every_tool(vault: Vault) -> None:
    async with asyncio.timeout(TIMEOUT), Client(stdio_params(vault)) as client:
        assert client.protocol_version == LATEST_MODERN_VERSION
        caps = client.server_capabilities  # resources/subscribe belongs to the 2025 protocol versions (docs/mcp.md)
        assert caps.resources is not None and not caps.resources.subscribe
        await check_tool_list(client.session)
        results = await exercise_all_tools(client.session)
        await check_errors(client.session)
    assert not any(SECRET in dump(r) for r in results)


async def test_stdio_over_an_empty_index_says_how_to_build_it(vault: Vault, tmp_path: Path) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        stdio_client(stdio_params(vault, tmp_path / "empty-index")) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for name, args in (("search", {"query": "alpha"}), ("read_note", {"title": "Alpha"}), ("vault_overview", {})):
            result = await session.call_tool(name, args)
            assert result.is_error, name
            error = error_of(result)
            assert error["code"] == "index_not_ready"
            assert error["message"].startswith("index not built yet: run `sidecar index")
        status = await session.call_tool("index_status", {})
        assert not status.is_error and structured(status)["notes"] == 0


async def test_stdio_stdout_carries_only_mcp_frames_even_with_debug_logging(vault: Vault) -> None:
    """Raw pipes: with -v the child logs at DEBUG, and every stdout line must still be JSON-RPC."""
    params = stdio_params(vault, None, "-v")
    proc = await asyncio.create_subprocess_exec(params.command, *params.args, env=params.env,
                                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout and proc.stderr
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "zephyr"}}},
    ]
    async with asyncio.timeout(TIMEOUT):
        answers = []
        for frame in frames:
            proc.stdin.write((json.dumps(frame) + "\n").encode())
            await proc.stdin.drain()
            if "id" in frame:
                answers.append(json.loads(await proc.stdout.readline()))
        proc.stdin.close()
        rest, errors = await proc.stdout.read(), await proc.stderr.read()
        assert await proc.wait() == 0
    assert [a["id"] for a in answers] == [1, 2] and all(a["jsonrpc"] == "2.0" for a in answers)
    assert answers[1]["result"]["structuredContent"]["results"][0]["path"] == "Projects/Alpha.md"
    assert rest.strip() == b""  # nothing after the answers either
    assert b"DEBUG" in errors  # the logs exist, and they went to stderr


# ---- (c) security -----------------------------------------------------------------------------
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


async def test_http_guard_refuses_bad_requests_before_the_sdk(vault: Vault) -> None:
    token = secrets.token_urlsafe(32)
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready, aiohttp.ClientSession() as http:
        port = ready.port
        good = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "Host": f"127.0.0.1:{port}"}
        cases: list[tuple[str, dict[str, str | None], int, str | None]] = [
            ("valid request", {}, 200, None),
            ("localhost name", {"Host": f"localhost:{port}"}, 200, None),
            ("no token", {"Authorization": None}, 401, "unauthorized"),
            ("wrong token", {"Authorization": f"Bearer {token}x"}, 401, "unauthorized"),
            ("not bearer", {"Authorization": f"Basic {token}"}, 401, "unauthorized"),
            ("rebinding host", {"Host": f"evil.example:{port}"}, 421, "bad_host"),
            ("other port", {"Host": f"127.0.0.1:{port + 1}"}, 421, "bad_host"),
            ("foreign origin", {"Origin": "https://evil.example"}, 403, "bad_origin"),
            ("localhost origin", {"Origin": f"http://127.0.0.1:{port}"}, 403, "bad_origin"),
            ("text/plain", {"Content-Type": "text/plain"}, 415, "bad_content_type"),
            ("form", {"Content-Type": "application/x-www-form-urlencoded"}, 415, "bad_content_type"),
        ]
        for label, change, status, code in cases:
            headers = {k: v for k, v in {**good, **change}.items() if v is not None}
            async with http.post(f"http://127.0.0.1:{port}/mcp", data=json.dumps(INIT), headers=headers) as resp:
                body = await resp.text()
                assert resp.status == status, (label, resp.status, body)
                assert "access-control-allow-origin" not in resp.headers, label
                if code is not None:
                    assert json.loads(body) == {"error": {"code": code, "message": json.loads(body)["error"]["message"]}}
                    assert json.loads(body)["error"]["code"] == code, label
                else:
                    assert json.loads(body)["result"]["serverInfo"]["name"] == "vault-sidecar", label
        query = f"http://127.0.0.1:{port}/mcp?token={token}"
        async with http.post(query, data=json.dumps(INIT), headers=good) as resp:
            assert resp.status == 400 and (await resp.json())["error"]["code"] == "token_in_query"
        preflight = {"Host": f"127.0.0.1:{port}", "Origin": "https://evil.example",
                     "Access-Control-Request-Method": "POST"}
        async with http.options(f"http://127.0.0.1:{port}/mcp", headers=preflight) as resp:
            assert resp.status == 403 and "access-control-allow-origin" not in resp.headers


def test_sdk_transport_security_agrees_with_the_guard(vault: Vault) -> None:
    """The SDK's own DNS-rebinding check is on, with the Guard's hosts and no browser origins."""
    app = mcp_http_app(vault.core, "t0ken", 4321)
    manager = app.app.routes[0].endpoint.session_manager  # type: ignore[attr-defined]
    settings = manager.security_settings
    assert settings.enable_dns_rebinding_protection is True
    assert set(settings.allowed_hosts) == {"127.0.0.1:4321", "localhost:4321", "[::1]:4321"}
    assert settings.allowed_origins == []
    assert manager.stateless is True and manager.json_response is True


def test_the_http_server_believes_no_forwarded_headers(vault: Vault) -> None:
    """No proxy sits in front of 127.0.0.1: uvicorn's X-Forwarded-* rewriting (on by default) is off."""
    server = McpHttpServer(vault.core, "t0ken")
    try:
        assert server._server.config.proxy_headers is False
    finally:
        server.sock.close()


ESCAPES = [
    "../x.md", "../../../../etc/passwd", "/etc/passwd", "~/x.md", "C:\\Windows\\win.ini",
    ".obsidian/app.json", ".obsidian/app", "Private/Hidden Plan.md", "Private/Hidden Plan", "Hidden Plan",
    "Projects/Alpha.md\x00.txt", "%2e%2e/x.md", "..%2fx.md", "Projects/%2e%2e/Sourdough.md",
    "Projects/../Sourdough.md", "Escape.md", "Escape", ".indexignore", "Nonexistent/Note.md",
]


async def test_path_escapes_all_answer_the_same_not_found(vault: Vault) -> None:
    token = secrets.token_urlsafe(32)
    escapes = [*ESCAPES, str(vault.root / "Projects" / "Alpha.md"), str(vault.root.parent / "outside.md")]
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready, \
            http_session(ready.url, token) as session:
        await session.initialize()
        for ref in escapes:
            for tool, key in (("read_note", "path"), ("read_note", "title"), ("note_links", "path"),
                              ("related_notes", "path")):
                result = await session.call_tool(tool, {key: ref})
                assert result.is_error, (tool, ref)
                error = error_of(result)
                assert error == {"code": "not_found", "suggestions": [],
                                 "message": f"no such note: {ref!r}. Use search or list_notes to find notes."}, (tool, ref)
                text = dump(result)
                assert not any(m in text for m in MARKERS) and "root:" not in text and "payments" not in text


async def test_secret_never_leaves_through_any_tool(vault: Vault) -> None:
    token = secrets.token_urlsafe(32)
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready, \
            http_session(ready.url, token) as session:
        await session.initialize()
        calls = [("search", {"query": "deploy token", "max_tokens": 2000}),
                 ("search", {"query": "ghp", "mode": "lexical", "max_tokens": 2000}),
                 ("get_context", {"query": "deploy token zephyr", "max_tokens": 2000}),
                 ("read_note", {"path": "Projects/Alpha.md"}), ("read_note", {"title": "Alpha", "heading": "Deployment"}),
                 ("related_notes", {"title": "Beta"}), ("note_links", {"title": "Alpha"}), ("vault_health", {}),
                 ("vault_overview", {}), ("list_notes", {}), ("index_status", {})]
        seen = []
        for name, args in calls:
            result = await session.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            seen.append(dump(result))
    assert any("[REDACTED:github]" in text for text in seen)  # the line is there, the value is not
    assert not any(SECRET in text or SECRET[4:] in text for text in seen)


class WithoutHealth:
    """The core as an older sidecar had it: everything but health()."""

    def __init__(self, core: VaultIndex) -> None:
        self._core = core

    def __getattr__(self, name: str) -> Any:
        if name in ("health", "health_summary", "health_page"):
            raise AttributeError(name)
        return getattr(self._core, name)


async def test_structured_errors_for_missing_health_and_bad_dates(vault: Vault) -> None:
    server = build_mcp(WithoutHealth(vault.core))  # type: ignore[arg-type]
    result = await server.call_tool("vault_health", {})
    assert isinstance(result, CallToolResult)
    assert error_of(result) == {"code": "not_available",
                                "message": "the vault health report is not available in this sidecar version"}
    result = await server.call_tool("list_notes", {"modified_since": "last tuesday"})
    assert isinstance(result, CallToolResult) and error_of(result)["code"] == "invalid_params"
    result = await server.call_tool("search", {"query": "alpha", "modified_since": "2000-01-01T00:00Z"})
    assert isinstance(result, CallToolResult) and not result.is_error
    assert structured(result)["results"][0]["path"] == "Projects/Alpha.md"
    result = await server.call_tool("search", {"query": "alpha", "modified_since": "2999-01-01"})
    assert isinstance(result, CallToolResult) and structured(result)["results"] == []


async def test_a_bad_value_is_the_same_error_from_json_rpc_mcp_and_the_cli(vault: Vault, tmp_path: Path) -> None:
    """One check per rule, where a call comes in: serve/params.py for JSON-RPC and the CLI, the tool's
    input schema for MCP; the core no longer checks the bounds again. A limit of 0 is invalid_params
    naming `limit` however it arrives (over JSON-RPC as code -32602 with data.kind and data.field)."""
    server = start_sidecar(vault.root, tmp_path / "rpc-index", "--no-mcp", "--no-watch")
    try:
        rpc = server.rpc("search", query="alpha", limit=0)["error"]
    finally:
        server.stop()
    token = secrets.token_urlsafe(32)
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready, \
            http_session(ready.url, token) as session:
        await session.initialize()
        mcp = error_of(await session.call_tool("search", {"query": "alpha", "limit": 0}))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cli = subprocess.run([sys.executable, "-m", "sidecar", "search", "--vault", str(vault.root), "--index",
                          str(vault.index_dir), "alpha", "--limit", "0", "--json"],
                         check=False, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert cli.returncode != 0, cli.stdout
    printed = json.loads(cli.stdout)["error"]
    assert (rpc["code"], rpc["data"]["kind"], rpc["data"]["field"]) == (-32602, "invalid_params", "limit"), rpc
    assert (printed["code"], printed["data"]["kind"], printed["data"]["field"]) == (-32602, "invalid_params", "limit")
    assert printed["message"] == rpc["message"] == "limit must be at least 1"  # the same check, word for word
    assert (mcp["code"], mcp["field"]) == ("invalid_params", "limit"), mcp


async def test_a_cursor_from_another_question_is_refused(vault: Vault) -> None:
    server = build_mcp(vault.core)
    first = await server.call_tool("list_notes", {"limit": 1})
    assert isinstance(first, CallToolResult)
    cursor = structured(first)["next_cursor"]
    other = await server.call_tool("list_notes", {"limit": 1, "folder": "Daily", "cursor": cursor})
    assert isinstance(other, CallToolResult) and error_of(other)["field"] == "cursor"
    assert "belongs to a different question" in error_of(other)["message"]


def test_mcp_config_writes_absolute_paths(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.serve.mcp_config import client_config

    monkeypatch.chdir(vault.index_dir.parent)
    config = client_config(Settings(vault=vault.root, index_dir=Path("index")), 8765, "t" * 32)
    command = config["stdio"]["command"]
    assert command[command.index("--index") + 1] == str(vault.index_dir.resolve())
    assert all(Path(command[command.index(flag) + 1]).is_absolute() for flag in ("--vault", "--index"))


def test_a_short_mcp_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.serve.tokens import mcp_token

    monkeypatch.setenv("SIDECAR_MCP_TOKEN", "x")
    with pytest.raises(ValueError, match="1 character"):
        mcp_token()
    monkeypatch.setenv("SIDECAR_MCP_TOKEN", "x" * 16)
    assert mcp_token() == "x" * 16


def test_overview_recognises_date_conventions() -> None:
    from sidecar.report.overview import NoteRow, daily_notes, date_format

    assert [date_format(s) for s in ("2024-05-01", "2024-05-01 Wednesday", "20240501", "2024-W05", "Alpha")] == [
        "YYYY-MM-DD", "YYYY-MM-DD", "YYYYMMDD", "YYYY-[W]ww", None]

    def rows(paths: list[str]) -> list[NoteRow]:
        return [NoteRow(i, p, p.rsplit("/", 1)[-1].removesuffix(".md"), {}, ()) for i, p in enumerate(paths)]

    journal = rows([f"Journal/{y}/{y}{m:02}01.md" for y in (2023, 2024) for m in (1, 2)] + ["Journal/Index.md"])
    meetings = rows(["Work/Meetings/2024-05-01 Kickoff.md", "Work/Meetings/2024-05-08 Review.md",
                     "Work/Meetings/2024-05-15 Retro.md", "Work/Plan.md"])
    found = {d["folder"]: d for d in daily_notes(journal + meetings)}
    assert found["Journal/YYYY"]["format"] == "YYYYMMDD" and found["Journal/YYYY"]["kind"] == "daily"
    assert found["Journal/YYYY"]["first"] == "20230101" and found["Journal/YYYY"]["last"] == "20240201"
    assert found["Work/Meetings"]["kind"] == "dated" and "Work" not in found


# ---- context block and CLI ----------------------------------------------------------------
def _result(band: str, texts: list[tuple[str, str]]) -> dict[str, Any]:
    return {"query": "q", "band": band, "caveat": None if band == "high" else "careful", "results": [
        {"path": f"{t}.md", "title": t, "heading": f"{t} > Part", "start_line": 3, "end_line": 9, "band": band,
         "snippet": body[:20], "text": body} for t, body in texts]}


def test_text_leaving_by_mcp_is_redacted_every_time_short_or_long() -> None:
    """Short texts' redaction is kept per text (tools.clean): a snippet asked again must come out the same."""
    snippet = f"deploy with token {SECRET} then restart"
    long_text = ("filler line\n" * (CLEAN_CACHED_CHARS // 12)) + f"token {SECRET}\n"
    assert len(long_text) > CLEAN_CACHED_CHARS
    for _ in range(2):
        for text in (snippet, long_text):
            out = clean(text)
            assert SECRET not in out and "[REDACTED:github]" in out and out == redact(text).text


def test_format_context_fits_the_budget_and_marks_cuts() -> None:
    result = _result("medium", [("One", "alpha " * 30), ("Two", "beta " * 400), ("Three", "gamma " * 50)])
    block = format_context(result, 200)
    assert len(block) <= 800
    assert block.splitlines()[1].startswith("Confidence medium") and "Caveat: careful" in block
    assert "### One > Part (One.md, lines 3-9)" in block and "…[truncated]" in block
    assert "1 more excerpt(s) left out to fit 200 tokens" in block
    roomy = format_context(result, 5000)
    assert "…[truncated]" not in roomy and "### Three > Part" in roomy


def test_format_context_drops_low_hits_when_better_ones_exist() -> None:
    result = _result("high", [("One", "alpha")])
    result["results"].append({**result["results"][0], "title": "Weak", "band": "low"})
    block = format_context(result, 1000)
    assert "### One" in block and "Weak" not in block and "1 weaker (low-confidence) match(es) left out" in block


def test_context_command_prints_the_block_for_hooks(vault: Vault) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "sidecar", "context", "--vault", str(vault.root), "--index", str(vault.index_dir)]
    plain = subprocess.run([*base, "how does alpha deploy", "--max-tokens", "150"], capture_output=True, text=True,
                           env=env, timeout=TIMEOUT, check=True)
    assert plain.stdout.startswith("## Vault context for: how does alpha deploy")
    assert len(plain.stdout.rstrip("\n")) <= 600 and SECRET not in plain.stdout
    hook = subprocess.run([*base, "-", "--json"], input=json.dumps({"prompt": "sourdough starter flour"}),
                          capture_output=True, text=True, env=env, timeout=TIMEOUT, check=True)
    payload = json.loads(hook.stdout)
    assert payload["sources"][0]["path"] == "Sourdough.md" and payload["markdown"].startswith("## Vault context")


# ---- (d) MCP Inspector CLI ------------------------------------------------------------------
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"  # the TypeScript SDK's client, as a second opinion


def inspector_missing(npx: str | None) -> str | None:
    """Why the Inspector cannot run here, or None. Uses the npm cache, else installs it from the registry."""
    if npx is None:
        return "npx is not installed"
    for flags in (["--offline"], []):
        probe = subprocess.run([npx, *flags, "-y", INSPECTOR, "--version"], capture_output=True, text=True,
                               timeout=600, check=False)
        if probe.returncode == 0 and "2.12.0" in probe.stdout:
            return None
    return f"{INSPECTOR} could not be run or installed: {probe.stderr.strip()[-300:]}"


def inspector_npx() -> str:
    """npx, where the Inspector runs; else the test is skipped."""
    npx = shutil.which("npx")
    reason = inspector_missing(npx)
    if reason is not None:
        pytest.skip(reason)
    assert npx is not None
    return npx


async def inspector(npx: str, url: str, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(npx, "--offline", "-y", INSPECTOR, "--cli", url, "--transport", "http",
                                                *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, _err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_mcp_inspector_cli_lists_and_calls_tools(vault: Vault) -> None:
    npx = inspector_npx()
    token = secrets.token_urlsafe(32)
    auth = ("--header", f"Authorization: Bearer {token}")
    async with asyncio.timeout(TIMEOUT), running_server(vault.core, token) as ready:
        code, out = await inspector(npx, ready.url, *auth, "--method", "tools/list")
        assert code == 0, out
        tools = {t["name"]: t for t in json.loads(out)["tools"]}
        assert set(tools) == TOOLS
        assert all(t["annotations"]["readOnlyHint"] and "outputSchema" in t for t in tools.values())
        code, out = await inspector(npx, ready.url, *auth, "--method", "tools/call", "--tool-name", "search",
                                    "--tool-arg", "query=zephyr pipeline", "--tool-arg", "limit=2")
        assert code == 0, out
        assert json.loads(out)["structuredContent"]["results"][0]["path"] == "Projects/Alpha.md"
        code, out = await inspector(npx, ready.url, *auth, "--method", "tools/call", "--tool-name", "read_note",
                                    "--tool-arg", "path=../x")
        assert code != 0 and '"isError": true' in out and "not_found" in out
        for method, key in (("resources/list", "resources"), ("prompts/list", "prompts")):
            code, out = await inspector(npx, ready.url, *auth, "--method", method)
            assert code == 0 and json.loads(out)[key], (method, out)
        code, out = await inspector(npx, ready.url, "--method", "tools/list")  # no token
        assert code != 0 and "search" not in out

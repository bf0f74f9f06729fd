"""The MCP transports at their edges: what neither transport can read is answered (and alike on both), request
bodies as large as the largest valid write, prompt mistakes as invalid params, arguments held to their JSON
types. The official client where a client can say it; raw lines and bodies where only a broken one would.
Over HTTP the server runs in the test's own event loop; over stdio it is the real `sidecar mcp --stdio` child.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from sidecar.adapters.mcp.server import mcp_http_app
from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.serve.httpguard import MAX_BODY_BYTES, body_limit, too_large
from tests.test_mcp import INIT, Vault, error_of, http_session, running_server, stdio_params, structured, write_vault

pytestmark = pytest.mark.slow
TIMEOUT = 120  # seconds for a whole test: a hang fails instead of blocking the suite
NOTE_BYTES = 200_000  # max_file_bytes here: a note of control characters escapes to 1.2 MB, over MAX_BODY_BYTES
LIMIT = body_limit(NOTE_BYTES)
STDIO_WRITES = ("--allow-writes", "--max-file-bytes", str(NOTE_BYTES))


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    base = tmp_path_factory.mktemp("transport")
    root = base / "vault"
    write_vault(root, base / "outside.md")
    index_dir = base / "index"
    core = VaultIndex(Settings(vault=root.resolve(), index_dir=index_dir, allow_writes=True, max_file_bytes=NOTE_BYTES))
    core.index()
    yield Vault(root.resolve(), index_dir, core)
    core.close()


@asynccontextmanager
async def served(vault: Vault) -> AsyncIterator[tuple[str, str]]:
    """The HTTP endpoint in this loop: its URL and token."""
    token = secrets.token_urlsafe(32)
    async with running_server(vault.core, token) as ready:
        yield ready.url, token


@asynccontextmanager
async def http_client(vault: Vault) -> AsyncIterator[ClientSession]:
    async with served(vault) as (url, token), http_session(url, token) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(vault: Vault, *extra: str, errlog: Any = None) -> AsyncIterator[ClientSession]:
    params = stdio_params(vault, None, *extra)
    async with (
        stdio_client(params, **({"errlog": errlog} if errlog is not None else {})) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def raw_stdio(vault: Vault) -> AsyncIterator[Callable[[str], Awaitable[dict[str, Any]]]]:
    """The stdio child with raw pipes, initialized: yields `ask(line)`, which sends one line and reads one
    answer. The child must then exit cleanly on EOF, having written nothing but those answers."""
    params = stdio_params(vault)
    proc = await asyncio.create_subprocess_exec(params.command, *params.args, env=params.env, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    stdin, stdout = proc.stdin, proc.stdout

    async def ask(line: str) -> dict[str, Any]:
        stdin.write(line.encode() + b"\n")
        await stdin.drain()
        answer: dict[str, Any] = json.loads(await stdout.readline())
        return answer

    try:
        assert "result" in await ask(json.dumps(INIT))
        stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        yield ask
        stdin.close()
        assert await stdout.read() == b""
        assert await proc.wait() == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


# ---- what neither transport can read ---------------------------------------------------------------
SEARCH_SURROGATE = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                    "params": {"name": "search", "arguments": {"query": "\ud800"}}}
UNREADABLE: list[tuple[str, str, int, int | None]] = [  # what, the line, the code, the id answered
    ("not JSON", "not json", -32700, None),
    ("a batch", '[{"jsonrpc": "2.0", "id": 3, "method": "ping"}]', -32600, None),
    ("a bare value", "3", -32600, None),
    ("a malformed envelope", '{"jsonrpc": "2.0", "id": 7, "method": 5}', -32600, 7),
    ("a lone surrogate", json.dumps(SEARCH_SURROGATE), -32700, 8),  # its id read by Python's lenient parser
    ("an object for a method", '{"jsonrpc": "2.0", "id": 10, "method": {"id": 11}}', -32600, 10),
    ("a lone surrogate for an id", '{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', -32700, None),
]


async def test_stdio_answers_every_line_it_cannot_read_and_keeps_serving(vault: Vault) -> None:
    """The SDK's stdin reader drops such a line: the client waited for ever. Each is answered, then a ping."""
    async with asyncio.timeout(TIMEOUT), raw_stdio(vault) as ask:
        for what, line, code, request_id in UNREADABLE:
            answer = await ask(line)
            assert (answer["error"]["code"], answer["id"]) == (code, request_id), (what, answer)
            assert answer["error"]["data"]["kind"] == ("parse_error" if code == -32700 else "invalid_request")
        assert await ask('{"jsonrpc": "2.0", "id": 9, "method": "ping"}') == {"jsonrpc": "2.0", "id": 9, "result": {}}


async def test_http_answers_what_it_cannot_read_as_stdio_does(vault: Vault) -> None:
    """Either protocol generation, the same error object as stdio, word for word (before: a batch was -32602 with
    pydantic's text on 2025-06-18, and a lone surrogate reached the tools on 2026-07-28)."""
    async with asyncio.timeout(TIMEOUT):
        async with raw_stdio(vault) as ask:
            over_stdio = [await ask(line) for _what, line, _code, _id in UNREADABLE]
        async with served(vault) as (url, token), httpx2.AsyncClient(timeout=60) as http:
            for version in ("2025-06-18", "2026-07-28"):
                headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version}
                for (what, line, _code, _id), expected in zip(UNREADABLE, over_stdio, strict=True):
                    reply = await http.post(url, content=line.encode(), headers=headers)
                    assert (reply.status_code, reply.json()) == (400, expected), (version, what)


# ---- request bodies ---------------------------------------------------------------------------------
def test_the_body_limit_admits_the_largest_valid_write() -> None:
    """Every byte of the note a control character (\\u00XX, 6 bytes each), the path and heading at their
    longest in characters outside the BMP (12 bytes each as surrogate pairs), as json.dumps writes them."""
    for note_bytes in (1, NOTE_BYTES, Settings.max_file_bytes):
        request = {"jsonrpc": "2.0", "id": 2**53, "method": "tools/call", "params": {
            "name": "replace_section", "_meta": {"progressToken": "p" * 64},
            "arguments": {"path": "\U0001f600" * 1024, "heading": "\U0001f600" * 1000, "content": "\x01" * note_bytes,
                          "content_hash": "f" * 64}}}
        assert len(json.dumps(request)) <= body_limit(note_bytes), note_bytes
    assert body_limit() == MAX_BODY_BYTES


def test_a_read_only_port_keeps_the_small_limit(vault: Vault) -> None:
    class ReadOnly:
        def __init__(self, core: VaultIndex) -> None:
            self._core = core

        def __getattr__(self, name: str) -> Any:
            return None if name == "writes" else getattr(self._core, name)

    assert mcp_http_app(ReadOnly(vault.core), "t0ken", 4321).max_body == MAX_BODY_BYTES  # type: ignore[arg-type,attr-defined]
    assert mcp_http_app(vault.core, "t0ken", 4321).max_body == LIMIT  # type: ignore[attr-defined]


async def test_the_largest_note_is_written_over_both_transports_and_one_byte_more_refused_alike(
        vault: Vault) -> None:
    """Before, HTTP refused any body over 1 MB (a bare `413 Request body too large`) that stdio took. The largest
    note: max_file_bytes on disk, every byte but its final newline a control character (\\u00XX in JSON)."""
    largest = "\x01" * (NOTE_BYTES - 1) + "\n"
    assert len(json.dumps(largest)) > MAX_BODY_BYTES
    async with asyncio.timeout(TIMEOUT):
        async with http_client(vault) as session:
            made = await session.call_tool("create_note", {"path": "Inbox/Largest over HTTP.md", "content": largest})
            over = await session.call_tool("create_note", {"path": "Inbox/Over.md", "content": "x" + largest})
        async with stdio_session(vault, *STDIO_WRITES) as session:
            made_stdio = await session.call_tool("create_note", {"path": "Inbox/Largest over stdio.md",
                                                                 "content": largest})
            over_stdio = await session.call_tool("create_note", {"path": "Inbox/Over.md", "content": "x" + largest})
    assert structured(made)["path"] == "Inbox/Largest over HTTP.md", made.content
    assert structured(made_stdio)["path"] == "Inbox/Largest over stdio.md", made_stdio.content
    assert error_of(over) == error_of(over_stdio) == {
        "code": "invalid_params", "field": "content", "message": f"content: over {NOTE_BYTES:,} bytes"}
    assert (vault.root / "Inbox" / "Largest over HTTP.md").stat().st_size == NOTE_BYTES


async def test_a_body_over_the_limit_is_a_json_rpc_error_naming_it(vault: Vault) -> None:
    """A 413 with a JSON-RPC error, which the official client raises as such (before: "Server returned an error
    response", code -32603, from the SDK's bare text)."""
    too_much = "\x01" * (NOTE_BYTES + 20_000)
    async with asyncio.timeout(TIMEOUT), served(vault) as (url, token):
        async with http_session(url, token) as session:
            await session.initialize()
            with pytest.raises(MCPError) as refused:
                await session.call_tool("create_note", {"path": "Inbox/Too much.md", "content": too_much})
        assert refused.value.error.code == -32600 and f"{LIMIT:,} bytes" in refused.value.error.message
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "create_note", "arguments": {"path": "Inbox/Too much.md", "content": too_much}}}).encode()
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
        async with httpx2.AsyncClient(timeout=60) as http:
            reply = await http.post(url, content=body, headers=headers)
            assert reply.status_code == 413 and reply.headers["content-type"] == "application/json"
            assert reply.json() == too_large(LIMIT)
            assert not (vault.root / "Inbox" / "Too much.md").exists()
            ping = await http.post(url, content=b'{"jsonrpc": "2.0", "id": 2, "method": "ping"}', headers=headers)
            assert ping.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_a_get_is_told_there_is_no_stream_and_holds_nothing_open(vault: Vault) -> None:
    """The SDK answered a GET with an event stream that never ended and counted against no limit: 63 of
    them locked every other client out of the port. The spec's answer for a stateless server is a 405."""
    async with asyncio.timeout(TIMEOUT), served(vault) as (url, token):
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:
            for _ in range(100):  # more than the port's connection cap, one after another
                refused = await http.get(url, headers=headers)
                assert refused.status_code == 405 and refused.headers["allow"] == "POST"
                assert refused.json()["error"]["code"] == "method_not_allowed"
        async with http_session(url, token) as session:  # the official client needs no stream either
            await session.initialize()
            assert (await session.call_tool("search", {"query": "alpha"})).is_error is False


# ---- prompts ------------------------------------------------------------------------------------------
PROMPT_MISTAKES: list[tuple[str, dict[str, str], str]] = [
    ("nope", {}, "unknown prompt 'nope'; the prompts are: answer_from_vault, suggest_links"),
    ("answer_from_vault", {}, "question: required by the prompt answer_from_vault"),
    ("answer_from_vault", {"question": "q", "extra": "x"},
     "extra: unknown argument; the prompt answer_from_vault takes question"),
]


async def check_prompt_mistakes(session: ClientSession) -> None:
    for name, arguments, message in PROMPT_MISTAKES:
        with pytest.raises(MCPError) as refused:
            await session.get_prompt(name, arguments)
        assert (refused.value.error.code, refused.value.error.message) == (-32602, message), name
        assert refused.value.error.data["kind"] == "invalid_params"
    prompt = await session.get_prompt("suggest_links", {"note": "Alpha"})
    assert "Alpha" in prompt.messages[0].content.text  # type: ignore[union-attr]


async def test_prompt_mistakes_are_invalid_params_over_http_and_log_nothing(
        vault: Vault, caplog: pytest.LogCaptureFixture) -> None:
    """Before: JSON-RPC code 0, "Error rendering prompt answer_from_vault", and a traceback logged for each."""
    async with asyncio.timeout(TIMEOUT), http_client(vault) as session:
        with caplog.at_level(logging.ERROR):
            await check_prompt_mistakes(session)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_prompt_mistakes_are_invalid_params_over_stdio_without_a_traceback(vault: Vault, tmp_path: Path) -> None:
    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        async with asyncio.timeout(TIMEOUT), stdio_session(vault, errlog=err) as session:
            await check_prompt_mistakes(session)
    assert "Traceback" not in errlog.read_text()


# ---- arguments and what errors say ----------------------------------------------------------------
WRONG_TYPES: list[tuple[str, dict[str, Any], str]] = [  # tool, arguments, the field refused
    ("search", {"query": "alpha", "limit": "3"}, "limit"),
    ("search", {"query": "alpha", "limit": True}, "limit"),
    ("search", {"query": "alpha", "explain": "yes"}, "explain"),
    ("search", {"query": "alpha", "explain": 1}, "explain"),
    ("search", {"query": 5}, "query"),
    ("read_note", {"path": "Projects/Alpha.md", "max_chars": "500"}, "max_chars"),
    ("note_links", {"path": "Projects/Alpha.md", "limit": 2.5}, "limit"),
    ("list_notes", {"limit": [3]}, "limit"),
]


async def test_arguments_of_the_wrong_json_type_are_invalid_params(vault: Vault) -> None:
    """Before, "3" and true were read as the integers 3 and 1, "yes" and 1 as true."""
    async with asyncio.timeout(TIMEOUT), http_client(vault) as session:
        for tool, arguments, field in WRONG_TYPES:
            error = error_of(await session.call_tool(tool, arguments))
            assert (error["code"], error["field"]) == ("invalid_params", field), (tool, arguments, error)


async def test_a_string_that_looks_like_json_stays_a_string(vault: Vault) -> None:
    """The SDK parsed such strings for any argument not typed plain `str`: a title "null" was no title at all,
    a folder "null" no filter."""
    async with asyncio.timeout(TIMEOUT), http_client(vault) as session:
        titled = error_of(await session.call_tool("read_note", {"title": "null"}))
        assert titled["code"] == "not_found" and titled["message"].startswith("no such note: 'null'")
        found = structured(await session.call_tool("search", {"query": "alpha", "folder": "null"}))
        assert found["results"] == []
        for folder in ("[1]", '{"a": 1}'):
            assert not (await session.call_tool("search", {"query": "alpha", "folder": folder})).is_error, folder


def valid_values(rule: dict[str, Any]) -> list[Any]:
    """Values of a published argument schema's own type: its bounds, both booleans, every enum member, and an
    integer written as 3.0 (an integer to JSON Schema)."""
    if "enum" in rule:
        return list(rule["enum"])
    kind = rule.get("type")
    if kind == "boolean":
        return [True, False]
    if kind == "integer":
        ends = [rule.get("minimum", 1), rule.get("maximum", rule.get("minimum", 1) + 1)]
        return [*ends, float(ends[0])]
    return []


READ_ARGUMENTS = {"search": {"query": "alpha"}, "get_context": {"query": "alpha"},
                  "read_note": {"path": "Reference/Glossary.md"}, "note_links": {"path": "Projects/Alpha.md"},
                  "related_notes": {"path": "Projects/Alpha.md"}}


async def test_every_read_tool_takes_every_value_of_its_schemas_types(vault: Vault) -> None:
    """Strict types, not stricter than published: each tool's own integers, booleans and enums, one at a time."""
    tried = 0
    async with asyncio.timeout(TIMEOUT), http_client(vault) as session:
        for tool in (await session.list_tools()).tools:
            if tool.annotations is None or not tool.annotations.read_only_hint:
                continue
            for field, rule in tool.input_schema.get("properties", {}).items():
                for value in valid_values(rule):
                    result = await session.call_tool(tool.name, {**READ_ARGUMENTS.get(tool.name, {}), field: value})
                    tried += 1
                    refused = error_of(result).get("field") if result.is_error else None
                    assert refused != field, (tool.name, field, value, result.content)
    assert tried > 40


async def test_small_messages_say_what_is_wrong(vault: Vault) -> None:
    async with asyncio.timeout(TIMEOUT), http_client(vault) as session:
        bare = error_of(await session.call_tool("vault_overview", {"x": 1}))
        assert bare == {"code": "invalid_params", "field": "x", "allowed": [],
                        "message": "x: unknown argument; this tool takes no arguments"}
        typed = error_of(await session.call_tool("read_note", {"path": {"a": 1}}))
        assert (typed["field"], typed["message"]) == ("path", "path: must be a string")
        none = error_of(await session.call_tool("move_notes", {"moves": []}))  # was "moves: must be a list"
        assert (none["message"], none["min_items"]) == ("moves: must be a list of 1 to 100 items", 1)
        with pytest.raises(MCPError) as nameless:
            await session.read_resource("vault:///")
        assert nameless.value.error.code == -32602
        assert nameless.value.error.message.startswith("uri: the URI names no note")

"""MCP as agents use it: the official client against a real `sidecar serve --allow-writes` child process
over HTTP, and a real `sidecar mcp --stdio --allow-writes` child: paging through a 300k-character
note, a move that rewrites 100 links and its undo, a conflicting edit, every refused write target,
and the edit log the plugin reads over JSON-RPC.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jsonschema import Draft7Validator
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from build_tasks import protocol
from sidecar.write.writes import edit_record
from tests.serverproc import Sidecar, start_sidecar
from tests.test_mcp import ESCAPES, error_of, http_session, stdio_params, structured

pytestmark = pytest.mark.slow
TIMEOUT = 180  # a hang fails the test instead of blocking the suite; nothing here measures time
BIG_CHARS = 300_000
LINK_FORMS = ("[[Target]]", "[[Target|the target]]", "[[Target#Section]]", "![[Target]]", "[t](../Target.md)",
              "[t](<../Target.md>)", "[[Target.md]]", "[t](../Target.md#Section)")
MOVED_FORMS = ("[[Moved]]", "[[Moved|the target]]", "[[Moved#Section]]", "![[Moved]]", "[t](../Archive/Moved.md)",
               "[t](<../Archive/Moved.md>)", "[[Moved.md]]", "[t](../Archive/Moved.md#Section)")
WRITE_TOOLS = {"create_note", "append_to_note", "replace_section", "update_properties", "move_note", "move_notes",
               "delete_note", "restore_version", "undo_edit", "note_history"}


def big_note() -> str:
    lines = ["# Big", ""]
    i = 0
    while sum(len(x) + 1 for x in lines) < BIG_CHARS:
        lines.append(f"## Part {i // 400}" if i % 400 == 0 else f"Line {i}: plugin entry with a description, "
                                                                  f"a link and an author number {i * 7}.")
        i += 1
    return "\n".join(lines) + "\n"


def write_agent_vault(root: Path, outside: Path) -> None:
    (root / "Links").mkdir(parents=True)
    (root / "Big.md").write_text(big_note(), encoding="utf-8")
    (root / "Target.md").write_text("# Target\n\n## Section\n\nThe target note, about quokka husbandry.\n", encoding="utf-8")
    for i in range(100):
        (root / "Links" / f"L{i:03}.md").write_text(f"# L{i}\n\nSee {LINK_FORMS[i % len(LINK_FORMS)]} here.\n",
                                                    encoding="utf-8")
    (root / "Windows.md").write_bytes(codecs.BOM_UTF8 + b"# Windows\r\n\r\nFirst line.\r\nLast line, no newline")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    (root / ".indexignore").write_text("Private/\n", encoding="utf-8")
    (root / "Private").mkdir()
    (root / "Private" / "Plan.md").write_text("# Plan\n\nsecret plan\n", encoding="utf-8")
    outside.mkdir()
    (outside / "outside.md").write_text("# Outside\n\nOUTSIDE\n", encoding="utf-8")
    (root / "Escape.md").symlink_to(outside / "outside.md")
    (root / "LinkDir").symlink_to(outside, target_is_directory=True)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
            and not p.is_symlink()}


@dataclass
class Served:
    root: Path
    outside: Path
    sidecar: Sidecar
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sidecar.handshake['mcp_port']}/mcp"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("agents")
    root = base / "vault"
    write_agent_vault(root, base / "outside")
    token = secrets.token_urlsafe(32)
    sidecar = start_sidecar(root, base / "index", "--allow-writes", "--mcp-port", "0", "--no-parent-watch",
                            env={"SIDECAR_MCP_TOKEN": token})
    try:
        sidecar.wait_ready(timeout=150)
        yield Served(root.resolve(), base / "outside", sidecar, token)
    finally:
        sidecar.stop()


@asynccontextmanager
async def agent(served: Served) -> AsyncIterator[ClientSession]:
    async with asyncio.timeout(TIMEOUT), http_session(served.url, served.token) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, **args: Any) -> dict[str, Any]:
    result = await session.call_tool(name, args)
    assert not result.is_error, (name, result.content)
    return structured(result)


async def read_all(session: ClientSession, path: str, max_chars: int) -> tuple[str, int]:
    """Every page of a note, checking each page's counts against the next; returns the text and pages."""
    text, offset, pages = "", 0, 0
    while True:
        page = await call(session, "read_note", path=path, offset=offset, max_chars=max_chars)
        pages += 1
        assert pages <= page["total_chars"] // (max_chars // 2) + 1  # every page but the last is at least half full
        assert page["offset"] == offset == len(text)
        body = page["text"].split("\n…[content_hash=")[0]
        if "next_offset" not in page:
            assert page["remaining_chars"] == 0 and not page["truncated"]
            return text + body, pages
        marker = f"\n…[truncated: {page['remaining_chars']:,} more characters"
        assert marker in body and body.endswith(f"; continue with offset={page['next_offset']}]")
        chunk = body.split(marker)[0]
        assert page["remaining_chars"] == page["total_chars"] - page["next_offset"]
        text += (chunk + "\n") if page["next_offset"] - offset == len(chunk) + 1 else chunk
        offset = page["next_offset"]


# ---- paging ---------------------------------------------------------------------------------------
async def test_paging_through_a_300k_character_note_over_http(served: Served) -> None:
    expected = (served.root / "Big.md").read_text(encoding="utf-8")
    async with agent(served) as session:
        text, pages = await read_all(session, "Big.md", 20_000)
        first = await call(session, "read_note", path="Big.md")
        lines = await call(session, "read_note", path="Big.md", start_line=1001, end_line=1003)
    assert text == expected.rstrip("\n") or text == expected
    assert pages >= BIG_CHARS // 20_000
    assert first["total_chars"] >= BIG_CHARS and len(first["text"]) < 6_200 and first["start_line"] == 1
    assert lines["text"].split("\n") == expected.split("\n")[1000:1003] and lines["end_line"] == 1003


# ---- a move that rewrites 100 links, and its undo ---------------------------------------------------
async def test_a_move_rewrites_100_links_and_undo_puts_everything_back(served: Served) -> None:
    before = snapshot(served.root)
    async with agent(served) as session:
        links = await call(session, "note_links", path="Target.md", direction="in", limit=200)
        assert links["counts"]["backlinks"] == 100
        target = await call(session, "read_note", path="Target.md")
        moved = await call(session, "move_note", path="Target.md", new_path="Archive/Moved.md",
                           content_hash=target["content_hash"])
        assert moved["path"] == "Archive/Moved.md" and len(moved["paths"]) == 102
        for i in range(100):
            text = (served.root / "Links" / f"L{i:03}.md").read_text(encoding="utf-8")
            assert text == f"# L{i}\n\nSee {MOVED_FORMS[i % len(MOVED_FORMS)]} here.\n", i
        assert not (served.root / "Target.md").exists()
        after = await call(session, "note_links", path="Archive/Moved.md", direction="in", limit=200)
        assert after["counts"] == {"outlinks": 0, "backlinks": 100, "unresolved": 0}  # indexed before it answered
        found = await call(session, "search", query="quokka husbandry", mode="lexical")
        assert found["results"][0]["path"] == "Archive/Moved.md"

        undone = await call(session, "undo_edit", edit=moved["edit"])
        assert undone["op"] == "undo" and undone["path"] == "Target.md"
        again = await session.call_tool("undo_edit", {"edit": moved["edit"]})
        assert error_of(again)["code"] == "conflict"
        restored = await call(session, "note_links", path="Target.md", direction="in", limit=200)
        assert restored["counts"]["backlinks"] == 100
    assert snapshot(served.root) == {**before, **{k: v for k, v in snapshot(served.root).items()
                                                  if k.startswith(".trash/")}}
    edits = served.sidecar.call("edits.list", limit=5)
    assert not list(Draft7Validator(protocol.result_schema("edits.list")).iter_errors(edits))
    assert edits["writes_enabled"] is True and [e["op"] for e in edits["edits"][:2]] == ["undo", "move"]
    assert edits["edits"][1]["undone_by"] == edits["edits"][0]["edit"] and edits["edits"][0]["client"]
    assert [e["path"] for e in edits["edits"][:2]] == ["Target.md", "Archive/Moved.md"]  # the note, not a relinked one
    assert len(edits["edits"][1]["paths"]) == 102


def test_an_edit_record_names_its_note() -> None:
    """`path`: the last change's note (the note itself comes after the notes a move relinks); a delete names
    the note it removed; an edit that failed before recording a change names none."""
    def record(*changes: tuple[str | None, str | None]) -> dict[str, Any]:
        return edit_record({"id": 1, "at": 0.0, "client": "c", "op": "move", "summary": "s", "undone_by": None,
                            "changes": [{"before": b, "after": a} for b, a in changes]})

    moved = record(("Links/L.md", "Links/L.md"), ("Target.md", "Archive/Moved.md"))
    assert moved["path"] == "Archive/Moved.md" and moved["paths"] == ["Archive/Moved.md", "Links/L.md", "Target.md"]
    assert record(("Gone.md", None))["path"] == "Gone.md"
    assert record((None, "New.md"))["path"] == "New.md"
    assert record()["path"] is None and record()["paths"] == []


# ---- conflicts, formats, the plugin's undo ------------------------------------------------------------
async def test_an_edit_made_meanwhile_is_a_conflict_never_overwritten(served: Served) -> None:
    path = served.root / "Windows.md"
    async with agent(served) as session:
        seen = await call(session, "read_note", path="Windows.md")
        done = await call(session, "append_to_note", path="Windows.md", content="Appended by the agent.",
                          content_hash=seen["content_hash"])
        assert path.read_bytes() == (codecs.BOM_UTF8 + b"# Windows\r\n\r\nFirst line.\r\nLast line, no newline"
                                     b"\r\nAppended by the agent.")  # BOM, CRLF and no final newline kept
        path.write_bytes(path.read_bytes() + b"\r\nTyped in Obsidian.")  # the user edits meanwhile
        stale = await session.call_tool("replace_section", {"path": "Windows.md", "heading": "Windows",
                                                            "content": "# Windows\n\ngone", "content_hash":
                                                            done["content_hash"]})
        assert error_of(stale)["code"] == "conflict" and error_of(stale)["field"] == "content_hash"
        assert path.read_bytes().endswith(b"Typed in Obsidian.")
        fresh = await call(session, "read_note", path="Windows.md")
        props = await call(session, "update_properties", path="Windows.md", properties={"status": "done"},
                           content_hash=fresh["content_hash"])
        assert path.read_bytes().startswith(codecs.BOM_UTF8 + b"---\r\nstatus: done\r\n---\r\n# Windows")
        history = await call(session, "note_history", path="Windows.md")
        assert [v["op"] for v in history["versions"]][:2] == ["update_properties", "append"]
    undo = served.sidecar.call("edits.undo", edit=props["edit"])  # the plugin's Undo
    assert undo["paths"] == ["Windows.md"] and path.read_bytes().endswith(b"Typed in Obsidian.")
    assert not path.read_bytes().startswith(codecs.BOM_UTF8 + b"---")
    refused = served.sidecar.rpc("edits.undo", edit=props["edit"])
    assert refused["error"]["data"]["kind"] == "conflict"


# ---- every refused target -------------------------------------------------------------------------------
REFUSED_NEW = ["../x.md", "../../x.md", "/tmp/x.md", "~/x.md", "C:/x.md", "C:\\x.md", "\\\\server\\x.md",
               "Links/../../x.md", "Links/./../../x.md", ".obsidian/new.md", ".obsidian/x/new.md", ".trash/new.md",
               ".git/new.md", "Private/new.md", "LinkDir/new.md", "Links/.hidden.md", "Links/new.txt", "x.md\x00.md",
               "Links/new.md ", "Links./new.md", "Target.md", "Escape.md", "Links/L000.md", "Links", "",
               "Links/a|b.md", "Links/new\nline.md", "Links/[[x]].md", "CON.md", "aux/x.md", "n" * 300 + ".md",
               "links/new.md", "big.md", "Links/l000.md"]  # names Obsidian refuses; twins by case only
REFUSED_EXISTING = [*ESCAPES, ".obsidian/app.json", "Private/Plan.md", "LinkDir/outside.md", "Links"]


async def test_every_refused_path_as_a_write_target(served: Served) -> None:
    before, outside = snapshot(served.root), snapshot(served.outside)
    async with agent(served) as session:
        hash_ = (await call(session, "read_note", path="Target.md"))["content_hash"]
        for ref in REFUSED_NEW:
            for tool, args in (("create_note", {"path": ref, "content": "x"}),
                               ("move_note", {"path": "Target.md", "new_path": ref, "content_hash": hash_})):
                result = await session.call_tool(tool, args)
                assert error_of(result)["code"] == "invalid_params", (tool, ref, result)
        for ref in REFUSED_EXISTING:
            for tool, args in (("append_to_note", {"path": ref, "content": "x", "content_hash": hash_}),
                               ("delete_note", {"path": ref, "content_hash": hash_}),
                               ("update_properties", {"path": ref, "properties": {"a": 1}, "content_hash": hash_})):
                result = await session.call_tool(tool, args)
                assert error_of(result)["code"] == "not_found", (tool, ref, result)
        placeholder = await session.call_tool("append_to_note", {"path": "Target.md", "content_hash": hash_,
                                                                 "content": "token: [REDACTED:github]"})
        assert error_of(placeholder)["field"] == "content"
    assert snapshot(served.root) == before and snapshot(served.outside) == outside


# ---- stdio, and read-only by default ------------------------------------------------------------------
async def test_stdio_writes_page_and_undo(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Big.md").write_text(big_note(), encoding="utf-8")
    (root / "Home.md").write_text("# Home\n\nSee [[Inbox]].\n", encoding="utf-8")
    (root / "Noe\u0308l.md").write_text("# Noel\n", encoding="utf-8")  # NFD on disk, as macOS makes names
    index_dir = tmp_path / "index"
    params = stdio_params(SimpleNamespace(root=root), index_dir)  # type: ignore[arg-type]
    subprocess_index(root, index_dir)
    writable = params.model_copy(update={"args": [*params.args, "--allow-writes"]})
    async with asyncio.timeout(TIMEOUT), stdio_client(writable) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert set(listed) >= WRITE_TOOLS
        for name in ("create_note", "append_to_note", "replace_section"):  # the size rule is the writer's, which
            assert "maxLength" not in listed[name].input_schema["properties"]["content"]  # reads the configured limit
        text, _pages = await read_all(session, "Big.md", 50_000)
        assert text.rstrip("\n") == big_note().rstrip("\n")
        noel = await call(session, "read_note", path="No\u00ebl.md")
        await call(session, "append_to_note", path="No\u00ebl.md", content="more", content_hash=noel["content_hash"])
        assert (root / "Noe\u0308l.md").read_text(encoding="utf-8") == "# Noel\nmore\n"
        assert [p.name for p in root.iterdir() if p.name.startswith("No")] == ["Noe\u0308l.md"]
        created = await call(session, "create_note", path="Inbox/Inbox.md", content="# Inbox\n\nquokka list\n")
        assert (root / "Inbox" / "Inbox.md").read_text(encoding="utf-8") == "# Inbox\n\nquokka list\n"
        home = await call(session, "note_links", path="Home.md")
        assert home["outlinks"][0]["path"] == "Inbox/Inbox.md"  # the new note resolves the old link at once
        await call(session, "undo_edit", edit=created["edit"])
        assert not (root / "Inbox" / "Inbox.md").exists()
        hashes = {p: (await call(session, "read_note", path=p))["content_hash"] for p in ("Home.md", "Big.md")}
        stale = await session.call_tool("move_notes", {"moves": [
            {"path": "Home.md", "new_path": "Hub/Home.md", "content_hash": hashes["Home.md"]},
            {"path": "Big.md", "new_path": "Hub/Big.md", "content_hash": "0" * 24}]})
        assert error_of(stale)["code"] == "conflict" and (root / "Home.md").exists()  # checked before any move
        bad = await session.call_tool("move_notes", {"moves": [{"path": "Home.md", "new_path": "x.md"}]})
        assert error_of(bad) == {"code": "invalid_params", "field": "moves.0.content_hash",
                                 "message": "moves.0.content_hash: required"}
        batch = await call(session, "move_notes", moves=[
            {"path": p, "new_path": f"Hub/{p}", "content_hash": h} for p, h in hashes.items()])
        assert [e["path"] for e in batch["edits"]] == ["Hub/Home.md", "Hub/Big.md"]
        assert sorted(p.name for p in (root / "Hub").iterdir()) == ["Big.md", "Home.md"]
        assert (root / ".trash" / "Inbox.md").read_text(encoding="utf-8") == "# Inbox\n\nquokka list\n"
    async with asyncio.timeout(TIMEOUT), stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        assert not names & WRITE_TOOLS  # read-only unless asked
        assert "content_hash" not in await call(session, "read_note", path="Home.md")


def subprocess_index(root: Path, index_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIDECAR_")}
    subprocess.run([sys.executable, "-m", "sidecar", "index", "--vault", str(root), "--index", str(index_dir)],
                   check=True, capture_output=True, env={**env, "HF_HUB_OFFLINE": "1"}, timeout=TIMEOUT)


def test_history_lives_beside_the_index_and_is_private(served: Served) -> None:
    index_dir = Path(served.sidecar.call("status")["index_dir"])
    history = index_dir / "history.sqlite3"
    assert history.exists() and (history.stat().st_mode & 0o777) == 0o600
    assert (index_dir.stat().st_mode & 0o777) == 0o700
    assert not any(p.name.startswith("history") for p in served.root.rglob("*"))
    assert served.sidecar.call("edits.list", limit=1)["writes_enabled"] is True

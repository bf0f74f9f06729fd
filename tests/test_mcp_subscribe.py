"""Resource subscriptions over stdio, as a client uses them: the official MCP client against a real
`sidecar mcp --stdio` child over a real index. A subscribed note changed on disk, through a write
(--allow-writes), or dropped by an index run of another process is announced with
notifications/resources/updated for its URI; nothing after unsubscribing, nothing for a touch; the
URIs resources/read refuses are refused on subscribe with the same error. Over HTTP (stateless)
nothing of this is served or announced.

Absence is checked without sleeping: a tick of the server's poll looks at every subscription in
the order they were made, so once a note subscribed last ("Sentinel") has been announced twice
after a change, any notification that change caused would already have arrived.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp import types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from sidecar.config import Settings
from sidecar.core import VaultIndex
from sidecar.protocol_types import ERROR_CODES
from tests.test_mcp import INSPECTOR, http_session, inspector_npx, running_server, stdio_params
from tests.test_mcp_agents import subprocess_index

pytestmark = pytest.mark.slow
TIMEOUT = 120  # a hang fails the test; the waits below are bounded by it, nothing here measures time

NOTES = {
    "Alpha.md": "# Alpha\n\nfirst text\n",
    "Beta.md": "# Beta\n\nstays the same\n",
    "Sentinel.md": "# Sentinel\n\n0\n",
    "Private/Plan.md": "# Plan\n\nignored\n",
    ".hidden/Note.md": "# Hidden\n",
}
REFUSED = ["vault:///.obsidian/app.json", "vault:///Private/Plan.md", "vault:///.hidden/Note.md",
           "vault:///Escape.md", "vault:///Nope.md", "vault:///../outside.md", "vault:///%2e%2e/outside.md",
           "vault:///.indexignore", "file:///etc/passwd"]


def make_vault(base: Path) -> tuple[Path, Path]:
    root = base / "vault"
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}", encoding="utf-8")
    (root / ".indexignore").write_text("Private/\n", encoding="utf-8")
    (base / "outside.md").write_text("# Outside\n", encoding="utf-8")
    (root / "Escape.md").symlink_to(base / "outside.md")
    index_dir = base / "index"
    subprocess_index(root, index_dir)
    return root, index_dir


class Updates:
    """The notifications/resources/updated URIs the client received, in order."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue()

    async def handler(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            await self.queue.put(message.params.uri)

    async def until(self, uri: str) -> list[str]:
        """Every URI announced up to and including the next announcement of `uri`."""
        seen = []
        while not seen or seen[-1] != uri:
            seen.append(await self.queue.get())
        return seen


@asynccontextmanager
async def subscriber(params: StdioServerParameters) -> AsyncIterator[tuple[ClientSession, Updates]]:
    updates = Updates()
    async with (
        asyncio.timeout(TIMEOUT),
        stdio_client(params) as (read, write),
        ClientSession(read, write, message_handler=updates.handler) as session,
    ):
        init = await session.initialize()
        assert init.capabilities.resources is not None and init.capabilities.resources.subscribe is True
        yield session, updates


async def subscribe(session: ClientSession, uri: str) -> None:
    """resources/subscribe without the client's deprecation warning (it is removed at the 2026 era only)."""
    await session.send_request(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)),
                               types.EmptyResult)


async def unsubscribe(session: ClientSession, uri: str) -> None:
    await session.send_request(types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)),
                               types.EmptyResult)


async def bump(root: Path, n: int) -> None:
    """A new size each time: two writes within one tick of the file system's clock still differ."""
    (root / "Sentinel.md").write_text("# Sentinel\n\n" + "x" * n, encoding="utf-8")


async def settle(root: Path, updates: Updates, n: int) -> list[str]:
    """Everything announced until the sentinel's second announcement after now (see the module doc)."""
    await bump(root, n)
    seen = await updates.until("vault:///Sentinel.md")
    await bump(root, n + 1)
    return seen + await updates.until("vault:///Sentinel.md")


def text_of(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def test_a_subscribed_note_changed_on_disk_is_announced_until_unsubscribed(tmp_path: Path) -> None:
    root, index_dir = make_vault(tmp_path)
    params = stdio_params(SimpleNamespace(root=root), index_dir)  # type: ignore[arg-type]
    async with subscriber(params) as (session, updates):
        for uri in ("vault:///Alpha.md", "vault:///Beta.md", "vault:///Sentinel.md"):
            await subscribe(session, uri)
        await subscribe(session, "vault:///Alpha.md")  # again: still one subscription
        (root / "Alpha.md").write_text("# Alpha\n\nsecond text\n", encoding="utf-8")  # no index run: disk only
        assert await updates.until("vault:///Alpha.md") == ["vault:///Alpha.md"]
        assert "second text" in text_of(await session.read_resource("vault:///Alpha.md"))

        os.utime(root / "Beta.md", ns=(1, 1))  # a touch: same text, nothing to reread
        assert await settle(root, updates, 1) == ["vault:///Sentinel.md"] * 2

        await unsubscribe(session, "vault:///Alpha.md")
        await unsubscribe(session, "vault:///Nope.md")  # never subscribed: nothing to do, no error
        (root / "Alpha.md").write_text("# Alpha\n\nthird text\n", encoding="utf-8")
        (root / "Beta.md").write_text("# Beta\n\nchanged after all\n", encoding="utf-8")
        seen = await settle(root, updates, 3)  # Beta's tick may come before or after the first sentinel's
        assert sorted(seen) == ["vault:///Beta.md", "vault:///Sentinel.md", "vault:///Sentinel.md"]

        (root / "Beta.md").unlink()  # gone: reading it again now answers "no such note"
        assert await updates.until("vault:///Beta.md") == ["vault:///Beta.md"]
        with pytest.raises(MCPError):
            await session.read_resource("vault:///Beta.md")


async def test_refused_uris_are_refused_on_subscribe_as_on_read(tmp_path: Path) -> None:
    root, index_dir = make_vault(tmp_path)
    params = stdio_params(SimpleNamespace(root=root), index_dir)  # type: ignore[arg-type]
    async with subscriber(params) as (session, _updates):
        for uri in REFUSED:
            with pytest.raises(MCPError) as on_read:
                await session.read_resource(uri)
            with pytest.raises(MCPError) as on_subscribe:
                await subscribe(session, uri)
            assert on_subscribe.value.error.code == on_read.value.error.code, uri
            assert on_subscribe.value.error.message == on_read.value.error.message, uri
            assert on_subscribe.value.error.message.startswith(("no such note: ", "Unknown resource: ")), uri
        await subscribe(session, "vault:///Alpha")  # a title, as resources/read takes it
    empty = stdio_params(SimpleNamespace(root=root), tmp_path / "empty-index")  # type: ignore[arg-type]
    async with subscriber(empty) as (session, _updates):
        with pytest.raises(MCPError) as not_built:
            await subscribe(session, "vault:///Alpha.md")
        assert not_built.value.error.message.startswith("index not built yet: run `sidecar index")
        with pytest.raises(MCPError) as not_read:
            await session.read_resource("vault:///Alpha.md")
        for refused in (not_built.value.error, not_read.value.error):  # not "no such note": build it, then ask again
            assert refused.code == ERROR_CODES["index_not_ready"] and refused.data["kind"] == "index_not_ready"
        assert not_read.value.error.message == not_built.value.error.message


async def test_writes_and_index_runs_elsewhere_are_announced(tmp_path: Path) -> None:
    root, index_dir = make_vault(tmp_path)
    params = stdio_params(SimpleNamespace(root=root), index_dir, "--allow-writes")  # type: ignore[arg-type]
    async with subscriber(params) as (session, updates):
        for uri in ("vault:///Alpha.md", "vault:///Beta.md", "vault:///Sentinel.md"):
            await subscribe(session, uri)
        alpha = await session.call_tool("read_note", {"path": "Alpha.md"})
        assert alpha.structured_content is not None
        appended = await session.call_tool("append_to_note", {
            "path": "Alpha.md", "content": "appended by the agent",
            "content_hash": alpha.structured_content["content_hash"]})
        assert not appended.is_error, appended.content
        assert await updates.until("vault:///Alpha.md") == ["vault:///Alpha.md"]
        assert "appended by the agent" in text_of(await session.read_resource("vault:///Alpha.md"))

        # Another process drops Beta from the index (now ignored there); the file itself is untouched.
        (root / ".indexignore").write_text("Private/\nBeta.md\n", encoding="utf-8")
        await asyncio.to_thread(subprocess_index, root, index_dir)
        assert await updates.until("vault:///Beta.md") == ["vault:///Beta.md"]
        assert await settle(root, updates, 1) == ["vault:///Sentinel.md"] * 2  # announced once


async def test_http_announces_and_serves_no_subscriptions(tmp_path: Path) -> None:
    root, index_dir = make_vault(tmp_path)
    core = VaultIndex(Settings(vault=root.resolve(), index_dir=index_dir))
    token = secrets.token_urlsafe(32)
    try:
        async with asyncio.timeout(TIMEOUT), running_server(core, token) as ready, \
                http_session(ready.url, token) as session:
            init = await session.initialize()
            assert init.capabilities.resources is not None and not init.capabilities.resources.subscribe
            with pytest.raises(MCPError) as refused:
                await subscribe(session, "vault:///Alpha.md")
            assert refused.value.error.code == types.METHOD_NOT_FOUND
    finally:
        core.close()


async def inspector_capabilities(npx: str, *target: str) -> dict[str, object]:
    """The Inspector CLI's `initialize` (it has no resources/subscribe method: one call per run)."""
    proc = await asyncio.create_subprocess_exec(npx, "--offline", "-y", INSPECTOR, "--cli", "--method", "initialize",
                                                *target, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-500:]
    return dict(json.loads(out)["capabilities"])


async def test_mcp_inspector_cli_sees_subscribe_on_stdio_only(tmp_path: Path) -> None:
    npx = inspector_npx()
    root, index_dir = make_vault(tmp_path)
    params = stdio_params(SimpleNamespace(root=root), index_dir)  # type: ignore[arg-type]
    env = [arg for k, v in (params.env or {}).items() if k in ("HF_HUB_OFFLINE", "PATH", "HOME")
           for arg in ("-e", f"{k}={v}")]
    core = VaultIndex(Settings(vault=root.resolve(), index_dir=index_dir))
    token = secrets.token_urlsafe(32)
    try:
        async with asyncio.timeout(TIMEOUT):
            stdio = await inspector_capabilities(npx, *env, params.command, *params.args)
            assert stdio["resources"] == {"subscribe": True, "listChanged": False}
            async with running_server(core, token) as ready:
                http = await inspector_capabilities(npx, ready.url, "--transport", "http",
                                                    "--header", f"Authorization: Bearer {token}")
            assert http["resources"] == {"subscribe": False, "listChanged": False}
    finally:
        core.close()

"""`sidecar serve` answers before its model is loaded: the handshake, lexical search (JSON-RPC and MCP)
and status come first, say honestly that vectors are loading; the start-up scan runs before the model
loads and indexing goes on while it does (what it indexes gets its vectors once the model is in).

The model's load is held by SIDECAR_TEST_HOLD_MODEL (a file that releases it), so the loading state
lasts exactly as long as the test needs: no timing, no race with a fast machine.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sidecar.config import HOLD_MODEL_ENV
from tests.conftest import DEMO_VAULT, open_index
from tests.serverproc import Sidecar, start_sidecar
from tests.test_mcp import http_session, structured

NEW_NOTE = "Inbox/Zephyrine.md"
NEW_WORD = "zephyrine"  # a word no demo note has: found only once the note is indexed


@dataclass
class Held:
    server: Sidecar
    release: Path
    mcp_token: str

    def status(self) -> dict[str, Any]:
        return self.server.call("status")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def held(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Held]:
    """An indexed demo vault with one note added since, served with the model held back."""
    base = tmp_path_factory.mktemp("startup")
    vault, index = base / "vault", base / "index"
    shutil.copytree(DEMO_VAULT, vault)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "sidecar", "index", "--vault", str(vault), "--index", str(index)],
                   check=True, capture_output=True, env=env, timeout=600)
    (vault / NEW_NOTE).parent.mkdir(exist_ok=True)
    (vault / NEW_NOTE).write_text(f"# Zephyrine\n\nThe {NEW_WORD} sourdough starter lives on the top shelf.\n")
    release = base / "release-model"
    token = secrets.token_urlsafe(24)
    server = start_sidecar(vault, index, "--no-watch", "--mcp-port", "0",
                           env={HOLD_MODEL_ENV: str(release), "SIDECAR_MCP_TOKEN": token})
    try:
        yield Held(server, release, token)
    finally:
        release.touch()
        server.stop()


def test_handshake_lexical_search_and_status_come_before_the_model(held: Held) -> None:
    server = held.server
    assert not held.release.exists()
    status = held.status()
    assert status["model"]["loading"] is True and status["model"]["available"] is False
    assert status["model"]["error"] is None and status["vectors_available"] is False
    assert status["complete"] is False and status["chunks_with_vectors"] > 0  # stored vectors still count
    found = server.call("search", query="SQLITE_BUSY", limit=5)  # hybrid asked: lexical answered, and said
    assert found["results"] and found["mode"] == "lexical"
    assert found["vectors_loading"] is True and found["vectors_available"] is False
    assert "still loading" in found["caveat"]
    related = server.call("related", text="My sourdough starter never rises in winter.", limit=5)
    assert related["vectors_loading"] is True and related["vectors_available"] is False
    assert held.status()["model"]["loading"] is True  # nothing above released it


def test_indexing_goes_on_while_the_model_loads(held: Held) -> None:
    """The start-up scan does not wait for the model: the note added since the last index is found by its
    words while the model is still held; its vectors come with the model (the last test here)."""
    server = held.server
    server.wait_until(lambda: held.status()["indexing"]["scans"] >= 1, 120, "the start-up scan")
    found = server.call("search", query=NEW_WORD, mode="lexical")
    assert [r["path"] for r in found["results"]] == [NEW_NOTE]
    status = held.status()
    assert status["model"]["loading"] is True and status["chunks_without_vectors"] >= 1


def test_mcp_answers_lexically_while_the_model_loads(held: Held) -> None:
    async def search() -> dict[str, Any]:
        url = f"http://127.0.0.1:{held.server.handshake['mcp_port']}/mcp"
        async with asyncio.timeout(60), http_session(url, held.mcp_token) as session:
            return structured(await session.call_tool("search", {"query": "SQLITE_BUSY", "limit": 3}))

    out = asyncio.run(search())
    assert out["results"] and out["mode"] == "lexical" and "still loading" in out["caveat"]
    assert held.status()["model"]["loading"] is True


def test_loading_clears_then_hybrid_and_the_waiting_note_has_vectors(held: Held) -> None:
    server = held.server
    held.release.touch()
    status = server.wait_ready(timeout=120)
    assert status["model"]["loading"] is False and status["model"]["available"] is True
    assert status["vectors_available"] is True and status["chunks_without_vectors"] == 0
    found = server.call("search", query="SQLITE_BUSY", limit=5)
    assert found["mode"] == "hybrid" and found["vectors_loading"] is False
    assert "still loading" not in (found["caveat"] or "")
    # The note indexed while the model loaded was embedded once it came in, not left lexical-only.
    new = server.call("search", query=NEW_WORD, mode="semantic", limit=10)
    assert new["mode"] == "semantic" and NEW_NOTE in [r["path"] for r in new["results"]]


def test_an_index_made_without_the_model_gets_its_vectors_and_bands_when_it_comes(tmp_path: Path) -> None:
    """In process: a whole index run before the model is in (as the start-up scan of a vault that changed
    a lot), then `load_model` embeds every section and records the band thresholds that run could not."""
    core = open_index(DEMO_VAULT, tmp_path / "index", model_later=True)
    try:
        core.index()
        before = core.status()
        assert before["chunks"] > 50 and before["chunks_with_vectors"] == 0
        assert core.thresholds_info()["source"] == "default"
        core.load_model()
        after = core.status()
        assert after["chunks_without_vectors"] == 0 and after["vectors_available"] is True
        assert core.thresholds_info()["source"] == "auto"
        assert core.search("SQLITE_BUSY", mode="semantic")["results"]
    finally:
        core.close()


def test_the_vectors_come_with_the_link_graph_the_lexical_snapshot_loaded(tmp_path: Path) -> None:
    """The graph does not depend on the vectors: it is not read again when they come (at 60,000 notes
    that read is 0.2-0.3 s of the first hybrid answer)."""
    core = open_index(DEMO_VAULT, tmp_path / "index", model_later=True)
    try:
        core.index()
        lexical = core.snapshot()
        core.load_model()
        with_vectors = core.snapshot()
        assert len(lexical.vector_ids) == 0 and len(with_vectors.vector_ids) == core.status()["chunks"]
        assert with_vectors.graph is lexical.graph
    finally:
        core.close()


def test_a_failure_bringing_the_vectors_in_is_the_models_error_not_endless_loading(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    core = open_index(DEMO_VAULT, tmp_path / "index", model_later=True)
    try:
        core.index()

        def full_disk(*_args: object) -> int:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(core.indexer, "embed_missing", full_disk)
        with pytest.raises(sqlite3.OperationalError):
            core.load_model()
        status = core.status()
        assert status["model"]["loading"] is False and status["model"]["available"] is False
        assert "disk is full" in status["model"]["error"] and core.indexer.embedder is None
        found = core.search("SQLITE_BUSY")
        assert found["mode"] == "lexical" and found["results"] and not found["vectors_loading"]
    finally:
        core.close()


def test_a_stop_cuts_the_vectors_catch_up_short(tmp_path: Path) -> None:
    """`serve` stopping sets the cancel event: the catch-up stops at once, and the next run embeds the rest."""
    core = open_index(DEMO_VAULT, tmp_path / "index", model_later=True)
    try:
        core.index()
        stopping = threading.Event()
        stopping.set()
        core.vectors_in(core.read_model(), cancel=stopping)
        assert core.status()["chunks_with_vectors"] == 0
        core.index()
        assert core.status()["chunks_without_vectors"] == 0
    finally:
        core.close()


def test_a_stop_while_the_model_loads_does_not_wait_for_it(tmp_path: Path) -> None:
    """The model's files take 2-3 s to read on a busy machine, and the plugin kills us 3 s after asking.
    Held for good here (a minute), they would outlast the stop's 20 s wait if it waited: a first index
    (the writer waits for the model) and an index being served (the model reads after the scan)."""
    vault, index = tmp_path / "vault", tmp_path / "index"
    shutil.copytree(DEMO_VAULT, vault)
    never = {HOLD_MODEL_ENV: str(tmp_path / "never-released")}
    first = start_sidecar(vault, index, "--no-watch", "--no-mcp", env=never)
    assert first.call("status")["model"]["loading"] is True
    assert first.stop() == 0, first.stderr_tail()
    subprocess.run([sys.executable, "-m", "sidecar", "index", "--vault", str(vault), "--index", str(index)],
                   check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    served = start_sidecar(vault, index, "--no-watch", "--no-mcp", env=never)
    served.wait_until(lambda: served.call("status")["indexing"]["scans"] >= 1, 120, "the start-up scan")
    assert served.call("status")["model"]["loading"] is True
    assert served.stop() == 0, served.stderr_tail()

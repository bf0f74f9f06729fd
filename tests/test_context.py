"""Small-to-big context: an answer split over sibling sections stays whole; a low band costs little."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from sidecar.adapters.mcp.server import build_mcp
from sidecar.commands.cli import main
from sidecar.core import VaultIndex
from sidecar.errors import IndexNotReady
from sidecar.retrieve.context import NO_ANSWER_CHARS, context_answer, format_context
from sidecar.retrieve.search import CHARS_PER_TOKEN, NoteHit, _fit_budget
from tests.conftest import open_index

NOTE = """# Plugins for learning

## Spaced repetition

### Flashcards plugin
Turns question and answer pairs in your notes into flashcards you review on a schedule.
{filler}

### Anki sync
Sends cards written in your notes to Anki, which schedules the reviews with spaced repetition.
{filler}

### Kanban
Boards with columns of cards for tasks.
{filler}
""".format(filler="Some more words about the setup and the settings of this part. " * 14)


def test_matching_sibling_sections_come_with_the_best_one(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Learning.md").write_text(NOTE, encoding="utf-8")
    index = open_index(vault, tmp_path / "index")
    index.index()
    top = index.search("spaced repetition flashcards review schedule", max_tokens=1000)["results"][0]
    index.close()
    headings = [s["heading"] for s in top["sections"]]
    assert headings == ["Plugins for learning > Spaced repetition > Flashcards plugin",
                        "Plugins for learning > Spaced repetition > Anki sync"]  # note order, both siblings
    assert "flashcards you review" in top["text"] and "Sends cards" in top["text"]
    assert "Boards with columns" not in top["text"]  # a sibling that matches less stays out


def test_the_text_budget_goes_to_the_hits_that_may_answer() -> None:
    """A `low` hit between `high` and `medium` ones is no answer: its text would crowd out theirs."""
    rows = {i: {"heading": f"N{i}", "body": f"body {i} " * 50, "start_line": 1, "end_line": 9} for i in (1, 2, 3)}
    hits = [NoteHit(i, [i], 1.0) for i in (1, 2, 3)]
    budget = 2 * len(rows[1]["body"]) // CHARS_PER_TOKEN + 1  # room for two bodies, not three

    def fitted(bands: list[str]) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = [{"band": b} for b in bands]
        _fit_budget(results, rows, hits, budget, [])  # type: ignore[arg-type]
        return results

    answering = fitted(["high", "low", "medium"])
    assert "text" not in answering[1]  # its snippet stands
    assert [answering[i]["text"] for i in (0, 2)] == [rows[1]["body"], rows[3]["body"]]
    assert not answering[2]["truncated"]
    unanswered = fitted(["low", "low", "low"])  # nothing answers: the nearest notes' text, in order
    assert unanswered[0]["text"] == rows[1]["body"] and unanswered[2]["truncated"]


def _result(band: str) -> dict[str, Any]:
    return {"query": "how do I bake a cake", "band": band, "caveat": "careful", "results": [
        {"path": f"N{i}.md", "title": f"Note {i}", "heading": "", "start_line": 1, "end_line": 40, "band": band,
         "snippet": "x", "text": "long excerpt " * 400} for i in range(6)]}


def test_a_low_band_says_the_vault_does_not_answer_and_spends_little() -> None:
    block = format_context(_result("low"), 1500)
    assert len(block) <= NO_ANSWER_CHARS
    assert "does not appear to answer" in block and "long excerpt" not in block
    assert "Note 0 (N0.md, lines 1-40)" in block and "Note 3" not in block  # the three nearest, named
    assert "long excerpt" in format_context(_result("medium"), 1500)  # answers keep their excerpts


def test_a_block_is_banded_by_the_hits_it_quotes() -> None:
    """The search's band reads a page of hits whatever its limit: a block of six `low` hits whose search found
    a `medium` one further down said `medium` and quoted nothing (every `low` excerpt left out as noise)."""
    fewer = {**_result("low"), "band": "medium"}
    block = format_context(fewer, 1500)
    assert "does not appear to answer" in block and "Note 0 (N0.md, lines 1-40)" in block
    assert "long excerpt" in format_context({**_result("medium"), "band": "high"}, 1500)  # its own band, quoted


def test_a_budget_no_excerpt_fits_says_so_instead_of_promising_excerpts() -> None:
    """Before, `--max-tokens 50` printed "Confidence high: these excerpts answer the question directly."
    and then no excerpt at all."""
    block = format_context(_result("high"), 60)
    assert "these excerpts" not in block and "no excerpt fits 60 tokens" in block
    assert "Note 0" in block and len(block) <= 60 * 4


# ---- one context answer, one "index ready" rule ----------------------------------------------------
QUESTION = "spaced repetition flashcards review schedule"


def _indexed(tmp_path: Path, notes: dict[str, str]) -> tuple[VaultIndex, list[str]]:
    vault = tmp_path / "vault"
    vault.mkdir()
    for name, text in notes.items():
        (vault / name).write_text(text, encoding="utf-8")
    index = open_index(vault, tmp_path / "index")
    return index, ["--vault", str(vault), "--index", str(tmp_path / "index")]


async def test_the_cli_and_mcp_give_one_context_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sidecar context --json` and MCP get_context are context_answer of the same search."""
    index, where = _indexed(tmp_path, {"Learning.md": NOTE, "Cake.md": "# Cake\n\nFlour, eggs, sugar.\n"})
    try:
        index.index()
        assert main(["context", QUESTION, *where, "--json", "--max-tokens", "600"]) == 0
        cli = json.loads(capsys.readouterr().out)
        tool = await build_mcp(index).call_tool("get_context", {"query": QUESTION, "max_tokens": 600})
        assert isinstance(tool, CallToolResult) and not tool.is_error and isinstance(tool.structured_content, dict)
        mcp = tool.structured_content
        answer = context_answer(index.search(QUESTION, limit=6, max_tokens=600), 600)
    finally:
        index.close()
    assert cli == answer and answer["sources"] and answer["band"] in ("high", "medium")
    assert mcp == {**{k: v for k, v in answer.items() if k != "query" and v is not None},
                   "sources": [{k: v for k, v in s.items() if k != "title"} for s in answer["sources"]]}


async def test_one_rule_says_whether_the_index_is_ready(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Search, MCP and `sidecar context` ask VaultIndex.index_not_ready: the same answer everywhere."""
    index, where = _indexed(tmp_path, {})
    server = build_mcp(index)
    try:
        never = index.index_not_ready()
        assert never is not None and never.message.startswith("index not built yet: run `sidecar index")
        with pytest.raises(IndexNotReady, match="index not built yet"):
            index.search("anything")
        tool = await server.call_tool("search", {"query": "anything"})
        assert isinstance(tool, CallToolResult) and tool.is_error
        assert json.loads(tool.content[0].text)["error"]["message"] == never.message  # type: ignore[union-attr]
        assert main(["context", "anything", *where]) != 0
        assert never.message in capsys.readouterr().err
        index.index_queued()  # a run is on and has stored nothing yet: the panes wait, agents retry
        assert index.search("anything")["index_building"] is True
        with pytest.raises(IndexNotReady, match="being built") as building:
            index.require_index()
        assert building.value.data == {"retryable": True}
        index.index()  # an empty vault, indexed: ready, with nothing in it (was "not built" for agents)
        assert index.index_not_ready() is None and index.search("anything")["results"] == []
        tool = await server.call_tool("search", {"query": "anything"})
        assert isinstance(tool, CallToolResult) and not tool.is_error
        assert main(["context", "anything", *where, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["band"] == "none"
    finally:
        index.close()

"""Small-to-big context: an answer split over sibling sections stays whole; a low band costs little."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sidecar.context import NO_ANSWER_CHARS, format_context
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

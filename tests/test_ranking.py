"""Ranking failures found on vaults we did not write, each kept as a regression test on our own fixture."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from sidecar.core import VaultIndex
from sidecar.retrieve.search import Candidates, Ranking, fuse_legs
from tests.conftest import open_index

TOPICS = ["chess games move by move", "dice tables", "kanban boards", "tarot spreads", "music scores", "recipe scaling",
          "flashcard decks", "citation styles", "calendar sync", "word counts", "habit streaks", "map pins"]


def _list_note() -> str:
    """A hub page in the style of obsidian-hub's "Uncategorized plugins": one section per plugin."""
    parts = ["# Uncategorized plugins\n"]
    for i in range(300):
        topic = TOPICS[i % len(TOPICS)]
        parts.append(f"## Plugin {i}\n\nA plugin to step through {topic}: it helps with {topic} in your notes.\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    vault = tmp_path_factory.mktemp("ranking-vault")
    (vault / "Uncategorized plugins.md").write_text(_list_note(), encoding="utf-8")
    (vault / "Chess Study.md").write_text(
        "# Chess Study\n\nShow board positions from PGN files and step through chess games move by move.\n",
        encoding="utf-8")
    (vault / "Dice Roller.md").write_text(
        "# Dice Roller\n\nRoll dice and random tables written as lists in your notes.\n", encoding="utf-8")
    idx = open_index(vault, tmp_path_factory.mktemp("ranking-index"))
    idx.index()
    yield idx
    idx.close()


def test_a_long_list_note_does_not_outrank_the_note_about_the_thing(index: VaultIndex) -> None:
    query = "step through my chess games move by move"
    assert index.search(query)["results"][0]["path"] == "Chess Study.md"
    # the failure this guards against: undamped, the list (300 sections, 25 of them on chess) comes first
    undamped = replace(index.ranking, long_note_damping=0.0)
    assert index.search(query, ranking=undamped)["results"][0]["path"] == "Uncategorized plugins.md"


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    vault = tmp_path_factory.mktemp("events-vault")
    for year in (2021, 2022):
        (vault / f"Plugin contest {year}.md").write_text(
            f"# Plugin contest {year}\n\nThe winners of the plugin contest {year}: the jury picked three themes and "
            f"five plugins, announced on the forum in November {year}.\n", encoding="utf-8")
    (vault / "Gardening.md").write_text("# Gardening\n\nWater tomatoes in the morning.\n", encoding="utf-8")
    (vault / "Contest index.md").write_text(  # a list of links in the style of obsidian-hub's Roundup index
        "# Contest index\n\n- [[Plugin contest 2021]]: the plugin contest winners\n- [[Plugin contest 2022]]: "
        "the plugin contest winners\n- [[Release notes 2023]]: what changed\n", encoding="utf-8")
    idx = open_index(vault, tmp_path_factory.mktemp("events-index"))
    idx.index()
    yield idx
    idx.close()


def test_a_year_the_vault_does_not_have_is_never_a_confident_answer(events: VaultIndex) -> None:
    assert events.search("plugin contest 2021 winners")["band"] == "high"
    assert events.search("plugin contest 2023 winners")["band"] != "high"  # 2021 and 2022 are not 2023


def test_a_year_on_another_line_of_a_list_is_not_the_year_asked_about(events: VaultIndex) -> None:
    results = events.search("plugin contest 2023 winners")["results"]
    listing = next(r for r in results if r["path"] == "Contest index.md")
    assert listing["scores"]["bm25_rank"] is not None  # it holds every word, 2023 included, but not together
    assert listing["band"] != "high"
    assert next(r for r in events.search("plugin contest 2022 winners")["results"]
                if r["path"] == "Plugin contest 2022.md")["band"] == "high"


def test_a_made_up_word_is_low(events: VaultIndex) -> None:
    assert events.search("zorblaxian quibbleflux")["band"] in ("low", "none")


def test_a_section_with_every_query_word_is_not_outvoted_by_partial_matches() -> None:
    """obsidian-hub's "lefthook.yml tasks plugin": the one section naming lefthook was lexical rank 1 but
    semantic rank 9, and a Tasks page holding "tasks plugin" only (lexical 2, semantic 1) came first."""
    cands = Candidates(lexical=[1, 2, 3], lexical_strict=1, semantic=[2, 3, 4, 5, 6, 7, 8, 9, 1])
    weights = {"lexical": 1.5, "semantic": 1.0}
    fused = fuse_legs(cands, weights, Ranking())
    assert fused[1] > fused[2]
    even = fuse_legs(cands, weights, replace(Ranking(), loose_weight=1.0))  # every lexical vote alike
    assert even[2] > even[1]
    no_strict = fuse_legs(replace(cands, lexical_strict=0), weights, Ranking())
    assert no_strict == even  # nothing holds every word (most CJK questions): the leg is not thinned

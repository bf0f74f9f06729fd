"""A footer every note shares (links differing only by the note's own path) is not similarity."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sidecar.core import VaultIndex
from sidecar.ingest.boilerplate import template_key
from tests.conftest import open_index

FOOTER = ("\n# This note in GitHub\n\n<span class=\"git-footer\">[Edit In GitHub](https://example.org/edit/{slug}.md "
          "\"edit\") | [Copy this note](https://example.org/raw/{slug}.md \"copy\") | [Download this vault]"
          "(https://example.org/main.zip \"download\")</span>\n")

NOTES = {
    "Kombucha": "# Kombucha\n\nBrew sweet black tea, cool it, add the scoby and a cup of starter liquid. "
                "Ferment for seven to ten days at room temperature, then bottle with ginger for fizz.\n",
    "Second Ferment": "# Second ferment\n\nBottle the finished kombucha with ginger or fruit and leave it two days "
                      "so the yeast carbonates it; burp the bottles daily.\n",
    "Bike Repair": "# Fixing a puncture\n\nLever the tyre off the rim, find the hole with soapy water, patch the "
                   "inner tube and pump it back to pressure.\n",
    "Tax Notes": "# Tax return\n\nCollect the invoices of the year, sum the deductible expenses and file before the "
                 "end of July.\n",
    "Garden": "# Tomatoes\n\nPinch out the side shoots, water at the base in the morning and feed weekly once the "
              "first truss sets.\n",
}


def test_template_key_ignores_link_targets_and_numbers() -> None:
    a = template_key("This note in GitHub", FOOTER.format(slug="People/alice").split("\n", 3)[3])
    b = template_key("Note > This note in GitHub", FOOTER.format(slug="Plugins/Dataview 2").split("\n", 3)[3])
    assert a == b != ""
    assert template_key("Setup", "Install the plugin.") != template_key("Setup", "Remove the plugin.")
    assert template_key("", "  ") == ""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultIndex]:
    vault = tmp_path_factory.mktemp("footer-vault")
    for name, text in NOTES.items():
        (vault / f"{name}.md").write_text(text + FOOTER.format(slug=name.replace(" ", "%20")), encoding="utf-8")
    idx = open_index(vault, tmp_path_factory.mktemp("footer-index"))
    idx.index()
    yield idx
    idx.close()


def test_footers_are_found_as_boilerplate(index: VaultIndex) -> None:
    snap = index.snapshot()
    assert len(snap.boilerplate) == len(NOTES)  # one footer section per note
    assert len(snap.boilerplate_keys) == 1


def test_related_notes_rank_by_content_not_by_the_footer(index: VaultIndex) -> None:
    results = index.related(path="Kombucha.md")["results"]
    assert results[0]["path"] == "Second Ferment.md"
    by_path = {r["path"]: r for r in results}
    # the unrelated notes share only the footer: they are not presented as close
    for other in ("Bike Repair.md", "Tax Notes.md", "Garden.md"):
        assert other not in by_path or by_path[other]["band"] != "high", by_path[other]
        assert other not in by_path or by_path[other]["similarity"] < by_path["Second Ferment.md"]["similarity"]


def test_an_unsaved_buffer_discounts_the_footer_too(index: VaultIndex) -> None:
    text = NOTES["Bike Repair"] + FOOTER.format(slug="Bike%20Repair")
    saved = index.related(path="Bike Repair.md")["results"]
    buffer = index.related(path="Bike Repair.md", text=text)["results"]
    assert [r["path"] for r in saved] == [r["path"] for r in buffer]


def test_search_prefers_the_content_over_the_footer(index: VaultIndex) -> None:
    top = index.search("copy this note kombucha")["results"][0]
    assert top["path"] == "Kombucha.md"
    assert "GitHub" not in top["heading"]  # its content section wins, not the shared footer

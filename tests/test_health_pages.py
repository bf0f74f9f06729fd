"""The health report in pages: a cheap summary, one section a page at a time with a cursor, and
findings advanced by the notes that changed (checked against a report found from scratch)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.core import VaultIndex
from sidecar.errors import InvalidParams
from sidecar.report import health, health_cache, health_pages
from sidecar.report.health_cache import current_findings
from tests.conftest import open_index


@pytest.fixture()
def live(demo_copy: Path, tmp_path: Path) -> Iterator[VaultIndex]:
    index = open_index(demo_copy, tmp_path / "index")
    index.index()
    yield index
    index.close()


def every_page(index: VaultIndex, section: str, limit: int) -> list[dict[str, Any]]:
    items, cursor, pages = [], None, 0
    while True:
        page = index.health_page(section, limit, cursor)
        items += page["items"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            assert pages == -(-page["count"] // limit) or page["count"] == 0
            return items


def test_pages_add_up_to_the_full_report(live: VaultIndex) -> None:
    report = health_pages.build_health(live)
    summary = live.health_summary()
    assert summary["summary"] == report["summary"]
    counts = {s["id"]: s["count"] for s in summary["sections"]}
    assert list(counts) == list(health.SECTION_IDS)
    for sec in report["sections"]:
        assert counts[sec["id"]] == sec["count"]
        if sec["count"]:  # the demo's sections are under SUGGEST_ITEMS: the full report suggests for all
            assert every_page(live, sec["id"], 2) == sec["items"], sec["id"]
    assert sum(counts.values()) > 20  # the demo has something to report


def test_a_page_gives_its_items_suggestions_wherever_it_starts(live: VaultIndex) -> None:
    first = live.health_page("orphans", 1)
    second = live.health_page("orphans", 1, first["next_cursor"])
    assert second["offset"] == 1 and second["count"] == first["count"] >= 2
    assert second["items"][0]["related"]  # not only the report's first items get suggestions


def test_bad_cursors_are_refused(live: VaultIndex) -> None:
    page = live.health_page("orphans", 1)
    for cursor in ("not a cursor", "eyJvIjotMSwicyI6IngifQ", "x" * 201):
        with pytest.raises(InvalidParams, match="cursor"):
            live.health_page("orphans", 1, cursor)
    with pytest.raises(InvalidParams, match="different question"):
        live.health_page("dead_ends", 1, page["next_cursor"])  # a cursor belongs to its section
    with pytest.raises(InvalidParams, match="section"):
        live.health_page("no_such_section", 1)


def test_a_page_after_an_edit_reflects_it(live: VaultIndex, demo_copy: Path) -> None:
    before = live.health_page("unresolved_links", 500)
    (demo_copy / "Inbox").mkdir(exist_ok=True)
    (demo_copy / "Inbox" / "Fresh idea.md").write_text("# Fresh idea\n\nSee [[Nowhere Fresh Target]].\n")
    live.index_paths(["Inbox/Fresh idea.md"])
    after = live.health_page("unresolved_links", 500)
    assert after["generation"] != before["generation"]
    assert after["count"] == before["count"] + 1
    assert next(i for i in after["items"] if "Nowhere Fresh Target" in i["message"])["path"] == "Inbox/Fresh idea.md"
    assert live.health_summary()["summary"]["unresolved_links"] == after["count"]


def test_what_suggesting_loads_is_kept_under_the_caches_lock(live: VaultIndex) -> None:
    """A page keeps what its suggestions loaded (for the next page) in the shared findings: under the
    cache's lock, the one an update holds while it reads them (another page may be serving at once)."""
    found = current_findings(live)
    lock = health_cache._CACHES[live]._lock
    held: list[bool] = []  # per write into the kept `loaded`: whether the cache's lock was held

    class Watched(dict[str, Any]):
        def update(self, *args: Any, **kwargs: Any) -> None:
            held.append(lock.locked())
            super().update(*args, **kwargs)

        def __setitem__(self, key: str, value: Any) -> None:
            held.append(lock.locked())
            super().__setitem__(key, value)

    object.__setattr__(found, "loaded", Watched(found.loaded))  # frozen: the test's watch only
    before = set(found.loaded)
    live.health_page("unresolved_links", 5)
    live.health_page("orphans", 5)
    assert current_findings(live) is found  # the same generation: these pages used the kept findings
    assert set(found.loaded) > before  # suggesting loaded something, and it was kept
    assert held and all(held), held


def scratch(index: VaultIndex) -> health.Findings:
    return health.find_all(health.Context(index), "scratch", time.perf_counter())


def same_findings(index: VaultIndex) -> None:
    kept, fresh = current_findings(index), scratch(index)
    assert kept.summary == fresh.summary
    for sid, items in fresh.sections.items():
        assert [it.to_json("info", True) for it in kept.sections[sid]] == \
            [it.to_json("info", True) for it in items], sid


def test_advanced_findings_equal_findings_from_scratch(live: VaultIndex, demo_copy: Path) -> None:
    same_findings(live)  # the first report: from scratch, kept
    notes = sorted(str(p.relative_to(demo_copy)) for p in demo_copy.rglob("*.md") if ".obsidian" not in p.parts)
    edited, gone, moved = notes[3], notes[5], notes[8]
    steps: list[tuple[str, Callable[[], object], list[str]]] = [
        ("modify", lambda: (demo_copy / edited).write_text(
            (demo_copy / edited).read_text() + "\n\n## New part\n\n[[Missing one]] #onlyhere\n"), [edited]),
        ("create", lambda: (demo_copy / "New note.md").write_text(
            f"# New note\n\nLinks to [[{Path(gone).stem}]] and [[Missing one]].\n"), ["New note.md"]),
        ("delete", (demo_copy / gone).unlink, [gone]),
        ("rename", lambda: (demo_copy / moved).rename(demo_copy / "Moved here.md"), [moved, "Moved here.md"]),
    ]
    for kind, change, paths in steps:
        before = current_findings(live).generation
        change()  # the kept walk of the folder is not redone for this: indexed at once, nothing is stale
        live.index_paths(paths)
        assert current_findings(live).generation != before, kind
        same_findings(live)


def append(vault: Path, path: str, text: str) -> Callable[[], object]:
    return lambda: (vault / path).write_text((vault / path).read_text() + text)


def replace_text(vault: Path, path: str, old: str, new: str) -> Callable[[], object]:
    def change() -> None:
        before = (vault / path).read_text()
        assert old in before, (path, old)
        (vault / path).write_text(before.replace(old, new))
    return change


def test_edits_that_keep_or_change_each_sections_inputs_equal_findings_from_scratch(
        live: VaultIndex, demo_copy: Path) -> None:
    """Each edit leaves some sections' inputs alone (kept items) and changes others (found again):
    after every one the kept findings equal a report found from scratch, and the sections named
    as kept are the previous generation's very lists (the cheap path was taken)."""
    same_findings(live)
    rrf, quotes = "Projects/Search Engine/Ranking with RRF.md", "Reading/Quotes.md"
    random, regex = "Random Thoughts.md", "Reference/Regex Cheatsheet.md"
    gyms, draft = "Hobbies/Bouldering/Climbing Gyms.md", "Projects/Search Engine/Drafts/Chunking Strategy (draft).md"
    graph, tags, pairs = ("orphans", "no_inbound", "dead_ends", "clusters"), ("similar_tags", "tags_used_once"), \
        ("near_duplicates",)
    steps: list[tuple[str, Callable[[], object], str, tuple[str, ...], tuple[str, ...]]] = [
        ("plain text", append(demo_copy, random, "\n\nOne more theory: boredom.\n"), random,
         graph + tags + pairs, ()),
        ("a missing heading added", append(demo_copy, rrf, "\n\n## No Such Heading\n\nNow it exists.\n"), rrf,
         graph + tags + pairs, ("broken_anchors",)),
        ("a missing block added", append(demo_copy, quotes, "\n\nA new quote. ^no-such-quote\n"), quotes,
         graph + tags + pairs, ("broken_anchors",)),
        ("a link added", append(demo_copy, random, "\n\nSee [[Regex Cheatsheet]].\n"), random, tags + pairs,
         ("orphans", "clusters")),
        ("a link removed", replace_text(demo_copy, random, "See [[Regex Cheatsheet]].", "See nothing."), random,
         tags + pairs, ("orphans", "clusters")),
        ("a title changed", replace_text(demo_copy, gyms, "title: Climbing Gyms", "title: Bouldering Gyms"), gyms,
         graph[:3] + tags + pairs, ("clusters",)),
        ("a tag spelled anew", append(demo_copy, regex, "\n\n#home-lab #Recipe\n"), regex, graph + pairs, tags),
        ("a near-duplicate changed", replace_text(demo_copy, draft, "Chunking", "Splitting"), draft,
         graph[:3] + tags, pairs),  # its title too: clusters (which show titles) are found again
        ("a note became a template", append(demo_copy, random, "\n\nCreated {{date}}.\n"), random, pairs,
         ("orphans", "tags_used_once")),  # no link or tag of its own changed: the graph and tags counted anew
        ("and a note again", replace_text(demo_copy, random, "Created {{date}}.", "Created today."), random, pairs,
         ("orphans", "tags_used_once")),
    ]
    for kind, change, path, kept, anew in steps:
        before = current_findings(live)
        change()
        live.index_paths([path])
        after = current_findings(live)
        assert after.generation != before.generation, kind
        same_findings(live)
        assert [sid for sid in kept if after.sections[sid] is not before.sections[sid]] == [], kind
        assert [sid for sid in anew if after.sections[sid] is before.sections[sid]] == [], kind
        assert [sid for sid in anew if after.sections[sid] == before.sections[sid]] == [], kind  # they did change
    # What the edits did shows (the steps did change what they meant to).
    summary = current_findings(live).summary
    assert summary["broken_anchors"] == 0 and summary["near_duplicates"] == 0, summary


def test_the_vault_walk_runs_beside_updates_and_is_taken_in_by_the_next(live: VaultIndex, demo_copy: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Files changed on disk but not indexed are found by the walk of the folder, which runs in a
    thread (an update never waits for it); the update after it ends equals a report from scratch."""
    monkeypatch.setattr(health_cache, "DISK_RESCAN_SECONDS", 0.0)  # every update finds the kept walk old
    same_findings(live)
    (demo_copy / "Not indexed yet.md").write_text("# Not indexed yet\n")
    append(demo_copy, "Reference/Regex Cheatsheet.md", "\n\nEdited, not indexed.\n")()
    for step in range(2):  # the first update starts the walk; the second takes it in
        append(demo_copy, "Random Thoughts.md", f"\n\nEdit {step}.\n")()
        live.index_paths(["Random Thoughts.md"])
        current_findings(live)
        kept = health_cache._CACHES[live]._kept  # the walk this update started
        walk = kept.walk if kept is not None else None
        assert walk is not None and walk.done.wait(30), step
    same_findings(live)
    stale = {it.path: it.message for it in current_findings(live).sections["stale"]}
    assert stale == {"Not indexed yet.md": "On disk but not in the index yet.",
                     "Reference/Regex Cheatsheet.md": "Changed on disk since it was indexed."}


def test_the_model_arriving_late_finds_everything_anew(demo_copy: Path, tmp_path: Path) -> None:
    open_index(demo_copy, tmp_path / "index").index()
    late = open_index(demo_copy, tmp_path / "index", model_later=True)  # as `serve` opens it
    try:
        without = late.health_summary()
        late.load_model()
        with_model = late.health_summary()
        assert with_model["generation"] == without["generation"]  # nothing was written, yet the vectors came
        same_findings(late)
        assert late.health_page("near_duplicates", 5)["count"] == without["summary"]["near_duplicates"] + 1
    finally:
        late.close()


def test_a_rule_or_an_attachment_changing_finds_the_report_anew(live: VaultIndex, demo_copy: Path) -> None:
    """Before, the report advanced by the notes that changed only: excluding People/ left its notes'
    links "pointing to no note" (create a note named ...) and the files "not in the index yet" until a
    restart, and a deleted image stayed out of the missing attachments."""
    same_findings(live)  # the report is kept, as when the health pane is open
    missing = current_findings(live).summary["missing_attachments"]
    (demo_copy / "attachments" / "diagram.png").unlink()
    live.index()
    same_findings(live)
    assert current_findings(live).summary["missing_attachments"] > missing
    (demo_copy / ".indexignore").write_text("People/\n", encoding="utf-8")
    live.index()
    same_findings(live)
    summary = current_findings(live).summary
    assert summary["excluded_links"] > 0 and summary["stale"] == 0, summary

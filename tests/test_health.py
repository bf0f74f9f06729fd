"""The vault-health report on the real demo vault: every planted problem found, exactly, and no secret leaks."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft7Validator

from build_tasks import protocol
from sidecar.commands.cli import main
from sidecar.core import VaultIndex
from sidecar.errors import InvalidParams
from sidecar.ingest.redact import redact
from sidecar.report import health, health_pages
from tests import demo_facts
from tests.conftest import DEMO_VAULT, open_index


@pytest.fixture(scope="module")
def report(demo_index: VaultIndex) -> dict[str, Any]:
    return health_pages.build_health(demo_index, details=True)  # + machine-readable fields: exact checks


def section(report: dict[str, Any], section_id: str) -> list[dict[str, Any]]:
    found = [s for s in report["sections"] if s["id"] == section_id]
    assert len(found) == 1, section_id
    assert found[0]["count"] == len(found[0]["items"])
    return list(found[0]["items"])


def paths(report: dict[str, Any], section_id: str) -> set[str]:
    return {item["path"] for item in section(report, section_id)}


# ---- shape ----------------------------------------------------------------------------------------
def fresh_report(vault: Path, index_dir: Path) -> dict[str, Any]:
    """The whole report, with details, of the vault indexed afresh."""
    index = open_index(vault, index_dir)
    try:
        index.index()
        return health_pages.build_health(index, details=True)
    finally:
        index.close()


def test_the_plain_report_keeps_the_protocol_contract(demo_index: VaultIndex) -> None:
    plain = demo_index.health()
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}"
              for e in Draft7Validator(protocol.result_schema("health")).iter_errors(plain)]
    assert errors == []
    assert all(set(i) <= {"path", "line", "message", "fix", "severity", "related"}
               for s in plain["sections"] for i in s["items"])


def test_report_shape(report: dict[str, Any]) -> None:
    assert set(report) == {"generated_at", "took_ms", "generation", "summary", "rules", "sections"}
    assert isinstance(report["generated_at"], float) and report["took_ms"] >= 0
    assert set(report["summary"]) == set(health.SUMMARY_KEYS)
    assert [s["id"] for s in report["sections"]] == list(health.SECTION_IDS)
    assert report["rules"] and all(isinstance(r, str) for r in report["rules"])
    for sec in report["sections"]:
        assert sec["severity"] in ("error", "warning", "info")
        if sec["id"] not in ("lexical_only",):  # counts chunks in the summary, notes in the section
            assert report["summary"][sec["id"]] == sec["count"]
        for item in sec["items"]:
            assert isinstance(item["path"], str) and item["path"]
            assert item["line"] is None or (isinstance(item["line"], int) and item["line"] >= 1)
            assert item["message"] and item["fix"], item
            assert item["severity"] in ("error", "warning", "info")
    assert report["summary"]["notes"] == demo_facts.NOTE_COUNT_INDEXABLE


def test_only_requested_sections(demo_index: VaultIndex, report: dict[str, Any]) -> None:
    part = demo_index.health(["secrets", "orphans"])
    assert [s["id"] for s in part["sections"]] == ["secrets", "orphans"]
    assert part["summary"] == report["summary"]  # the summary always counts everything
    with pytest.raises(InvalidParams, match="no section 'no_such_section'") as refused:
        demo_index.health(["no_such_section"])  # a client's mistake, not an internal error
    assert refused.value.data["field"] == "sections" and "orphans" in refused.value.data["allowed"]


# ---- links ------------------------------------------------------------------------------------------
def test_broken_links_with_lines_and_suggestions(report: dict[str, Any]) -> None:
    items = section(report, "unresolved_links")
    assert {(i["path"], i["target"], i["line"]) for i in items} == set(demo_facts.BROKEN_LINKS)
    assert report["summary"]["unresolved_targets"] == len({t for _, t, _ in demo_facts.BROKEN_LINKS})
    goals = next(i for i in items if i["target"] == "Goals 2027")
    assert goals["matches"][0]["path"] == "Archive/2025 Goals.md"  # words reordered: found by meaning
    assert goals["related"][0]["path"] == "Archive/2025 Goals.md"  # the close name comes first
    assert "2025 Goals" in goals["message"]
    for item in items:
        assert item["path"] not in {r["path"] for r in item["related"]}  # never the linking note itself


def test_a_model_part_that_reads_a_link_as_a_blur_suggests_nothing(tmp_path: Path) -> None:
    """The English part reads any Korean text as nearly the same (mean cosine 0.90 to help-ko's notes): a link
    to a kimchi stew recipe was "did you mean 백업 (backup), 태그 (tags)?". That part is left out for such a text
    (health.MEANING_BLUR); the multilingual part finds nothing close, so nothing is suggested."""
    from tests.conftest import vault_of

    notes = {"동기화.md": "# 동기화\n\n휴대폰과 컴퓨터의 노트를 같게 유지합니다. [[김치찌개 끓이는 법]]을 참고하세요.\n",
             "태그.md": "# 태그\n\n태그로 노트를 주제별로 정리합니다. 샵 기호 다음에 태그 이름을 입력하세요.\n",
             "백업.md": "# 백업\n\n보관함 폴더를 외장 드라이브에 복사해 백업합니다.\n",
             "단축키.md": "# 단축키\n\n자주 쓰는 명령에 단축키를 지정할 수 있습니다.\n"}
    with vault_of(tmp_path, notes) as index:
        (item,) = section(health_pages.build_health(index, details=True), "unresolved_links")
        assert item["related"] == [] and "did you mean" not in item["message"]


def test_missing_attachments(report: dict[str, Any]) -> None:
    items = section(report, "missing_attachments")
    assert {(i["path"], i["target"], i["line"]) for i in items} == set(demo_facts.MISSING_ATTACHMENTS)


def test_broken_anchors(report: dict[str, Any]) -> None:
    items = section(report, "broken_anchors")
    assert {(i["path"], i["target"], i["anchor"]) for i in items} == set(demo_facts.BROKEN_ANCHORS)
    assert {(i["path"], i["anchor"]): i["line"] for i in items} == demo_facts.BROKEN_ANCHOR_LINES


def test_ambiguous_link_names_the_pick_and_the_others(report: dict[str, Any]) -> None:
    items = section(report, "ambiguous_links")
    assert {(i["path"], i["target"]) for i in items} == set(demo_facts.AMBIGUOUS_LINKS)
    assert {(i["path"], i["target"]): i["line"] for i in items} == demo_facts.AMBIGUOUS_LINK_LINES
    (item,) = items
    assert set(item["candidates"]) == demo_facts.SAME_NAME_NOTES["Setup.md"]
    assert item["picked"] == "Home Lab/Setup.md"  # not in the daily note's folder: the shortest path wins
    assert "Projects/Search Engine/Setup.md" in item["message"]


def test_no_links_into_excluded_files_from_indexed_notes(report: dict[str, Any]) -> None:
    # The demo's links to excluded notes are all written IN excluded files: nothing to report.
    assert section(report, "excluded_links") == []


# ---- graph ------------------------------------------------------------------------------------------
def test_orphans_no_inbound_dead_ends(report: dict[str, Any]) -> None:
    orphans = paths(report, "orphans")
    assert orphans == demo_facts.ORPHANS
    assert paths(report, "no_inbound") | orphans == demo_facts.NO_INBOUND
    assert paths(report, "dead_ends") | orphans == demo_facts.DEAD_ENDS
    assert not paths(report, "no_inbound") & orphans  # an orphan is listed once


def test_orphans_and_dead_ends_get_link_suggestions(report: dict[str, Any]) -> None:
    for sid in ("orphans", "dead_ends"):
        for item in section(report, sid):
            assert len(item["related"]) <= 3
            assert item["path"] not in {r["path"] for r in item["related"]}
            assert all(set(r) >= {"path", "title", "score"} for r in item["related"])
    by_path = {i["path"]: i for i in section(report, "orphans")}
    draft = by_path["Projects/Search Engine/Drafts/Chunking Strategy (draft).md"]
    assert draft["related"][0]["path"] == "Projects/Search Engine/Chunking Strategy.md"
    assert by_path["Untitled.md"]["related"] == []  # nothing to go on: no text, no tags


def test_an_orphan_in_a_language_the_model_half_reads_gets_no_suggestion_by_a_blurred_meaning(tmp_path: Path) -> None:
    """The model half reads Ukrainian: a note is 0.92-0.94 from any other on help-uk (QA set), and its orphan on
    multiple cursors was told to link "About Obsidian". Here a pie recipe is 0.80 from the note on backups. A
    suggestion by meaning needs a note that stands out from the orphan's typical one (health.by_meaning)."""
    from tests.conftest import vault_of

    notes = {
        "Резервне копіювання.md": "# Резервне копіювання\n\nЩоб зробити резервну копію сховища, скопіюйте теку сховища "
                                  "на зовнішній диск або скористайтеся хмарним сервісом синхронізації.\n",
        "Синхронізація.md": "# Синхронізація\n\nСинхронізація тримає нотатки однаковими на телефоні та комп'ютері. "
                            "Дивіться також [[Резервне копіювання]] і [[Мітки]].\n",
        "Мітки.md": "# Мітки\n\nМітки допомагають впорядкувати нотатки за темами. Дивіться [[Синхронізація]].\n",
        "Рецепт.md": "# Рецепт пирога\n\nЗмішайте борошно, цукор і яйця, а потім випікайте пів години в гарячій "
                     "духовці.\n",
        "Подорож.md": "# Подорож до Львова\n\nМи поїхали потягом до Львова і відвідали старе місто. [[Мітки]]\n",
        "Футбол.md": "# Футбольний матч\n\nДомашня команда виграла два нуль у фіналі. [[Мітки]]\n",
    }
    with vault_of(tmp_path, notes) as index:
        (orphan,) = section(health_pages.build_health(index, ["orphans"], details=True), "orphans")
        assert orphan["path"] == "Рецепт.md" and orphan["related"] == []


def test_suggestions_stop_after_the_first_items_but_every_item_is_listed(demo_index: VaultIndex,
                                                                          report: dict[str, Any]) -> None:
    bounded = health_pages.build_health(demo_index, ["orphans", "dead_ends", "unresolved_links"], details=True,
                                  suggest_items=1)
    beyond_the_first = 0
    for sid in ("orphans", "dead_ends", "unresolved_links"):
        full, cut = section(report, sid), section(bounded, sid)
        assert [i["path"] for i in cut] == [i["path"] for i in full]
        assert cut[0]["related"] == full[0]["related"]
        assert all(not i["related"] for i in cut[1:])  # only the first item gets suggestions
        beyond_the_first += sum(bool(i["related"]) for i in full[1:])
    assert beyond_the_first > 0  # ...where the full report had more to say
    assert bounded["summary"] == report["summary"]


def test_name_pool_prefers_more_shared_trigrams_then_earlier_names() -> None:
    matcher = health.NameMatcher(["alpha y", "beta", "alphabet", "alpha x", "alpha"])
    assert matcher.pool("alpha") == [0, 3, 4, 2]  # all six trigrams of "alpha" (ties: list order), then five
    assert matcher.pool("qqq") == []


def test_best_rows_each_row_of_a_block() -> None:
    score = np.array([[0.1, -np.inf, 0.9, 0.0, 0.5], [0.0, 0.0, 0.0, 0.0, 0.2]], dtype=np.float32)
    best = health.best_rows_each(score, 3)
    assert [[j for j, _ in row] for row in best] == [[2, 4, 0], [4]]
    assert best[0][0][1] == pytest.approx(0.9)


def test_disconnected_cluster(report: dict[str, Any]) -> None:
    (item,) = section(report, "clusters")
    assert set(item["members"]) == demo_facts.DISCONNECTED_CLUSTER
    assert item["path"] in demo_facts.DISCONNECTED_CLUSTER
    assert all(r["path"] not in demo_facts.DISCONNECTED_CLUSTER for r in item["related"])


# ---- content ----------------------------------------------------------------------------------------
def test_near_duplicate_pair(report: dict[str, Any]) -> None:
    items = section(report, "near_duplicates")
    assert {(i["path"], i["other"]) for i in items} == {demo_facts.NEAR_DUPLICATE_PAIR}
    (item,) = items
    assert item["similarity"] >= health.DUPLICATE_COSINE and item["overlap"] >= health.DUPLICATE_JACCARD
    assert item["related"][0]["path"] == demo_facts.NEAR_DUPLICATE_PAIR[1]


def test_empty_stub_long_and_malformed_notes(report: dict[str, Any]) -> None:
    assert paths(report, "empty_notes") == demo_facts.EMPTY_NOTES
    assert paths(report, "stub_notes") == demo_facts.STUB_NOTES
    assert paths(report, "long_without_headings") == {demo_facts.LONG_NO_HEADINGS}
    (malformed,) = section(report, "malformed_frontmatter")
    assert malformed["path"] == demo_facts.MALFORMED_FRONTMATTER
    assert "malformed frontmatter" in malformed["message"].lower()
    assert malformed["line"] is not None and malformed["line"] >= 2  # inside the frontmatter block


def test_secrets_by_kind_and_line(report: dict[str, Any]) -> None:
    items = section(report, "secrets")
    assert {(i["path"], i["line"], i["kind"]) for i in items} == set(demo_facts.SECRETS)


def secret_fragments() -> set[str]:
    """Every token of 8+ characters that redaction removed from a demo note: the secret values."""
    token = re.compile(r"[^\s\"'`=:,;()<>\[\]]{8,}")
    fragments: set[str] = set()
    for rel in {p for p, _, _ in demo_facts.SECRETS}:
        text = (DEMO_VAULT / rel).read_text(encoding="utf-8")
        for before, after in zip(text.split("\n"), redact(text).text.split("\n"), strict=True):
            if before != after:
                fragments |= set(token.findall(before)) - set(token.findall(after))
    return fragments


def test_no_secret_value_anywhere_in_the_report(report: dict[str, Any]) -> None:
    fragments = secret_fragments()
    assert len(fragments) >= len(demo_facts.SECRETS)  # the check below has something to look for
    rendered = "\n".join([json.dumps(report, ensure_ascii=False), health.to_text(report, 1000),
                          health.to_markdown(report, 1000)])
    leaked = sorted(f for f in fragments if f in rendered)
    assert leaked == []


# ---- tags -------------------------------------------------------------------------------------------
def test_tags_used_once_and_look_alikes(report: dict[str, Any]) -> None:
    assert {i["tag"] for i in section(report, "tags_used_once")} == demo_facts.TAGS_USED_ONCE
    groups = {frozenset(i["tags"]) for i in section(report, "similar_tags")}
    assert groups == set(demo_facts.NEAR_IDENTICAL_TAGS)
    todos = next(i for i in section(report, "tags_used_once") if i["tag"] == "todos")
    assert "#todo " in todos["fix"]


# ---- coverage ------------------------------------------------------------------------------------------
def test_fresh_index_has_full_coverage(report: dict[str, Any]) -> None:
    summary = report["summary"]
    assert (summary["skipped"], summary["lexical_only"], summary["stale"]) == (0, 0, 0)


def test_coverage_stale_skipped_excluded_and_alias_links(demo_copy: Path, tmp_path: Path) -> None:
    index = open_index(demo_copy, tmp_path / "index")
    try:
        index.index()
        (demo_copy / "Inbox.md").write_text(
            (demo_copy / "Inbox.md").read_text(encoding="utf-8") + "\nSee [[Journal]] and [[Old Blog Draft]].\n"
            "Also [[Reciprocal Rank Fusion]] and [[Search Engine dev setup]].\n", encoding="utf-8")
        (demo_copy / "Binary.md").write_bytes(b"\x00\x01 not text")
        (demo_copy / "New idea.md").write_text("A note written after the last index run.\n", encoding="utf-8")
        index.index()
        (demo_copy / "Home.md").write_text("# Home\n\nRewritten since the index.\n", encoding="utf-8")
        (demo_copy / "Reading" / "Quotes.md").unlink()
        (demo_copy / "Later.md").write_text("Not indexed yet.\n", encoding="utf-8")
        result = health_pages.build_health(index, ["excluded_links", "skipped", "stale", "lexical_only", "unresolved_links"],
                                     details=True)
    finally:
        index.close()
    excluded = {(i["target"], i["file"], i["reason"]) for i in section(result, "excluded_links")}
    assert excluded == {("Journal", "Private/Journal.md", "excluded by .indexignore"),
                        ("Old Blog Draft", "Archive/Old/Old Blog Draft.md",
                         "excluded in Obsidian settings (Excluded files)")}
    assert {(i["path"], "binary" in i["reason"]) for i in section(result, "skipped")} == {("Binary.md", True)}
    stale = {i["path"]: i["message"] for i in section(result, "stale")}
    assert set(stale) == {"Home.md", "Reading/Quotes.md", "Later.md"}
    assert "changed" in stale["Home.md"].lower() and "gone" in stale["Reading/Quotes.md"].lower()
    assert section(result, "lexical_only") == []
    # Obsidian resolves by file name, not by alias or title: the fix writes the file name (or the path,
    # where the name is shared) in front.
    fixes = {i["target"]: (i["matches"][0], i["fix"]) for i in section(result, "unresolved_links") if i["matches"]}
    alias, fix = fixes["Reciprocal Rank Fusion"]
    assert (alias["path"], alias["match"]) == ("Projects/Search Engine/Ranking with RRF.md", "alias")
    assert '"Ranking with RRF|Reciprocal Rank Fusion"' in fix
    title, fix = fixes["Search Engine dev setup"]
    assert (title["path"], title["match"]) == ("Projects/Search Engine/Setup.md", "title")
    assert '"Projects/Search Engine/Setup|Search Engine dev setup"' in fix


def test_a_credential_in_a_file_name_is_never_in_the_report(demo_copy: Path, tmp_path: Path) -> None:
    """The index skips such a note under its redacted name; the walk of the disk must name it the same
    way, or the stale section lists the raw name as "not in the index yet"."""
    token = "ghp_" + "FILENAMEabcdefghijklmnopqrstuvwxyz0123"
    (demo_copy / "Reading" / f"key {token}.md").write_text("# x\n", encoding="utf-8")
    (demo_copy / "Private" / f"old {token}.md").write_text("# y\n", encoding="utf-8")  # excluded as well
    result = fresh_report(demo_copy, tmp_path / "index")
    assert token not in json.dumps(result)
    assert [i["path"] for i in section(result, "skipped")] == ["Reading/key [REDACTED:github].md"]
    assert section(result, "stale") == []


def test_a_note_of_properties_alone_is_still_a_stub(tmp_path: Path) -> None:
    # its properties are a chunk of their own (search finds it), but they are no text after the frontmatter
    vault = tmp_path / "vault"
    (vault / "References").mkdir(parents=True)
    card = "---\ndirector: \"[[Ridley Scott]]\"\ncast: [\"[[Harrison Ford]]\", \"[[Rutger Hauer]]\"]\n" + \
        "summary: A replicant hunter in a rainy Los Angeles questions what makes a person human.\n---\n"
    (vault / "References" / "Blade Runner.md").write_text(card, encoding="utf-8")
    (vault / "References" / "Alien.md").write_text(card + "Seen twice.\n", encoding="utf-8")
    index = open_index(vault, tmp_path / "index")
    try:
        index.index()
        result = health_pages.build_health(index, details=True)
        assert int(str(index.status()["chunks"])) == 3  # a chunk of properties each, and "Seen twice."
    finally:
        index.close()
    stubs = {i["path"]: i["message"] for i in section(result, "stub_notes")}
    assert stubs == {"References/Blade Runner.md": "Only properties (frontmatter), no text.",
                     "References/Alien.md": "Only 11 characters of text."}
    assert section(result, "empty_notes") == []


def test_a_template_is_a_form_not_a_note(tmp_path: Path) -> None:
    # kepano's vault: its 53 templates were 21 of 26 orphans, 30 of 45 notes nothing links to, 52 of 94 stubs
    # and all 13 tags used once; "Daily Note Template" was the link suggested for a daily note
    vault = tmp_path / "vault"
    for folder in ("Templates", "Categories", "References", "Daily"):
        (vault / folder).mkdir(parents=True)
    (vault / "Templates" / "Movie Template.md").write_text(
        "---\ncategories:\n  - \"[[Movies]]\"\ntags: [film]\ncreated: {{date}}\n---\n", encoding="utf-8")
    (vault / "Templates" / "Daily Note Template.md").write_text(
        "---\ntags: [daily]\n---\n## Notes\n\nWhat happened today, who I met, what I read.\n", encoding="utf-8")
    (vault / "Categories" / "Movies.md").write_text("![[Movies.base]]\n", encoding="utf-8")
    (vault / "References" / "Blade Runner.md").write_text(
        "---\ncategories: [\"[[Movies]]\"]\n---\nA replicant hunter questions what makes a person human.\n",
        encoding="utf-8")
    (vault / "Daily" / "2024-01-02.md").write_text(
        "## Notes\n\nWhat happened today: met Steph, read about replicants.\n", encoding="utf-8")
    result = fresh_report(vault, tmp_path / "index")
    everywhere = json.dumps({sid: section(result, sid) for sid in ("orphans", "no_inbound", "dead_ends", "clusters",
                                                                   "stub_notes", "empty_notes", "tags_used_once")})
    assert "Template" not in everywhere  # neither listed nor suggested
    assert paths(result, "orphans") == {"Daily/2024-01-02.md"}
    assert paths(result, "dead_ends") == {"Categories/Movies.md"}  # linked from Blade Runner, not from the template
    assert paths(result, "no_inbound") == {"References/Blade Runner.md"}
    assert paths(result, "stub_notes") == {"Categories/Movies.md", "References/Blade Runner.md", "Daily/2024-01-02.md"}


def test_without_a_model_or_notes(demo_copy: Path, tmp_path: Path) -> None:
    index = open_index(demo_copy, tmp_path / "lexical", load_model=False)
    try:
        assert index.health()["summary"]["notes"] == 0  # never indexed: an empty report, no error
        index.index()
        result = health_pages.build_health(index, details=True)
        chunks = int(str(index.status()["chunks"]))
    finally:
        index.close()
    summary = result["summary"]
    assert summary["lexical_only"] == chunks > 0
    assert summary["near_duplicates"] == 0  # needs vectors
    assert {i["path"] for i in section(result, "orphans")} == demo_facts.ORPHANS  # the graph needs none
    assert {(i["path"], i["target"], i["line"]) for i in section(result, "unresolved_links")} == set(
        demo_facts.BROKEN_LINKS)


# ---- output -------------------------------------------------------------------------------------------
def test_cli_markdown_and_json(demo_index: VaultIndex, capsys: pytest.CaptureFixture[str]) -> None:
    where = ["--vault", str(DEMO_VAULT), "--index", str(demo_index.settings.index_dir)]
    assert main(["health", *where, "--md"]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("---\n") and "# Vault health" in markdown
    assert "[[" not in markdown and "](" not in markdown  # saved as a note, it must add no link
    assert "`Untitled.md`" in markdown
    assert main(["health", *where, "--json", "--section", "secrets"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["summary"]["secrets"] == len(demo_facts.SECRETS)
    assert {i["kind"] for i in parsed["sections"][0]["items"]} == demo_facts.SECRET_KINDS  # details on
    assert main(["health", *where]) == 0
    text = capsys.readouterr().out
    assert "ERROR: Links to notes that do not exist (4)" in text


def test_markdown_report_says_when_in_local_time(report: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # 2023-11-14 22:13:20 UTC is 2023-11-15 03:43:20 at +05:30 (a POSIX TZ: no tz database needed).
    monkeypatch.setenv("TZ", "IST-05:30")
    time.tzset()
    try:
        markdown = health.to_markdown({**report, "generated_at": 1_700_000_000})
    finally:
        monkeypatch.undo()
        time.tzset()
    assert "\ngenerated: 2023-11-15T03:43:20+05:30\n" in markdown


# ---- pure rules -------------------------------------------------------------------------------------------
def test_tag_key_merges_case_plural_and_separators() -> None:
    assert len({health.tag_key(t) for t in ("todo", "Todo", "todos", "to-do", "to_do")}) == 1
    assert health.tag_key("projects/search") == health.tag_key("Project/Search")
    assert health.tag_key("class") != health.tag_key("clas")  # "ss" is not a plural


def test_heading_anchor_rules() -> None:
    note = health.NoteRow(1, "a.md", "A", (), ((1, "Setup: Linux & macOS", 3), (2, "Why RRF?", 9)), ("Blk-1",),
                          (), False, 0, 0)
    assert health.anchor_problem("setup linux macos", "link", note) is None
    assert health.anchor_problem("Why RRF", "link", note) is None
    assert health.anchor_problem("Setup: Linux & macOS#Why RRF?", "link", note) is None  # nested: last part
    assert health.anchor_problem("Why RRF", "markdown", note) is None
    assert health.anchor_problem("^blk-1", "link", note) is None
    assert health.anchor_problem("^nope", "link", note) == "has no block ^nope"
    assert health.anchor_problem("Missing", "link", note) == 'has no heading "Missing"'


def test_attachment_extension() -> None:
    assert health.attachment_extension("diagram.png") == "png"
    assert health.attachment_extension("Note.md") is None
    assert health.attachment_extension("mailbox.org") == "org"
    assert health.attachment_extension("Meeting 2024.01.05") is None  # digits only: part of the name
    assert health.attachment_extension("Dr. Smith") is None


def test_components_and_pairs() -> None:
    assert health.components([1, 2, 3, 4, 5], [(1, 2), (2, 3), (4, 5)]) == [[1, 2, 3], [4, 5]]
    m = np.array([[1, 0], [0.999, 0.04], [0, 1]], dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    left, right, cosines = health.similar_pairs(m, 0.95)
    assert (left.tolist(), right.tolist()) == ([0], [1]) and cosines[0] > 0.99


def test_text_overlap_ignores_template_text_but_keeps_copies() -> None:
    template = "This note in GitHub edit it download this vault and copy this note please " * 3
    own = " ".join(f"word{i}" for i in range(40))
    texts = [f"{template} plugin number {n} does one small thing well" for n in range(20)]
    texts += [own, own, own.replace("word7 ", "changed "), template + " " + own]
    left = np.array([0, 20, 20, 20, 0], dtype=np.int64)
    right = np.array([1, 21, 22, 23, 23], dtype=np.int64)
    overlap = health.text_overlap(texts, left, right)
    assert overlap[0] == 0.0  # two generated notes: all they share is the template
    assert overlap[1] == 1.0  # exact copies (they count once towards "template")
    assert 0.8 < overlap[2] < 1.0  # one word edited: 3 of 38 sequences differ
    assert overlap[3] > 0.9  # the template around a copy does not hide it (2 sequences span the seam)
    assert overlap[4] == 0.0
    assert health.text_overlap(["", "a b"], np.array([0]), np.array([1])).tolist() == [0.0]


def test_text_overlap_reads_scripts_without_spaces_a_character_a_word() -> None:
    """A Chinese or Thai paragraph has no spaces: as one word it made no three-word sequence, so two copies
    of a Chinese note were never near-duplicates. Korean spaces its words and keeps them whole."""
    zh = "如何在不同设备之间同步笔记。你可以使用官方的同步服务，也可以把笔记库放在云盘里，同步之前请先备份所有的笔记。"
    th = "วิธีซิงค์โน้ตระหว่างอุปกรณ์ต่างๆ คุณสามารถใช้บริการซิงค์อย่างเป็นทางการ หรือเก็บคลังโน้ตไว้ในไดรฟ์คลาวด์"
    texts = [zh, zh.replace("官方的", "官方"), th, th.replace("อย่างเป็นทางการ", "ทางการ"), "標籤可以幫助你整理筆記。" * 3]
    overlap = health.text_overlap(texts, np.array([0, 2, 0]), np.array([1, 3, 4]))
    assert overlap[0] > 0.8 and overlap[1] > 0.8 and overlap[2] == 0.0
    assert health._words("노트를 동기화 하기 abc漢字") == ["노트를", "동기화", "하기", "abc", "漢", "字"]


def test_name_matcher_finds_typos() -> None:
    matcher = health.NameMatcher(["chunking strategy", "ranking with rrf", "home"])
    assert matcher.close("Chunking Stratgy", 3, 0.75)[0][0] == "chunking strategy"
    assert matcher.close("zzz", 3, 0.75) == []


def test_best_rows() -> None:
    score = np.array([0.1, -np.inf, 0.9, 0.0, 0.5], dtype=np.float32)
    assert health.best_rows(score, 3) == [2, 4, 0]
    assert health.best_rows(score[:0], 3) == []


def test_each_kind_of_skipped_file_gets_its_own_fix() -> None:
    """Before, a name holding a credential and a hard-linked note were told to "check the file opens as text
    in Obsidian", which fixes neither."""
    reasons = {
        "the file or folder name contains a credential: rename it to index it": "Rename it without",
        "hard-linked (2 names for one file): not indexed unless SIDECAR_ALLOW_HARDLINKS=1": "Copy the note",
        "cannot read this folder (Permission denied): its notes are not indexed": "permission on the folder",
        "cannot read: Permission denied": "permission on the file",
        "a link to a folder: the index never follows one (it could lead anywhere); move the folder in": "Move what",
        "too large: 3,000,000 bytes (limit 2,000,000, --max-file-bytes)": "Split the note",
    }
    for reason, fix in reasons.items():
        assert fix in health._skip_fix(reason), reason

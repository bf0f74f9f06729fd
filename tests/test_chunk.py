"""Tests for sidecar.chunk: fixtures are inline markdown strings run through parse_note."""

from __future__ import annotations

import random
import re
import time
from collections import Counter

import pytest

from sidecar.ingest.chunk import chunk_note, content_hash, note_context, properties_text
from sidecar.ingest.parse import find_fences, parse_note
from sidecar.notes import Chunk

FENCE_LINE = re.compile(r"[ \t>]*(?:`{3,}|~{3,})")
BARE_MARKER = re.compile(r"[ \t>]*(?:`{3,}|~{3,})[ \t]*")


def chunks(text: str, path: str = "n.md", **kwargs: int) -> list[Chunk]:
    return chunk_note(parse_note(path, text), **kwargs)


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]) for _ in range(n))


def paragraph(tag: str, n_words: int = 12) -> str:
    return f"{tag} " + " ".join(f"word{i}" for i in range(n_words))


# --- invariant checks, shared by all tests -------------------------------------------


def is_synthetic(line: str, file_lines: set[str]) -> bool:
    """Lines the chunker may add: a re-opened fence (a copy of a real opening
    line), a closing marker, or a repeated table header/separator row."""
    if FENCE_LINE.match(line):
        return line in file_lines or BARE_MARKER.fullmatch(line) is not None
    return "|" in line and line in file_lines


def _same_line(line: str, original: str, first: bool, last: bool) -> bool:
    if line == original:
        return True
    if not line:
        return False
    if first and last:  # a piece of a hard-split line, maybe re-fenced
        return line in original
    # the end (start) of a hard-split line folded into the next (previous) chunk
    return (first and original.endswith(line)) or (last and original.startswith(line))


def assert_from_source(chunk: Chunk, file_lines: list[str]) -> None:
    """The chunk text is lines start_line..end_line of the file, in order, plus
    only synthetic lines (see is_synthetic)."""
    original = file_lines[chunk.start_line - 1 : chunk.end_line]
    assert original, chunk
    known = set(file_lines)
    positions = {0}  # how many original lines the text lines so far can account for
    for line in chunk.text.split("\n"):
        matched = {i + 1 for i in positions if i < len(original)}
        matched = {i for i in matched if _same_line(line, original[i - 1], i == 1, i == len(original))}
        positions = matched | (positions if is_synthetic(line, known) else set())
        assert positions, f"{line!r} is not from lines {chunk.start_line}..{chunk.end_line}"
    assert len(original) in positions, f"lines {chunk.start_line}..{chunk.end_line} not all in chunk"


def assert_valid(text: str, result: list[Chunk], max_chars: int = 1600) -> None:
    file_lines = text.split("\n")
    note = parse_note("n.md", text)
    body_start = note.body_start_line
    leading = [c for c in result if c.start_line < body_start]  # the properties' own chunks: words, not lines
    assert result[:len(leading)] == leading
    for n, chunk in enumerate(leading):
        assert (chunk.ordinal, chunk.heading_path, chunk.start_line) == (n, (), 2)
        assert len(chunk.text) <= max_chars
    if leading:
        assert squeeze("".join(c.text for c in leading)) == squeeze(properties_text(note.frontmatter).replace("\n", ""))
    result = result[len(leading):]
    for n, chunk in enumerate(result, start=len(leading)):
        assert chunk.ordinal == n
        assert len(chunk.text) <= max_chars, (n, len(chunk.text))
        assert body_start <= chunk.start_line <= chunk.end_line <= len(file_lines)
        assert chunk.text.strip(), "a chunk without content"
        assert_from_source(chunk, file_lines)
    starts = [c.start_line for c in result]
    assert starts == sorted(starts)
    # no content lost: nothing of the body is missing from the chunks (extra
    # synthetic lines only add characters) ...
    assert not Counter(squeeze(note_body(text))) - Counter(squeeze(all_text(result)))
    # ... every non-blank body line is in a chunk's range, and a hard-split line
    # is exactly the concatenation of its pieces
    for number, line in enumerate(file_lines[body_start - 1 :], start=body_start):
        if not line.strip():
            continue
        covering = [c for c in result if c.start_line <= number <= c.end_line]
        assert covering, f"line {number} is in no chunk: {line[:60]!r}"
        if len(covering) > 1 and all(c.start_line == c.end_line for c in covering):
            assert squeeze("".join(unwrap(c.text) for c in covering)) == squeeze(line), number


def note_body(text: str) -> str:
    return parse_note("n.md", text).body


def all_text(result: list[Chunk]) -> str:
    return "".join(c.text for c in result)


def unwrap(text: str) -> str:
    """A one-line piece without the fence lines that re-open and close it."""
    lines = text.split("\n")
    if len(lines) >= 3 and FENCE_LINE.match(lines[0]) and BARE_MARKER.fullmatch(lines[-1]):
        return "\n".join(lines[1:-1])
    return text


def squeeze(text: str) -> str:
    return "".join(text.split())


# --- sections and heading paths ---------------------------------------------------------


def test_splits_at_h1_and_h2_even_when_small() -> None:
    text = "\n".join(
        [
            "---",  # 1
            "title: T",  # 2
            "---",  # 3
            paragraph("Preamble"),  # 4
            "",  # 5
            "# Setup",  # 6
            paragraph("Setup body"),  # 7
            "## Linux",  # 8
            paragraph("Linux body"),  # 9
            "",  # 10
            "### Debian",  # 11: H3 does not cut a section that fits
            paragraph("Debian body"),  # 12
            "# Usage",  # 13
            paragraph("Usage body"),  # 14
        ]
    )
    result = chunks(text)
    assert [(c.heading_path, c.start_line, c.end_line) for c in result] == [
        ((), 4, 4),
        (("Setup",), 6, 7),
        (("Setup", "Linux"), 8, 12),
        (("Usage",), 13, 14),
    ]
    assert result[1].text == "# Setup\n" + paragraph("Setup body")
    assert result[2].text.startswith("## Linux\n")
    assert "### Debian" in result[2].text
    assert_valid(text, result)


def test_long_section_splits_at_h3_then_h4() -> None:
    filler = "\n\n".join(paragraph(f"p{i}", 20) for i in range(4))  # about 560 chars
    text = "\n".join(
        [
            "## Big",
            "### A",
            filler,
            "### B",
            "#### B1",
            filler,
            "#### B2",
            filler,
        ]
    )
    result = chunks(text, max_chars=800)
    assert [c.heading_path for c in result] == [
        ("Big", "A"),
        ("Big", "B", "B1"),
        ("Big", "B", "B2"),
    ]
    assert result[0].text.startswith("## Big\n### A\n")
    assert result[1].text.startswith("### B\n#### B1\n")
    assert_valid(text, result, 800)


def test_heading_path_follows_levels_back_up() -> None:
    filler = paragraph("text", 10)
    text = f"# A\n{filler}\n### Deep\n{filler}\n## B\n{filler}\n# C\n{filler}\n## D\n{filler}"
    result = chunks(text, max_chars=100)
    assert [c.heading_path for c in result] == [("A",), ("A", "Deep"), ("A", "B"), ("C",), ("C", "D")]


def test_long_paragraphs_split_at_blank_lines() -> None:
    paragraphs = ["\n".join(paragraph(f"para{i} line{j}", 8) for j in range(3)) for i in range(30)]
    text = "# Notes\n" + "\n\n".join(paragraphs)
    result = chunks(text, max_chars=500)
    assert len(result) > 3
    assert_valid(text, result, 500)
    file_lines = text.split("\n")
    for chunk in result:  # every cut falls on a paragraph boundary
        after = file_lines[chunk.end_line] if chunk.end_line < len(file_lines) else ""
        assert after == ""
        assert chunk.text.split("\n\n")[-1] in paragraphs
    assert all(c.heading_path == ("Notes",) for c in result)


def test_long_paragraph_splits_at_line_ends() -> None:
    lines = [paragraph(f"line{i}", 8) for i in range(200)]
    text = "\n".join(lines)
    result = chunks(text, max_chars=300)
    assert_valid(text, result, 300)
    for chunk in result:
        assert all(line in lines for line in chunk.text.split("\n"))
    assert sum(c.end_line - c.start_line + 1 for c in result) == 200


def test_one_megabyte_line_is_hard_split() -> None:
    line = "x" * 1_000_000
    started = time.process_time()  # CPU time: other processes' load does not count
    result = chunks(line)
    assert time.process_time() - started < 10.0
    assert len(result) == 625
    assert all(len(c.text) == 1600 and c.start_line == c.end_line == 1 for c in result)
    assert "".join(c.text for c in result) == line


def test_hard_split_prefers_spaces_and_keeps_every_character() -> None:
    line = " ".join(f"w{i:05d}" for i in range(5000))
    result = chunks(line, max_chars=100)
    assert "".join(c.text for c in result) == line
    assert all(len(c.text) <= 100 for c in result)
    assert all(c.text.endswith(" ") for c in result[:-1])


def test_tiny_fragments_of_one_line_rejoin_without_a_separator() -> None:
    line = " ".join(f"w{i:03d}" for i in range(400))
    result = chunks(line, max_chars=40, min_chars=30)
    assert "".join(c.text for c in result) == line
    assert all(len(c.text) <= 40 for c in result)


def test_tail_of_a_hard_split_line_moves_to_the_next_chunk() -> None:
    text = "q" * 1610 + "\n" + paragraph("next")
    result = chunks(text)
    assert [(c.start_line, c.end_line) for c in result] == [(1, 1), (1, 2)]
    assert result[0].text == "q" * 1600
    assert result[1].text == "q" * 10 + "\n" + paragraph("next")


def test_huge_line_between_paragraphs() -> None:
    text = "# H\n" + paragraph("before") + "\n" + "y" * 5000 + "\n" + paragraph("after")
    result = chunks(text, max_chars=1000)
    assert_valid(text, result, 1000)
    assert "".join(c.text for c in result if c.start_line == c.end_line == 3).count("y") >= 4000


# --- code fences ----------------------------------------------------------------------------


def test_fence_that_fits_is_never_cut() -> None:
    code = "\n".join(f"print({i})  # [[not a link]]" for i in range(20))
    fence = f"```python\n{code}\n```"
    text = "# Code\n" + paragraph("intro", 40) + "\n" + fence + "\n" + paragraph("outro", 40)
    result = chunks(text, max_chars=700)
    assert len(result) > 1
    assert_valid(text, result, 700)
    holding = [c for c in result if "print(0)" in c.text]
    assert len(holding) == 1
    assert fence in holding[0].text
    for chunk in result:
        assert all(f.closed for f in find_fences(chunk.text))


def test_headings_inside_fences_do_not_cut() -> None:
    text = "# Real\n```bash\n# comment, not a heading\necho hi\n```\n" + paragraph("more")
    result = chunks(text)
    assert len(result) == 1
    assert result[0].heading_path == ("Real",)


def test_oversized_fence_is_split_and_refenced() -> None:
    code_lines = [f"value_{i} = compute({i})" for i in range(300)]
    text = "# Big code\n```python\n" + "\n".join(code_lines) + "\n```\nafter the fence"
    result = chunks(text, max_chars=500)
    assert_valid(text, result, 500)
    pieces = [c for c in result if "value_" in c.text]
    assert len(pieces) > 5
    for piece in pieces:
        body = piece.text.split("\n")
        start = body.index("```python")
        assert body[-1] == "```" or "after the fence" in piece.text
        assert all(f.closed for f in find_fences(piece.text[piece.text.index("```python") :]))
        assert start in (0, 1)
    seen = [line for c in pieces for line in c.text.split("\n") if line.startswith("value_")]
    assert seen == code_lines


def test_unclosed_oversized_fence_pieces_are_closed() -> None:
    text = "```\n" + "\n".join(f"line {i}" for i in range(400))
    result = chunks(text, max_chars=300)
    assert_valid(text, result, 300)
    assert all(c.text.startswith("```\n") and c.text.endswith("\n```") for c in result)
    assert result[0].start_line == 1
    assert result[-1].end_line == 401


def test_quoted_fence_keeps_its_prefix_when_split() -> None:
    text = "> ```js\n" + "\n".join(f"> call({i});" for i in range(200)) + "\n> ```"
    result = chunks(text, max_chars=400)
    assert_valid(text, result, 400)
    assert len(result) > 3
    assert all(c.text.startswith("> ```js\n") and c.text.endswith("\n> ```") for c in result)


def test_code_line_longer_than_the_limit_inside_a_fence() -> None:
    text = "```\n" + "z" * 3000 + "\n```"
    result = chunks(text, max_chars=500)
    assert_valid(text, result, 500)
    assert all(c.text.startswith("```\n") and c.text.endswith("\n```") for c in result)
    assert "".join(c.text[4:-4] for c in result) == "z" * 3000


def test_fence_with_a_huge_opener_still_respects_the_limit() -> None:
    text = "```" + "i" * 5000 + "\ncode\n```"
    result = chunks(text, max_chars=400)
    assert_valid(text, result, 400)


# --- tables ---------------------------------------------------------------------------------


def test_split_table_repeats_header_and_separator() -> None:
    header, separator = "| Name | Value |", "| --- | ---: |"
    rows = [f"| row{i} | {i * 7} |" for i in range(200)]
    text = "## Data\n" + "\n".join([header, separator, *rows]) + "\n\nafter table"
    result = chunks(text, max_chars=400)
    assert_valid(text, result, 400)
    with_rows = [c for c in result if "| row" in c.text]
    assert len(with_rows) > 3
    assert with_rows[0].text.startswith(f"## Data\n{header}\n{separator}\n")
    for chunk in with_rows[1:]:
        assert chunk.text.startswith(f"{header}\n{separator}\n| row")
        assert chunk.start_line > 3  # the repeated rows are not in the line range
    seen = [line for c in with_rows for line in c.text.split("\n") if line.startswith("| row")]
    assert seen == rows


def test_table_is_not_cut_between_header_and_separator() -> None:
    filler = "\n".join(paragraph(f"l{i}", 5) for i in range(6))
    text = filler + "\n| a | b |\n|---|---|\n| 1 | 2 |"
    for limit in range(60, 260, 7):
        for chunk in chunks(text, max_chars=limit, min_chars=0):
            lines = chunk.text.split("\n")
            assert lines[-1] != "| a | b |", limit


# --- tiny sections ----------------------------------------------------------------------------


def test_tiny_sections_merge_into_the_next_chunk() -> None:
    text = "# Project\n## Goals\n" + paragraph("Goals text", 15) + "\n## Empty\n# Last\n" + paragraph("Last")
    result = chunks(text)
    assert [(c.heading_path, c.start_line, c.end_line) for c in result] == [
        (("Project", "Goals"), 1, 3),
        (("Last",), 4, 6),
    ]
    assert result[0].text.startswith("# Project\n## Goals\n")
    assert result[1].text.startswith("## Empty\n# Last\n")
    assert_valid(text, result)


def test_tiny_last_section_merges_backward() -> None:
    text = "# Main\n" + paragraph("main text", 15) + "\n\n# End\nok"
    result = chunks(text)
    assert len(result) == 1
    assert result[0].heading_path == ("Main",)
    assert result[0].text.endswith("\n\n# End\nok")
    assert (result[0].start_line, result[0].end_line) == (1, 5)


def test_tiny_section_without_room_is_kept_not_dropped() -> None:
    full = "a" * 45
    text = f"# A\n{full}\n# T\n# B\n{full}"
    result = chunks(text, max_chars=50)
    assert [c.text for c in result] == [f"# A\n{full}", "# T", f"# B\n{full}"]


def test_tiny_note_is_one_chunk() -> None:
    result = chunks("hi")
    assert [(c.text, c.start_line, c.end_line, c.heading_path) for c in result] == [("hi", 1, 1, ())]


def test_min_chars_zero_keeps_every_section() -> None:
    result = chunks("# A\n# B\n# C", min_chars=0)
    assert [c.text for c in result] == ["# A", "# B", "# C"]


# --- empty bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "   \n\t\n", "---\n---\n", "---\ncssclasses: [wide]\npublish: true\n---"])
def test_no_content_no_chunks(text: str) -> None:
    assert chunks(text) == []


@pytest.mark.parametrize(("text", "words"), [("---\ntitle: Only\n---\n", "title: Only"), ("---\ntags: [a]\n---", "tags: a")])
def test_properties_are_content_when_there_is_nothing_else(text: str, words: str) -> None:
    assert [(c.text, c.start_line) for c in chunks(text)] == [(words, 2)]


def test_blank_lines_are_trimmed_from_the_edges() -> None:
    text = "---\na: 1\n---\n\n\n# H\ncontent that is long enough here\n\n\n"
    result = chunks(text)
    assert [(c.start_line, c.end_line, c.text) for c in result] == [(6, 7, "# H\ncontent that is long enough here")]


# --- context and identity -------------------------------------------------------------------


def test_context_combines_title_aliases_and_tags() -> None:
    text = "---\ntitle: Home Lab\naliases: [Homelab, Lab]\ntags: [infra, net]\n---\nbody #extra"
    result = chunks(text)
    assert result[0].context == "Home Lab | Homelab, Lab | infra net extra"
    assert note_context(parse_note("Plain.md", "x")) == "Plain"
    assert note_context(parse_note("n.md", "#only")) == "n | only"


def test_content_hash_is_stable_and_content_addressed() -> None:
    text = "# A\n" + paragraph("alpha", 15) + "\n# B\n" + paragraph("beta", 15)
    first = chunks(text)
    again = chunks(text)
    assert [c.content_hash for c in first] == [c.content_hash for c in again]
    assert all(re.fullmatch(r"[0-9a-f]{32}", c.content_hash) for c in first)
    assert first[0].content_hash != first[1].content_hash
    # moving a chunk down (new blank lines above) keeps its identity
    moved = chunks("\n\n\n" + text)
    assert [c.content_hash for c in moved] == [c.content_hash for c in first]
    assert moved[0].start_line == first[0].start_line + 3


def test_content_hash_changes_with_text_path_or_context() -> None:
    base = chunks("# A\n" + paragraph("alpha", 15))[0]
    edited = chunks("# A\n" + paragraph("alphA", 15))[0]
    retagged = chunks("# A\n" + paragraph("alpha", 15) + " #new")[0]
    renamed = chunks("# A\n" + paragraph("alpha", 15), path="other.md")[0]
    assert len({base.content_hash, edited.content_hash, retagged.content_hash, renamed.content_hash}) == 4
    assert content_hash(("A",), "x", "c") != content_hash(("A", ""), "x", "c")
    assert content_hash(("a", "b"), "x", "c") != content_hash(("a\x1fb",), "x", "c")
    assert content_hash((), "ab", "c") != content_hash((), "a", "bc")
    assert content_hash((), "\udc80", "c") == content_hash((), "\udc80", "c")


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        chunks("text", max_chars=0)


# --- hostile input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["[" * 1_000_000, "[[a" * 333_334, "\n".join("  " * i + "- [[x]]" for i in range(3000)), "`" * 1_000_000],
    ids=["open brackets", "open wikilinks", "nested lists", "backticks"],
)
def test_hostile_bodies_chunk_fast_and_completely(text: str) -> None:
    started = time.process_time()  # CPU time: other processes' load does not count
    result = chunks(text)
    assert time.process_time() - started < 10.0
    assert all(len(c.text) <= 1600 for c in result)
    assert "".join("".join(c.text for c in result).split()) == "".join(text.split())


def test_many_tiny_lines_and_blank_runs() -> None:
    text = "\n".join("x" if i % 3 else "" for i in range(20000))
    result = chunks(text)
    assert_valid(text, result)


@pytest.mark.slow
def test_twenty_megabyte_note() -> None:
    block = "# H\n" + paragraph("text", 30) + "\n```\ncode\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    text = block * (20_000_000 // len(block))
    note = parse_note("big.md", text)
    started = time.process_time()  # CPU time: other processes' load does not count
    result = chunk_note(note)
    assert time.process_time() - started < 120
    assert len(result) > 10_000
    assert all(len(c.text) <= 1600 for c in result)


# --- randomised structure ---------------------------------------------------------------------


def random_note(rng: random.Random) -> str:
    parts: list[str] = []
    if rng.random() < 0.3:
        parts.append("---\ntitle: Random\ntags: [r]\n---")
    for _ in range(rng.randint(1, 40)):
        kind = rng.choice(["heading", "para", "para", "fence", "table", "long", "blank", "list"])
        if kind == "heading":
            parts.append("#" * rng.randint(1, 6) + " " + words(rng, rng.randint(1, 4)))
        elif kind == "para":
            parts.append("\n".join(words(rng, rng.randint(1, 30)) for _ in range(rng.randint(1, 6))))
        elif kind == "fence":
            body = "\n".join(f"x{i} = {words(rng, rng.randint(0, 12))}" for i in range(rng.randint(0, 80)))
            parts.append(f"```py\n{body}\n```" if body else "```\n```")
        elif kind == "table":
            rows = "\n".join(f"| {words(rng, 2)} | {i} |" for i in range(rng.randint(1, 60)))
            parts.append(f"| h1 | h2 |\n|----|----|\n{rows}")
        elif kind == "long":
            parts.append(words(rng, rng.randint(50, 900)) if rng.random() < 0.5 else "q" * rng.randint(100, 6000))
        elif kind == "list":
            parts.append("\n".join("  " * rng.randint(0, 6) + "- " + words(rng, 5) for _ in range(rng.randint(1, 20))))
        else:
            parts.append("")
    if rng.random() < 0.2:
        parts.append("```\n" + "\n".join(words(rng, 6) for _ in range(rng.randint(1, 100))))
    return "\n".join(parts) + rng.choice(["", "\n", "\n\n"])


def token_soup(rng: random.Random) -> str:
    tokens = [
        "```",
        "~~~",
        "`",
        "``",
        "%%",
        "<!--",
        "-->",
        "[[",
        "]]",
        "[",
        "](",
        ")",
        "#",
        "# ",
        "## ",
        "^id",
        "|",
        "|---|",
        "> ",
        "\t",
        "\n",
        "\n\n",
        " ",
        "x",
        "---",
        "...",
        "![",
        "\\",
        "\x00",
        "word ",
    ]
    return "".join(rng.choice(tokens) for _ in range(rng.randint(1, 600)))


@pytest.mark.parametrize("seed", range(60))
def test_token_soup_never_breaks_the_invariants(seed: int) -> None:
    rng = random.Random(seed)
    text = token_soup(rng)
    max_chars = rng.choice([20, 60, 200, 1600])
    result = chunk_note(parse_note("s.md", text), max_chars=max_chars, min_chars=rng.choice([0, 30]))
    assert_valid(text, result, max_chars)


@pytest.mark.parametrize("seed", range(60))
def test_random_notes_keep_all_invariants(seed: int) -> None:
    rng = random.Random(seed)
    text = random_note(rng)
    max_chars = rng.choice([60, 200, 800, 1600])
    min_chars = rng.choice([0, 30])
    note = parse_note("r.md", text)
    result = chunk_note(note, max_chars=max_chars, min_chars=min_chars)
    assert_valid(text, result, max_chars)
    headings = {h.text for h in note.headings}
    unclosed = [f for f in find_fences(note.body) if not f.closed]
    tail_start = note.body_start_line + unclosed[0].first if unclosed else None
    for chunk in result:
        assert set(chunk.heading_path) <= headings
        if tail_start is None or chunk.end_line < tail_start:
            assert all(f.closed for f in find_fences(chunk.text)), chunk.text


# --- properties ------------------------------------------------------------------


CARD = """---
categories:
  - "[[Movies]]"
cover: https://example.com/poster.jpg
director:
  - "[[Ridley Scott|Scott]]"
cast: ["[[Harrison Ford]]", "[[Rutger Hauer]]"]
rating: 7
seen: true
tags: [film]
cssclasses: [wide]
---
"""


def test_a_note_of_properties_alone_is_one_chunk_of_their_words() -> None:
    # kepano's vault: 42 of 103 notes are properties alone, and no search found them, not even by title
    result = chunks(CARD, "References/Blade Runner.md")
    assert [(c.ordinal, c.heading_path, c.start_line, c.end_line) for c in result] == [(0, (), 2, 11)]
    assert result[0].text == ("categories: Movies\ndirector: Scott (Ridley Scott)\ncast: Harrison Ford, Rutger Hauer\n"
                              "rating: 7\ntags: film")  # no body carries the context: the tags are its words
    assert result[0].context == "Blade Runner | film"


def test_properties_come_first_while_they_say_more_than_the_body() -> None:
    short = chunks(CARD + "![[Movies.base]]\n")
    assert [c.text.split("\n")[0] for c in short] == ["categories: Movies", "![[Movies.base]]"]
    assert [c.ordinal for c in short] == [0, 1]
    long_body = CARD + "A review of the film, its pacing, its score and what it says about memory. " * 2
    assert [c.start_line for c in chunks(long_body)] == [13]  # the body speaks for the note


def test_a_note_with_a_body_carries_its_short_property_values_in_its_first_context() -> None:
    # kepano's vault: "Forster" found nothing, The Machine Stops (`author: [[E. M. Forster]]`) had a body
    text = ("---\nauthor: \"[[E. M. Forster]]\"\ngenre: [Sci-fi]\nyear: 1909\nurl: https://example.com\n"
            "description: A short story about a world where people live underground and the Machine serves them.\n"
            "tags: [books]\n---\n## Quotes\n\n" + "People never touched one another, and the Machine stopped. " * 3 +
            "\n\n## Notes\n\n" + "Read it twice; it is eerie how well it describes video calls. " * 3 + "\n")
    first, second = chunks(text, "References/The Machine Stops.md", max_chars=200)
    assert first.context == "The Machine Stops | books | E. M. Forster, Sci-fi, 1909"  # no URL, no sentence
    assert second.context == "The Machine Stops | books"
    assert chunks(text.replace("author:", "created: {{date}}\nauthor:"), "Templates/Book.md")[0].context == "Book | books"


def test_a_template_is_named_by_its_fields_not_their_values() -> None:
    # a form to fill in: "Restaurant Template" came first for "restaurants in Kyoto" by its values; with no
    # chunk at all, "Book Template" found the Author Template
    form = chunks("---\ntype: \"[[Restaurants]]\"\nservings:\ncreated: {{date}}\n---\n", "Templates/Recipe.md")
    assert [(c.text, c.start_line, c.context) for c in form] == [("fields: type, servings, created", 2, "Recipe")]
    assert [c.text for c in chunks("---\ntype: recipe\n---\n", "Templates/Book Template.md")] == ["fields: type"]
    assert chunks("---\ntype: recipe\n---\n<% tp.file.title %>\n", "Templates/Recipe.md")[0].start_line == 4


def test_a_bookmark_of_title_aliases_and_a_url_is_found_by_them() -> None:
    # no body carries the context (title, aliases, tags), so they are the properties chunk's words
    text = "---\ntitle: Attention Is All You Need\naliases: [Transformer paper]\ntags: [paper]\nurl: https://arxiv.org\n---\n"
    assert [c.text for c in chunks(text, "Papers/1706.03762.md")] == [
        "title: Attention Is All You Need\naliases: Transformer paper\ntags: paper"]


def test_long_properties_are_packed_into_as_many_chunks_as_they_need() -> None:
    # 200 properties, or one 800-word summary: what passed the first chunk's size was lost
    text = "---\n" + "".join(f"prop{i}: value{i}\n" for i in range(200)) + "summary: " + "word " * 800 + "END\n---\nx\n"
    result = chunks(text, max_chars=200)
    assert len(result) > 2 and all(len(c.text) <= 200 and c.start_line == 2 for c in result[:-1])
    assert "prop199: value199" in "\n".join(c.text for c in result) and result[-2].text.endswith("END")
    assert (result[-1].text, result[-1].start_line) == ("x", 204)


@pytest.mark.parametrize(
    ("frontmatter", "expected"),
    [
        ({"title": "T", "aliases": ["a"], "tags": ["t"], "publish": True, "permalink": "x/y"}, ""),
        ({"cast": ["[[Rutger Hauer|Roy Batty actor]]", "[[Sean Young|sean young]]"]},
         "cast: Roy Batty actor (Rutger Hauer), sean young"),
        ({"url": "https://example.com", "site": "www.example.com", "flag": False, "empty": None}, ""),
        ({"author": "[[Octavia Butler]]", "year": 1993}, "author: Octavia Butler\nyear: 1993"),
        ({"place": {"city": "Kyoto", "lat": 35.0}}, "place: city Kyoto, lat 35.0"),
        ({"deep": [[["too deep"]]]}, ""),
        ({"description": "How sync handles conflicts"}, "description: How sync handles conflicts"),
        ({"created": "{{date}}", "due": "<% tp.date.now() %>", "type": "Restaurants"}, "type: Restaurants"),
    ],
)
def test_properties_text(frontmatter: dict[str, object], expected: str) -> None:
    assert properties_text(frontmatter) == expected

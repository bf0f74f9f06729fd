"""Sections of a note (read_note, replace_section, MCP read_note) come from the parser's headings:
one heading parser, so a `# comment` inside a code fence or front matter never ends a section."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.errors import InvalidParams
from sidecar.ingest.parse import parse_note
from sidecar.retrieve.note_reads import find_section, heading_paths
from tests.conftest import open_index, vault_of

NOTE = """---
title: Setup notes
# a YAML comment, not a heading
---
# Setup

Install it:

```bash
# a shell comment, not a heading
pip install vault-sidecar
```

~~~
## neither is this
~~~

Then run it.

# Next

Elsewhere.
"""


def test_a_comment_in_a_code_fence_does_not_end_a_section() -> None:
    found = find_section("Setup.md", NOTE, "Setup")
    assert found is not None
    heading, first, last = found
    lines = NOTE.split("\n")
    assert heading == "Setup" and lines[first - 1] == "# Setup"
    assert lines[last] == "# Next"  # the section runs to the next real heading, past both fences
    assert "Then run it." in lines[first - 1:last]


def test_sections_are_the_parsers_headings() -> None:
    """The one heading parser: heading_paths lists exactly parse_note's headings, nothing found by a regex."""
    parsed = [(h.text, h.level, h.line) for h in parse_note("Setup.md", NOTE).headings]
    assert [(trail[-1], level, line) for trail, level, line in heading_paths("Setup.md", NOTE)] == parsed
    assert [t for t, _l, _n in parsed] == ["Setup", "Next"]
    assert find_section("Setup.md", NOTE, "a shell comment, not a heading") is None


def test_read_note_returns_the_whole_section(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Setup.md").write_text(NOTE, encoding="utf-8")
    core = open_index(vault, tmp_path / "index", load_model=False)
    try:
        core.index()
        section = core.read_note("Setup.md", heading="Setup")
        assert section["start_line"] == 5
        assert section["text"].startswith("# Setup") and section["text"].endswith("Then run it.")
        assert "pip install vault-sidecar" in section["text"] and "Elsewhere" not in section["text"]
    finally:
        core.close()


def test_a_name_two_notes_share_is_refused_with_both_paths(tmp_path: Path) -> None:
    # the pt-BR help has "Segurança e privacidade" in Obsidian Publish/ and in Obsidian Sync/: one was read
    # and the other never said
    notes = {f"{folder}/Segurança e privacidade.md": f"# {folder}\n\nEncryption.\n" for folder in ("Publish", "Sync")}
    with vault_of(tmp_path, {**notes, "Notes.md": "---\naliases: [Caderno]\n---\nText.\n"}, load_model=False) as core:
        with pytest.raises(InvalidParams) as refused:
            core.resolve_note("segurança e privacidade")
        assert refused.value.data["candidates"] == sorted(notes)
        assert core.resolve_note("Sync/Segurança e privacidade") == "Sync/Segurança e privacidade.md"
        assert core.resolve_note("caderno") == "Notes.md"  # one note of that name: as before

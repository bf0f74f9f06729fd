"""Which file events wake the indexer (serve/watch.py's filter). Pure: paths in, yes or no out."""

from __future__ import annotations

from pathlib import Path

import pytest
from watchfiles import Change

from sidecar.serve.watch import interesting


@pytest.mark.parametrize(("change", "rel", "wanted"), [
    (Change.modified, "Notes/Idea.md", True),
    (Change.deleted, "Books v1.0", True),  # a folder with a dot in its name: its notes went with it
    (Change.added, "Clips 2026.05", True),
    (Change.deleted, "attachments/diagram.png", True),  # links to it no longer resolve
    (Change.added, "attachments/diagram.png", True),
    (Change.modified, "attachments/diagram.png", False),  # written in place: it resolves as before
    (Change.modified, "logs/sync.log", False),
    (Change.modified, ".indexignore", True),
    (Change.modified, ".obsidian/app.json", True),
    (Change.modified, ".obsidian/workspace.json", False),
    (Change.added, ".trash/Old.md", False),
    (Change.added, "Notes/.hidden.md", False),
])
def test_the_watcher_wakes_for_notes_and_for_what_comes_or_goes(tmp_path: Path, change: Change, rel: str,
                                                              wanted: bool) -> None:
    """Before, any name with a dot but a note's was dropped: a folder "Books v1.0" moved, or an attachment
    deleted, went unseen until the periodic reconcile a minute later."""
    assert interesting(tmp_path)(change, str(tmp_path / rel)) is wanted

"""One place per rule (issue 18): each rule below has one implementation, and these tests fail when
a second copy appears or the callers' answers drift from it."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from sidecar.core import VaultIndex
from sidecar.rank.fuse import Thresholds, band_for, related_band, threshold_band
from sidecar.report.health import suggestion_scores
from sidecar.retrieve.related import RelatedWeights, related_score

SIDECAR = Path(__file__).resolve().parent.parent / "sidecar"


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SIDECAR).as_posix(), ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(SIDECAR.rglob("*.py"))]


def test_only_fuse_compares_scores_with_the_band_thresholds() -> None:
    """`x >= thresholds.high` written anywhere but fuse.py is a second band rule."""
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if name != "rank/fuse.py" and isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and side.attr in ("high", "low")
                    for side in (node.left, *node.comparators)):
                found.append(f"{name}:{node.lineno}")
    assert found == []


def test_related_and_search_bands_share_the_rule() -> None:
    t = Thresholds(high=0.8, low=0.5)
    for score in (0.2, 0.5, 0.79, 0.8, 0.95):
        assert related_band(score, False, t) == threshold_band(score, t) == band_for(score, 0.0, False, False, t, absent=0.0)
    assert related_band(0.2, True, t) == "medium"  # linked notes are at least medium
    assert related_band(0.9, True, t) == "high"
    assert related_band(None, False, t) == "low" and related_band(None, True, t) == "medium"
    assert band_for(0.9, 0.0, False, True, t, absent=0.0) == "medium"  # a number the query names is missing: not high


def test_health_suggestions_score_like_related_notes() -> None:
    """Health's block scoring is related_score on arrays: the same numbers as one related() entry."""
    rng = np.random.default_rng(7)
    cosines = rng.uniform(-0.5, 1.0, (4, 6)).astype(np.float32)
    links_here = (rng.uniform(size=(4, 6)) > 0.7).astype(np.float32)
    tags = rng.integers(0, 6, (4, 6)).astype(np.float32)
    w = RelatedWeights()
    block = suggestion_scores(cosines, links_here, tags, w)
    assert block.dtype == np.float32
    for i, j in np.ndindex(block.shape):
        one = related_score(float(cosines[i, j]), float(links_here[i, j]), 0.0, float(tags[i, j]), w)
        assert block[i, j] == pytest.approx(one, abs=1e-6)
    assert related_score(0.5, 1.0, 9.0, 9.0, w) == pytest.approx(0.5 + 1.0 + 4 * w.shared_links + 3 * w.shared_tags)


def test_related_ranks_by_related_score(demo_index: VaultIndex) -> None:
    """The pane's scores are related_score of the reasons it gives (no second formula in _score)."""
    path = str(demo_index.reader().execute("SELECT path FROM notes ORDER BY path LIMIT 1").fetchone()[0])
    results = demo_index.related(path=path, limit=20)["results"]
    assert results and any(r["similarity"] for r in results)
    for r in results:
        kinds = {x["kind"]: x.get("count", 1) for x in r["reasons"]}
        expected = related_score(r["standout"] or 0.0, float("links_here" in kinds), float(kinds.get("shares_links", 0)),
                                 float(kinds.get("shares_tags", 0)), RelatedWeights())
        assert r["score"] == pytest.approx(expected, abs=1e-3)


ADAPTERS = ("commands/cli.py", "commands/server.py", "adapters/rpc.py", "adapters/mcp/server.py", "adapters/mcp/tools.py",
            "adapters/mcp/subscribe.py", "adapters/mcp/writes.py")


def test_nothing_reaches_through_the_core() -> None:
    """The core (VaultIndex) answers for its parts: no module reaches into `index.indexer.vault`, sets
    `core.building`, and no adapter opens the core's read connection to hand to a report."""
    found = []
    for name, tree in _modules():
        if name == "core.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                    node.value.attr == "indexer" and not _is_self(node.value.value):
                found.append(f"{name}:{node.lineno}: .indexer.{node.attr}")
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                found += [f"{name}:{node.lineno}: sets .building" for t in targets
                          if isinstance(t, ast.Attribute) and t.attr == "building"]
            if name in ADAPTERS and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "reader":
                found.append(f"{name}:{node.lineno}: .reader()")
    assert found == []


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def test_only_the_parser_recognises_headings() -> None:
    """A second heading regex (read_note had one) misses the parser's fences and front matter."""
    found = [f"{name}:{node.lineno}" for name, tree in _modules() if name != "ingest/parse.py" for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and "#{1," in node.value]
    assert found == []


def test_the_plugin_renders_no_health_markdown_of_its_own() -> None:
    """health.to_markdown is the one rendering (tests/test_rpc_contract.py: JSON-RPC answers with it);
    the plugin saves that text and writes none of the report's Markdown itself."""
    plugin = SIDECAR.parent / "obsidian-plugin" / "src"
    found = [f"{p.name}: {marker}" for p in sorted(plugin.rglob("*.ts")) for marker in ("# Vault health", "## Rules used", "- Fix:")
             if marker in p.read_text(encoding="utf-8")]
    assert found == []


def test_only_client_errors_turns_exceptions_into_client_errors() -> None:
    """SQLite busy as Busy and a bug as the internal SidecarError are decided in serve/client_errors.py only:
    an adapter that builds either itself (both adapters did) words them differently from the other port."""
    found = [f"{name}:{node.lineno}" for name, tree in _modules() if name != "serve/client_errors.py"
             for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
             and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) in ("SidecarError", "Busy", "busy_from")]
    assert found == []


def test_only_with_headroom_sizes_the_matrix_buffer() -> None:
    """The room kept after the matrix's rows is snapshot._with_headroom's: the store's load and the
    snapshot's reload and compaction each sized it themselves."""
    found = []
    for name, tree in _modules():
        allowed = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "_with_headroom"
                   for n in ast.walk(f)} if name == "retrieve/snapshot.py" else set()
        found += [f"{name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Name)
                  and node.id == "HEADROOM_SHARE" and isinstance(node.ctx, ast.Load) and id(node) not in allowed]
    assert found == []

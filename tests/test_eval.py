"""The known-answer set over the demo vault: the full ranking must not fall below plain RRF."""

from __future__ import annotations

from pathlib import Path

import pytest

from sidecar.core import VaultIndex
from sidecar.report import evaluate
from tests.conftest import ROOT

QUERIES = ROOT / "examples" / "demo-vault.queries.json"


def test_metrics_are_right_on_known_cases() -> None:
    assert evaluate.ndcg_at_k(["a", "b"], {"a": 2, "b": 1}) == pytest.approx(1.0)
    assert evaluate.ndcg_at_k(["b", "a"], {"a": 2, "b": 1}) < 1.0
    assert evaluate.recall_at_k(["x", "a"], {"a", "b"}) == 0.5
    assert evaluate.reciprocal_rank(["x", "y", "a"], {"a"}) == pytest.approx(1 / 3)
    assert evaluate.hide_links("see [[Note|it]] and [text](a.md) ![[img.png]]") == "see  and text "


def test_golden_set_is_big_and_varied() -> None:
    queries = evaluate.load_queries(QUERIES)
    kinds = {q["kind"] for q in queries}
    assert len(queries) >= 40
    assert {"paraphrase", "identifier", "error", "cjk", "no_answer"} <= kinds
    for q in queries:
        for path in q["relevant"]:
            assert (ROOT / "examples" / "demo-vault" / path).is_file(), path


def test_full_ranking_beats_plain_rrf(demo_index: VaultIndex) -> None:
    queries = evaluate.load_queries(QUERIES)
    table = evaluate.evaluate_search(demo_index, queries, evaluate.configs(demo_index.ranking))
    assert table["full"]["ndcg@10"] >= table["rrf"]["ndcg@10"], table
    assert table["full"]["ndcg@10"] >= 0.8, table  # a floor that catches a broken leg
    assert table["rrf"]["ndcg@10"] > max(table["semantic"]["ndcg@10"], 0.5)


def test_unanswerable_queries_are_flagged(demo_index: VaultIndex) -> None:
    queries = [q for q in evaluate.load_queries(QUERIES) if not q["relevant"]]
    bands = [demo_index.search(q["query"])["band"] for q in queries]
    assert "high" not in bands, bands  # never presented as a confident hit


def test_link_prediction_finds_real_links(demo_index: VaultIndex) -> None:
    result = evaluate.link_prediction(demo_index)
    assert result["notes"] >= 20
    assert result["recall@10"] >= 0.5, result


def test_eval_command_prints_the_table(tmp_path: Path) -> None:
    from sidecar.commands.cli import main

    assert main(["eval", "--vault", str(ROOT / "examples" / "demo-vault"), "--index", str(tmp_path),
                 "--queries", str(QUERIES), "--sample", "10"]) == 0


def test_calibrate_report_prints_the_band_confusion_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from sidecar.commands.cli import main

    where = ["--vault", str(ROOT / "examples" / "demo-vault"), "--index", str(tmp_path)]
    assert main(["index", *where]) == 0  # calibrate measures an index, never builds one
    capsys.readouterr()
    assert main(["calibrate", *where, "--report", str(QUERIES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    queries = evaluate.load_queries(QUERIES)
    answerable = sum(1 for q in queries if q["relevant"])
    assert sum(report["bands"]["answerable"].values()) == answerable
    assert sum(report["bands"]["unanswerable"].values()) == len(queries) - answerable
    assert report["checks"]["no unanswerable query is high"] is True


def test_json_lines_query_files_load_as_the_shared_sets_write_them(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    path.write_text('{"id": "a", "q": "refund", "rel": {"R.md": 2}, "kind": "keyword"}\n\n'
                    '{"id": "b", "q": "weather", "rel": {}, "kind": "unanswerable"}\n', encoding="utf-8")
    assert evaluate.load_queries(path) == [
        {"id": "a", "query": "refund", "relevant": {"R.md": 2}, "kind": "keyword"},
        {"id": "b", "query": "weather", "relevant": {}, "kind": "unanswerable"}]


def test_automatic_bands_are_measured_again_for_another_model(tmp_path: Path) -> None:
    from sidecar.report.calibrate import needs_auto_calibration
    from tests.conftest import open_index

    index = open_index(ROOT / "examples" / "demo-vault", tmp_path)
    index.index()  # calibrates automatically: the demo vault has 50+ sections
    assert not needs_auto_calibration(index)
    index.store.conn.execute("UPDATE meta SET value = 'another-model confidence-1' WHERE key = 'band_measured_with'")
    assert needs_auto_calibration(index)  # thresholds measured with another model say nothing about this one
    index.close()


def test_thresholds_from_another_band_rule_are_not_used(tmp_path: Path) -> None:
    """Manual thresholds stored before an upgrade sit on the old confidence's scale: the defaults stand
    until `sidecar calibrate` measures anew (an index run re-measures automatic ones)."""
    from sidecar.rank.fuse import Thresholds
    from tests.conftest import open_index

    index = open_index(ROOT / "examples" / "demo-vault", tmp_path)
    index.index()
    index.save_thresholds(0.4, 0.9, source="manual")
    assert index.thresholds_info() == {"high": 0.9, "low": 0.4, "source": "manual"}
    index.store.conn.execute("UPDATE meta SET value = 'x confidence-1' WHERE key = 'band_measured_with'")
    assert index.thresholds_info() == {"high": Thresholds().high, "low": Thresholds().low, "source": "default"}
    index.close()

from sidecar.fuse import Thresholds, band_for, query_weights, rrf


def test_rrf_sums_reciprocal_ranks() -> None:
    scores = rrf({"lexical": [1, 2], "semantic": [2, 3]}, {"lexical": 1.0, "semantic": 1.0}, k=60)
    assert scores[2] == 1 / 62 + 1 / 61
    assert scores[1] == 1 / 61
    assert max(scores, key=lambda k: scores[k]) == 2


def test_rrf_weights_per_leg() -> None:
    scores = rrf({"lexical": [1], "semantic": [2]}, {"lexical": 2.0, "semantic": 1.0})
    assert scores[1] == 2 * scores[2]


def test_query_aware_weights() -> None:
    assert query_weights("SQLITE_BUSY")["lexical"] > query_weights("SQLITE_BUSY")["semantic"]
    assert query_weights("_rrf_fuse")["lexical"] > 1.0
    question = query_weights("how do I keep my notes in sync?", questions=1.3)
    assert question["semantic"] > question["lexical"]
    assert query_weights("garden tomatoes") == {"lexical": 1.0, "semantic": 1.0}


def test_bands() -> None:
    t = Thresholds(high=0.6, low=0.4)
    assert band_for(0.7, 0.0, False, t) == "high"
    assert band_for(0.5, 1.0, False, t) == "medium"
    assert band_for(0.2, 0.5, False, t) == "low"
    assert band_for(0.2, 1.0, True, t) == "high"  # a rare exact identifier is an answer
    assert band_for(None, 1.0, False, t) == "medium"  # lexical only: never "high" without evidence
    assert band_for(None, 0.2, False, t) == "low"

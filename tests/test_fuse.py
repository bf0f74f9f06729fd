"""Fusion and bands: pure functions."""

from __future__ import annotations

import pytest

from sidecar.rank.evidence import query_evidence
from sidecar.rank.fuse import KEYWORD_LOW_ABSENT, Thresholds, band_for, confidence, query_weights, rrf
from sidecar.retrieve.lexical import query_name_phrases, query_names


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
    assert band_for(0.7, 0.0, False, False, t, absent=0.0) == "high"
    assert band_for(0.7, 0.75, False, True, t, absent=0.0) == "medium"  # "2023 winners": a hit on 2022 is not an answer
    assert band_for(0.5, 1.0, False, False, t, absent=0.0) == "medium"
    assert band_for(0.2, 0.5, False, False, t, absent=0.0) == "low"
    assert band_for(0.2, 1.0, True, False, t, absent=0.0) == "high"  # a rare exact identifier is an answer
    assert band_for(None, 1.0, False, False, t, absent=0.0) == "medium"  # lexical only: never "high" without evidence


def test_bands_without_a_cosine_say_not_answered_only_on_evidence() -> None:
    """No cosine (no vectors, or a language the model reads as a blur): a hit holding a few of the query's
    words is as likely an answer in other words as none, unless the vault lacks the query's words."""
    t = Thresholds(high=0.6, low=0.4)
    assert band_for(None, 0.2, False, False, t, absent=0.0) == "medium"
    assert band_for(None, 0.2, False, False, t, absent=KEYWORD_LOW_ABSENT) == "low"
    assert band_for(None, 0.0, False, False, t, absent=0.0) == "low"  # holds none of the query's words
    assert band_for(None, 0.6, False, False, t, absent=1.0) == "medium"


def test_confidence_weighs_rare_words_found_and_words_the_vault_lacks() -> None:
    assert confidence(0.5, 0.0, 0.0) == pytest.approx(0.5)
    assert confidence(0.5, 1.0, 0.0) > confidence(0.5, 0.2, 0.0)
    assert confidence(0.5, 0.0, 1.0) < confidence(0.5, 0.0, 0.0)  # a made-up word lowers it
    assert confidence(None, 1.0, 0.0) == pytest.approx(0.5)


def test_query_evidence_from_document_counts() -> None:
    ev = query_evidence({"obsidian": 900, "dataview": 3, "zorblax": 0, "2023": 40}, sections=1000)
    assert ev.unseen_share == 0.25 and ev.rare == {"dataview"} and ev.exact == {"2023"}
    assert ev.idf["zorblax"] > ev.idf["dataview"] > ev.idf["obsidian"]
    assert ev.weighted_coverage(["dataview"]) > ev.weighted_coverage(["obsidian"])
    assert ev.weighted_coverage(list(ev.idf)) == pytest.approx(1.0)


def test_a_word_the_vault_lacks_tells_more_the_bigger_the_vault() -> None:
    """A few dozen notes lack most everyday words ("sticky", "blackout"); thousands of sections lack few."""
    counts = {"loaf": 3, "sticky": 0}
    small, mid, big = (query_evidence(counts, sections=n) for n in (250, 600, 20_000))
    assert small.unseen_share == big.unseen_share == 0.5
    assert small.absent == 0.0 < mid.absent < big.absent == 0.5
    made_up = query_evidence({"zorblax": 0}, sections=250)
    assert made_up.absent == 1.0  # no word the vault has: as telling in any vault


def test_a_name_the_vault_lacks_tells_in_a_vault_of_any_size() -> None:
    """kepano's vault (103 notes, a QA set): "what did I rate Dune" was `medium` over the book notes; a name
    ("Dune", "Osaka") a small vault lacks says what an everyday word it lacks ("sticky") does not. The hub's
    GDPR and NVDA questions were `medium` while the name counted as one word in three: it counts as all."""
    counts = {"rate": 4, "dune": 0, "sticky": 0}
    named = query_evidence(counts, sections=250, names=frozenset({"dune"}))
    assert named.absent == 1.0  # as a query of words the vault lacks, in a vault of any size
    assert query_evidence(counts, sections=250).absent == 0.0  # "sticky" alone counts not at all in one this small
    assert query_evidence(counts, sections=20_000, names=frozenset({"dune"})).absent == 1.0
    assert not named.lacks_thing  # a name of one word may be a detail in passing ("WhatsApp"): no low by itself
    assert query_names("what did I rate Dune when I read it") == {"i", "dune"}  # "I" is no term: no count, no say
    assert query_names("Dune") == frozenset()  # a first word is capitalised as a sentence is
    assert query_names("Wie exportiere ich Notizen als PDF") == frozenset()  # German capitalises every noun


def test_a_name_of_several_words_the_vault_never_writes_side_by_side_is_a_thing_it_lacks() -> None:
    """help-nl (a QA set): "Bestaat er een Obsidian-app voor de Apple Watch?" was `high` over the iOS note; the
    vault has "Apple" and a YouTube "watch" link, never "Apple Watch". The hub's "Microsoft Teams" the same."""
    assert query_name_phrases("Bestaat er een Obsidian-app voor de Apple Watch?") == {"apple watch"}
    assert query_name_phrases("post notes into a Microsoft Teams channel") == {"microsoft teams"}
    assert query_name_phrases("can I Google it") == frozenset()  # "I" names nothing with the word after it
    assert query_name_phrases("Wo ist die Apple Watch App") == frozenset()  # German capitalises every noun
    assert query_names("How To Use Dataview Tasks") == query_name_phrases("Daily Note Template") == frozenset()  # Title Case
    counts = {"obsidian": 40, "app": 30, "apple": 3, "watch": 1}
    lacking = query_evidence(counts, sections=1000, names=frozenset({"obsidian", "apple", "watch"}),
                             unseen_things=("apple watch",))
    assert lacking.absent == 1.0 and lacking.lacks_name  # as a query of words the vault lacks, and never `high`
    assert lacking.missing_names == ("apple watch",)  # what the caveat names
    teams = query_evidence({"microsoft": 0, "teams": 5}, 1000, frozenset({"microsoft", "teams"}), ("microsoft teams",))
    assert teams.missing_names == ("microsoft teams",)  # "Microsoft" is said with it, not again
    present = query_evidence(counts, sections=1000, names=frozenset({"obsidian", "apple", "watch"}))
    assert present.absent == 0.0 and not present.lacks_name
    assert lacking.lacks_thing  # the query's subject: whatever else a hit holds, the vault does not answer
    assert band_for(0.9, 1.0, True, lacking.lacks_name, Thresholds(), absent=lacking.absent,
                    lacks_thing=lacking.lacks_thing) == "low"


def test_a_query_of_common_words_alone_is_no_full_evidence() -> None:
    """A hit holding "the" holds all of the query "the": that share must not read as a rare word's."""
    common = query_evidence({"the": 800}, sections=1000)
    assert common.weighted_coverage(["the"]) < 0.1
    rare = query_evidence({"dataview": 3}, sections=1000)
    assert rare.weighted_coverage(["dataview"]) == pytest.approx(1.0)

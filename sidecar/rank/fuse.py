"""Rank fusion and confidence bands. Pure: lists of ids and numbers in, scores out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sidecar.protocol_types import Band

# Band thresholds on a hit's confidence (see `confidence`). Defaults measured on the shared dev sets
# with the embedded model; `sidecar calibrate` replaces them with the user's own vault's figures.
BAND_RULE = "confidence-4"  # stored with measured thresholds: another rule or model measures them anew
DEFAULT_HIGH = 0.70
DEFAULT_LOW = 0.26

CAVEATS = {
    "high": None,
    "medium": ("This band holds both real answers worded differently from the notes and questions the "
               "vault does not answer: read the excerpt and decide."),
    "low": "Treat this as: the vault does not answer this. The results are the least distant notes, not a match.",
    "none": "Nothing in the vault matched.",
}


@dataclass(frozen=True, slots=True)
class Thresholds:
    high: float = DEFAULT_HIGH
    low: float = DEFAULT_LOW


# Related notes: on how far a note's cosine stands out from the source's typical note's (related._typical_cosine),
# measured on the dev and QA sets (docs/ranking.md, "Related notes").
RELATED_THRESHOLDS = Thresholds(high=0.30, low=0.10)


def rrf(legs: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: int = 60) -> dict[int, float]:
    """Reciprocal rank fusion: sum over legs of weight / (k + rank), rank from 1."""
    scores: dict[int, float] = {}
    for leg, ids in legs.items():
        weight = weights.get(leg, 1.0)
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


IDENTIFIER = re.compile(r"(^|\s)(_\w+|\w+_\w+|[a-z]+[A-Z]\w*|[A-Z]{2,}\w*|\w*\d\w*|\S*[.:/]\S+)(?=\s|$)")
QUESTION = re.compile(r"^(how|what|why|when|where|which|who|can|should|is|are|do|does|como|o que|por que|qual)\b", re.I)


def is_identifier_query(query: str) -> bool:
    """A few words, one of them code-like (`_rrf_fuse`, `SQLITE_BUSY`, `x86-64-v2`): an exact-term search."""
    words = query.split()
    return bool(words) and len(words) <= 4 and IDENTIFIER.search(query) is not None


def query_weights(query: str, lexical: float = 1.0, semantic: float = 1.0, questions: float = 1.0) -> dict[str, float]:
    """Identifier-like queries lean lexical; questions lean semantic by `questions` (1.0 = not at all).

    The evaluation (docs/ranking.md) kept the identifier rule and found no gain in leaning
    questions towards the static-embedding leg, so that factor defaults to 1.0.
    """
    if is_identifier_query(query):
        return {"lexical": lexical * 1.5, "semantic": semantic * 0.6}
    if QUESTION.search(query.strip()) or query.strip().endswith("?"):
        return {"lexical": lexical, "semantic": semantic * questions}
    return {"lexical": lexical, "semantic": semantic}


COVERAGE_WEIGHT = 0.5  # how much the query's rare words found in the hit count next to the cosine
UNSEEN_PENALTY = 0.4  # how much the query's words found nowhere in the vault count against it
# With no cosine to go by, a hit holding less than half the query's words is `low` ("the vault does not
# answer this") only when the vault lacks this share of the query's words (QueryEvidence.absent) or the hit
# holds none of them: a question worded unlike its answer is otherwise as likely as not answered.
KEYWORD_LOW_ABSENT = 0.35


def blur_share(background: float, less_from: float, nothing_from: float) -> float:
    """How much a cosine still counts, by how close the text is to every text of the vault (its background):
    fully below `less_from`, not at all from `nothing_from`, linearly between."""
    return min(1.0, max(0.0, (nothing_from - background) / (nothing_from - less_from)))


def confidence(similarity: float | None, weighted_coverage: float, absent: float) -> float:
    """One number per hit from three signals, none enough alone (docs/ranking.md): the cosine; the
    IDF-weighted share of the query's words the hit holds (a rare word found is strong evidence, a
    function word found is none); the share of the query's words the vault does not have at all
    (a made-up word, or the subject of a question the vault never mentions), weighed by the vault's
    size (QueryEvidence.absent)."""
    return (similarity or 0.0) + COVERAGE_WEIGHT * weighted_coverage - UNSEEN_PENALTY * absent


def band_for(score: float | None, lexical_coverage: float, rare_term_hit: bool, named_missing: bool,
             t: Thresholds, *, absent: float, lacks_thing: bool = False) -> Band:
    """high / medium / low for one result, from its confidence score (None: no vectors).

    A rare query word found lifts a result to high (an exact identifier is a real answer whatever the
    cosine says); a number the query names and the hit lacks ("2023"), or a name the vault never has
    ("NVDA"), keeps it from high; a thing of several words the vault never writes ("Apple Watch",
    "October 2023": QueryEvidence.lacks_thing) makes it low. Without a cosine, the keywords alone decide,
    never above medium (KEYWORD_LOW_ABSENT).
    """
    if lacks_thing:
        return "low"
    if rare_term_hit and lexical_coverage >= 0.999 and not named_missing:
        return "high"
    if score is None:
        if lexical_coverage >= 0.5:
            return "medium"
        return "low" if lexical_coverage == 0.0 or absent >= KEYWORD_LOW_ABSENT else "medium"
    band = threshold_band(score, t)
    return "medium" if band == "high" and named_missing else band


def related_band(standout: float | None, linked: bool, t: Thresholds = RELATED_THRESHOLDS) -> Band:
    """high / medium / low for one related note: how far its best section's cosine stands out from the source's
    typical note, on RELATED_THRESHOLDS; a note linked with this one (it links here, or shares links) is at least
    medium whatever its text."""
    band = "low" if standout is None else threshold_band(standout, t)
    return "medium" if band == "low" and linked else band


def threshold_band(score: float, t: Thresholds) -> Band:
    """The one place a score meets the band thresholds."""
    if score >= t.high:
        return "high"
    if score >= t.low:
        return "medium"
    return "low"

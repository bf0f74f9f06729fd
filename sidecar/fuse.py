"""Rank fusion and confidence bands. Pure: lists of ids and numbers in, scores out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Band thresholds on the best vector similarity (cosine). Defaults measured on our demo vault
# with the embedded model; `sidecar calibrate` replaces them with the user's own vault's figures.
DEFAULT_HIGH = 0.60
DEFAULT_LOW = 0.40

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


def query_weights(query: str, lexical: float = 1.0, semantic: float = 1.0, questions: float = 1.0) -> dict[str, float]:
    """Identifier-like queries lean lexical; questions lean semantic by `questions` (1.0 = not at all).

    The evaluation (docs/ranking.md) kept the identifier rule and found no gain in leaning
    questions towards the static-embedding leg, so that factor defaults to 1.0.
    """
    words = query.split()
    if words and IDENTIFIER.search(query) and len(words) <= 4:
        return {"lexical": lexical * 1.5, "semantic": semantic * 0.6}
    if QUESTION.search(query.strip()) or query.strip().endswith("?"):
        return {"lexical": lexical, "semantic": semantic * questions}
    return {"lexical": lexical, "semantic": semantic}


def band_for(similarity: float | None, lexical_coverage: float, rare_term_hit: bool, t: Thresholds) -> str:
    """high / medium / low for one result.

    Vector similarity decides when it exists; a rare query term found with full coverage lifts a
    result to high (an exact identifier is a real answer whatever the cosine says). Without vectors,
    lexical coverage alone decides.
    """
    if rare_term_hit and lexical_coverage >= 0.999:
        return "high"
    if similarity is None:
        if lexical_coverage >= 0.999:
            return "medium"
        return "medium" if lexical_coverage >= 0.5 else "low"
    if similarity >= t.high:
        return "high"
    if similarity >= t.low:
        return "medium"
    return "low"

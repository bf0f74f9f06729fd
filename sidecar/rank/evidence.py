"""What a query's words say about a hit, for the confidence bands: which words are rare, which the
vault does not have at all, and how much of the query's weight a hit holds. Pure: document counts
in, numbers out (the counting is search.document_counts)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RARE_SHARE = 0.01  # a term in at most 1% of sections is specific enough to be the answer
MIN_COUNT_CAP = 500  # counting stops here: a term in 500+ sections is common, however many more
# An absent word tells more the more words the vault has: a vault of a few dozen notes lacks most
# everyday words, so a real question's wording ("blackout", "sticky") is often missing from it too
SMALL_VAULT = 300  # sections up to which a word the vault lacks is no evidence against an answer
FULL_VOCABULARY = 1000  # sections from which it counts fully (log-scale between the two)
EXACT = re.compile(r"\d")  # years, versions, error codes: a hit without the very number does not answer


@dataclass(frozen=True, slots=True)
class QueryEvidence:
    idf: dict[str, float]  # term -> inverse document frequency (unseen terms get the highest)
    unseen_share: float  # share of the query's terms found in no section at all
    rare: frozenset[str]  # terms found in a few sections only
    exact: frozenset[str]  # terms with digits, which only an exact hit answers ("2023", "v1", "e404")
    least_weight: float = 0.0  # what a query's words must weigh together for a hit holding them all to count fully
    absence_weight: float = 1.0  # how much a word the vault lacks tells, by the vault's size (absence_weight())
    missing_names: tuple[str, ...] = ()  # the query's names found nowhere, phrases ("apple watch") and months too

    @property
    def absent(self) -> float:
        """The evidence against any answer from the query's words the vault lacks: their share, weighed by
        the vault's size; a query with no word the vault has (a made-up word), or naming a thing the vault
        never names ("GDPR"; "Apple Watch", whose words apart are no mention of it), counts fully in any vault."""
        if self.unseen_share >= 1.0 or self.lacks_name:
            return 1.0
        return self.unseen_share * self.absence_weight

    @property
    def lacks_thing(self) -> bool:
        """The vault never writes a thing of several words the query names ("Apple Watch", "October 2023"):
        such a thing is the query's subject, not a word in passing, so the vault does not answer the query."""
        return any(" " in name for name in self.missing_names)

    @property
    def lacks_name(self) -> bool:
        """The vault never names what the query names: no hit is `high`, whatever else it holds."""
        return bool(self.missing_names)

    def weighted_coverage(self, found: Sequence[str]) -> float:
        """The IDF-weighted share of the query a hit holds. A query of common words alone ("the") weighs
        less than one rare word: a hit holding it all is no evidence of an answer."""
        total = max(sum(self.idf.values()), self.least_weight)
        return sum(self.idf[t] for t in found if t in self.idf) / total if total else 0.0


def count_cap(sections: int) -> int:
    return max(MIN_COUNT_CAP, int(sections * RARE_SHARE)) + 1


def absence_weight(sections: int) -> float:
    if sections <= SMALL_VAULT:
        return 0.0
    return min(1.0, math.log(sections / SMALL_VAULT) / math.log(FULL_VOCABULARY / SMALL_VAULT))


def query_evidence(counts: Mapping[str, int], sections: int, names: frozenset[str] = frozenset(),
                   unseen_things: Sequence[str] = ()) -> QueryEvidence:
    """From each term's section count (capped at count_cap) and the number of sections; `names` are the
    query's (lexical.query_names); `unseen_things`, its names of several words (lexical.query_name_phrases)
    and its months (dates.query_months) that no section holds."""
    n = max(1, sections)
    idf = {t: math.log((n + 1) / (c + 0.5)) if c else math.log(2 * (n + 1)) for t, c in counts.items()}
    unseen = sum(1 for c in counts.values() if c == 0) / len(counts) if counts else 0.0
    rare_count = max(5, int(n * RARE_SHARE))
    rare = frozenset(t for t, c in counts.items() if 0 < c <= rare_count and len(t) >= 4)
    exact = frozenset(t for t in counts if EXACT.search(t))
    missing = [t for t, c in counts.items() if c == 0 and t in names]
    return QueryEvidence(idf, unseen, rare, exact, least_weight=math.log((n + 1) / (rare_count + 0.5)),
                         absence_weight=absence_weight(n),
                         missing_names=(*unseen_things, *(t for t in missing if not _in_any(t, unseen_things))))


def _in_any(word: str, phrases: Sequence[str]) -> bool:
    return any(word in phrase.split() for phrase in phrases)

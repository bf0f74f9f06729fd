"""The months a query names ("October 2023", "outubro de 2023", "Oct 5, 2023"), and the FTS5 expression
that finds a section writing that month in any usual form. Pure.

A month is a name the vault either has or lacks, like "Apple Watch" (lexical.query_name_phrases), but a
vault writes it in more ways than the query does: "2023-10-05" in a daily note's title, "05.10.2023",
"10/5/2023", "5 October 2023", "Oct. 2023". Only when none of them is there does the vault lack it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from sidecar.ingest.fold import fold
from sidecar.retrieve.lexical import WORD

# Month names as a query writes them, January first, in the languages whose dates read "<month> <year>".
# Languages that inflect a month in a date ("października", "октября") are left out: their months are never
# read, so never said missing.
MONTH_NAMES = {
    "en": "january february march april may june july august september october november december",
    "pt": "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "januar februar märz april mai juni juli august september oktober november dezember",
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "nl": "januari februari maart april mei juni juli augustus september oktober november december",
    "da": "januar februar marts april maj juni juli august september oktober november december",
    "ro": "ianuarie februarie martie aprilie mai iunie iulie august septembrie octombrie noiembrie decembrie",
    "id": "januari februari maret april mei juni juli agustus september oktober november desember",
}
ABBREVIATIONS = "jan feb mar apr may jun jul aug sep oct nov dec"  # English's, "sept" too (MONTH_OF)
MONTH_OF = {fold(name): month for names in (*MONTH_NAMES.values(), ABBREVIATIONS)
            for month, name in enumerate(names.split(), start=1)} | {"sept": 9}
# What a month name is searched by: its first letters, so that "Oct.", "October" and "octobre" are one search
# and a vault writing "Sept" or "Okt" counts. A word that merely starts so ("output 2023") only ever makes a
# month count as written, never as missing.
SEARCH_PREFIX = 3
CONNECTORS = frozenset(("of", "de", "del", "di", "van"))  # "outubro de 2023", "October of 2023"
YEAR = re.compile(r"(19|20)\d\d")
DAY = re.compile(r"(0?[1-9]|[12]\d|3[01])(st|nd|rd|th|er|º)?")


@dataclass(frozen=True, slots=True)
class MonthNamed:
    spelled: str  # the query's words for it, lowered ("october 5 2023"): what the caveat finds in the query
    year: int
    month: int


def query_months(query: str) -> tuple[MonthNamed, ...]:
    """Each "<month> [day|of|de] <year>" in the query, by MONTH_OF; a month without a year names nothing."""
    words = WORD.findall(query.lower())
    found = []
    for i, word in enumerate(words):
        month = MONTH_OF.get(fold(word))
        if month is None:
            continue
        for j in (i + 1, i + 2):
            if j < len(words) and YEAR.fullmatch(words[j]):
                if j == i + 1 or words[i + 1] in CONNECTORS or DAY.fullmatch(words[i + 1]):
                    found.append(MonthNamed(" ".join(words[i:j + 1]), int(words[j]), month))
                break
    return tuple(found)


@functools.lru_cache(maxsize=64)  # asked again at each search naming that month; its count is cached apart
def month_match(named: MonthNamed) -> str:
    """An FTS5 expression matching a section that writes this month of this year: a name of the month in
    any of MONTH_NAMES's languages within two words of the year ("5 de outubro de 2023", "Oct. 12, 2023"),
    the year and the month's number side by side ("2023-10-05", "05.10.2023", "10/2023"), or month, day, year
    ("10/5/2023")."""
    year, numbers = named.year, _with_zero(named.month)
    prefixes = sorted({name[:SEARCH_PREFIX] for name, month in MONTH_OF.items() if month == named.month})
    forms = [f'NEAR("{prefix}"* "{year}", 2)' for prefix in prefixes]
    forms += [f'NEAR("{year}" "{number}", 0)' for number in numbers]
    forms += [f'"{number} {day} {year}"' for number in numbers for n in range(1, 32) for day in _with_zero(n)]
    return " OR ".join(forms)


def _with_zero(number: int) -> list[str]:
    """A day's or month's number as it may be written: "5" and "05"; "12" alone."""
    return sorted({str(number), f"{number:02d}"})

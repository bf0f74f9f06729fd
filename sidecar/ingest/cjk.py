"""Scripts written without spaces between words (Han, Kana, Hangul, Thai, Lao, Khmer, Myanmar) for
FTS5. unicode61 keeps such a run as one token, so nothing inside a sentence could match. As
Lucene's CJK analyzer does, we index each run a second time, in its own column, as overlapping
character bigrams (plus the single characters, for one-character queries and as a last resort),
and query a run as an OR of its bigrams: a question shares bigrams with the section that
answers it, and BM25 ranks the sections that share more first. Hangul bigrams also match a word
across its particles (노트를 and 노트에서 share 노트). Thai, Lao, Myanmar and Khmer are alphabets:
a pair of their letters is as common as "th" in English and tells no word from another, so their
runs go in as overlapping triples instead (char_grams).

The same column holds the pictographs (emoji) of the text, one token each: unicode61 treats them as
separators, so the Tasks plugin's ⏫ or 📅 and a note's ✅ could not be searched at all; and the
folded forms of the words unicode61 does not fold (fold.keyword_variants: ё, ı, ł, ß, Arabic marks).
Pure functions."""

from __future__ import annotations

import re
import unicodedata

from sidecar.ingest.fold import keyword_variants

# Han (incl. extension A and compatibility), Hiragana, Katakana, Hangul syllables, Jamo and
# compatibility Jamo, Thai, Lao, Myanmar, Khmer.
_HANGUL = r"\u3130-\u318f\uac00-\ud7af\u1100-\u11ff"  # Korean, which puts spaces between its words
UNSPACED_CHAR = re.compile(
    r"[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    rf"\uf900-\ufaff{_HANGUL}]")
UNSPACED_RUN = re.compile(UNSPACED_CHAR.pattern + "+")
HANGUL = re.compile(f"[{_HANGUL}]")


# The unspaced scripts that are alphabets (Thai, Lao, Myanmar, Khmer), cut into triples, not pairs.
ALPHABET_CHAR = re.compile(r"[\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff]")


def gram_size(letters: str) -> int:
    """Characters a gram of this run has: three in an alphabet (ALPHABET_CHAR), two in the rest."""
    return 3 if ALPHABET_CHAR.match(letters) else 2


def without_spaces(text: str) -> bool:
    """The text holds a script written without spaces between its words (Han, kana, Thai...); Korean, among
    the unspaced runs for its bigrams, puts spaces between its words."""
    return UNSPACED_CHAR.search(text) is not None and HANGUL.search(text) is None


def may_straddle_words(gram: str) -> bool:
    """A query's gram that may span two words: Han, kana, Thai... are written without spaces, so
    为什么's 么应 in 为什么应用 is in no section and says nothing of the vault. Korean puts spaces
    between words: its bigrams are inside one."""
    return len(gram) >= 2 and len(gram) == gram_size(gram) and without_spaces(gram)


# The emoji blocks: Miscellaneous Technical (⌛ ⏫ ⏳), Miscellaneous Symbols and Dingbats (☀ ✅ ❌ ➕),
# Miscellaneous Symbols and Arrows (⭐ ⬆), and the supplementary planes' pictographs (🔥 📅 🧠), less
# the skin-tone modifiers (a 👍 of any tone is a 👍). Variation selectors and joiners are no pictographs.
PICTOGRAPH = re.compile(r"[\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001f3fa\U0001f400-\U0001faff]")


def pictograph_token(char: str) -> str:
    """The FTS5 token standing for one pictograph: letters and digits only, digits last, which no stemmer
    changes ("📅" -> "emoji128197")."""
    return f"emoji{ord(char)}"


def _letters(run: str) -> str:
    # unicode61 splits tokens at combining marks (Thai vowel signs, tone marks): drop them on both
    # the index and the query side so a bigram is always one FTS5 token.
    return "".join(c for c in run if not unicodedata.category(c).startswith("M"))


def char_grams(run: str) -> list[str]:
    """Overlapping character pairs of one run, triples in an alphabet (gram_size); a shorter run is itself."""
    letters = _letters(run)
    size = gram_size(letters)
    if len(letters) < size:
        return [letters] if letters else []
    return [letters[i : i + size] for i in range(len(letters) - size + 1)]


def is_short_gram(gram: str) -> bool:
    """A whole run of an alphabet shorter than its triples (a two-letter Thai word): longer runs hold it
    only inside their triples, so a query looks it up as their start."""
    return 1 < len(gram) < gram_size(gram)


HIRAGANA_PAIR = re.compile(r"[\u3040-\u309f]{2}")


def query_grams(run: str) -> list[str]:
    """The grams a query's run is searched by: those of `char_grams` less pairs of hiragana, unless
    nothing else is left. Japanese writes its particles and endings in hiragana (見出しの下を隠したい:
    しの, した, たい) and most content words in kanji and katakana; a pair of hiragana matches nearly
    every Japanese section and outvoted the words that say what the question is about."""
    grams = char_grams(run)
    content = [g for g in grams if not HIRAGANA_PAIR.fullmatch(g)]
    return content or grams


def unigrams(run: str) -> list[str]:
    return list(_letters(run))


def cjk_tokens(text: str) -> str:
    """The text of the index's `cjk` column: each run's grams (char_grams), then its characters, runs a
    line each; then the text's pictographs."""
    lines = []
    for run in UNSPACED_RUN.findall(text):
        singles = unigrams(run)
        lines.append(" ".join(char_grams(run) + (singles if len(singles) > 1 else [])))
    pictographs = PICTOGRAPH.findall(text)
    if pictographs:
        lines.append(" ".join(pictograph_token(c) for c in pictographs))
    variants = keyword_variants(text)
    if variants:
        lines.append(" ".join(variants))
    return "\n".join(lines)


def split_cjk_runs(text: str) -> list[tuple[bool, str]]:
    """Split into (is_unspaced_script, piece) segments, in order."""
    out: list[tuple[bool, str]] = []
    pos = 0
    for match in UNSPACED_RUN.finditer(text):
        if match.start() > pos:
            out.append((False, text[pos : match.start()]))
        out.append((True, match.group()))
        pos = match.end()
    if pos < len(text):
        out.append((False, text[pos:]))
    return out

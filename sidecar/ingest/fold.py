"""One folded form of text, to tell whether a note holds a query's word whatever the accents and case:
case folded, compatibility forms unified (NFKD), combining marks dropped, and the few letters that
carry no mark to drop but are typed without one (ı, ł, ø, đ...) spelled plainly. FTS5's unicode61
tokenizer folds Latin accents when it matches; this folds every script alike for what is compared
after it (which words a hit holds, where to mark them): "cafe" finds "Café", "ISTANBUL" "İstanbul",
"свекла" "Свёкла", "احمد" "أحمد", and an Arabic word with its vowel marks the word without. Kana keep
their voicing marks (リング is not リンク). Pure.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Letters with no decomposition that their users often type as the plain letter; and Persian's own yeh and
# keheh, which a Persian text on an Arabic keyboard spells ي and ك (one letter, two code points).
_PLAIN = {"ı": "i", "ł": "l", "ø": "o", "đ": "d", "ð": "d", "ħ": "h", "ŧ": "t", "ŀ": "l", "æ": "ae", "œ": "oe",
          "þ": "th", "ی": "ي", "ک": "ك"}


# Kana's voicing marks make another sound and another word (リング "ring", リンク "link"; が, か): no accent.
_KANA_VOICING = "\u3099\u309a"


class _FoldTable(dict[int, str]):
    """str.translate's table, filled as characters are met: the folding of a character never changes."""

    def __missing__(self, code: int) -> str:
        decomposed = unicodedata.normalize("NFKD", chr(code))
        if any(c in _KANA_VOICING for c in decomposed):
            decomposed = unicodedata.normalize("NFC", decomposed)  # グ stays グ; Hangul stays in jamo, as before
        folded = "".join(c for c in decomposed if not unicodedata.category(c).startswith("M")).casefold()
        folded = "".join(_PLAIN.get(c, c) for c in folded)
        self[code] = folded
        if len(folded) != 1:
            _UNEVEN.add(chr(code))
        return folded


def _mark_ranges(*blocks: tuple[int, int]) -> str:
    """A regex class body of the combining marks (Mn, Mc, Me) in the blocks, as ranges."""
    ranges: list[tuple[int, int]] = []
    for first, last in blocks:
        for code in range(first, last + 1):
            if unicodedata.category(chr(code)).startswith("M"):
                if ranges and ranges[-1][1] == code - 1:
                    ranges[-1] = (ranges[-1][0], code)
                else:
                    ranges.append((code, code))
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


# The combining marks of the scripts written with them (Thai vowels, Arabic harakat, Indic matras, NFD
# accents): a regex's \w has none of them, so a word of these scripts ends at its first mark without them.
MARKS = _mark_ranges((0x0300, 0x1FFF), (0x20D0, 0x20FF), (0xFE20, 0xFE2F))

_UNEVEN: set[str] = set()  # characters met whose folding is not one character (ß, marks, ligatures)
_TABLE = _FoldTable()


def fold(text: str) -> str:
    """The folded text (an ASCII text is only lowered)."""
    return text.lower() if text.isascii() else _folded(text)


@functools.lru_cache(maxsize=1024)  # a search folds each of its hits' sections several times
def _folded(text: str) -> str:
    return text.translate(_TABLE)


def fold_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """The folded text and, where folding changed a length, each folded character's offset in `text`
    (plus one past the end); None when the offsets are the same on both sides."""
    folded = fold(text)
    if text.isascii() or _UNEVEN.isdisjoint(text):
        return folded, None
    offsets: list[int] = []
    for i, char in enumerate(text):
        offsets += [i] * len(_TABLE[ord(char)])
    offsets.append(len(text))
    return folded, offsets


# ---- the keyword index's side ------------------------------------------------------------------------
# FTS5's unicode61 folds Latin accents (é, ş, ü) but keeps these letters apart from the plain ones their
# writers often type instead, and splits an Arabic word at each of its vowel marks. Their folded forms
# go in the index's `cjk` column beside the text (cjk.cjk_tokens), and a query's words are folded the
# same way (lexical.build_query): "свекла" finds "Свёкла", "isik" "Işık", "Lodz" "Łódź", "strasse"
# "Straße", "احمد" "أحمد", "αθηνα" "Αθήνα". Letters that are letters of their own stay (й, ğ, ñ).
_ARABIC_MARKS = "\u0640\u064b\u064c\u064d\u064e\u064f\u0650\u0651\u0652\u0670"  # tatweel, harakat, dagger alef
_KEYWORD_TABLE = str.maketrans(
    {**_PLAIN, "ё": "е", "ß": "ss", "ς": "σ",
     "ά": "α", "έ": "ε", "ή": "η", "ί": "ι", "ό": "ο", "ύ": "υ", "ώ": "ω", "ϊ": "ι", "ϋ": "υ", "ΐ": "ι", "ΰ": "υ",
     "أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه", **dict.fromkeys(_ARABIC_MARKS)})
KEYWORD_WORD = f"[\\w{_ARABIC_MARKS}]+"  # a word for the keyword index: an Arabic one with its marks
_KEYWORD_WORD = re.compile(KEYWORD_WORD)
_KEYWORD_LETTERS = re.compile("[" + re.escape("".join(map(chr, _KEYWORD_TABLE))) + "]")
# Arabic writes "the" (and "and the", "with the", "for the"...) as part of the word: "الإعدادات" is "the
# settings". The keyword index also holds the word without it, and a query's word is looked up without it,
# so "إعدادات" and "الإعدادات" find each other. At least three letters must stay ("الله" is not "the" + "له").
ARABIC_ARTICLE = "(?:[وبكف]?ال|لل)"
ARABIC_LETTER = re.compile("[\u0621-\u064a]")
_ARTICLE_AT_START = re.compile(f"^{ARABIC_ARTICLE}(?=\\w{{3}})")
_ARTICLE_IN_TEXT = re.compile(f"(?<!\\w){ARABIC_ARTICLE}\\w{{3}}")


def without_article(word: str) -> str:
    """A folded Arabic word less the article written at its start ("الاعدادات" -> "اعدادات"); any other word as it is."""
    return _ARTICLE_AT_START.sub("", word)


def keyword_fold(word: str) -> str:
    """A lower-cased word as the keyword index holds its folded form (the word itself for most)."""
    return without_article(word.translate(_KEYWORD_TABLE))


# Persian joins a word's parts with a zero-width non-joiner ("می‌خواهم", "یادداشت‌ها"), which unicode61 reads as a
# space; many type the word without it. The keyword index also holds the word joined ("میخواهم").
ZWNJ = "\u200c"
_JOINED_WORD = re.compile(f"{KEYWORD_WORD}(?:{ZWNJ}{KEYWORD_WORD})+")


def keyword_variants(text: str) -> list[str]:
    """The folded forms of the text's words that unicode61 would not fold, once each, in text order; then its
    words joined by a zero-width non-joiner, written without it."""
    lowered = text.lower()
    if text.isascii():
        return []  # most texts: one scan, no word list
    variants: dict[str, None] = {}
    if _KEYWORD_LETTERS.search(lowered) or _ARTICLE_IN_TEXT.search(lowered):
        for word in _KEYWORD_WORD.findall(lowered):
            if _KEYWORD_LETTERS.search(word) or _ARTICLE_AT_START.match(word):
                folded = keyword_fold(word)
                if folded and folded != word:
                    variants[folded] = None
    if ZWNJ in lowered:
        for joined in _JOINED_WORD.findall(lowered):
            variants[keyword_fold(joined.replace(ZWNJ, ""))] = None
    return list(variants)

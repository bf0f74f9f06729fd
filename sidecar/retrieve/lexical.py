"""User text -> a safe FTS5 MATCH expression, and snippets with the matched terms marked. Pure.

Every user term is emitted as a quoted FTS5 string, so operators (AND, NEAR, -, :, *, parens)
in the text are only words, never syntax: any input is a valid query and none is an injection.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from sidecar.ingest.cjk import (
    PICTOGRAPH,
    UNSPACED_CHAR,
    char_grams,
    is_short_gram,
    pictograph_token,
    query_grams,
    split_cjk_runs,
    unigrams,
)
from sidecar.ingest.fold import (
    ARABIC_ARTICLE,
    ARABIC_LETTER,
    MARKS,
    fold,
    fold_with_offsets,
    keyword_fold,
    without_article,
)
from sidecar.retrieve.function_words import BY_LANGUAGE, ELIDED, FUNCTION_WORDS

# A word keeps its combining marks: an Arabic word its vowel marks, a Hindi or Tamil word its vowel signs
# (\w has none of them, and "सिंक" fell apart into "स" and "क": the bands counted consonants and the
# snippets marked function words). FTS5 cuts such a word at its marks the same way in notes and queries.
WORD = re.compile(f"[\\w{MARKS}]+")
# Hebrew writes "and", "that", "when", "in", "as", "to", "from" and "the" as letters in front of the word, in
# that order: "בהגדרות" is "in the settings", "וכשהקובץ" "and when the file". Which first letters are such a
# prefix only a dictionary knows ("הגדרות" itself begins with a ה of its own), so a query's word is looked up
# as itself or less each letter run that may be one (hebrew_stems): "בהגדרות" finds "הגדרות". At least three
# letters stay. The index holds words as written (docs/ranking.md: holding the stems too cost help-he 0.03).
HEBREW_PREFIX = "ו?(?:ש|כש)?[בכלמ]?ה?"
HEBREW_LETTER = re.compile("[\u05d0-\u05ea]")
_HEBREW_PREFIX = re.compile(HEBREW_PREFIX)
MIN_HEBREW_STEM = 3
MAX_HEBREW_PREFIX = 4  # ו + כש + ה, the longest run the pattern allows


def hebrew_stems(word: str) -> list[str]:
    """A Hebrew word less each run of letters at its start that may be prefixes, longest stem first."""
    if not HEBREW_LETTER.match(word):
        return []
    return [word[i:] for i in range(1, min(MAX_HEBREW_PREFIX, len(word) - MIN_HEBREW_STEM) + 1)
            if _HEBREW_PREFIX.fullmatch(word, 0, i)]


PHRASE = re.compile(r'"([^"]+)"')
SPACES = re.compile(r"\s+")
# Most queries are a handful of words; a pasted page would make FTS5 slow for no gain.
MAX_TERMS = 32  # a CJK sentence of 30 characters is 29 bigrams
# Russian and Ukrainian words change their endings with case and number ("заметка", "заметку", "заметки"),
# and FTS5's Porter stemmer reads English alone: a Cyrillic word of five letters or more is looked up as the
# prefix left when its ending is taken off ("заметк*"), at least MIN_STEM letters of it. The endings are
# those of nouns, adjectives and the infinitive ("приготовить" finds "приготовление"); a verb's present and
# past endings (-ет, -ит, -ат, -ал) end too many nouns ("привет", "кредит", "формат", "канал") to be taken
# off without a dictionary.
CYRILLIC_WORD = re.compile(r"[а-яєіїґ]{5,}")
_ENDINGS = ("ться тся ить ать ять еть ыть уть ть ити ати ти "  # infinitives (Russian, Ukrainian)
            "иями ями ами ого его ому ему ыми ими ой ей ий ый ая яя ое ее ые ие ую юю ов ев ах ях ам ям ом ию ия ии ів "
            "а я ы и у ю е о ь й і ї")
CYRILLIC_ENDINGS = tuple(sorted(_ENDINGS.split(), key=len, reverse=True))  # the longest that fits is taken off
MIN_STEM = 4
# Porter reads English alone: in a submitted query, a word of this many letters or more is also looked up as
# the start of longer ones ("kartoffel" finds "Kartoffeln", "skabelon" "skabeloner"). Within noise on every
# dev set (docs/ranking.md); a typed query already takes its last word as a prefix, and more cost it.
MIN_PREFIX_WORD = 6
# A compound the vault has only apart ("Programmfenster", "Zwischenüberschriften") is looked up by its two
# parts, each a word of the vault (corpus-based splitting, after Koehn and Knight 2003): German, Dutch and
# the Nordic languages write such words solid. Only for a word the vault does not have at all, of
# MIN_COMPOUND letters or more, and parts of MIN_COMPOUND_PART or more ("household" stays whole).
MIN_COMPOUND = 10
MIN_COMPOUND_PART = 5
SINGLE_WORD_PART = re.compile(r'"([^\W\d_]+)"(?: \*)?')


@dataclass(frozen=True, slots=True)
class LexicalQuery:
    match: str | None  # FTS5 MATCH expression (any term), None when the text has no searchable term
    terms: tuple[str, ...]  # lower-cased words and CJK bigrams, for snippets and coverage
    parts: tuple[str, ...] = ()  # the quoted FTS5 terms and phrases
    fallback: str | None = None  # single CJK characters, OR-ed: tried when no bigram matches
    phrases: tuple[str, ...] = ()  # the quoted phrases' FTS5 expressions: a hit's note must hold each one
    apart: tuple[tuple[str, str], ...] = ()  # a camelCase word's term and its words as a phrase, also searched

    @property
    def match_all(self) -> str | None:
        """Every term required: an intersection of posting lists, fast even when each term is common."""
        return " AND ".join(self.parts) if self.parts else None


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _cjk_term(gram: str) -> str:
    return "cjk : " + _quote(gram) + (" *" if is_short_gram(gram) else "")


def _cjk_phrase(run: str) -> str:
    """The run as consecutive grams: an exact substring."""
    return "cjk : " + _quote(" ".join(char_grams(run)))


def _add_pictographs(piece: str, parts: list[str], terms: list[str]) -> None:
    """The emoji of a piece of the query, each a term of its own, matched in the `cjk` column (cjk.cjk_tokens)."""
    if piece.isascii():
        return
    for emoji in PICTOGRAPH.findall(piece):
        parts.append(_cjk_term(pictograph_token(emoji)))
        terms.append(emoji)


def build_query(text: str, prefix_last: bool = True, drop_stopwords: bool = True) -> LexicalQuery:
    """Quoted phrases stay phrases; other words are OR-ed (BM25 ranks notes with more of them first).
    A run of an unspaced script (CJK, Thai...) becomes its bigrams, each a term of the OR; an emoji
    is a term of its own.
    Search-as-you-type drops function words and takes the last word as a prefix; a submitted
    question keeps its words (`prefix_last=False, drop_stopwords=False`)."""
    parts: list[str] = []
    terms: list[str] = []
    singles: list[str] = []
    required: list[str] = []
    apart: dict[str, str] = {}
    phrases = PHRASE.findall(text)
    rest = PHRASE.sub(" ", text)
    for phrase in phrases:
        for is_cjk, piece in split_cjk_runs(phrase):
            words = [piece] if is_cjk else WORD.findall(piece)
            _add_pictographs(piece, parts, terms)
            if not words:
                continue
            required.append(_cjk_phrase(piece) if is_cjk else _quote(" ".join(words)))
            parts.append(required[-1])
            terms += char_grams(piece) if is_cjk else [w.lower() for w in words]
    tokens = [tok for tok in rest.split() if WORD.search(tok) or PICTOGRAPH.search(tok)]
    content = [tok for tok in tokens if not is_function_token(tok)]
    function_words = set(tokens) - set(content)
    if drop_stopwords and (content or phrases):
        tokens = content
    for i, token in enumerate(tokens):
        for is_cjk, piece in split_cjk_runs(token):
            if is_cjk:
                grams = query_grams(piece)
                parts += [_cjk_term(g) for g in grams]
                terms += grams
                singles += unigrams(piece)
                continue
            words = WORD.findall(piece)
            _add_pictographs(piece, parts, terms)
            if not words:
                continue
            if not (content and token in function_words):  # a function word is searched, never a term to mark
                terms += [_term(w) for w in past_elision(token, words)]
            spelled_apart = _spelled_apart(words)
            last = i == len(tokens) - 1 and prefix_last and not text.endswith((" ", '"'))
            if len(words) == 1:  # a word as the keyword index folds it (fold.keyword_variants); phrases stay
                words = [keyword_fold(words[0].lower())]
            if last and len(words) == 1 and len(words[0]) >= 2:
                parts.append(_quote(words[0]) + " *")  # the word being typed
            elif len(words) == 1 and CYRILLIC_WORD.fullmatch(words[0]):
                parts.append(_quote(without_ending(words[0])) + " *")
            elif not prefix_last and len(words) == 1 and len(words[0]) >= MIN_PREFIX_WORD and words[0].isalpha():
                parts.append(_quote(words[0]) + " *")  # "kartoffel" finds "Kartoffeln"
            else:
                parts.append(_quote(" ".join(words)))
            # "garbleText" also finds "Garble Text" and "garble-text"; "בהגדרות" ("in the settings") "הגדרות", "גדרות"
            also = list(spelled_apart.values()) or [_quote(stem) for stem in hebrew_stems(words[0]) if len(words) == 1]
            if also:
                parts[-1] = _or_also(parts[-1], also)
                apart.update(spelled_apart)
    parts = list(dict.fromkeys(parts))[:MAX_TERMS]
    fallback = " OR ".join(_cjk_term(c) for c in dict.fromkeys(singles)) if len(set(singles)) > 1 else None
    return LexicalQuery(" OR ".join(parts) if parts else None, tuple(dict.fromkeys(terms)), tuple(parts), fallback,
                        tuple(dict.fromkeys(required)), tuple(apart.items()))


def _or_also(part: str, alternatives: list[str]) -> str:
    """The query part or any of its alternatives; a prefix (the word being typed) stays a prefix."""
    star = " *" if part.endswith(" *") else ""
    return "(" + " OR ".join([part, *(alternative + star for alternative in alternatives)]) + ")"


CAMEL_HUMP = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
CAMEL_BOUNDARY = re.compile(r"[a-z][A-Z]")


def camel_humps(word: str) -> list[str]:
    """A camelCase word's humps ("garbleText": garble, Text), when it has two or more of two letters or more."""
    if not CAMEL_BOUNDARY.search(word):
        return []
    humps = CAMEL_HUMP.findall(word)
    return humps if len(humps) >= 2 and all(len(h) >= 2 for h in humps) else []


def _spelled_apart(words: list[str]) -> dict[str, str]:
    """Each camelCase word's term and its humps as a phrase: {"garbletext": '"garble text"'}."""
    return {_term(word): _quote(" ".join(humps).lower()) for word in words if (humps := camel_humps(word))}


def compound_word(part: str) -> str | None:
    """The word of a query part that may be a compound, else None."""
    m = SINGLE_WORD_PART.fullmatch(part)
    return m.group(1) if m and may_be_compound(m.group(1)) else None


def may_be_compound(word: str) -> bool:
    """One word of letters, MIN_COMPOUND or more."""
    return len(word) >= MIN_COMPOUND and word.isalpha()


# A word of MIN_ENDING_WORD letters or more that no section holds is looked up by its longest start that
# some word begins with, of at least MIN_START letters and START_SHARE of the word (docs/ranking.md).
MIN_ENDING_WORD = 7
MIN_START = 5
START_SHARE = 0.6


def ending_word(part: str) -> str | None:
    """The word of a query part that may carry an ending to look past, else None."""
    m = SINGLE_WORD_PART.fullmatch(part)
    return m.group(1) if m and may_carry_ending(m.group(1)) else None


def may_carry_ending(word: str) -> bool:
    """A word of MIN_ENDING_WORD letters or more, whose ending the vault may write otherwise. Cyrillic words
    have their own list of endings (without_ending)."""
    return len(word) >= MIN_ENDING_WORD and word.isalpha() and not CYRILLIC_WORD.fullmatch(word)


def start_cuts(word: str) -> range:
    """Lengths of the word's starts to look up, longest first: an inflection Porter does not know (Italian
    "collegarmi" in a vault that says "collegare", Turkish "notlarimi" where it says "notlarinizi")."""
    return range(len(word) - 1, max(MIN_START, math.ceil(len(word) * START_SHARE)) - 1, -1)


def compound_splits(word: str) -> Iterator[tuple[str, str]]:
    """Every way to read the word as two parts of MIN_COMPOUND_PART letters or more; a first part ending in
    the German linking s is also offered without it ("arbeitsbereich": "arbeit" + "bereich")."""
    for i in range(MIN_COMPOUND_PART, len(word) - MIN_COMPOUND_PART + 1):
        left, right = word[:i], word[i:]
        yield left, right
        if left.endswith("s") and len(left) > MIN_COMPOUND_PART:
            yield left[:-1], right


ELIDED_START = re.compile(r"\W*+(\w+)['’]\w")


def past_elision(token: str, words: list[str]) -> list[str]:
    """The token's words less an elided article, pronoun or preposition at its start ("l'érable" -> érable,
    "dell'app" -> app), which is no term; "can't" and "player's" are English words as they are."""
    start = ELIDED_START.match(token)
    return words[1:] if len(words) > 1 and start is not None and start.group(1).lower() in ELIDED else words


def _term(word: str) -> str:
    """A query word as a term: lowered; an Arabic one folded and without its article, as the text is read."""
    return without_article(fold(word)) if ARABIC_LETTER.search(word) else word.lower()


def is_function_token(token: str) -> bool:
    """A query token made of function words alone: "¿cómo", "qu'est-ce", "j'ai" (its words, punctuation and an
    elided start aside; "D&D" is two letters, not two elided articles)."""
    words = past_elision(token, WORD.findall(token.lower()))
    return bool(words) and all(w in FUNCTION_WORDS for w in words)


# German's function words that no other language's list has, less English words ("die", "bin", "hat", "im")
GERMAN_WORDS = frozenset(BY_LANGUAGE["de"].split()).difference(
    *(words.split() for language, words in BY_LANGUAGE.items() if language != "de"), ("die", "bin", "hat", "im"))


def typed_out(text: str) -> str:
    """The text less the word being typed (search-as-you-type's last word, nothing after it yet): "notes about
    Proxm" names no "Proxm"; "an app for the Apple Watch?" names "Apple Watch", whose "?" ends it."""
    if not WORD.fullmatch(text[-1:]):
        return text
    return text.rsplit(maxsplit=1)[0] if " " in text.strip() else ""


def query_names(query: str) -> frozenset[str]:
    """The query's words written with a capital past its first word ("Dune", "Osaka", "Miles Davis", "GDPR"),
    lowered as terms are: names, which a vault either has or does not, whatever its size. None in a German
    query (a function word of German in it), which capitalises every noun."""
    return frozenset(w.lower() for run in _name_runs(query) for w in run)


def query_name_phrases(query: str) -> frozenset[str]:
    """The query's names of several words side by side ("Apple Watch", "Microsoft Teams", "Google Calendar"),
    lowered: one thing each, which a vault holding its words apart ("Apple", a YouTube "watch" link) lacks."""
    return frozenset(" ".join(run).lower() for run in _name_runs(query) if len(run) > 1)


TITLE_CASE_SHARE = 2 / 3  # past this share of capitalised words, a query is written in Title Case: no names


def _name_runs(query: str) -> list[list[str]]:
    """The runs of words written with a capital past the query's first word; none in a German query, nor in one
    written in Title Case ("How To Use Dataview Tasks", "Daily Note Template"), where a capital names nothing.
    A letter alone is a run of its own: "can I Google it" names no "I Google"."""
    words = [w for token in query.split() for w in WORD.findall(token)]
    if any(w.lower() in GERMAN_WORDS for w in words):
        return []
    capitals = sum(w[:1].isupper() for w in words[1:])
    if capitals >= 2 and capitals > TITLE_CASE_SHARE * len(words[1:]):
        return []
    runs: list[list[str]] = []
    joins = False  # the word before may start or carry on a run
    for word in words[1:]:
        capital = word[:1].isupper()
        if capital and joins:
            runs[-1].append(word)
        elif capital:
            runs.append([word])
        joins = capital and len(word) > 1
    return runs


def without_ending(word: str) -> str:
    """A Cyrillic word less its longest known ending, when MIN_STEM letters stay (the word itself if none)."""
    for ending in CYRILLIC_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            return word[: -len(ending)]
    return word


@dataclass(frozen=True, slots=True)
class Snippet:
    text: str
    highlights: tuple[tuple[int, int], ...]  # code-point offsets into text


SHORT_TERM = 2  # letters: a word this short ("l" of "l'erreur", "в") is found whole, never as another's start


@functools.lru_cache(maxsize=4096)
def term_stem(term: str) -> str:
    """What of a word term a text must hold at a word's start: the term less two letters; a Cyrillic word
    less its ending, as the keyword index looks it up ("приготовить" holds "приготовление")."""
    return without_ending(term) if CYRILLIC_WORD.fullmatch(term) else term[: max(4, len(term) - 2)]


def is_word_term(term: str) -> bool:
    """A word of a spaced script, matched at word starts; the rest (bigrams, emoji, `a_b`) anywhere."""
    return term.isalnum() and not UNSPACED_CHAR.search(term)


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str]:
    """Where a folded query term (fold.py) is in folded text. A run of an unspaced script (its bigrams)
    or an emoji: anywhere. A word: at the start of a word, by its stem ("locking" finds "locked"), `_`
    parting words; one of one or two letters only as a whole word."""
    if not is_word_term(term):
        return re.compile(re.escape(term))
    start = _word_start(term)
    if len(term) <= SHORT_TERM:
        return re.compile(rf"{start}{re.escape(term)}(?![^\W_])")
    return re.compile(rf"{start}{re.escape(term_stem(term))}")


@functools.lru_cache(maxsize=4096)
def mark_pattern(term: str) -> re.Pattern[str]:
    """Where to mark a folded term: as term_pattern, but a word by the whole term, not its stem (the
    stem finds "locked" for "locking"; marked, "rest" of "restic" would light up every "Restore")."""
    if not is_word_term(term) or len(term) <= SHORT_TERM:
        return term_pattern(term)
    return re.compile(rf"{_word_start(term)}{re.escape(marked_form(term))}")


def marked_form(term: str) -> str:
    """What of a folded term a snippet marks (and the word it starts, whole): the term; a Cyrillic word as
    the keyword index found it, without its ending ("борщом" marks "борща")."""
    return without_ending(term) if CYRILLIC_WORD.fullmatch(term) else term


def _word_start(term: str) -> str:
    """Where a word term may start: at a word's start ("_" parts words too); an Arabic one also after the
    article written inside the word, a Hebrew one after the prefixes written so (HEBREW_PREFIX)."""
    if ARABIC_LETTER.search(term):
        return rf"(?<![^\W_]){ARABIC_ARTICLE}?"
    return rf"(?<![^\W_]){HEBREW_PREFIX}" if HEBREW_LETTER.search(term) else r"(?<![^\W_])"


def holds_term(folded_text: str, folded_term: str) -> bool:
    """Whether the text holds the term, both folded: term_pattern's rule, its common case (a word's stem
    at a word's start) by str.find, which a search of 30 hits' sections asks thousands of times."""
    if not folded_term:
        return False
    if not is_word_term(folded_term):
        return folded_term in folded_text
    stem = _found_by_find(folded_term)
    if stem is None:
        return folded_term in folded_text and term_pattern(folded_term).search(folded_text) is not None
    at = folded_text.find(stem)
    while at != -1:
        if at == 0 or not folded_text[at - 1].isalnum():  # regex (?<![^\W_]): "_" parts words too
            return True
        at = folded_text.find(stem, at + 1)
    return False


@functools.lru_cache(maxsize=4096)
def _found_by_find(term: str) -> str | None:
    """The stem holds_term looks for with str.find, or None where only term_pattern can tell: a word of one or
    two letters (whole words only), an Arabic or Hebrew word (after its article or prefixes too). Once per term,
    not per section."""
    return None if len(term) <= SHORT_TERM or ARABIC_LETTER.search(term) or HEBREW_LETTER.search(term) else term_stem(term)


def _term_spans(text: str, terms: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where the terms are in `text`, as offsets into it: found in its folded form, so "cafe" marks
    "Café" and an "İ" before a word does not shift its mark."""
    folded, offsets = fold_with_offsets(text)
    spans: list[tuple[int, int]] = []
    for term in dict.fromkeys(fold(t) for t in terms):
        if not term or marked_form(term) not in folded:
            continue
        whole_word = is_word_term(term)
        for match in mark_pattern(term).finditer(folded):
            end = match.end()
            while whole_word and end < len(folded) and folded[end].isalnum():
                end += 1  # words match at word starts, so "lock" marks "locked" (the stemmer matched it too)
            spans.append((match.start(), end))
            if len(spans) >= 200:
                break
        if len(spans) >= 200:
            break
    if offsets is not None:
        spans = [(offsets[s], offsets[e]) for s, e in spans]
    return sorted(spans)


def make_snippet(text: str, terms: tuple[str, ...], width: int = 220) -> Snippet:
    """The window of `width` characters with the most matched terms, trimmed at word boundaries."""
    flat = SPACES.sub(" ", text).strip()
    spans = _term_spans(flat, terms)
    if len(flat) <= width:
        return Snippet(flat, tuple(_merge(spans)))
    start = _best_window(spans, width) if spans else 0
    start = max(0, flat.rfind(" ", 0, start) + 1) if start else 0
    end = min(len(flat), start + width)
    if end < len(flat):
        cut = flat.rfind(" ", start + width // 2, end)
        end = cut if cut > 0 else end
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    body = flat[start:end]
    shifted = [(s - start + len(prefix), e - start + len(prefix)) for s, e in spans if s >= start and e <= end]
    return Snippet(prefix + body + suffix, tuple(_merge(shifted)))


def _best_window(spans: list[tuple[int, int]], width: int) -> int:
    best_start, best_count, j = spans[0][0], 0, 0
    starts = [x[0] for x in spans]
    for i, (s, _e) in enumerate(spans):
        while spans[j][0] < s - width // 3:
            j += 1
        # Only spans starting inside the window can end inside it: the scan stops there (was every later span).
        inside = bisect.bisect_right(starts, s + width, lo=i)
        count = sum(1 for x in spans[i:inside] if x[1] <= s + width) + (i - j)
        if count > best_count:
            best_start, best_count = spans[j][0], count
    return max(0, best_start - 30)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


# `[[Target]]`, `[[Target#Heading]]`, `![[Target]]`, `[[Target|alias]]`: group 1 the target, group 2 the alias.
LINK_TARGET = re.compile(r"!?\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")


def without_link_targets(text: str) -> str:
    """The text less the names of the notes it links to: `[[Target|alias]]` keeps its alias, `[[Target]]`
    goes. A word found only in a link's target is a mention of that note, not this section's subject."""
    return LINK_TARGET.sub(lambda m: f" {m.group(2) or ''} ", text) if "[[" in text else text

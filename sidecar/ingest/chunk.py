"""Split a parsed note into retrieval chunks.

The body is cut at H1/H2 headings. A section longer than `max_chars` is cut at
H3, then H4, H5, H6; what is still too long is packed greedily: as many whole
paragraphs as fit, else as many whole lines, else one huge line is hard-cut.
Fenced code is never cut unless one fence alone is too long; its pieces are then
re-fenced so each stays valid markdown. A cut table repeats its header and
separator rows. Pieces with almost no text are merged into a neighbour, so no
content disappears and no chunk is just a heading.

Everything works on line offsets and searches bounded windows, so a 20 MB note
costs O(size) plus O(max_chars) per chunk, never a pass per character in Python.

A chunk's `heading_path` is the chain of headings enclosing its first line (a
heading on that line included); when a tiny piece was folded in, the path of the
larger part wins. Its `text` is the original lines
`start_line..end_line`, except for the repeated table header and re-opened or
closed fence lines described above, which are not in the line range.

A note's properties become a chunk of their own, first, when they say more than
its body (properties_text): their words, one line a property, over the lines of
the frontmatter.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import pairwise

from sidecar.config import Settings
from sidecar.ingest.parse import TEMPLATE_VARIABLE, FenceSpan, bounded_text, find_fences, is_template, property_link
from sidecar.notes import Chunk, ParsedNote

# Heading levels that cut a section, tried in turn while it is too long.
_STAGES: tuple[frozenset[int], ...] = (
    frozenset({1, 2}),
    frozenset({3}),
    frozenset({4}),
    frozenset({5}),
    frozenset({6}),
)
_NEWLINE = re.compile(r"\n")
_NON_SPACE = re.compile(r"\S")
# The LAST blank line of a window: the greedy prefix backs off linearly, in C.
_LAST_BLANK = re.compile(r"(?s:.*)\n[^\S\n]*+(?=\n|\Z)")
# A GFM delimiter row: only "|", ":", "-" and blanks, with at least one "|" and "-".
_TABLE_SEPARATOR = re.compile(r"^(?=[ \t:-]*+\|)(?=[ \t:|]*+-)[ \t:|-]++$", re.MULTILINE)
_TABLE_ROWS = re.compile(r"(?:[^|\n]*+\|[^\n]*+(?:\n|\Z))*+")


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int  # 0-based body line, inclusive
    end: int
    text: str
    path: tuple[str, ...] = ()  # filled in once all pieces exist
    fragment: bool = False  # a bare slice of one hard-split line


class _Doc:
    """The body as line offsets plus the structure the splitter needs."""

    def __init__(self, note: ParsedNote, max_chars: int) -> None:
        self.body = note.body
        self.max_chars = max_chars
        self.starts = array("q", [0])  # offset of each line; compact for huge notes
        self.starts.extend(m.end() for m in _NEWLINE.finditer(self.body))
        self.count = len(self.starts)
        self.fences = find_fences(self.body)
        self._fence_firsts = [f.first for f in self.fences]
        self.headings = self._usable_headings(note)
        self._heading_lines = [line for line, _, _ in self.headings]
        self._tables = self._find_tables()
        self._table_heads = [head for head, _ in self._tables]

    # -- lines and offsets

    def line_end(self, i: int) -> int:
        return self.starts[i + 1] - 1 if i + 1 < self.count else len(self.body)

    def line(self, i: int) -> str:
        return self.body[self.starts[i] : self.line_end(i)]

    def text(self, a: int, b: int) -> str:
        return self.body[self.starts[a] : self.line_end(b)]

    def size(self, a: int, b: int) -> int:
        return self.line_end(b) - self.starts[a]

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def last_line_within(self, limit: int) -> int:
        """The last line whose end offset is <= limit (-1 if none)."""
        return bisect_right(self.starts, limit + 1) - 2

    def trim(self, a: int, b: int) -> tuple[int, int]:
        """Shrink [a, b] to its first and last non-blank lines; (a, a - 1) if all blank."""
        lo, hi = self.starts[a], self.line_end(b)
        first = _NON_SPACE.search(self.body, lo, hi)
        if first is None:
            return a, a - 1
        last = lo + len(self.body[lo:hi].rstrip()) - 1
        return self.line_of(first.start()), max(self.line_of(first.start()), self.line_of(last))

    def next_content(self, i: int, b: int) -> int:
        """The first non-blank line in [i, b], or b + 1."""
        if i > b:
            return b + 1
        found = _NON_SPACE.search(self.body, self.starts[i], self.line_end(b))
        return b + 1 if found is None else self.line_of(found.start())

    # -- structure

    def fence_at(self, i: int) -> FenceSpan | None:
        k = bisect_left(self._fence_firsts, i)
        return self.fences[k] if k < len(self.fences) and self.fences[k].first == i else None

    def fence_around(self, i: int) -> FenceSpan | None:
        """The fence that a cut after line i would break (first <= i < last)."""
        k = bisect_right(self._fence_firsts, i) - 1
        return self.fences[k] if k >= 0 and self.fences[k].last > i else None

    def headings_in(self, a: int, b: int) -> list[tuple[int, int, str]]:
        lo, hi = bisect_left(self._heading_lines, a), bisect_right(self._heading_lines, b)
        return self.headings[lo:hi]

    def is_heading(self, i: int) -> bool:
        k = bisect_left(self._heading_lines, i)
        return k < len(self._heading_lines) and self._heading_lines[k] == i

    def table_prefix(self, i: int) -> str:
        """Header and separator rows when line i is a table body row, else ""."""
        k = bisect_right(self._table_heads, i) - 1
        if k < 0:
            return ""
        head, last = self._tables[k]
        return self.text(head, head + 1) if head + 2 <= i <= last else ""

    def is_table_header(self, i: int) -> bool:
        k = bisect_left(self._table_heads, i)
        return k < len(self._tables) and self._table_heads[k] == i

    def _usable_headings(self, note: ParsedNote) -> list[tuple[int, int, str]]:
        found: dict[int, tuple[int, int, str]] = {}
        for h in note.headings:
            i = h.line - note.body_start_line
            if 0 <= i < self.count and 1 <= h.level <= 6 and not self._in_fence(i):
                found.setdefault(i, (i, h.level, h.text))
        return sorted(found.values())

    def _in_fence(self, i: int) -> bool:
        k = bisect_right(self._fence_firsts, i) - 1
        return k >= 0 and self.fences[k].last >= i

    def _find_tables(self) -> list[tuple[int, int]]:
        tables: list[tuple[int, int]] = []
        if "|" not in self.body:
            return tables
        for m in _TABLE_SEPARATOR.finditer(self.body):
            sep = self.line_of(m.start())
            head = sep - 1
            if head < 0 or "|" not in self.line(head) or self._in_fence(sep) or self._in_fence(head):
                continue
            if tables and tables[-1][1] >= head:  # a "separator" inside the previous table
                continue
            tables.append((head, self._last_row(sep)))
        return tables

    def _last_row(self, sep: int) -> int:
        if sep + 1 >= self.count:
            return sep
        start = self.starts[sep + 1]
        rows = _TABLE_ROWS.match(self.body, start)
        end = rows.end() if rows else start
        return sep if end == start else self.line_of(end - 1)

    # -- pieces

    def piece(self, a: int, b: int, prefix: str = "") -> _Piece:
        a, b = self.trim(a, b)
        text = self.text(a, b)
        return _Piece(a, b, f"{prefix}\n{text}" if prefix else text)


# --- splitting ---------------------------------------------------------------------


def _split(doc: _Doc, a: int, b: int, stage: int) -> list[_Piece]:
    a, b = doc.trim(a, b)
    if a > b:
        return []
    # H1/H2 always cut (stage 0); deeper levels only cut what is too long.
    if stage > 0 and doc.size(a, b) <= doc.max_chars:
        return [doc.piece(a, b)]
    if stage == len(_STAGES):
        return _pack(doc, a, b, fenced=True)
    cuts = [line for line, level, _ in doc.headings_in(a + 1, b) if level in _STAGES[stage]]
    bounds = [a, *cuts, b + 1]
    return [p for lo, hi in pairwise(bounds) for p in _split(doc, lo, hi - 1, stage + 1)]


def _pack(doc: _Doc, a: int, b: int, fenced: bool) -> list[_Piece]:
    """Greedy pieces of [a, b]; with `fenced`, code fences are kept whole if they fit."""
    pieces: list[_Piece] = []
    cur = a
    while cur <= b:
        fence = doc.fence_at(cur) if fenced else None
        if fence is not None and doc.size(cur, min(fence.last, b)) > doc.max_chars:
            pieces += _split_fence(doc, fence, b)
            after = min(fence.last, b) + 1
        else:
            after = _pack_one(doc, cur, b, fenced, pieces)
        cur = doc.next_content(after, b)
    return pieces


def _pack_one(doc: _Doc, cur: int, b: int, fenced: bool, pieces: list[_Piece]) -> int:
    """Append the piece starting at line `cur`; return the line after it."""
    prefix = doc.table_prefix(cur)
    budget = doc.max_chars - len(prefix) - 1
    if not prefix or doc.size(cur, cur) > budget:  # no table, or no room to repeat its header
        prefix, budget = "", doc.max_chars
    end = _cut(doc, cur, b, budget, fenced)
    if end < cur:
        pieces += _hard_split(doc, cur)
        return cur + 1
    pieces.append(doc.piece(cur, end, prefix))
    return end + 1


def _cut(doc: _Doc, cur: int, b: int, budget: int, fenced: bool) -> int:
    """The last line of a piece starting at `cur` that fits `budget`: after a
    paragraph if possible, else after a line; cur - 1 if line `cur` alone is too long."""
    limit = doc.starts[cur] + budget
    if doc.line_end(b) <= limit:
        return b
    last = min(doc.last_line_within(limit), b)
    if last < cur:
        return cur - 1
    paragraph = _paragraph_cut(doc, cur, last, fenced)
    return paragraph if paragraph >= cur else _line_cut(doc, cur, last, fenced)


def _paragraph_cut(doc: _Doc, cur: int, last: int, fenced: bool) -> int:
    """The last line e in [cur, last] followed by a blank line outside code, or -1."""
    hi = doc.line_end(min(last + 1, doc.count - 1))
    while True:
        m = _LAST_BLANK.match(doc.body, doc.starts[cur], hi)
        if m is None:
            return -1
        end = doc.line_of(m.end()) - 1
        fence = doc.fence_around(end) if fenced else None
        if fence is None:
            return end
        if fence.first <= cur:  # a blank line inside code is no paragraph break
            return -1
        hi = doc.starts[fence.first] - 1  # look before that fence


def _line_cut(doc: _Doc, cur: int, last: int, fenced: bool) -> int:
    end = last
    fence = doc.fence_around(end) if fenced else None
    if fence is not None and fence.first > cur:  # stop before the fence rather than inside it
        end = fence.first - 1
    if end > cur and doc.is_table_header(end):  # keep a header with its separator row
        end -= 1
    return end


def _segments(line: str, size: int) -> list[str]:
    """`line` cut into pieces of at most `size` chars, after a space when one is near the end."""
    out: list[str] = []
    pos = 0
    while pos < len(line):
        end = min(pos + size, len(line))
        if end < len(line):
            space = line.rfind(" ", pos + size // 2, end)
            if space >= 0:
                end = space + 1
        out.append(line[pos:end])
        pos = end
    return out


def _hard_split(doc: _Doc, i: int) -> list[_Piece]:
    segments = _segments(doc.line(i), doc.max_chars)
    return [_Piece(i, i, seg, fragment=True) for seg in segments if not seg.isspace()]


def _split_fence(doc: _Doc, fence: FenceSpan, b: int) -> list[_Piece]:
    """Cut one too-long code fence into pieces that each open and close the fence."""
    last = min(fence.last, b)
    closed = fence.closed and fence.last <= b
    opener = doc.line(fence.first)
    closer = doc.line(last) if closed else fence.marker
    inner_first, inner_last = fence.first + 1, last - 1 if closed else last
    budget = doc.max_chars - len(opener) - max(len(closer), len(fence.marker)) - 2
    if budget < max(1, doc.max_chars // 4) or inner_first > inner_last:
        return _pack(doc, fence.first, last, fenced=False)  # markers too long to repeat
    groups = _fence_groups(doc, inner_first, inner_last, budget)
    pieces: list[_Piece] = []
    for n, (lo, hi, code) in enumerate(groups):
        final = n == len(groups) - 1
        end_marker = closer if final else fence.marker
        start = fence.first if n == 0 else lo
        end = last if final and closed else hi
        pieces.append(_Piece(start, end, f"{opener}\n{code}\n{end_marker}"))
    return pieces


def _fence_groups(doc: _Doc, a: int, b: int, budget: int) -> list[tuple[int, int, str]]:
    groups: list[tuple[int, int, str]] = []
    cur = a
    while cur <= b:
        end = min(doc.last_line_within(doc.starts[cur] + budget), b)
        if end < cur:  # one code line longer than the budget
            groups += [(cur, cur, seg) for seg in _segments(doc.line(cur), budget)]
            end = cur
        else:
            groups.append((cur, end, doc.text(cur, end)))
        cur = end + 1
    return groups


# --- merging, paths, output --------------------------------------------------------


def _weight(text: str) -> int:
    return len("".join(text.split()))


def _join(doc: _Doc, a: _Piece, b: _Piece) -> _Piece:
    if b.start > a.end:  # the original text between them: "\n" plus trimmed blank lines
        gap = doc.body[doc.line_end(a.end) : doc.starts[b.start]]
    else:  # two slices of one line rejoin; anything else (re-fenced code) stays on its own lines
        gap = "" if a.fragment and b.fragment else "\n"
    # The heavier part names the chunk: a lone "## Empty" heading folded into
    # the next section must not relabel that section.
    path = a.path if _weight(a.text) > _weight(b.text) else b.path
    return _Piece(a.start, max(a.end, b.end), a.text + gap + b.text, path, a.fragment and b.fragment)


def _merge_tiny(doc: _Doc, pieces: list[_Piece], min_chars: int) -> list[_Piece]:
    """Fold pieces with fewer than `min_chars` non-blank characters into a
    neighbour; keep them alone when no neighbour has room.

    A tiny piece that opens with a heading belongs with what follows it (an
    empty "## Ideas" heading); any other tiny piece is the tail of what precedes
    it (the last words of a cut line), so it goes back first."""
    out: list[_Piece] = []
    carry: _Piece | None = None  # a tiny piece waiting for the next one
    for original in pieces:
        piece = original
        if carry is not None:
            joined = _join(doc, carry, piece)
            if len(joined.text) <= doc.max_chars:
                piece = joined
            else:
                _append_backward(doc, out, carry)
            carry = None
        if _weight(piece.text) >= min_chars:
            out.append(piece)
        elif doc.is_heading(piece.start) or not _try_backward(doc, out, piece):
            carry = piece
    if carry is not None:
        _append_backward(doc, out, carry)
    return out


def _try_backward(doc: _Doc, out: list[_Piece], piece: _Piece) -> bool:
    if not out:
        return False
    joined = _join(doc, out[-1], piece)
    if len(joined.text) > doc.max_chars:
        return False
    out[-1] = joined
    return True


def _append_backward(doc: _Doc, out: list[_Piece], piece: _Piece) -> None:
    if not _try_backward(doc, out, piece):
        out.append(piece)


def _with_paths(doc: _Doc, pieces: list[_Piece]) -> list[_Piece]:
    """Each piece with the headings enclosing its first line."""
    out: list[_Piece] = []
    stack: list[tuple[int, str]] = []
    k = 0
    for piece in pieces:  # pieces are in line order
        while k < len(doc.headings) and doc.headings[k][0] <= piece.start:
            _, level, text = doc.headings[k]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
            k += 1
        path = tuple(text for _, text in stack)
        out.append(_Piece(piece.start, piece.end, piece.text, path, piece.fragment))
    return out


MAX_CONTEXT_CHARS = 1000  # every chunk repeats it: 100k tags must not put megabytes into each chunk


def note_context(note: ParsedNote) -> str:
    """Title, aliases and tags as one string, e.g. "Title | alias1, alias2 | tag1 tag2" (bounded)."""
    parts = (note.title, ", ".join(note.aliases), " ".join(note.tags))
    return bounded_text(" | ".join(part for part in parts if part), MAX_CONTEXT_CHARS)


def content_hash(heading_path: tuple[str, ...], text: str, context: str) -> str:
    """32 hex chars identifying a chunk's content. Lines and ordinal are left out
    on purpose: a chunk that only moved keeps its identity (and its embedding)."""
    digest = hashlib.blake2b(digest_size=16)
    for field in (str(len(heading_path)), *heading_path, text, context):
        data = field.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))  # length-prefixed: no ambiguous joins
        digest.update(data)
    return digest.hexdigest()


def chunk_note(note: ParsedNote, max_chars: int = Settings.chunk_chars, min_chars: int = 30) -> list[Chunk]:
    """Chunks of the note in order: its properties first when they say more than its body does (a
    book or film card, a Bases catalogue entry: otherwise such a note was found by nothing, not even
    its title), then its body. A note with neither gives none."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    doc = _Doc(note, max_chars)
    pieces = _merge_tiny(doc, _with_paths(doc, _split(doc, 0, doc.count - 1, 0)), min_chars)
    context = note_context(note)
    first = note.body_start_line
    spans = [(piece.path, piece.text, first + piece.start, first + piece.end) for piece in pieces]
    # Title, aliases and tags are every chunk's context; a note with no body has none to carry them.
    properties = properties_text(note.frontmatter, NOT_TEXT_PROPERTIES if spans else NO_WORDS_PROPERTIES)
    # Only then: a chunk of properties beside a body of its own moved every shared dev set within noise,
    # four of five down (docs/ranking.md), and their words in every chunk's context cost help-ko 0.04.
    # A template's properties are a form: its fields name it when it has no body ("Book Template" found
    # Author Template, the book's had no chunk at all), their values (`[[Restaurants]]`) say nothing.
    template = is_template(note.path, note.template_variables)
    if template and not spans and note.frontmatter:
        properties = "fields: " + ", ".join(note.frontmatter)
    if properties and len(note.body.strip()) < len(properties) and (not template or not spans):
        end = max(PROPERTIES_LINE, first - 2)  # the lines between the two "---"
        spans[:0] = [((), text, PROPERTIES_LINE, end) for text in _packed_lines(properties, max_chars)]
    contexts = [context] * len(spans)
    if spans and spans[0][2] != PROPERTIES_LINE and not template:
        contexts[0] = with_facts(context, note.frontmatter)
    return [
        Chunk(ordinal=n, heading_path=path, text=text, start_line=start, end_line=end, context=contexts[n],
              content_hash=content_hash(path, text, contexts[n]))
        for n, (path, text, start, end) in enumerate(spans)
    ]


FACT_WORDS = 4  # a property value of at most this many words is a fact (a name, a genre, a year); longer is prose


def with_facts(context: str, frontmatter: dict[str, object]) -> str:
    """The first chunk's context with the note's short property values: a book card with a review found by
    "Forster" (`author: [[E. M. Forster]]`). Facts only, in the first chunk only: the help vaults' one-line
    `description` in every chunk's context cost help-ko 0.04 (docs/ranking.md)."""
    facts = [w for key, value in frontmatter.items() if key.casefold() not in NOT_TEXT_PROPERTIES
             for w in _property_words(value) if len(w.split()) <= FACT_WORDS]
    return bounded_text(" | ".join((context, ", ".join(facts))), 2 * MAX_CONTEXT_CHARS) if facts else context


def _packed_lines(text: str, max_chars: int) -> list[str]:
    """As many whole lines as fit in each piece; a longer line is cut (no property is lost past the first
    chunk's size, as a 200-property card or an 800-word summary would be)."""
    pieces: list[str] = []
    current = ""
    for line in text.split("\n"):
        for start in range(0, max(len(line), 1), max_chars):
            part = line[start:start + max_chars]
            if current and len(current) + 1 + len(part) > max_chars:
                pieces.append(current)
                current = ""
            current = f"{current}\n{part}" if current else part
    return [*pieces, current] if current else pieces


PROPERTIES_LINE = 2  # where the chunk of a note's properties starts: the line after the opening "---". No
# body chunk of a note with properties starts there (its body starts on line 4 at the earliest).

# Properties that carry no words of the note (classes, flags, the page's address), and those that are
# every chunk's context already (title, aliases, tags).
NO_WORDS_PROPERTIES = frozenset(("cssclass", "cssclasses", "publish", "permalink"))
NOT_TEXT_PROPERTIES = NO_WORDS_PROPERTIES | {"title", "alias", "aliases", "tag", "tags"}
_URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//|^www\.", re.IGNORECASE)
MAX_PROPERTY_DEPTH = 2  # a list of lists is read; deeper structures are data, not words


def properties_text(frontmatter: dict[str, object], left_out: frozenset[str] = NOT_TEXT_PROPERTIES) -> str:
    """A note's properties as searchable lines, `director: Ridley Scott`: what a note made of
    properties alone (a Bases catalogue, a book or film card) says. A link reads as the note it names
    (and the text it shows); URLs, flags (true/false), a template's variables and the `left_out` keys
    say nothing searchable."""
    lines = []
    for key, value in frontmatter.items():
        if key.casefold() in left_out:
            continue
        words = ", ".join(_property_words(value))
        if words:
            lines.append(f"{key}: {words}")
    return "\n".join(lines)


def _property_words(value: object, depth: int = 0) -> list[str]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, list | dict):
        if depth >= MAX_PROPERTY_DEPTH:
            return []
        if isinstance(value, dict):
            return [f"{k} {w}" for k, v in value.items() for w in _property_words(v, depth + 1)]
        return [w for item in value for w in _property_words(item, depth + 1)]
    text = str(value).strip()
    link = property_link(text)
    if link is not None:
        target, shown = link.target, link.display or ""
        text = shown or target
        if shown and target and shown.casefold() != target.casefold():
            text = f"{shown} ({target})"
    return [] if not text or _URL.match(text) or TEMPLATE_VARIABLE.search(text) else [text]

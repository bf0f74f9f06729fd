"""Parse one Obsidian note into a ParsedNote: frontmatter, title, aliases, tags,
headings, block ids and links.

Pure: text in, value out. Notes come from arbitrary vaults, so the parser must
survive hostile input (megabyte lines, YAML bombs, unbalanced brackets, NULs):
every regex below is linear (possessive quantifiers, no ambiguous repetition),
the YAML stage is bounded, and per-note item counts are capped.

Decisions on points Obsidian leaves open or where we deviate from CommonMark:

* A string ``aliases``/``alias`` value is ONE alias (no comma split): Obsidian's
  properties do the same, and titles such as "Smith, John" contain commas.
  Frontmatter ``tags`` strings, by contrast, are split on commas and whitespace.
* Frontmatter keys ``title``, ``aliases``/``alias`` and ``tags``/``tag`` are
  matched case-insensitively; a numeric ``title`` is accepted as text.
* ``[[#Heading]]`` and ``[text](#Heading)`` are kept with ``target == ""``,
  meaning "this note", so same-note references stay visible to link checks.
* YAML aliases (``*name``) are allowed up to MAX_YAML_ALIASES, and the loaded
  structure is capped in size and depth: both stop "billion laughs" documents.
* Code fences may be indented by any whitespace and sit behind ``>`` quote
  markers, because Obsidian nests them in list items (often tab-indented) and
  callouts; CommonMark's "at most 3 spaces" would expose code in those places.
* Inline code spans do not cross line ends: a stray backtick cannot hide the
  headings and links of the following lines.
* Unclosed ``%%`` and ``<!--`` comments run to the end of the note (Obsidian
  hides the rest of the note; CommonMark ends an HTML comment block only at
  ``-->``); an unclosed fence runs to the end too.
* Markdown link destinations follow CommonMark: no raw spaces (``%20`` or
  ``<...>`` instead), one level of balanced parentheses, optional "title".
* Headings whose text is empty after cleaning (``#`` alone) are not recorded.
* Only ATX headings are recognised; wikilinks in frontmatter must be quoted YAML
  strings (an unquoted ``[[x]]`` is a nested YAML list, which Obsidian rejects too).
"""

from __future__ import annotations

import base64
import datetime as dt
import heapq
import math
import re
from array import array
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from operator import itemgetter
from typing import Any, TypeVar
from urllib.parse import unquote

import yaml
from yaml.nodes import Node

from sidecar.ingest.fold import MARKS
from sidecar.ingest.redact import MARKER, redact_read_values
from sidecar.notes import Finding, Heading, Link, LinkKind, ParsedNote

MAX_FRONTMATTER_CHARS = 65_536
MAX_YAML_ALIASES = 8
MAX_YAML_VALUES = 20_000
MAX_YAML_DEPTH = 32
# Per note and per kind (links, headings, tags, block ids): a generated 20 MB
# file must not turn into millions of objects.
MAX_ITEMS = 20_000
# Every chunk of a section stores its heading path, and answers carry titles: one 1.9 MB heading made
# a 2.3 GB index. Real headings and titles are a line; longer ones are cut at a word.
MAX_HEADING_CHARS = 300

_T = TypeVar("_T")

# --- frontmatter -------------------------------------------------------------

_FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*+$", re.MULTILINE)
# More flow openers on one line than we accept levels, with no closer between.
_DEEP_FLOW = re.compile(r"(?:[\[{][^\[\]{}\n]*+){" + str(MAX_YAML_DEPTH + 1) + "}")


class _FrontmatterError(Exception):
    def __init__(self, reason: str, yaml_line: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.yaml_line = yaml_line  # 0-based line inside the YAML text


@dataclass(frozen=True, slots=True)
class _Split:
    yaml_text: str | None  # None when the note has no frontmatter block
    body: str
    body_start_line: int


def _split_frontmatter(text: str) -> _Split:
    first_nl = text.find("\n")
    if first_nl < 0 or text[:first_nl].lstrip("\ufeff").rstrip(" \t") != "---":
        return _Split(None, text, 1)
    close = _FM_CLOSE.search(text, first_nl + 1)
    if close is None:  # an opening "---" alone is a thematic break, not frontmatter
        return _Split(None, text, 1)
    yaml_text = text[first_nl + 1 : close.start()]
    closing_line = 2 + yaml_text.count("\n")
    return _Split(yaml_text, text[close.end() + 1 :], closing_line + 1)


class _TemplateVariables:
    """A core Templates variable written bare (`created: {{date}}`, `{{date:YYYY-MM-DD}}`, `{{title}}`) is
    YAML for a mapping keyed by a mapping: valid YAML, which Obsidian reads, but a key Python cannot hash,
    so PyYAML refused the whole frontmatter ("found unhashable key") and every template note lost its
    properties, tags and links and read as malformed. Such a flow mapping is read as the text it was
    written as (a block mapping with a collection key stays an error: no template writes one)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode) and node.flow_style \
                and any(isinstance(k, yaml.CollectionNode) for k, _ in node.value):
            return _as_written(node)
        return super().construct_object(node, deep)  # type: ignore[misc]


def _as_written(node: Node) -> str:
    """A flow node spelt back in flow style, as `{{date:YYYY-MM-DD}}` was typed."""
    if isinstance(node, yaml.MappingNode):
        pairs = (_as_written(k) + (f":{_as_written(v)}" if v.value not in ("", None) else "") for k, v in node.value)
        return "{" + ", ".join(pairs) + "}"
    if isinstance(node, yaml.SequenceNode):
        return "[" + ", ".join(_as_written(v) for v in node.value) + "]"
    return str(node.value)


# YAML 1.2's core schema, as Obsidian reads properties: PyYAML reads YAML 1.1, where `country: NO` and
# `visited: yes` are booleans, `zip: 01234` is octal 668, `runtime: 1:57` is 117 (base 60), and a date
# that does not exist (`day: 2024-02-30`) made the whole frontmatter malformed. Here they stay the text
# typed, a number is decimal unless it says 0o or 0x, and a date is the text typed.
_CORE_SCHEMA = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("tag:yaml.org,2002:float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+.0123456789"),
    ("tag:yaml.org,2002:merge", r"^<<$", "<"),
)


def _core_resolvers() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    """By a scalar's first character, as PyYAML's Resolver looks them up ("" for the empty scalar)."""
    resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, firsts in _CORE_SCHEMA:
        for first in firsts:
            resolvers.setdefault(first, []).append((tag, re.compile(pattern)))
    return resolvers


class _CoreSchema:
    """YAML 1.2 core scalars for a loader (see _CORE_SCHEMA; its ints are read by _core_int)."""

    yaml_implicit_resolvers = _core_resolvers()


def _core_int(_loader: Any, node: Node) -> int:
    """Decimal (leading zeros and all), or 0o / 0x: YAML 1.1's octal 0777 and base 60 are gone."""
    text = str(node.value)
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits.startswith(("0o", "0x")):
        return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
    return sign * int(digits, 10)


class _BoundedLoader(_CoreSchema, _TemplateVariables, yaml.SafeLoader):
    """SafeLoader that refuses more than a few aliases: aliases are how a tiny
    "billion laughs" document expands into a gigantic structure."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                event: yaml.Event = self.current_event  # check_event() just cached it
                mark = event.start_mark
                raise _FrontmatterError(f"more than {MAX_YAML_ALIASES} YAML aliases", mark.line if mark else 0)
        return super().compose_node(parent, index)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _core_int)


def _load_yaml(yaml_text: str) -> dict[str, object]:
    """The frontmatter mapping, JSON-safe; raises _FrontmatterError."""
    if len(yaml_text) > MAX_FRONTMATTER_CHARS:
        raise _FrontmatterError(f"larger than {MAX_FRONTMATTER_CHARS} characters")
    deep = _DEEP_FLOW.search(yaml_text)
    if deep is not None:  # PyYAML's scanner is slow (superlinear) on such lines
        raise _FrontmatterError(f"nested deeper than {MAX_YAML_DEPTH} levels", yaml_text.count("\n", 0, deep.start()))
    # A redaction marker is YAML for a list ("token: [REDACTED:github]"): it is read as the string it stands for.
    marked = "[REDACTED:" in yaml_text
    data = _run_loader(MARKER.sub(lambda m: f"{_OPEN}{m.group(1)}{_CLOSE}", yaml_text) if marked else yaml_text)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _FrontmatterError(f"not a mapping but a {type(data).__name__}")
    safe = _json_safe(_markers_back(data) if marked else data, _Budget(), 0)
    assert isinstance(safe, dict)
    return safe


_OPEN, _CLOSE = "\u27e6", "\u27e7"  # brackets YAML gives no meaning to


def _markers_back(value: object) -> object:
    """The strings the loader read with a marker in them, spelt as the marker again ("[REDACTED:github]")."""
    if isinstance(value, str):
        return value.replace(_OPEN, "[").replace(_CLOSE, "]")
    if isinstance(value, dict):
        return {_markers_back(k): _markers_back(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_markers_back(v) for v in value]
    return value


_C_SAFE_LOADER: type[yaml.CSafeLoader] | None = None
if hasattr(yaml, "CSafeLoader"):
    class _FastLoader(_CoreSchema, _TemplateVariables, yaml.CSafeLoader):
        """libyaml's parser with the same constructor rules as _BoundedLoader."""

    _FastLoader.add_constructor("tag:yaml.org,2002:int", _core_int)

    _C_SAFE_LOADER = _FastLoader


def _fast_path_ok(yaml_text: str) -> bool:
    """libyaml's loader is ~10x faster (YAML was the largest cost of a full index) but has no alias
    limit: use it only where no alias can exist (no anchor "&") and the text is printable."""
    return _C_SAFE_LOADER is not None and "&" not in yaml_text and not yaml.reader.Reader.NON_PRINTABLE.search(yaml_text)


def _run_loader(yaml_text: str) -> object:
    loader: _BoundedLoader | yaml.CSafeLoader | None = None
    try:
        if _fast_path_ok(yaml_text) and _C_SAFE_LOADER is not None:
            loader = _C_SAFE_LOADER(yaml_text)
        else:
            loader = _BoundedLoader(yaml_text)  # the reader already rejects control characters
        return loader.get_single_data()
    except _FrontmatterError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise _FrontmatterError(exc.problem or exc.context or "YAML error", mark.line if mark else 0) from exc
    except yaml.reader.ReaderError as exc:
        line = yaml_text.count("\n", 0, int(exc.position))
        raise _FrontmatterError(str(exc).split("\n", 1)[0], line) from exc
    except Exception as exc:
        # Third-party parser fed hostile text (RecursionError on deep nesting,
        # ValueError on "2023-13-45" or 5000-digit ints...): any failure must
        # become a warning, never abort indexing.
        raise _FrontmatterError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        if loader is not None:
            loader.dispose()


class _Budget:
    """Counts converted values: a shared (aliased) node is visited once per use."""

    def __init__(self) -> None:
        self.left = MAX_YAML_VALUES

    def spend(self, depth: int) -> None:
        self.left -= 1
        if self.left < 0:
            raise _FrontmatterError(f"more than {MAX_YAML_VALUES} values")
        if depth > MAX_YAML_DEPTH:  # also stops self-referencing aliases
            raise _FrontmatterError(f"nested deeper than {MAX_YAML_DEPTH} levels")


def _json_safe(value: object, budget: _Budget, depth: int) -> object:
    budget.spend(depth)
    if isinstance(value, dict):
        return {_json_key(k): _json_safe(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, budget, depth + 1) for v in value]
    if isinstance(value, set | frozenset):  # !!set: sort so the output is deterministic
        return sorted((_json_safe(v, budget, depth + 1) for v in value), key=str)
    return _json_scalar(value)


def _json_scalar(value: object) -> object:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # JSON has no NaN/inf
    if isinstance(value, dt.date):  # datetime is a date subclass
        return value.isoformat()
    if isinstance(value, bytes):  # !!binary
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _json_key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool) or key is None:  # spell them as JSON would
        return "null" if key is None else str(key).lower()
    return str(_json_scalar(key))


def _read_frontmatter(split: _Split, warnings: list[str], findings: list[Finding]) -> dict[str, object]:
    if split.yaml_text is None:
        return {}
    try:
        data, found = redact_read_values(_load_yaml(split.yaml_text), split.yaml_text)
        findings.extend(found)
        return data
    except _FrontmatterError as exc:
        reason = " ".join(exc.reason.split())[:120]
        warnings.append(f"malformed frontmatter: {reason} (line {exc.yaml_line + 2})")
        return {}


# --- title, aliases, frontmatter tags -----------------------------------------


def _values_of(frontmatter: dict[str, object], *keys: str) -> list[object]:
    """Items under any of `keys` (case-insensitive), lists flattened one level."""
    out: list[object] = []
    for key, value in frontmatter.items():
        if key.casefold() in keys:
            out.extend(value if isinstance(value, list) else [value])
    return out


def _as_text(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    return text or None


def _title(path: str, frontmatter: dict[str, object]) -> str:
    for value in _values_of(frontmatter, "title")[:1]:
        text = _as_text(value)
        if text:
            return bounded_text(text)
    name = path.rsplit("/", 1)[-1]
    return name[:-3] if name.lower().endswith(".md") else name


def _aliases(frontmatter: dict[str, object]) -> tuple[str, ...]:
    texts = (_as_text(v) for v in _values_of(frontmatter, "aliases", "alias"))
    return tuple(_unique((t for t in texts if t), fold=True))


_TAG_SEPARATORS = re.compile(r"[,\s]+")
_TAG_CHARS = re.compile(rf"[\w/{MARKS}-]++")  # a Thai or Arabic tag keeps its marks


def _clean_tag(word: str) -> str | None:
    """The tag without '#', or None when Obsidian would not accept it."""
    tag = word.lstrip("#").strip("/")
    if not tag or _TAG_CHARS.fullmatch(tag) is None:
        return None
    if all(c.isdigit() or c == "/" for c in tag):  # "#1984" is not a tag
        return None
    return tag


def _frontmatter_tags(frontmatter: dict[str, object]) -> list[str]:
    tags: list[str] = []
    for value in _values_of(frontmatter, "tags", "tag"):
        text = _as_text(value)
        for word in _TAG_SEPARATORS.split(text or ""):
            tag = _clean_tag(word)
            if tag:
                tags.append(tag)
    return tags


def _unique(items: Iterable[str], fold: bool = False) -> Iterator[str]:
    """First occurrence wins; with `fold`, comparison ignores case. Lazy, so a
    cap applies to distinct items rather than to repetitions."""
    seen: set[str] = set()
    for item in items:
        key = item.casefold() if fold else item
        if key not in seen:
            seen.add(key)
            yield item


# --- masking: code, comments ---------------------------------------------------

# One token regex finds whichever ignored construct starts first, so precedence
# is simply "leftmost wins" (a %% inside a code span is not a comment and vice
# versa). Complete spans and comments are matched whole, in C; Python only steps
# in for fences and for the rare unmatched or unclosed cases. Every branch starts
# with a literal so the regex engine can skip plain text quickly, and possessive
# quantifiers keep each attempt linear.
_TOKEN = re.compile(
    r"\n(?P<fence>[ \t>]*+(?:`{3,}+|~{3,}+))"
    r"|`(?P<ticks>`*+)(?P<span>[^`\n]*+`(?P=ticks)(?!`))?"  # span when nothing inside is a backtick
    r"|%%(?P<obs>(?s:.*?)%%)?"
    r"|<!--(?P<html>(?s:.*?)-->)?"
)
_FENCE_LINE = re.compile(r"^([ \t>]*+)(`{3,}+|~{3,}+)[ \t]*+$", re.MULTILINE)
_FENCE_OPEN = re.compile(r"[ \t>]*+(?:`{3,}+|~{3,}+)")
_RUN = re.compile(r"`++")
_NOT_NEWLINE = re.compile(r"[^\n]++")
_COMPLETE = frozenset({"span", "obs", "html"})


@dataclass(frozen=True, slots=True)
class FenceSpan:
    """A fenced code block, in 0-based line indexes of the scanned text."""

    first: int  # the opening fence line
    last: int  # the closing fence line, or the last line when unclosed
    marker: str  # quote/indent prefix plus fence characters, e.g. "> ```": closes the block
    closed: bool


@dataclass(slots=True)
class _Ignored:
    # Flat int arrays: a hostile file can hold millions of code spans.
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    fences: list[tuple[int, int, str, bool]] = field(default_factory=list)  # start, end, marker, closed

    def add(self, start: int, end: int) -> None:
        if self.ends and self.ends[-1] == start:  # adjacent regions: keep the arrays short
            self.ends[-1] = end
        else:
            self.starts.append(start)
            self.ends.append(end)


class _RunIndex:
    """Backtick runs of the current line grouped by length, so the closer of a
    code span is found by bisection instead of a rescan (a line of unmatched
    runs of distinct lengths would otherwise be quadratic)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._line_end = -1
        self._starts: dict[int, list[int]] = {}

    def closer(self, start: int, length: int) -> int:
        """Start of the next run of exactly `length` backticks on this line, or -1."""
        if start >= self._line_end:
            self._index_line(start)
        starts = self._starts.get(length, [])
        i = bisect_right(starts, start)
        return starts[i] if i < len(starts) else -1

    def _index_line(self, start: int) -> None:
        self._line_end = _line_end(self._text, start)
        self._starts = defaultdict(list)
        for m in _RUN.finditer(self._text, start, self._line_end):
            self._starts[m.end() - m.start()].append(m.start())


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _scan_ignored(text: str) -> _Ignored:
    found = _Ignored()
    runs = _RunIndex(text)
    first = _FENCE_OPEN.match(text)  # the token regex only sees fences after a newline
    pos = _consume_fence(text, 0, first.group(), runs, found) if first else 0
    while pos < len(text):
        for m in _TOKEN.finditer(text, pos):
            if m.lastgroup in _COMPLETE:
                found.add(m.start(), m.end())
                continue
            resume = _consume(text, m, runs, found)
            if resume > m.end():  # the region outgrew the match: restart the scan there
                pos = resume
                break
        else:
            break
    return found


def _consume(text: str, m: re.Match[str], runs: _RunIndex, found: _Ignored) -> int:
    """Record the construct that `m` starts; return where scanning resumes."""
    if m.lastgroup == "fence":
        return _consume_fence(text, m.start() + 1, m.group("fence"), runs, found)
    if m.lastgroup == "ticks":
        return _consume_run(m.start(), m.end() - m.start(), runs, found)
    found.add(m.start(), len(text))  # an unclosed %% or <!-- hides the rest of the note
    return len(text)


def _consume_run(start: int, length: int, runs: _RunIndex, found: _Ignored) -> int:
    close = runs.closer(start, length)
    if close < 0:  # unmatched backticks are literal text
        return start + length
    found.add(start, close + length)
    return close + length


def _consume_fence(text: str, start: int, marker: str, runs: _RunIndex, found: _Ignored) -> int:
    chars = marker.lstrip(" \t>")
    info = start + len(marker)
    line_end = _line_end(text, info)
    if chars[0] == "`" and text.find("`", info, line_end) >= 0:
        # CommonMark: a backtick info string cannot hold backticks; this is inline code
        return _consume_run(info - len(chars), len(chars), runs, found)
    end, closed = _fence_end(text, line_end, chars[0], len(chars))
    found.add(start, end)
    found.fences.append((start, end, marker, closed))
    return end


def _fence_end(text: str, pos: int, char: str, length: int) -> tuple[int, bool]:
    while (m := _FENCE_LINE.search(text, pos)) is not None:
        fence = m.group(2)
        if fence[0] == char and len(fence) >= length:
            return m.end(), True
        pos = m.end() + 1
    return len(text), False


def _mask(text: str, ignored: _Ignored) -> str:
    """`text` with ignored regions blanked to spaces: offsets and newlines kept."""
    done: list[str] = []
    parts: list[str] = []
    last = 0
    for start, end in zip(ignored.starts, ignored.ends, strict=True):
        parts.append(text[last:start])
        parts.append(_blank(text[start:end]))
        last = end
        if len(parts) > 8192:  # join as we go: millions of tiny parts cost more than the text
            done.append("".join(parts))
            parts.clear()
    parts.append(text[last:])
    done.append("".join(parts))
    return "".join(done)


def _blank(segment: str) -> str:
    if "\n" not in segment:
        return " " * len(segment)
    return _NOT_NEWLINE.sub(lambda m: " " * (m.end() - m.start()), segment)


def find_fences(text: str) -> list[FenceSpan]:
    """Fenced code blocks of `text` exactly as the parser sees them (comments and
    inline code taken into account), for the chunker."""
    lines = _LineCounter(text, 0)
    spans: list[FenceSpan] = []
    for start, end, marker, closed in _scan_ignored(text).fences:
        spans.append(FenceSpan(lines.line_at(start), lines.line_at(end), marker, closed))
    return spans


class _LineCounter:
    """Offset -> line number for offsets visited in increasing order. Counting
    newlines between successive offsets stays O(n) without a per-line table
    (which for a 20 MB file of empty lines would be huge)."""

    def __init__(self, text: str, first_line: int) -> None:
        self._text = text
        self._first = first_line
        self._offset = 0
        self._line = first_line

    def line_at(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, self._first
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


# --- body scanning -------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)", re.MULTILINE)


def is_heading_line(line: str) -> bool:
    """Whether one line, on its own (no fence or front matter around it), is an ATX heading."""
    return _HEADING.match(line) is not None


# These start with a literal so the engine skips plain text fast; what precedes
# a match (whitespace, "!" or an escaping "\\") is checked in Python instead of
# with a leading lookbehind, which would disable that fast path.
_BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]++)[ \t]*+$", re.MULTILINE)
_BLOCK_ID_TEXT = re.compile(r"[A-Za-z0-9-]++")
_INLINE_TAG = re.compile(rf"#([\w/{MARKS}-]++)")
_WIKILINK = re.compile(r"\[\[([^\[\]\n]*+)\]\]")
_MD_LINK = re.compile(
    r"\[([^\[\]\n]*+)\]\([ \t]*+"
    r"(?:<([^<>\n]*+)>|((?:[^\s()<>]++|\([^\s()]*+\))*+))"  # <dest with spaces> | dest (one paren level)
    r"(?:[ \t]++(?:\"[^\"\n]*+\"|'[^'\n]*+'))?[ \t]*+\)"  # optional "title"
)
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*+:")


@dataclass(frozen=True, slots=True)
class _BodyScan:
    headings: tuple[Heading, ...]
    block_ids: tuple[str, ...]
    tags: tuple[str, ...]
    links: tuple[Link, ...]
    template_variables: bool  # a variable on a form's field line outside code (_has_field)


def _capped(items: Iterable[_T], what: str, warnings: list[str]) -> list[_T]:
    kept = list(islice(items, MAX_ITEMS + 1))
    if len(kept) > MAX_ITEMS:
        warnings.append(f"too many {what}: kept the first {MAX_ITEMS}")
        del kept[MAX_ITEMS:]
    return kept


def _scan_body(body: str, start_line: int, warnings: list[str]) -> _BodyScan:
    masked = _mask(body, _scan_ignored(body))
    headings = _capped(_headings(masked, body, start_line), "headings", warnings)
    ids = _capped(_unique(_block_ids(masked)), "block ids", warnings)
    tags = _capped(_unique(_inline_tags(masked), fold=True), "tags", warnings)
    links = _capped(_body_links(masked, start_line), "links", warnings)
    return _BodyScan(tuple(headings), tuple(ids), tuple(tags), tuple(links), _has_field(masked))


FIELD_WORDS = 6  # a variable's line with at most this many other words is a form's field ("Created: {{date}}")
MAX_FIELD_LINES = 50  # variables looked at: a note that names hundreds in sentences is still no form


def _has_field(masked: str) -> bool:
    """Whether the body (code masked) has a variable where a form has one: alone on its line or beside a
    short label ("# {{title}}", "Created: {{date}}", "- [[<% tp.date.yesterday() %>]]"). A how-to note's
    sentence about the variables ("{{date}} and {{title}} are replaced when you insert it") is no form."""
    for m in islice(TEMPLATE_VARIABLE.finditer(masked), MAX_FIELD_LINES):
        start = masked.rfind("\n", 0, m.start()) + 1
        end = masked.find("\n", m.end())
        line = masked[start:len(masked) if end == -1 else end]
        if len(_FIELD_WORD.findall(TEMPLATE_VARIABLE.sub(" ", line))) <= FIELD_WORDS:
            return True
    return False


def _headings(masked: str, body: str, start_line: int) -> Iterator[Heading]:
    lines = _LineCounter(masked, start_line)
    for m in _HEADING.finditer(masked):
        # Detect on the masked text (so fences and comments hide headings) but
        # read the text from the original, where inline code is still visible.
        text = bounded_text(_clean_heading(body[m.end() : _line_end(body, m.end())]))
        if text:
            yield Heading(len(m.group(1)), text, lines.line_at(m.start()))


def bounded_text(text: str, limit: int = MAX_HEADING_CHARS) -> str:
    """At most `limit` characters, cut after a word when there is one in the second half."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", limit // 2, limit)
    return text[:cut if cut > 0 else limit].rstrip()


def _clean_heading(raw: str) -> str:
    """Drop the optional closing '#'s and a trailing block id. String methods,
    not a `...$` regex: searching a 1 MB heading line for a suffix would be quadratic."""
    text = raw.strip(" \t")
    bare = text.rstrip("#")
    if not bare:
        return ""
    if bare != text and bare[-1] in " \t":
        text = bare.rstrip(" \t")
    head, caret, block = text.rpartition("^")
    if caret and _BLOCK_ID_TEXT.fullmatch(block) and (not head or head[-1] in " \t"):
        text = head.rstrip(" \t")
    return text


def _after_space(text: str, pos: int) -> bool:
    return pos == 0 or text[pos - 1].isspace()


def _block_ids(masked: str) -> Iterator[str]:
    for m in _BLOCK_ID.finditer(masked):
        if _after_space(masked, m.start()):
            yield m.group(1)


def _inline_tags(masked: str) -> Iterator[str]:
    seen: set[str] = set()  # a file repeating one tag a million times cleans it once
    for m in _INLINE_TAG.finditer(masked):
        raw = m.group(1)
        if raw not in seen and _after_space(masked, m.start()):  # "C#", "issue#12" are no tags
            seen.add(raw)
            tag = _clean_tag(raw)
            if tag:
                yield tag


def _body_links(masked: str, start_line: int) -> Iterator[Link]:
    # Both streams are in file order; merging by offset keeps the note's order.
    merged = heapq.merge(_wikilinks(masked, start_line), _markdown_links(masked, start_line), key=itemgetter(0))
    return (link for _, link in merged)


def _wikilinks(masked: str, start_line: int) -> Iterator[tuple[int, Link]]:
    lines = _LineCounter(masked, start_line)
    for m in _WIKILINK.finditer(masked):
        bang = _preceded_by(masked, m.start(), "!")
        if _preceded_by(masked, m.start() - bang, "\\"):  # \[[escaped]]
            continue
        kind: LinkKind = "embed" if bang else "link"
        link = _wikilink(m.group(1), kind, lines.line_at(m.start()))
        if link is not None:
            yield m.start(), link


def _preceded_by(text: str, pos: int, char: str) -> bool:
    return pos > 0 and text[pos - 1] == char


def _wikilink(inner: str, kind: LinkKind, line: int) -> Link | None:
    target_part, bar, display = inner.partition("|")
    if bar and target_part.endswith("\\"):  # "[[a\|b]]": the pipe escaped inside a table
        target_part = target_part[:-1]
    target, _, anchor = target_part.partition("#")
    target, anchor = target.strip(), anchor.strip()
    if (not target and not anchor) or TEMPLATE_VARIABLE.search(target):  # `[[{{date}}]]`: a template fills it in
        return None
    return Link(target, anchor or None, display.strip() or None, kind, line)


def _markdown_links(masked: str, start_line: int) -> Iterator[tuple[int, Link]]:
    lines = _LineCounter(masked, start_line)
    for m in _MD_LINK.finditer(masked):
        bang = _preceded_by(masked, m.start(), "!")
        if _preceded_by(masked, m.start() - bang, "\\"):
            continue
        link = _markdown_link(m, bang, lines.line_at(m.start()))
        if link is not None:
            yield m.start(), link


def _markdown_link(m: re.Match[str], bang: bool, line: int) -> Link | None:
    text, angled, bare = m.groups()
    dest = (angled if angled is not None else bare).strip()
    if not dest or dest.startswith("//") or _URI_SCHEME.match(dest):
        return None  # web, mail, obsidian:// ... and Windows "C:" paths: not vault files
    path, _, anchor = dest.partition("#")
    target, anchor = unquote(path).strip(), unquote(anchor).strip()
    if (not target and not anchor) or TEMPLATE_VARIABLE.search(target):
        return None
    kind: LinkKind = "embed" if bang else "markdown"
    return Link(target, anchor or None, text.strip() or None, kind, line)


def _frontmatter_links(yaml_text: str, frontmatter: dict[str, object]) -> list[Link]:
    """Wikilinks in property values, each with the frontmatter line it sits on.

    Values are the source of truth (keys and YAML comments do not count); the
    raw text only tells where each one is written."""
    where: dict[str, deque[int]] = defaultdict(deque)
    lines = _LineCounter(yaml_text, 2)
    for m in _WIKILINK.finditer(yaml_text):
        where[m.group(1)].append(lines.line_at(m.start()))
    links: list[Link] = []
    for value in property_strings(frontmatter):
        for m in _WIKILINK.finditer(value):
            seen = where.get(m.group(1))
            line = seen.popleft() if seen else 2  # escaped or folded YAML string: first line
            link = _wikilink(m.group(1), "frontmatter", line)
            if link is not None:
                links.append(link)
    return links


def property_strings(value: object) -> Iterator[str]:
    """Every string among a frontmatter's values, at any depth (keys aside)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from property_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from property_strings(item)


def property_link(value: str) -> Link | None:
    """A property value that is one wikilink (`"[[Ridley Scott|Scott]]"`, an embed too), as the body's are read."""
    m = _WIKILINK.fullmatch(value.removeprefix("!"))
    return None if m is None else _wikilink(m.group(1), "frontmatter", 0)


# --- entry point -----------------------------------------------------------------


def parse_note(path: str, text: str) -> ParsedNote:
    """Parse a note; `path` is vault-relative, `text` decoded with "\\n" line ends."""
    warnings: list[str] = []
    findings: list[Finding] = []
    split = _split_frontmatter(text)
    frontmatter = _read_frontmatter(split, warnings, findings)
    scan = _scan_body(split.body, split.body_start_line, warnings)
    fm_links = _frontmatter_links(split.yaml_text or "", frontmatter) if frontmatter else []
    return ParsedNote(
        path=path,
        title=_title(path, frontmatter),
        frontmatter=frontmatter,
        aliases=_aliases(frontmatter),
        tags=tuple(_unique([*_frontmatter_tags(frontmatter), *scan.tags], fold=True)),
        headings=scan.headings,
        block_ids=scan.block_ids,
        links=(*fm_links, *scan.links),
        body=split.body,
        body_start_line=split.body_start_line,
        warnings=tuple(warnings),
        findings=tuple(findings),
        template_variables=scan.template_variables or any(
            TEMPLATE_VARIABLE.search(value) for value in property_strings(frontmatter)),
    )


# --- templates -------------------------------------------------------------------

TEMPLATE_VARIABLE = re.compile(r"\{\{[^{}]*\}\}|<%.*%>")  # `{{date}}`, Templater's `<% tp.date.now() %>`
_FIELD_WORD = re.compile(r"[^\W\d_]{2,}")  # a word of a line, for telling a form's field from a sentence
_TEMPLATE_NAME = re.compile(r"(?:^|\s)template$", re.IGNORECASE)


def is_template(path: str, template_variables: bool) -> bool:
    """A template (a form to fill in, not a note): it holds a variable (core Templates' `{{date}}`,
    Templater's `<% ... %>`) where a form has one, in a property or on a field line outside code (_has_field),
    or its file is named "... Template" (kepano's vault names all 53 so; half hold no variable). Obsidian's
    templates folder setting lives in `.obsidian/`, never read."""
    stem = path.rsplit("/", 1)[-1].removesuffix(".md")
    return template_variables or _TEMPLATE_NAME.search(stem) is not None

"""What an agent needs to find its way around a vault it has never seen, derived from the index.

Nothing here is hard-coded to a vault layout: folders, the daily-note convention, hub notes,
tags, frontmatter fields and link style are all counted from the `notes`, `tags` and
`links` tables and the link graph. Every list is capped so the answer stays small on a
vault of 100k notes.
"""

from __future__ import annotations

import json
import posixpath
import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sidecar.ingest.redact import redact
from sidecar.retrieve.snapshot import Snapshot
from sidecar.store.reads import (
    all_tags,
    attachment_count,
    link_kind_counts,
    link_totals,
    notes_by_path,
    wikilinks_with_folder_path,
)

TOP_FOLDERS = 15
TOP_TAGS = 25
TOP_FIELDS = 20
TOP_VALUES = 6
TOP_HUBS = 10
EXAMPLES = 3
MAX_VALUE_CHARS = 60
DAILY_SHARE = 0.6  # a folder is a daily-note folder when most of its notes are named by date
DAILY_MIN_NOTES = 3
HUB_TITLE = re.compile(r"\b(mocs?|index|map of|maps? of content|hub|overview|dashboard)\b", re.I)
HUB_NAME = re.compile(r"(home|start here|readme|index|contents|_index|00 .*)", re.I)  # the whole title
HUB_TYPES = frozenset({"moc", "index", "hub", "map", "overview"})
TYPE_FIELDS = ("type", "category", "kind")

# File-name date formats, in Obsidian's (moment.js) spelling, most specific first.
DATE_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("YYYY-MM-DD", re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")),
    ("YYYY_MM_DD", re.compile(r"(19|20)\d\d_(0[1-9]|1[0-2])_(0[1-9]|[12]\d|3[01])")),
    ("YYYY.MM.DD", re.compile(r"(19|20)\d\d\.(0[1-9]|1[0-2])\.(0[1-9]|[12]\d|3[01])")),
    ("YYYYMMDD", re.compile(r"(19|20)\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])")),
    ("DD-MM-YYYY", re.compile(r"(0[1-9]|[12]\d|3[01])-(0[1-9]|1[0-2])-(19|20)\d\d")),
    ("MM-DD-YYYY", re.compile(r"(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])-(19|20)\d\d")),
    ("YYYY-[W]ww", re.compile(r"(19|20)\d\d-W([0-4]\d|5[0-3])")),
    ("YYYY-MM", re.compile(r"(19|20)\d\d-(0[1-9]|1[0-2])")),
)
WEEKDAYS = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
     "mon", "tue", "wed", "thu", "fri", "sat", "sun"])
YEAR_OR_MONTH_DIR = re.compile(r"(19|20)\d\d|0[1-9]|1[0-2]|(0[1-9]|1[0-2])[-_ ].+")


@dataclass(frozen=True, slots=True)
class NoteRow:
    note_id: int
    path: str
    title: str
    frontmatter: dict[str, Any]
    tags: tuple[str, ...]

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.path)

    @property
    def top_folder(self) -> str:
        return self.path.split("/", 1)[0] if "/" in self.path else ""

    @property
    def stem(self) -> str:
        return posixpath.basename(self.path).removesuffix(".md")

    @property
    def note_type(self) -> str | None:
        for key in TYPE_FIELDS:
            value = self.frontmatter.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip().lower()
        return None


def vault_overview(conn: sqlite3.Connection, snapshot: Snapshot) -> dict[str, Any]:
    notes = load_notes(conn)
    return {
        "note_count": len(notes),
        "folders": folder_summary(notes, snapshot),
        "daily_notes": daily_notes(notes),
        "hubs": hub_notes(notes, snapshot),
        "most_linked": most_linked(notes, snapshot),
        "tags": top_tags(notes),
        "frontmatter_fields": frontmatter_fields(notes),
        "links": link_conventions(conn),
        "attachments": attachment_count(conn),
    }


def load_notes(conn: sqlite3.Connection) -> list[NoteRow]:
    tags: dict[int, list[str]] = defaultdict(list)
    for note_id, tag in all_tags(conn):
        tags[int(note_id)].append(str(tag))
    rows = []
    for note_id, path, title, frontmatter in notes_by_path(conn):
        fm = _json_object(frontmatter)
        rows.append(NoteRow(int(note_id), str(path), str(title), fm, tuple(tags.get(int(note_id), ()))))
    return rows


def _json_object(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# ---- folders ------------------------------------------------------------------------------
def folder_summary(notes: list[NoteRow], snapshot: Snapshot) -> list[dict[str, Any]]:
    groups: dict[str, list[NoteRow]] = defaultdict(list)
    for note in notes:
        groups[note.top_folder].append(note)
    ranked = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:TOP_FOLDERS]
    return [_folder(name, members, snapshot) for name, members in ranked]


def _folder(name: str, members: list[NoteRow], snapshot: Snapshot) -> dict[str, Any]:
    tags = Counter(t.lower() for n in members for t in n.tags)
    types = Counter(n.note_type for n in members if n.note_type)
    subfolders = {n.folder for n in members if n.folder != name}
    authority = snapshot.graph.authority
    examples = sorted(members, key=lambda n: (-authority.get(n.note_id, 0.0), n.path))[:EXAMPLES]
    return {
        "folder": name or "/",
        "notes": len(members),
        "subfolders": len(subfolders),
        "top_tags": [t for t, _ in tags.most_common(3)],
        "top_types": [t for t, _ in types.most_common(3)],
        "example_titles": [_clean(n.title) for n in examples],
    }


# ---- daily notes --------------------------------------------------------------------------
def date_format(stem: str) -> str | None:
    """The moment.js-style format of a file name that is a date (optionally plus a weekday or title)."""
    for name, pattern in DATE_FORMATS:
        match = pattern.match(stem)
        if match and (match.end() == len(stem) or not stem[match.end()].isalnum()):
            return name
    return None


def _folder_pattern(folder: str) -> str:
    """`Journal/2024/03` -> `Journal/YYYY/MM`: year and month subfolders belong to one convention."""
    parts = folder.split("/") if folder else []
    out = []
    for part in parts:
        if re.fullmatch(r"(19|20)\d\d", part):
            out.append("YYYY")
        elif YEAR_OR_MONTH_DIR.fullmatch(part):
            out.append("MM")
        else:
            out.append(part)
    return "/".join(out)


def daily_notes(notes: list[NoteRow]) -> list[dict[str, Any]]:
    by_pattern: dict[str, list[NoteRow]] = defaultdict(list)
    for note in notes:
        by_pattern[_folder_pattern(note.folder)].append(note)
    found: list[dict[str, Any]] = []
    for pattern, members in by_pattern.items():
        formats = Counter(f for f in (date_format(n.stem) for n in members) if f)
        dated = sum(formats.values())
        if dated < DAILY_MIN_NOTES or dated / len(members) < DAILY_SHARE:
            continue
        fmt, _count = formats.most_common(1)[0]
        stems = sorted(n.stem for n in members if date_format(n.stem) == fmt)
        found.append({
            "folder": pattern or "/", "format": fmt, "notes": dated, "kind": _date_kind(fmt, stems),
            "first": stems[0], "last": stems[-1],
            "example_path": next(n.path for n in members if n.stem == stems[-1]),
        })
    found.sort(key=lambda d: -int(d["notes"]))
    return found[:5]


def _date_kind(fmt: str, stems: list[str]) -> str:
    """daily/weekly/monthly journals, or "dated" notes like '2024-05-01 Kickoff' (meetings and the like)."""
    pattern = dict(DATE_FORMATS)[fmt]
    named = sum(_named(stem, pattern) for stem in stems)
    if named * 2 > len(stems):
        return "dated"
    return "weekly" if "ww" in fmt else ("monthly" if fmt == "YYYY-MM" else "daily")


def _named(stem: str, pattern: re.Pattern[str]) -> bool:
    """Text after the date other than a weekday ('2024-05-01 Wednesday' is still a daily note)."""
    match = pattern.match(stem)
    rest = stem[match.end():].strip(" -_,.").lower() if match else ""
    return bool(rest) and rest not in WEEKDAYS


# ---- hubs ---------------------------------------------------------------------------------
def hub_notes(notes: list[NoteRow], snapshot: Snapshot) -> list[dict[str, Any]]:
    """Maps of content: typed as one, titled as one, or linking out to many notes."""
    out_degree = {k: len(v) for k, v in snapshot.graph.out_links.items()}
    degrees = sorted(out_degree.values(), reverse=True)
    busy = max(5, degrees[min(len(degrees) - 1, TOP_HUBS)] if degrees else 5)
    scored = []
    for note in notes:
        reasons = _hub_reasons(note, out_degree.get(note.note_id, 0), busy)
        if reasons:
            scored.append((len(reasons), out_degree.get(note.note_id, 0), note, reasons))
    scored.sort(key=lambda s: (-s[0], -s[1], s[2].path))
    return [{"path": n.path, "title": _clean(n.title), "out_links": deg,
             "in_links": len(snapshot.graph.in_links.get(n.note_id, ())), "why": reasons}
            for _k, deg, n, reasons in scored[:TOP_HUBS]]


def _hub_reasons(note: NoteRow, degree: int, busy: int) -> list[str]:
    reasons = []
    if note.note_type in HUB_TYPES:
        reasons.append(f"typed {note.note_type}")
    if HUB_TITLE.search(note.title) or HUB_NAME.fullmatch(note.title.strip()):
        reasons.append("title names a map/index")
    if degree >= busy and date_format(note.stem) is None:  # a busy daily note is a log, not a map
        reasons.append(f"links to {degree} notes")
    return reasons


def most_linked(notes: list[NoteRow], snapshot: Snapshot) -> list[dict[str, Any]]:
    by_id = {n.note_id: n for n in notes}
    ranked = sorted(snapshot.graph.in_links.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [{"path": by_id[k].path, "title": _clean(by_id[k].title), "in_links": len(v)}
            for k, v in ranked if k in by_id and v][:TOP_HUBS]


# ---- tags and frontmatter -----------------------------------------------------------------
def top_tags(notes: list[NoteRow]) -> list[dict[str, Any]]:
    counts: Counter[str] = Counter()
    spelling: dict[str, Counter[str]] = defaultdict(Counter)
    for note in notes:
        for tag in note.tags:
            counts[tag.lower()] += 1
            spelling[tag.lower()][tag] += 1
    return [{"tag": spelling[t].most_common(1)[0][0], "notes": c} for t, c in counts.most_common(TOP_TAGS)]


def frontmatter_fields(notes: list[NoteRow]) -> list[dict[str, Any]]:
    used: Counter[str] = Counter()
    values: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for note in notes:
        for key, value in note.frontmatter.items():
            used[key] += 1
            kinds[key][_kind(value)] += 1
            for item in _scalars(value):
                values[key][item] += 1
    fields = []
    for key, count in used.most_common(TOP_FIELDS):
        common = [{"value": _clean(v), "notes": c} for v, c in values[key].most_common(TOP_VALUES) if c > 1]
        fields.append({"field": _clean(key), "notes": count, "kind": kinds[key].most_common(1)[0][0],
                       "distinct_values": len(values[key]), "common_values": common})
    return fields


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\d([T ].*)?", value):
        return "date"
    return "text"


def _scalars(value: object) -> Iterable[str]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, str | int | float | bool) and str(item).strip():
            yield str(item).strip()[:200]  # cleaned only when shown: redaction per value is slow


# ---- links --------------------------------------------------------------------------------
def link_conventions(conn: sqlite3.Connection) -> dict[str, Any]:
    kinds = link_kind_counts(conn)
    total = sum(int(v) for v in kinds.values())
    wiki_with_path = wikilinks_with_folder_path(conn)
    links, unresolved, anchored = link_totals(conn)
    wikilinks, markdown = int(kinds.get("link", 0)), int(kinds.get("markdown", 0))
    style = "none" if wikilinks + markdown == 0 else (
        "wikilinks" if wikilinks >= 3 * max(markdown, 1) else "markdown" if markdown >= 3 * max(wikilinks, 1) else "mixed")
    return {
        "total": total, "style": style,
        "by_kind": {"wikilink": wikilinks, "markdown": markdown, "embed": int(kinds.get("embed", 0)),
                    "frontmatter": int(kinds.get("frontmatter", 0))},
        "wikilinks_with_folder_path": wiki_with_path,
        "with_heading_or_block_anchor": anchored,
        "unresolved": unresolved,
        "unresolved_share": round(unresolved / links, 3) if links else 0.0,
    }


def _clean(text: str) -> str:
    """Redacted and bounded: frontmatter values and titles are user text."""
    flat = " ".join(redact(text).text.split())
    return flat if len(flat) <= MAX_VALUE_CHARS else flat[: MAX_VALUE_CHARS - 1] + "…"

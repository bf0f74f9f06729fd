"""A search result as a ready-to-paste Markdown context block for an agent's prompt.

Pure: one search response in, one answer out (context_answer), so the MCP `get_context` tool and
the `sidecar context` command (prompt hooks) give the same block, band and sources.

The block states the confidence band first, because an agent that reads "low" should not
treat the excerpts as answers. Every section names its source (title, heading, path,
lines) so the agent can cite it or open the note. The whole block, headers included, fits
in max_tokens at 4 characters a token; a cut is always marked, never silent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sidecar.ingest.parse import is_heading_line
from sidecar.ingest.redact import redact
from sidecar.rank.fuse import CAVEATS
from sidecar.retrieve.search import CHARS_PER_TOKEN

CUT = "\n…[truncated]"
TAIL_ROOM = 120
NO_ANSWER_CHARS = 1200  # a low band spends at most about 300 tokens
NO_ANSWER_NOTES = 3
MIN_SECTION_CHARS = 80  # a section with less room than this is left out (and counted) instead of cut to nothing

BAND_ORDER = ("high", "medium", "low", "none")
BAND_WORDS = {
    "high": "high: these excerpts answer the question directly.",
    "medium": "medium: possibly relevant; read the excerpts before relying on them.",
    "low": "low: the vault probably does not answer this.",
    "none": "none: nothing in the vault matched.",
}


SOURCE_FIELDS = ("path", "title", "heading", "start_line", "end_line", "band")


def context_answer(search_result: Mapping[str, Any], max_tokens: int) -> dict[str, Any]:
    """The one context answer (`sidecar context --json`, MCP get_context): the block, redacted once
    more on the way out (the index is redacted, the disk may have changed), its band and caveat, and
    the excerpts it quotes."""
    markdown = redact(format_context(search_result, max_tokens)).text
    band, caveat = context_band(search_result)
    sources = [{k: r[k] for k in SOURCE_FIELDS} for r in context_results(search_result)]
    return {"query": search_result.get("query", ""), "band": band, "caveat": caveat, "chars": len(markdown),
            "markdown": markdown, "sources": sources}


def format_context(search_result: Mapping[str, Any], max_tokens: int) -> str:
    """The Markdown block for a search response, at most max_tokens * 4 characters long."""
    budget = max(1, max_tokens) * CHARS_PER_TOKEN
    head = _header(search_result)
    if len(head) >= budget:
        return _cut(head, budget)
    if context_band(search_result)[0] in ("low", "none"):
        return _cut(head + _no_answer(search_result), min(budget, NO_ANSWER_CHARS))
    shown = context_results(search_result)
    room = budget - len(head)
    room -= TAIL_ROOM if room > 3 * TAIL_ROOM else 0  # keep room to say what was left out
    sections, omitted = _sections(shown, room)
    if shown and not sections:  # the header would promise excerpts the block does not hold
        return _cut(_header(search_result, crowded_out=max_tokens) + _names_only(shown), budget)
    block = head + "".join(sections)
    weaker = len(search_result.get("results") or []) - len(shown)
    notes = [f"{omitted} more excerpt(s) left out to fit {max_tokens} tokens"] if omitted else []
    notes += [f"{weaker} weaker (low-confidence) match(es) left out"] if weaker else []
    tail = f"\n_{'; '.join(notes)}._\n" if notes else ""
    if tail and len(block) + len(tail) <= budget:
        block += tail
    return block


def context_results(search_result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The hits worth pasting: when some are high or medium, low-band ones are only noise."""
    results: list[Mapping[str, Any]] = list(search_result.get("results") or [])
    if context_band(search_result)[0] in ("high", "medium"):
        return [r for r in results if r.get("band") != "low"]
    return results


def context_band(search_result: Mapping[str, Any]) -> tuple[str, str | None]:
    """Band and caveat of the block: its best hit's. The search answer's band is the best of its first
    page's (search.overall_band): the same unless the block quotes more hits than a page, or fewer (a
    `medium` hit 8 is no answer a block of 6 `low` excerpts can give)."""
    band = str(search_result.get("band") or "none")
    caveat = search_result.get("caveat")
    bands = {str(r.get("band")) for r in search_result.get("results") or []}
    best = next((b for b in BAND_ORDER if b in bands), band)
    if best == band or band not in BAND_ORDER:
        return band, caveat
    extra = str(caveat or "").removeprefix(CAVEATS.get(band) or "").strip()  # e.g. "semantic search unavailable"
    return best, " ".join(x for x in (CAVEATS.get(best), extra) if x) or None


def section_title(result: Mapping[str, Any]) -> str:
    """`Title > Heading (path, lines a-b)`: the attribution line of one excerpt."""
    title = str(result.get("title", ""))
    parts = [p for p in str(result.get("heading") or "").split(" > ") if p]
    if parts and parts[0].strip().lower() == title.strip().lower():
        parts = parts[1:]  # a note's H1 usually repeats its title
    name = " > ".join([title, *parts])
    return f"{name} ({result.get('path', '')}, lines {result.get('start_line', '?')}-{result.get('end_line', '?')})"


def _header(result: Mapping[str, Any], crowded_out: int | None = None) -> str:
    """`crowded_out`: the token budget no excerpt fitted in, said instead of what the excerpts are."""
    band, caveat = context_band(result)
    said = BAND_WORDS.get(band, band) if crowded_out is None else \
        f"{band}, but no excerpt fits {crowded_out} tokens: ask again with a larger max_tokens."
    lines = [f"## Vault context for: {_one_line(str(result.get('query', '')))}", f"Confidence {said}"]
    if caveat:
        lines.append(f"Caveat: {caveat}")
    return "\n".join(lines) + "\n"


def _names_only(results: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(["Matching notes:", *(f"- {_one_line(section_title(r))}" for r in results)]) + "\n"


def _no_answer(result: Mapping[str, Any]) -> str:
    """No excerpts when the vault does not answer: a few hundred tokens at most, naming the nearest notes."""
    nearest = [f"- {_one_line(section_title(r))}" for r in list(result.get("results") or [])[:NO_ANSWER_NOTES]]
    lines = ["\nThe vault does not appear to answer this: no excerpt is included. Say so rather than guess."]
    if nearest:
        lines += ["Nearest notes, in case the question was worded unlike them:", *nearest]
    return "\n".join(lines) + "\n"


def _sections(results: Sequence[Mapping[str, Any]], room: int) -> tuple[list[str], int]:
    out: list[str] = []
    for i, result in enumerate(results):
        title = f"\n### {_one_line(section_title(result))}\n"
        body = _without_heading_line(str(result.get("text") or result.get("snippet") or "").strip())
        full = f"{title}{body}\n"
        if len(full) <= room:
            out.append(full)
            room -= len(full)
            continue
        if room >= len(title) + len(CUT) + MIN_SECTION_CHARS:
            out.append(_cut(full, room))
            return out, len(results) - i - 1
        return out, len(results) - i
    return out, 0


def _without_heading_line(text: str) -> str:
    """The attribution line already names the section; its own `## Heading` would break the nesting."""
    first, _sep, rest = text.partition("\n")
    return rest.strip() if is_heading_line(first) else text


def _cut(text: str, limit: int) -> str:
    """Text shortened to `limit` characters including the marker."""
    if len(text) <= limit:
        return text
    if limit <= len(CUT):
        return text[:limit]
    return text[: limit - len(CUT)].rstrip() + CUT


def _one_line(text: str) -> str:
    """Headers stay on one line whatever a title or query contains."""
    return " ".join(text.split())

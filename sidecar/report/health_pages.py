"""The health report as callers get it: whole, as counts per section, or one section a page at a
time. The findings come from health_cache (kept per index, advanced by what changed); the rules
that find them are in health.py."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, cast

from sidecar.errors import InvalidParams
from sidecar.protocol_types import (
    HEALTH_PAGE_LIMIT_DEFAULT,
    HealthPageResponse,
    HealthResponse,
    HealthSection,
    HealthSectionCount,
    HealthSummary,
    HealthSummaryResponse,
)
from sidecar.report.health import (
    RULES,
    SECTION_BY_ID,
    SECTION_IDS,
    SECTIONS,
    SUGGEST_ITEMS,
    Context,
    Findings,
    Item,
    SectionSpec,
)
from sidecar.report.health_cache import current_findings, keep_loaded

if TYPE_CHECKING:
    from sidecar.retrieve.view import IndexView


def _findings(index: IndexView) -> tuple[Findings, Context]:
    """The current findings (advanced from the last report's by what changed since) and a context
    over them for this thread, for suggestions."""
    found = current_findings(index)
    return found, Context(index, loaded=found.loaded)


def _with_suggestions(found: Findings, ctx: Context, spec: SectionSpec, items: list[Item]) -> list[Item]:
    if spec.suggest is None or not items:
        return items
    items = spec.suggest(ctx, items)
    keep_loaded(ctx.index, found, vars(ctx))  # for the next page of this generation; the findings are shared
    return items


def build_health(index: IndexView, sections: list[str] | None = None, details: bool = False,
                 suggest_items: int = SUGGEST_ITEMS) -> HealthResponse:
    """The report (protocol HealthResponse). `sections` limits the sections listed; the summary always
    counts everything, so one report never contradicts another. `details` adds machine-readable fields
    to the items (link target, secret kind, pair...) beyond the protocol's HealthItem. The first
    `suggest_items` items of a section get suggestions (related notes, did-you-mean guesses)."""
    started = time.perf_counter()
    wanted = list(SECTION_IDS) if sections is None else sections
    unknown = [s for s in wanted if s not in SECTION_IDS]
    if unknown:
        raise InvalidParams(f"sections: no section {', '.join(repr(s[:100]) for s in unknown[:5])}; sections: "
                            f"{', '.join(SECTION_IDS)}", {"field": "sections", "allowed": list(SECTION_IDS)})
    found, ctx = _findings(index)
    out: list[HealthSection] = []
    for spec in SECTIONS:
        if spec.id in wanted:
            items = found.sections[spec.id]
            items = _with_suggestions(found, ctx, spec, items[:suggest_items]) + items[suggest_items:]
            out.append({"id": spec.id, "title": spec.title, "severity": spec.severity, "count": len(items),
                        "items": [it.to_json(spec.severity, details) for it in items]})
    return {"generated_at": round(time.time(), 3), "took_ms": _took_ms(started), "generation": found.generation,
            "summary": _summary(found), "rules": RULES, "sections": out}


def _took_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


def _summary(found: Findings) -> HealthSummary:
    return cast("HealthSummary", found.summary)  # its keys are SUMMARY_KEYS; the schema allows further int counts


def health_summary(index: IndexView) -> HealthSummaryResponse:
    """Counts per section, no items (protocol HealthSummaryResponse): what the view shows first."""
    started = time.perf_counter()
    found, _ctx = _findings(index)
    counts: list[HealthSectionCount] = [{"id": s.id, "title": s.title, "severity": s.severity,
                                         "count": len(found.sections[s.id])} for s in SECTIONS]
    return {"generated_at": round(time.time(), 3), "took_ms": _took_ms(started), "generation": found.generation,
            "summary": _summary(found), "rules": RULES, "sections": counts}


def health_page(index: IndexView, section: str, limit: int = HEALTH_PAGE_LIMIT_DEFAULT, cursor: str | None = None,
                details: bool = False) -> HealthPageResponse:
    """One page of one section's items, each with its suggestions (protocol HealthPageResponse).

    The cursor names the section, not the generation: after an edit the next page comes from the
    current items (the report stays live), so an item may shift by one across a page boundary.
    `limit` is checked where a call comes in (serve/params.py, the MCP tool's schema); `section` here,
    as the protocol's schema does not list the sections."""
    from sidecar.retrieve import paging  # noqa: PLC0415  (paging raises protocol errors; the CLI report needs none)

    spec = SECTION_BY_ID.get(section)
    if spec is None:
        raise InvalidParams(f"section: no section {section[:100]!r}; sections: {', '.join(SECTION_IDS)}",
                            {"field": "section", "allowed": list(SECTION_IDS)})
    started = time.perf_counter()
    where = paging.scope("health.page", section=section)
    offset = paging.decode_cursor(cursor, where)
    found, ctx = _findings(index)
    every = found.sections[section]
    items = _with_suggestions(found, ctx, spec, every[offset:offset + limit])
    return {
        "generation": found.generation,
        "took_ms": _took_ms(started),
        "id": spec.id, "title": spec.title, "severity": spec.severity, "count": len(every), "offset": offset,
        "items": [it.to_json(spec.severity, details) for it in items],
        "next_cursor": paging.next_cursor(offset, len(items), len(every), where),
    }

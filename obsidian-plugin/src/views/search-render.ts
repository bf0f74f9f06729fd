// Renders search results (the modal's rows and the search pane's list) and the query syntax help.

import type { Highlight, SearchResponse, SearchResult } from "../protocol.gen";
import { wireListKeys, wireRow, type RowActions } from "./list-nav";
import { MODE_LABELS } from "./modes";
import { USER_TEXT, readableMarkdown, renderBand, renderMessage, renderPath, sectionTarget, startRender } from "./shared-render";

export interface Segment {
  text: string;
  hit: boolean;
}

/**
 * Split `snippet` into plain and highlighted parts. Highlights are [start, end) offsets in Unicode code
 * points (not UTF-16 units); out-of-range, empty, unsorted and overlapping ranges are tolerated.
 */
export function highlightSegments(snippet: string, highlights: readonly Highlight[]): Segment[] {
  const chars = Array.from(snippet);
  const ranges = highlights
    .map(([s, e]) => [Math.max(0, Math.min(s, chars.length)), Math.max(0, Math.min(e, chars.length))] as const)
    .filter(([s, e]) => e > s)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number][] = [];
  for (const [s, e] of ranges) {
    const last = merged[merged.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  const out: Segment[] = [];
  let pos = 0;
  for (const [s, e] of merged) {
    if (s > pos) out.push({ text: chars.slice(pos, s).join(""), hit: false });
    out.push({ text: chars.slice(s, e).join(""), hit: true });
    pos = e;
  }
  if (pos < chars.length || out.length === 0) out.push({ text: chars.slice(pos).join(""), hit: false });
  return out;
}

export function renderHighlighted(container: HTMLElement, snippet: string, highlights: readonly Highlight[]): void {
  const segments = highlightSegments(snippet, highlights);
  segments.forEach((seg, i) => {
    if (seg.hit) container.createEl("mark", { cls: "vs-hit", text: seg.text });
    else container.appendText(readableMarkdown(seg.text, i === 0, i === segments.length - 1));
  });
}

/** The query syntax: one line, opening into what each part does. */
export const SYNTAX_PARTS: [string, string][] = [
  ["path:Folder", "only notes in this folder"],
  ["tag:#tag", "only notes with this tag"],
  ["[field:value]", "only notes with this property"],
  ['"exact phrase"', "these words in this order"],
  ["-word", "leave out notes with this word"],
  ["-path:Note.md", "leave out a folder or note"],
];

export function renderSyntaxHelp(container: HTMLElement): HTMLElement {
  const details = container.createEl("details", { cls: "vs-search-help" });
  details.createEl("summary", { text: `Syntax: ${SYNTAX_PARTS.map(([op]) => op).join("  ")}` });
  const list = details.createEl("dl", { cls: "vs-syntax-list" });
  for (const [op, what] of SYNTAX_PARTS) {
    list.createEl("dt", { text: op });
    list.createEl("dd", { text: what });
  }
  return details;
}

/** What a search response says about itself: the sidecar's caveat (how to read the band, keyword results only
 * without vectors), then a building index (the sidecar sends that as a flag only). */
export function searchNotes(response: SearchResponse): string[] {
  const building = response.index_building ? "The index is still being built; results may be incomplete." : null;
  return [response.caveat, building].filter((n): n is string => Boolean(n));
}

/** One search result: title, heading path, highlighted snippet, band. */
export function renderSearchResult(container: HTMLElement, r: SearchResult): HTMLElement {
  const row = container.createDiv({ cls: "vs-search-row", attr: { "data-path": r.path } });
  const head = row.createDiv({ cls: "vs-row-head" });
  head.createSpan({ cls: "vs-title", text: r.title || r.path, attr: USER_TEXT });
  renderBand(head, r.band);
  // The heading path without the note's title in front (the row's title says it already).
  const sameAsTitle = r.heading_path.length > 0 && r.heading_path[0]?.trim().toLowerCase() === (r.title || "").trim().toLowerCase();
  const headingPath = (sameAsTitle ? r.heading_path.slice(1) : r.heading_path).join(" › ");
  // No heading: no line (the path is in the meta line below; showing it twice said nothing).
  if (headingPath) row.createDiv({ cls: "vs-heading-path", text: headingPath, attr: USER_TEXT });
  const snippet = row.createDiv({ cls: "vs-snippet", attr: USER_TEXT });
  renderHighlighted(snippet, r.snippet, r.highlights);
  if (r.truncated) snippet.createSpan({ cls: "vs-truncated", text: " …" });
  const meta = row.createDiv({ cls: "vs-meta" });
  renderPath(meta, r.path);
  meta.createSpan({ cls: "vs-lines", text: `lines ${r.start_line}–${r.end_line}` });
  if (r.other_sections.length) {
    meta.createSpan({
      cls: "vs-more",
      text: `+${r.other_sections.length} more section${r.other_sections.length === 1 ? "" : "s"}`,
      attr: { title: r.other_sections.map((s) => s.heading || "(top)").join("\n") },
    });
  }
  return row;
}

/** A whole result list (sidebar search pane), or a message when there is nothing to show. */
export function renderSearchResults(container: HTMLElement, response: SearchResponse | null,
  actions?: RowActions, emptyText = "Type to search."): void {
  if (!startRender(container, "vs-search-results", response, emptyText)) return;
  const header = container.createDiv({ cls: "vs-results-header" });
  header.createSpan({
    text: `${response.results.length} result${response.results.length === 1 ? "" : "s"} · ${MODE_LABELS[response.mode]} · ${Math.round(response.took_ms)} ms`,
  });
  if (response.results.length) renderBand(header, response.band);
  for (const note of searchNotes(response)) renderMessage(container, note, "info");
  if (!response.results.length) {
    renderMessage(container, "No matching notes.");
    return;
  }
  const list = container.createDiv({ cls: "vs-result-list" });
  for (const r of response.results) {
    const row = renderSearchResult(list, r);
    if (actions) wireRow(row, sectionTarget(r), actions);
  }
  if (actions) wireListKeys(list, actions, "Search results");
}

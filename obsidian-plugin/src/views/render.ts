// DOM rendering, kept apart from Obsidian's views: every function takes data and a container element,
// uses only Obsidian's DOM helpers (createDiv, createSpan, ...) and optional handlers, and can therefore
// be unit-tested (happy-dom) and screenshotted (headless Chromium) without the app.

import type {
  Band,
  EditRecord,
  EditsResponse,
  HealthResponse,
  Highlight,
  McpConfigResponse,
  RelatedNote,
  RelatedResponse,
  SearchResponse,
  SearchResult,
  StatusResponse,
} from "../protocol.gen";
import { MODE_LABELS } from "./modes";
import { wireListKeys, wireRow, type NoteTarget, type RowActions } from "./list-nav";

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

/**
 * Snippets and excerpts are the note's Markdown, flattened to one line. For reading, drop the syntax that
 * only gets in the way: `[[` `]]` around links and embeds (an alias replaces its target; "#Heading" reads " › Heading", a
 * "#^block" id goes), [text](url) links,
 * **bold**, *italic*, ~~strike~~, ==highlight== and `code` marks, heading marks, code fences, quote and
 * callout marks, task boxes, ^block ids, %%comments%%, table rules and pipes (" · " between cells). `first`/`last`: the
 * piece starts/ends the whole text, so leading/trailing separators go too. Applied per segment, after
 * highlighting, so offsets stay right.
 */
export function readableMarkdown(text: string, first = true, last = true): string {
  let out = text
    .replace(/%%.*?%%/g, " ")
    .replace(/(?<=[^\s#[\]])#\^[\w-]+(?=\]\])/g, "")
    .replace(/(?<=[^\s#[\]])#([^[\]|#^]+)(?=\]\])/g, " › $1")
    .replace(/!?\[\[[^\]|]*\|([^\]]*)\]\]/g, "$1")
    .replace(/!?\[\[|\]\]/g, "")
    .replace(/!?\[([^\]]*)\]\([^)\s]*\)/g, "$1")
    .replace(/(\*\*|__|~~|==)(?=\S)(.+?)(?<=\S)\1/g, "$2")
    .replace(/(^|[\s(])([*_])(?=[^\s*_])([^*_]+?)(?<=\S)\2(?=$|[\s).,;:!?])/g, "$1$3")
    .replace(/`([^`]+)`/g, "$1")
    .replace(/(^|\s)\^[\w-]+(?=\s|$)/g, "$1")
    .replace(/(^|\s)[-*+] \[[ xX/-]\](?=\s)/g, "$1")
    .replace(/(^|\s)>(?=\s)/g, "$1")
    .replace(/\[![\w-]+\][+-]?/g, "")
    .replace(/(^|\s)#{1,6}(?=\s)/g, "$1")
    .replace(/(^|\s)(`{3,}|~{3,})[\w+-]*/g, "$1")
    .replace(/\|?(?:\s*:?-{3,}:?\s*\|)+(?:\s*:?-{3,}:?)?/g, "|")
    .replace(/\s*\|(?:\s*\|)*\s*/g, " · ")
    .replace(/\s{2,}/g, " ");
  if (first) out = out.replace(/^\s*(?:· )?/, "");
  if (last) out = out.replace(/(?:\s·)?\s*$/, "");
  return out;
}

export function renderHighlighted(container: HTMLElement, snippet: string, highlights: readonly Highlight[]): void {
  const segments = highlightSegments(snippet, highlights);
  segments.forEach((seg, i) => {
    if (seg.hit) container.createEl("mark", { cls: "vs-hit", text: seg.text });
    else container.appendText(readableMarkdown(seg.text, i === 0, i === segments.length - 1));
  });
}

const BAND_LABEL: Record<Band, string> = { high: "High", medium: "Medium", low: "Low", none: "None" };

/** What a band means, on hover (the sidecar sets it from how much evidence the match has). */
export const BAND_MEANING: Record<Band, string> = {
  high: "High confidence: strong evidence of a match (the words and the meaning agree). Usually what you are looking for.",
  medium: "Medium confidence: a likely match, worth a look.",
  low: "Low confidence: weak evidence; it may be unrelated.",
  none: "No confidence: nothing in the vault really matches; these are the nearest notes.",
};

export function renderBand(container: HTMLElement, band: Band): HTMLElement {
  return container.createSpan({
    cls: ["vs-band", `vs-band-${band}`],
    text: BAND_LABEL[band],
    attr: { "aria-label": BAND_MEANING[band], title: BAND_MEANING[band] },
  });
}

/** A vault path where the file name always shows: a long folder part is cut (…), never the name. */
export function renderPath(container: HTMLElement, path: string, cls = "vs-path"): HTMLElement {
  const el = container.createSpan({ cls: [cls, "vs-path-parts"], attr: { title: path } });
  const cut = path.lastIndexOf("/");
  if (cut >= 0) el.createSpan({ cls: "vs-path-folder", text: path.slice(0, cut + 1) });
  el.createSpan({ cls: "vs-path-name", text: path.slice(cut + 1) });
  return el;
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

/** The hint an error carries (the sidecar's start errors and RPC errors do), else the fallback. */
export function errorHint(err: unknown, fallback: string | null = null): string | null {
  const hint: unknown = err && typeof err === "object" && "hint" in err ? err.hint : null;
  return typeof hint === "string" && hint.trim() ? hint : fallback;
}

export function renderMessage(container: HTMLElement, text: string, kind: "empty" | "info" | "error" = "empty"): HTMLElement {
  return container.createDiv({ cls: ["vs-message", `vs-message-${kind}`], text });
}

/** Empty `container` for a fresh render, marked with its class; with nothing to show yet (false) the empty
 * text is all it holds. */
function startRender<T>(container: HTMLElement, cls: string, response: T | null | undefined, emptyText: string): response is T {
  container.empty();
  container.addClass(cls);
  if (response) return true;
  renderMessage(container, emptyText);
  return false;
}

/** An error in place of a pane's content, with what to do about it when known (never an empty state above it). */
export function renderError(container: HTMLElement, text: string, hint?: string | null): void {
  container.empty();
  const box = container.createDiv({ cls: "vs-error", attr: { role: "alert" } });
  renderMessage(box, text, "error");
  if (hint) renderMessage(box, hint, "info").addClass("vs-message-hint");
}

// ---- search ----------------------------------------------------------------------------------

/**
 * Where a search result or related note leads: its section's line, linked by its heading (the last one of
 * the " > " path, which is what Obsidian links).
 */
export function sectionTarget(hit: Pick<SearchResult | RelatedNote, "path" | "start_line" | "heading">): NoteTarget {
  const last = hit.heading?.split(" > ").pop()?.trim();
  return { path: hit.path, line: hit.start_line, ...(last ? { subpath: `#${last}` } : {}) };
}

/** What a search response says about itself: its caveat (else that meaning was not used), a building index. */
export function searchNotes(response: SearchResponse): string[] {
  const lexicalOnly = !response.vectors_available && response.mode !== "lexical"
    ? "Keyword results only: the embedding model is unavailable." : null;
  const building = response.index_building ? "The index is still being built; results may be incomplete." : null;
  return [response.caveat ?? lexicalOnly, building].filter((n): n is string => Boolean(n));
}

/** One search result: title, heading path, highlighted snippet, band. */
export function renderSearchResult(container: HTMLElement, r: SearchResult): HTMLElement {
  const row = container.createDiv({ cls: "vs-search-row", attr: { "data-path": r.path } });
  const head = row.createDiv({ cls: "vs-row-head" });
  head.createSpan({ cls: "vs-title", text: r.title || r.path });
  renderBand(head, r.band);
  // The heading path without the note's title in front (the row's title says it already).
  const sameAsTitle = r.heading_path.length > 0 && r.heading_path[0]?.trim().toLowerCase() === (r.title || "").trim().toLowerCase();
  const headingPath = (sameAsTitle ? r.heading_path.slice(1) : r.heading_path).join(" › ");
  // No heading: no line (the path is in the meta line below; showing it twice said nothing).
  if (headingPath) row.createDiv({ cls: "vs-heading-path", text: headingPath });
  const snippet = row.createDiv({ cls: "vs-snippet" });
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

// ---- related ---------------------------------------------------------------------------------

/** Reasons every row gives (when there are several rows) say nothing about any one row. */
export function sharedReasons(notes: readonly RelatedNote[]): Set<string> {
  if (notes.length < 2) return new Set();
  const [head, ...rest] = notes.map((n) => new Set(n.reasons.map((r) => r.label)));
  return new Set([...(head ?? [])].filter((label) => rest.every((labels) => labels.has(label))));
}

export interface RelatedOptions {
  showAlreadyLinked: boolean;
}

export function renderRelatedRow(container: HTMLElement, note: RelatedNote, shared: ReadonlySet<string> = new Set()): HTMLElement {
  const row = container.createDiv({ cls: "vs-related-row", attr: { "data-path": note.path } });
  if (note.already_linked) row.addClass("is-linked");
  const head = row.createDiv({ cls: "vs-row-head" });
  head.createSpan({ cls: "vs-title", text: note.title || note.path, attr: { title: note.path } });
  renderBand(head, note.band);
  // One compact line: folder, then the reasons that tell this row apart.
  const meta = row.createDiv({ cls: "vs-related-meta" });
  meta.createSpan({ cls: "vs-folder", text: note.folder || "/", attr: { title: note.folder || "/" } });
  if (note.already_linked) meta.createSpan({ cls: ["vs-badge", "vs-badge-linked"], text: "Linked" });
  for (const reason of note.reasons) {
    if (!shared.has(reason.label)) meta.createSpan({ cls: ["vs-badge", `vs-badge-${reason.kind}`], text: reason.label });
  }
  const { heading, text } = excerptParts(note);
  if (text) {
    const excerpt = row.createDiv({ cls: "vs-excerpt" });
    if (heading) excerpt.createSpan({ cls: "vs-excerpt-heading", text: `${heading}: ` });
    excerpt.appendText(text);
  }
  return row;
}

/**
 * What a related row shows under its title: the heading without the note's own title in front
 * ("Sourdough Bread > Troubleshooting" under "Sourdough Bread" is just "Troubleshooting"), and the excerpt
 * without a leading Markdown heading that repeats it ("## Troubleshooting Dense crumb…" → "Dense crumb…").
 */
export function excerptParts(note: Pick<RelatedNote, "title" | "heading" | "excerpt">): { heading: string; text: string } {
  let parts = note.heading ? note.heading.split(" > ").map((p) => p.trim()).filter(Boolean) : [];
  if (parts.length && note.title && parts[0]?.toLowerCase() === note.title.trim().toLowerCase()) parts = parts.slice(1);
  const last = (note.heading ? note.heading.split(" > ").pop() ?? "" : "").trim();
  let text = note.excerpt.trim();
  if (last) {
    const m = /^#{1,6}\s+(.*)$/s.exec(text);
    const rest = m?.[1] ?? "";
    if (m && rest.toLowerCase().startsWith(last.toLowerCase())) text = rest.slice(last.length).trim();
  }
  return { heading: parts.join(" › "), text: readableMarkdown(text || note.excerpt.trim()) };
}

export function renderRelated(container: HTMLElement, response: RelatedResponse | null,
  actions?: RowActions, opts: RelatedOptions = { showAlreadyLinked: true },
  emptyText = "Open a note to see related notes."): void {
  if (!startRender(container, "vs-related", response, emptyText)) return;
  if (!response.vectors_available) renderMessage(container, "Links and tags only: the embedding model is unavailable.", "info");
  if (response.index_building) renderMessage(container, "The index is still being built.", "info");
  const notes = opts.showAlreadyLinked ? response.results : response.results.filter((n) => !n.already_linked);
  if (!notes.length) {
    renderMessage(container, response.results.length ? "Every related note is already linked." : "No related notes found.");
    return;
  }
  const shared = sharedReasons(notes);
  const list = container.createDiv({ cls: "vs-related-list" });
  for (const note of notes) {
    const row = renderRelatedRow(list, note, shared);
    if (actions) wireRow(row, sectionTarget(note), actions);
  }
  if (actions) wireListKeys(list, actions, "Related notes");
}

// ---- health ----------------------------------------------------------------------------------

const SUMMARY_LABELS: Record<string, string> = {
  notes: "Notes",
  orphans: "Orphans",
  no_inbound: "No inbound links",
  dead_ends: "Dead ends",
  unresolved_links: "Unresolved links",
  unresolved_targets: "Unresolved targets",
  ambiguous_links: "Ambiguous links",
  broken_anchors: "Broken anchors",
  near_duplicates: "Near-duplicates",
  secrets: "Possible secrets",
};

export function summaryLabel(key: string): string {
  return SUMMARY_LABELS[key] ?? (key.charAt(0).toUpperCase() + key.slice(1)).replace(/_/g, " ");
}

/**
 * The summary tiles: a tile with a section of the same id carries the section's title and, clicked,
 * opens and scrolls to it; the others (the note count, say) are plain numbers.
 */
function renderSummary(container: HTMLElement, report: HealthResponse, sectionEls: Map<string, HTMLDetailsElement>): void {
  const summary = container.createDiv({ cls: "vs-health-summary" });
  const titles = new Map(report.sections.map((s) => [s.id, s.title]));
  for (const [key, value] of Object.entries(report.summary)) {
    const cls = ["vs-chip", key === "notes" ? "is-total" : value > 0 ? "has-count" : "is-zero"];
    const section = sectionEls.get(key);
    const chip = section ? summary.createEl("button", { cls: [...cls, "is-clickable"], attr: { "data-section": key } })
      : summary.createDiv({ cls });
    chip.createSpan({ cls: "vs-chip-count", text: String(value) });
    chip.createSpan({ cls: "vs-chip-label", text: titles.get(key) ?? summaryLabel(key) });
    if (section) {
      chip.setAttribute("aria-label", `${titles.get(key) ?? key}: ${value}. Show the section.`);
      chip.addEventListener("click", () => {
        section.open = true;
        section.scrollIntoView({ block: "start", behavior: "smooth" });
        section.querySelector<HTMLElement>("summary")?.focus({ preventScroll: true });
      });
    }
  }
}

/** A report whose sections load their items when opened, a page at a time (the health view). */
export interface HealthPaging {
  /** Whether the user opened (true) or closed (false) the section; undefined: not touched yet. */
  isOpen(id: string): boolean | undefined;
  toggled(id: string, open: boolean): void;
  loading(id: string): boolean;
  hasMore(id: string): boolean;
  more(id: string): void;
}

export function renderHealth(container: HTMLElement, report: HealthResponse | null, actions?: RowActions,
  emptyText = "No report yet.", paging?: HealthPaging): void {
  if (!startRender(container, "vs-health", report, emptyText)) return;
  const summarySlot = container.createDiv();
  const sectionEls = new Map<string, HTMLDetailsElement>();
  for (const section of report.sections) {
    const details = container.createEl("details", {
      cls: ["vs-health-section", `vs-severity-${section.severity}`], attr: { "data-section": section.id },
    });
    sectionEls.set(section.id, details);
    if (section.count === 0) details.addClass("is-empty");
    details.open = paging?.isOpen(section.id) ?? (section.count > 0 && section.severity !== "info");
    if (paging) details.addEventListener("toggle", () => paging.toggled(section.id, details.open));
    const head = details.createEl("summary", { cls: "vs-health-section-head" });
    head.createSpan({ cls: "vs-health-section-title", text: section.title });
    head.createSpan({ cls: ["vs-count", `vs-severity-${section.severity}`], text: String(section.count) });
    if (!section.items.length) {
      const text = !section.count ? "Nothing found." : paging?.loading(section.id) ? "Loading…" : "Items not listed.";
      details.createDiv({ cls: "vs-message vs-message-empty", text });
      continue;
    }
    // The same advice on every item (e.g. every credential) is said once, above the list.
    const fixes = new Set(section.items.map((item) => item.fix ?? ""));
    const sharedFix = section.items.length > 1 && fixes.size === 1 ? [...fixes][0] ?? "" : "";
    if (sharedFix) details.createDiv({ cls: ["vs-health-fix", "vs-health-section-fix"], text: sharedFix });
    const list = details.createEl("ul", { cls: "vs-health-items" });
    for (const item of section.items) {
      const li = list.createEl("li", { cls: ["vs-health-item", `vs-severity-${item.severity}`] });
      renderPath(li, item.line !== null ? `${item.path}:${item.line}` : item.path, "vs-health-path");
      li.createSpan({ cls: "vs-health-message", text: item.message });
      if (item.fix && !sharedFix) li.createDiv({ cls: "vs-health-fix", text: item.fix });
      if (actions) wireRow(li, { path: item.path, line: item.line }, actions);
      if (item.related?.length) {
        const rel = li.createDiv({ cls: "vs-health-related" });
        for (const other of item.related) {
          const link = rel.createEl("a", {
            cls: "vs-health-related-link",
            text: `${other.title || other.path} (${other.score.toFixed(2)})`,
            attr: { "data-path": other.path },
          });
          if (actions) {
            link.addEventListener("click", (evt) => {
              evt.preventDefault(); // the row leaves a click its link took
              actions.open({ path: other.path, line: null }, evt);
            });
          }
        }
      }
    }
    if (paging?.hasMore(section.id)) {
      const more = details.createEl("button", {
        cls: "vs-health-more", text: paging.loading(section.id) ? "Loading…" : `Show more (${section.items.length} of ${section.count})`,
      });
      more.disabled = paging.loading(section.id);
      more.addEventListener("click", () => paging.more(section.id));
    } else if (section.items.length < section.count) {
      details.createDiv({ cls: "vs-message vs-message-info", text: `Showing ${section.items.length} of ${section.count}.` });
    }
  }
  renderSummary(summarySlot, report, sectionEls);
  summarySlot.replaceWith(...Array.from(summarySlot.childNodes));
  if (actions) wireListKeys(container, actions, "Vault health findings");
  if (report.sections.length === 0) renderMessage(container, "No checks ran.");
}

function pad(n: number): string {
  return String(n).padStart(2, "0");
}

// ---- agent edits -----------------------------------------------------------------------------

export type EditOp = EditRecord["op"];

const OP_LABEL: Record<EditOp, string> = {
  create: "Created",
  append: "Appended",
  replace_section: "Replaced section",
  update_properties: "Set properties",
  move: "Moved",
  delete: "Deleted",
  restore: "Restored",
  undo: "Undo",
};

export function opLabel(op: string): string {
  return OP_LABEL[op as EditOp] ?? summaryLabel(op);
}

/** Local time: "Today 14:05", "Yesterday 09:30", else "2026-12-01 14:05". */
export function formatEditTime(at: number, now: Date = new Date()): string {
  const when = new Date(at * 1000);
  const clock = `${pad(when.getHours())}:${pad(when.getMinutes())}`;
  const day = (d: Date): string => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  if (day(when) === day(now)) return `Today ${clock}`;
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  if (day(when) === day(yesterday)) return `Yesterday ${clock}`;
  return `${day(when)} ${clock}`;
}

/**
 * The note a row links to. EditRecord.paths is sorted and also holds the notes a move relinked, so the edit's
 * own note is the path that comes last in the summary ("moved A.md to B/A.md": B/A.md), preferring one that
 * exists now (after an undone move, the old path again).
 */
export function mainPath(edit: Pick<EditRecord, "paths" | "summary"> & Partial<Pick<EditRecord, "path">>,
  exists?: (path: string) => boolean): string | null {
  // The sidecar names the note (protocol 1.7); the guess from the summary serves older sidecars and undone moves.
  if (edit.path && (!exists || exists(edit.path))) return edit.path;
  if (!edit.paths.length) return null;
  const ranked = [...edit.paths].sort((a, b) => end(edit.summary, b) - end(edit.summary, a));
  return (exists ? ranked.find((p) => exists(p)) : undefined) ?? ranked[0] ?? null;
}

/** "Folder/Note.md" → "Note". */
export function noteName(path: string): string {
  return (path.split("/").pop() ?? path).replace(/\.md$/i, "");
}

function end(summary: string, path: string): number {
  const i = summary.lastIndexOf(path);
  return i < 0 ? -1 : i + path.length;
}

export interface EditRowState {
  /** An undo of this edit is under way. */
  pending?: boolean;
  /** Why the sidecar refused to undo it (its error message). */
  refused?: string;
}

export interface EditsHandlers {
  onOpen?: (path: string, evt: MouseEvent | KeyboardEvent) => void;
  onUndo?: (edit: EditRecord) => void;
  onMore?: () => void;
  /** Whether a vault path exists now (links to gone notes are not links). */
  exists?: (path: string) => boolean;
  /** Row state by edit id. */
  state?: (edit: EditRecord) => EditRowState;
  now?: Date;
  /** Menu, hover preview, drag and insert link on the rows (their note). */
  row?: Omit<RowActions, "open">;
}

export const EDITS_EMPTY = "No agent edits yet. Agents can edit only when 'Let agents edit notes' is on in settings.";

/** One agent edit: what, the note (a link), when, who, the summary, and Undo (or why not). */
export function renderEditRow(container: HTMLElement, edit: EditRecord, handlers: EditsHandlers = {}): HTMLElement {
  const state = handlers.state?.(edit) ?? {};
  const path = mainPath(edit, handlers.exists);
  const gone = path !== null && handlers.exists !== undefined && !handlers.exists(path);
  const row = container.createDiv({
    cls: ["vs-edit-row", `vs-edit-${edit.op}`],
    attr: { "data-edit": String(edit.edit), "data-path": path ?? "" },
  });
  if (edit.undone_by !== null) row.addClass("is-undone");
  const head = row.createDiv({ cls: "vs-row-head" });
  const what = head.createDiv({ cls: "vs-edit-what" });
  what.createSpan({ cls: ["vs-edit-op", `vs-edit-op-${edit.op}`], text: opLabel(edit.op) });
  if (path && !gone) {
    // The note's name, as Obsidian shows notes; the full path in the tooltip (and in the summary below).
    const link = what.createEl("a", {
      cls: "vs-edit-path", text: noteName(path), attr: { href: "#", "data-href": path, title: path, tabindex: "-1" },
    });
    const onOpen = handlers.onOpen;
    link.addEventListener("click", (evt) => {
      evt.preventDefault();
      evt.stopPropagation();
      onOpen?.(path, evt);
    });
  } else {
    what.createSpan({
      cls: ["vs-edit-path", "is-gone"], text: path ? noteName(path) : "(no note)", attr: gone ? { title: `${path ?? ""}: not in the vault now` } : {},
    });
  }
  const undo = head.createEl("button", { cls: "vs-edit-undo", text: state.pending ? "Undoing…" : "Undo" });
  undo.setAttribute("aria-label", `Undo: ${edit.summary}`);
  const refusedReason = edit.undone_by !== null ? `Undone by edit ${edit.undone_by}.` : state.refused;
  undo.disabled = Boolean(state.pending || refusedReason);
  if (refusedReason) {
    undo.setText(edit.undone_by !== null ? "Undone" : "Undo");
    undo.setAttribute("title", refusedReason);
  }
  const onUndo = handlers.onUndo;
  undo.addEventListener("click", (evt) => {
    evt.stopPropagation();
    if (!undo.disabled) onUndo?.(edit);
  });
  const meta = row.createDiv({ cls: "vs-meta vs-edit-meta" });
  meta.createEl("time", {
    cls: "vs-edit-time", text: formatEditTime(edit.at, handlers.now),
    attr: { datetime: new Date(edit.at * 1000).toISOString(), title: new Date(edit.at * 1000).toLocaleString() },
  });
  meta.createSpan({ cls: "vs-edit-client", text: edit.client || "unknown client" });
  const others = edit.paths.filter((p) => p !== path);
  if (others.length) {
    meta.createSpan({
      cls: "vs-more", text: `+${others.length} other note${others.length === 1 ? "" : "s"}`, attr: { title: others.join("\n") },
    });
  }
  row.createDiv({ cls: "vs-edit-summary", text: edit.summary });
  if (edit.undone_by !== null) row.createDiv({ cls: "vs-edit-status", text: `Undone by edit ${edit.undone_by}.` });
  else if (state.refused) row.createDiv({ cls: ["vs-edit-status", "vs-edit-refused"], text: `Cannot undo: ${state.refused}` });
  return row;
}

/** The agent-edits history: newest first, or the empty state. */
export function renderEdits(container: HTMLElement, response: EditsResponse | null, handlers: EditsHandlers = {},
  emptyText = "Loading agent edits…"): void {
  if (!startRender(container, "vs-edits", response, emptyText)) return;
  if (!response.edits.length) {
    renderMessage(container, EDITS_EMPTY);
    return;
  }
  const list = container.createDiv({ cls: "vs-edit-list" });
  const edits = [...response.edits].sort((a, b) => b.at - a.at || b.edit - a.edit);
  // Only the keyboard opens from the row (Enter); the mouse opens from the note's link, so a click
  // beside the Undo button does nothing unexpected.
  const actions: RowActions = { ...handlers.row, open: (t, evt) => handlers.onOpen?.(t.path, evt) };
  for (const edit of edits) {
    const row = renderEditRow(list, edit, handlers);
    const path = row.getAttribute("data-path") ?? "";
    const gone = !path || row.querySelector(".vs-edit-path.is-gone") !== null;
    wireRow(row, gone ? null : { path, line: null }, actions, { click: false });
  }
  wireListKeys(list, actions, "Agent edits, newest first");
  if (response.next_offset !== null) {
    const more = container.createEl("button", {
      cls: "vs-edits-more", text: `Show more (${response.edits.length} of ${response.total})`,
    });
    const onMore = handlers.onMore;
    more.addEventListener("click", () => onMore?.());
  }
}

// ---- status and MCP --------------------------------------------------------------------------

export interface StatusDetails {
  /** One line: what the status bar says. */
  headline: string;
  status: StatusResponse | null;
  error: string | null;
  stderr: string[];
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit] ?? "TB"}`;
}

export function renderStatusDetails(container: HTMLElement, d: StatusDetails): void {
  container.empty();
  container.addClass("vs-status-details");
  container.createDiv({ cls: "vs-status-headline", text: d.headline });
  if (d.error) container.createEl("pre", { cls: "vs-status-error", text: d.error });
  const s = d.status;
  if (s) {
    const table = container.createEl("table", { cls: "vs-status-table" });
    const row = (label: string, value: string): void => {
      const tr = table.createEl("tr");
      tr.createEl("th", { text: label });
      tr.createEl("td", { text: value });
    };
    row("Sidecar", `${s.version} (protocol ${s.protocol_version})`);
    row("Vault", s.vault);
    row("Index", `${s.index_dir} (${formatBytes(s.index_bytes)})`);
    row("Notes", `${s.notes} notes, ${s.chunks} chunks`);
    row("Vectors", `${s.chunks_with_vectors} with, ${s.chunks_without_vectors} without`);
    row("Model", s.model.available ? `${s.model.name ?? "?"} (${s.model.dim ?? "?"} dimensions)` : `Unavailable: ${s.model.error ?? "unknown"}`);
    row("Backend", `${s.backend}; ${s.vector_store}; ${s.vector_search}`);
    row("Last indexed", s.last_indexed_at ? new Date(s.last_indexed_at * 1000).toLocaleString() : "Never");
    row("MCP", s.mcp.enabled ? `On, port ${s.mcp.port ?? "?"}` : "Off");
    if (s.progress) row("Progress", `${s.progress.phase} ${s.progress.done}/${s.progress.total}`);
    if (s.skipped.length) {
      container.createDiv({ cls: "vs-status-subhead", text: `Skipped files (${s.skipped.length})` });
      const ul = container.createEl("ul", { cls: "vs-status-skipped" });
      for (const f of s.skipped.slice(0, 50)) ul.createEl("li", { text: `${f.path}: ${f.reason}` });
      if (s.skipped.length > 50) ul.createEl("li", { text: `… and ${s.skipped.length - 50} more` });
    }
  }
  if (d.stderr.length) {
    container.createDiv({ cls: "vs-status-subhead", text: "Recent sidecar output" });
    container.createEl("pre", { cls: "vs-status-stderr", text: d.stderr.slice(-50).join("\n") });
  }
}

/** MCP client configuration as one text, for the clipboard. */
export function mcpConfigText(cfg: McpConfigResponse): string {
  return [
    "# Vault Sidecar MCP configuration",
    "",
    "## Over HTTP (while Obsidian runs)",
    `URL: ${cfg.http.url}`,
    `Token: ${cfg.http.token_hint}`,
    "",
    "Claude Code:",
    cfg.http.claude_code,
    "",
    "Cursor (mcp.json):",
    JSON.stringify(cfg.http.cursor, null, 2),
    "",
    "Codex (config.toml):",
    cfg.http.codex,
    "",
    "## Over stdio (no Obsidian needed)",
    `Command: ${cfg.stdio.command.join(" ")}`,
    "",
    "Claude Code:",
    cfg.stdio.claude_code,
    "",
    "Cursor (mcp.json):",
    JSON.stringify(cfg.stdio.cursor, null, 2),
    "",
    "Codex (config.toml):",
    cfg.stdio.codex,
    "",
  ].join("\n");
}

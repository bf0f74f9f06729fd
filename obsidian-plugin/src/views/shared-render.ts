// Shared by the feature renderers: messages and errors, bands, paths, excerpts' Markdown, where a row leads.
// Every renderer takes data and a container, uses only Obsidian's DOM helpers (createDiv, ...) and optional
// handlers, so happy-dom tests and the Chromium pictures run it without the app.

import type { Band, RelatedNote, SearchResult } from "../protocol.gen";
import type { NoteTarget } from "./list-nav";

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

// How to read a band is the sidecar's to say: its caveat on a search response (sidecar/rank/fuse.py CAVEATS),
// shown above the results (search-render searchNotes). Only the badge's word stays here, because a row's band
// (search results, related notes) comes without a caveat and the badge still needs a label and a hover name.
const BAND_LABEL: Record<Band, string> = { high: "High", medium: "Medium", low: "Low", none: "None" };

export function renderBand(container: HTMLElement, band: Band): HTMLElement {
  const name = `${BAND_LABEL[band]} confidence`;
  return container.createSpan({ cls: ["vs-band", `vs-band-${band}`], text: BAND_LABEL[band], attr: { "aria-label": name, title: name } });
}

/**
 * On an element showing the user's own words (a title, an excerpt, a query): its direction is that of its
 * first letter, so an Arabic, Hebrew or Persian snippet reads right to left, its punctuation at its end,
 * inside the plugin's left-to-right panes. Paths and folders keep the pane's direction: "Home Lab/النسخ.md"
 * reads as a path, with ".md" after the name.
 */
export const USER_TEXT = { dir: "auto" } as const;

/** A vault path where the file name always shows: a long folder part is cut (…), never the name. */
export function renderPath(container: HTMLElement, path: string, cls = "vs-path"): HTMLElement {
  const el = container.createSpan({ cls: [cls, "vs-path-parts"], attr: { title: path } });
  const cut = path.lastIndexOf("/");
  if (cut >= 0) el.createSpan({ cls: "vs-path-folder", text: path.slice(0, cut + 1) });
  el.createSpan({ cls: "vs-path-name", text: path.slice(cut + 1) });
  return el;
}

export function renderMessage(container: HTMLElement, text: string, kind: "empty" | "info" | "error" = "empty"): HTMLElement {
  return container.createDiv({ cls: ["vs-message", `vs-message-${kind}`], text });
}

/** Empty `container` for a fresh render, marked with its class; with nothing to show yet (false) the empty
 * text is all it holds. */
export function startRender<T>(container: HTMLElement, cls: string, response: T | null | undefined, emptyText: string): response is T {
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

/**
 * Where a search result or related note leads: its section's line, linked by its heading (the last one of
 * the " > " path, which is what Obsidian links).
 */
export function sectionTarget(hit: Pick<SearchResult | RelatedNote, "path" | "start_line" | "heading">): NoteTarget {
  const last = hit.heading?.split(" > ").pop()?.trim();
  return { path: hit.path, line: hit.start_line, ...(last ? { subpath: `#${last}` } : {}) };
}

/** A snake_case key in words ("unresolved_targets" → "Unresolved targets"), where the sidecar sends no title. */
export function keyLabel(key: string): string {
  return (key.charAt(0).toUpperCase() + key.slice(1)).replace(/_/g, " ");
}

/** 7 → "07", for dates and clock times. */
export function twoDigits(n: number): string {
  return String(n).padStart(2, "0");
}

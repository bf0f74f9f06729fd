// Renders the related-notes pane: rows with band, folder, reasons and excerpt.

import type { RelatedNote, RelatedResponse } from "../protocol.gen";
import { wireListKeys, wireRow, type RowActions } from "./list-nav";
import { USER_TEXT, readableMarkdown, renderBand, renderMessage, sectionTarget, startRender } from "./shared-render";

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
  head.createSpan({ cls: "vs-title", text: note.title || note.path, attr: { title: note.path, ...USER_TEXT } });
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
    const excerpt = row.createDiv({ cls: "vs-excerpt", attr: USER_TEXT });
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

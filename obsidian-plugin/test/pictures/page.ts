// Runs INSIDE headless Chromium (bundled by esbuild in pictures.test.ts): Obsidian's DOM helpers, then the
// plugin's own render functions from src/views/render.ts inside the same chrome the views build in their
// onOpen (header, search bar, buttons), fed with real sidecar responses. Clicks are recorded so the test
// can check that the handlers are wired.

import type { EditsResponse, HealthResponse, RelatedResponse, SearchResponse } from "../../src/protocol.gen";
import { MODES, MODE_LABELS } from "../../src/views/modes";
import {
  renderEdits, renderError, renderHealth, renderRelated, renderSearchResult, renderSearchResults, renderSyntaxHelp,
} from "../../src/views/render";
import { installDomHelpers } from "../obsidian-stub";
import type { RowActions } from "../../src/views/list-nav";

export interface PictureApi {
  relatedPane(data: { response: RelatedResponse | null; basename: string } & ErrorState): void;
  searchModal(data: { response: SearchResponse; query: string }): void;
  searchPane(data: { response: SearchResponse | null; query: string } & ErrorState): void;
  healthView(data: { report: HealthResponse }): void;
  editsView(data: EditsPictureData): void;
  /** What the handlers saw: "open:<path>" and the like. */
  clicks: string[];
  /** Lowest WCAG contrast ratio of visible text inside the stage, with the element that has it. */
  contrast(selectors: string): { ratio: number; text: string; selector: string }[];
  /** Elements inside the stage that stick out of it on the right (horizontal overflow). */
  overflowing(): string[];
}

/** A pane's error state: the error and its fix-it hint, as the views render them. */
export interface ErrorState {
  error?: string;
  hint?: string | null;
}

export interface EditsPictureData {
  /** null with `error`: the error state; null without: loading. */
  response: EditsResponse | null;
  error?: string;
  hint?: string | null;
  /** Vault paths that exist now (the others are shown as gone). */
  existing: string[];
  /** Refused undos: edit id -> the sidecar's message. */
  refused?: Record<number, string>;
  pending?: number[];
  /** "Now", Unix seconds, so "Today" is stable. */
  now: number;
}

declare global {
  interface Window {
    vsPictures: PictureApi;
  }
}

installDomHelpers(window);
const clicks: string[] = [];
/** What the rows asked for, as the views' noteActions would do it. */
const actions: RowActions = {
  open: (t) => clicks.push(`open:${t.path}${t.line !== null ? `:${t.line}` : ""}`),
  insertLink: (t) => clicks.push(`insert:${t.path}`),
  menu: (t) => clicks.push(`menu:${t.path}`),
  linkText: (t) => `[[${t.path}]]`,
};

function stage(): HTMLElement {
  document.body.empty();
  return document.body.createDiv({ attr: { id: "stage" } });
}

function leaf(kind: "mod-sidebar" | "mod-main", title: string): HTMLElement {
  const el = stage().createDiv({ cls: ["workspace-leaf", kind] });
  el.createDiv({ cls: "view-header", text: title });
  return el.createDiv({ cls: "view-content" });
}

function relatedPane({ response, basename, error, hint }: { response: RelatedResponse | null; basename: string } & ErrorState): void {
  // RelatedView.onOpen + refresh()
  const content = leaf("mod-sidebar", "Related notes");
  content.addClass("vs-pane");
  content.createDiv({ cls: "vs-pane-header", text: basename });
  const list = content.createDiv({ cls: "vs-pane-body" });
  if (error) renderError(list, error, hint);
  else renderRelated(list, response, actions, { showAlreadyLinked: true });
}

function searchModal({ response, query }: { response: SearchResponse; query: string }): void {
  // SuggestModal's DOM (input, results, instructions) plus what SearchModal adds (modes, info, help).
  const container = stage().createDiv({ cls: "modal-container" });
  const modal = container.createDiv({ cls: ["modal", "prompt", "vs-search-modal"] });
  const modes = modal.createDiv({ cls: "vs-modes" });
  for (const mode of MODES) {
    const chip = modes.createEl("button", { cls: "vs-mode", text: MODE_LABELS[mode], attr: { "aria-pressed": String(mode === response.mode) } });
    if (mode === response.mode) chip.addClass("is-active");
  }
  const input = modal.createDiv({ cls: "prompt-input-container" }).createEl("input", {
    cls: "prompt-input", type: "text", attr: { placeholder: "Search notes by words and meaning…" },
  });
  input.value = query;
  const results = modal.createDiv({ cls: "prompt-results" });
  response.results.forEach((r, i) => {
    const item = results.createDiv({ cls: ["suggestion-item", "mod-complex"] });
    if (i === 0) item.addClass("is-selected");
    renderSearchResult(item, r);
    item.addEventListener("click", () => clicks.push(`open:${r.path}`));
  });
  const instructions = modal.createDiv({ cls: "prompt-instructions" });
  for (const [command, purpose] of [["↵", "open"], ["mod ↵", "open in new tab"], ["shift ↵", "insert link"], ["tab", "switch mode"], ["esc", "close"]]) {
    const el = instructions.createDiv({ cls: "prompt-instruction" });
    el.createSpan({ cls: "prompt-instruction-command", text: command });
    el.createSpan({ text: purpose ?? "" });
  }
  modal.createDiv({ cls: "vs-search-info", text: [response.caveat, response.index_building ? "Index still building." : null].filter(Boolean).join(" · ") });
  renderSyntaxHelp(modal);
}

function searchPane({ response, query, error, hint }: { response: SearchResponse | null; query: string } & ErrorState): void {
  // SearchView.onOpen + run()
  const content = leaf("mod-sidebar", "Sidecar search");
  content.addClass("vs-pane", "vs-search-pane");
  const bar = content.createDiv({ cls: "vs-search-bar" });
  bar.createEl("input", { type: "search", cls: "vs-search-input", value: query, attr: { "aria-label": "Search query" } });
  const select = bar.createEl("select", { cls: "dropdown vs-mode-select", attr: { "aria-label": "Search mode" } });
  for (const mode of MODES) select.createEl("option", { text: MODE_LABELS[mode], value: mode });
  select.value = response?.mode ?? "hybrid";
  renderSyntaxHelp(content);
  const results = content.createDiv({ cls: "vs-pane-body" });
  if (error) renderError(results, error, hint);
  else renderSearchResults(results, response, actions);
}

function healthView({ report }: { report: HealthResponse }): void {
  // HealthView.onOpen + draw()
  const content = leaf("mod-main", "Vault health");
  content.addClass("vs-pane", "vs-health-pane");
  const bar = content.createDiv({ cls: "vs-health-bar" });
  bar.createEl("button", { text: "Refresh", cls: "mod-cta" });
  bar.createEl("button", { text: "Save report as note" });
  const body = content.createDiv({ cls: "vs-pane-body" });
  renderHealth(body, report, actions);
}

function editsView(data: EditsPictureData): void {
  // EditsView.onOpen + draw()
  const content = leaf("mod-sidebar", "Agent edits");
  content.addClass("vs-pane", "vs-edits-pane");
  content.createDiv({ cls: "vs-edits-bar" }).createEl("button", { text: "Refresh" });
  const body = content.createDiv({ cls: "vs-pane-body" });
  if (data.error) {
    renderError(body, data.error, data.hint);
    return;
  }
  const existing = new Set(data.existing);
  renderEdits(body, data.response, {
    onOpen: (path, evt) => clicks.push(`open:${path}${evt instanceof KeyboardEvent ? ":key" : ""}`),
    onUndo: (edit) => clicks.push(`undo:${edit.edit}`),
    exists: (path) => existing.has(path),
    state: (edit) => ({ pending: data.pending?.includes(edit.edit) ?? false, refused: data.refused?.[edit.edit] }),
    now: new Date(data.now * 1000),
  });
}

// ---- checks run in the page ------------------------------------------------------------------

type Rgba = [number, number, number, number];

function parseColor(value: string): Rgba {
  // color-mix() computes to color(srgb r g b / a), channels 0..1
  const srgb = /color\(srgb\s+([^)]+)\)/.exec(value);
  if (srgb?.[1]) {
    const parts = srgb[1].split(/[\s/]+/).filter(Boolean).map(Number);
    return [(parts[0] ?? 0) * 255, (parts[1] ?? 0) * 255, (parts[2] ?? 0) * 255, parts.length > 3 ? (parts[3] ?? 1) : 1];
  }
  const m = /rgba?\(([^)]+)\)/.exec(value);
  if (!m?.[1]) return [0, 0, 0, 0];
  const parts = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
  return [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0, parts.length > 3 ? (parts[3] ?? 1) : 1];
}

function over(top: Rgba, bottom: Rgba): Rgba {
  const a = top[3] + bottom[3] * (1 - top[3]);
  if (a === 0) return [0, 0, 0, 0];
  const mix = (i: 0 | 1 | 2): number => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
  return [mix(0), mix(1), mix(2), a];
}

/** The colour behind an element: its own and its ancestors' backgrounds, composited. */
function backgroundOf(el: Element): Rgba {
  const layers: Rgba[] = [];
  for (let e: Element | null = el; e; e = e.parentElement) layers.push(parseColor(getComputedStyle(e).backgroundColor));
  let color: Rgba = [255, 255, 255, 1]; // the canvas behind the page's own background
  for (const layer of layers.reverse()) color = over(layer, color);
  return color;
}

function luminance([r, g, b]: Rgba): number {
  const lin = (c: number): number => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

function contrast(selectors: string): { ratio: number; text: string; selector: string }[] {
  const out: { ratio: number; text: string; selector: string }[] = [];
  const root = document.getElementById("stage");
  if (!root) return out;
  for (const selector of selectors.split(",").map((s) => s.trim())) {
    let worst: { ratio: number; text: string; selector: string } | null = null;
    for (const el of Array.from(root.querySelectorAll(selector))) {
      const rect = el.getBoundingClientRect();
      const text = (el.textContent ?? "").trim();
      if (!text || rect.width === 0 || rect.height === 0) continue;
      const bg = backgroundOf(el);
      const fg = over(parseColor(getComputedStyle(el).color), bg);
      const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a) as [number, number];
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      if (!worst || ratio < worst.ratio) worst = { ratio: Math.round(ratio * 100) / 100, text: text.slice(0, 60), selector };
    }
    if (worst) out.push(worst);
  }
  return out;
}

function overflowing(): string[] {
  const root = document.querySelector("#stage > *");
  if (!root) return [];
  const right = root.getBoundingClientRect().right;
  const out: string[] = [];
  for (const el of Array.from(root.querySelectorAll("*"))) {
    const rect = el.getBoundingClientRect();
    if (rect.width > 0 && rect.right > right + 0.5) out.push(`${el.tagName.toLowerCase()}.${Array.from(el.classList).join(".")}: ${Math.round(rect.right - right)}px`);
  }
  return out;
}

window.vsPictures = { relatedPane, searchModal, searchPane, healthView, editsView, clicks, contrast, overflowing };

// Runs INSIDE headless Chromium (bundled by esbuild in pictures.test.ts, with `obsidian` aliased to
// test/obsidian-stub.ts as vitest does): the plugin's REAL view classes (RelatedView, SearchView,
// SearchModal, HealthView, EditsView, SetupModal, StatusModal) opened on a fake Obsidian app (test/fake-app.ts) whose sidecar answers
// with the real sidecar's responses. What the views did with the app (opened notes, inserted links, hover
// and menu events, RPC calls) is recorded for the test.

import type { ItemView } from "obsidian";

import { SearchModal } from "../../src/views/search-modal";
import { SearchView } from "../../src/views/search-view";
import { RelatedView } from "../../src/views/related-view";
import { HealthView } from "../../src/views/health-view";
import { EditsView } from "../../src/views/edits-view";
import { SetupModal } from "../../src/setup/setup-modal";
import { StatusModal } from "../../src/status-bar";
import type { SidecarSnapshot } from "../../src/sidecar";
import type { Toolchain } from "../../src/setup/install";
import type { SidecarSettings } from "../../src/settings";
import { Events, Menu, installDomHelpers } from "../obsidian-stub";
import { FakeSidecar, fakeApp, fakeContext, type FakeAnswers, type FakeApp, type FakeFailure, type Opened } from "../fake-app";

export type ViewKind = "related" | "searchPane" | "searchModal" | "health" | "edits" | "setup" | "status";

export interface PictureSetup {
  view: ViewKind;
  /** What the fake sidecar answers, per RPC method. */
  answers: FakeAnswers;
  /** The sidecar cannot start: client() fails with this (the real failed start's error). */
  startFailure?: FakeFailure | null;
  /** Calls never answer: the view's loading state. */
  hold?: boolean;
  /** Vault paths that exist. */
  files: string[];
  /** The note open in the editor (the related pane follows it). */
  active?: { path: string; text: string; cursorLine?: number };
  /** The search pane's or window's query, typed in. */
  query?: string;
  settings?: Partial<SidecarSettings>;
  /** The setup modal: what looking for Python found, and why it opened. */
  toolchain?: Toolchain;
  reason?: string;
  /** The status window: the plugin's Sidecar's snapshot and the sidecar's recent output, as a real one had them. */
  sidecarSnapshot?: SidecarSnapshot;
  stderr?: string[];
}

export interface Recorded {
  opened: Opened[];
  inserted: string[];
  /** Workspace events the views triggered (hover-link, file-menu), with their source. */
  triggered: { name: string; source: string }[];
  calls: { method: string; params: Record<string, unknown> }[];
  /** Notes the views created in the vault: path -> content. */
  created: Record<string, string>;
  /** Titles of the menu on screen, if one is. */
  menu: string[];
}

export interface PictureApi {
  open(setup: PictureSetup): Promise<void>;
  /** Wait until the view's pending requests are answered and drawn. */
  settle(): Promise<void>;
  record(): Recorded;
  /** Lowest WCAG contrast ratio of visible text inside the stage, with the element that has it. */
  contrast(selectors: string): { ratio: number; text: string; selector: string }[];
  /** Elements inside the stage that stick out of it on the right (horizontal overflow). */
  overflowing(): string[];
}

declare global {
  interface Window {
    vsPictures: PictureApi;
  }
}

installDomHelpers(window);

let current: { fake: FakeApp; sidecar: FakeSidecar; modal: SearchModal | null } | null = null;

function stage(): HTMLElement {
  document.body.empty();
  return document.body.createDiv({ attr: { id: "stage" } });
}

/** A sidebar or main-area leaf holding the view, titled as Obsidian titles it. */
function mount(view: ItemView, kind: "mod-sidebar" | "mod-main"): void {
  const leaf = stage().createDiv({ cls: ["workspace-leaf", kind] });
  leaf.appendChild(view.containerEl);
  view.containerEl.querySelector(".view-header")?.setText(view.getDisplayText());
}

const VIEWS = { related: RelatedView, searchPane: SearchView, health: HealthView, edits: EditsView } as const;

async function open(setup: PictureSetup): Promise<void> {
  const fake = fakeApp(setup.files, setup.active);
  const sidecar = new FakeSidecar(setup.answers);
  sidecar.startFailure = setup.startFailure ?? null;
  if (setup.startFailure) {
    const hint = setup.startFailure.data?.hint;
    sidecar.snapshot = { phase: "failed", errorHint: typeof hint === "string" && hint ? hint : null };
  }
  if (setup.hold) sidecar.hold = new Promise(() => undefined);
  const ctx = fakeContext(fake.app, sidecar, setup.settings);
  current = { fake, sidecar, modal: null };
  if (setup.view === "setup") {
    const toolchain = setup.toolchain;
    if (!toolchain) throw new Error("the setup modal needs a toolchain");
    const modal = new SetupModal({ app: fake.app, pluginDir: null, reason: setup.reason ?? "", detect: () => Promise.resolve(toolchain),
      stop: () => Promise.resolve(), restart: () => Promise.resolve() });
    modal.open();
    stage().appendChild(modal.containerEl);
  } else if (setup.view === "status") {
    const snapshot = setup.sidecarSnapshot;
    if (!snapshot) throw new Error("the status window needs a sidecar snapshot");
    const source = Object.assign(new Events(), { snapshot, stderr: setup.stderr ?? [],
      refreshStatus: () => Promise.resolve(snapshot.status) });
    const modal = new StatusModal(fake.app, source as never, { reindex: () => undefined, restart: () => undefined,
      setup: () => undefined });
    modal.open();
    stage().appendChild(modal.containerEl);
  } else if (setup.view === "searchModal") {
    const modal = new SearchModal(fake.app, ctx, setup.query ?? "");
    current.modal = modal;
    modal.open();
    stage().appendChild(modal.containerEl);
  } else {
    const view = new VIEWS[setup.view]({ app: fake.app } as never, ctx);
    mount(view, setup.view === "health" ? "mod-main" : "mod-sidebar");
    const opened = view.onOpen();
    if (!setup.hold) await opened;
    if (setup.view === "searchPane" && setup.query !== undefined && !setup.hold) await (view as SearchView).search(setup.query);
  }
  await settle();
}

/** The modal's latest suggestions drawn, and any refresh a click started answered. */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await (current?.modal as unknown as { settled?: Promise<void> } | null)?.settled;
    await new Promise((r) => setTimeout(r, 0));
  }
}

function record(): Recorded {
  if (!current) throw new Error("no view open");
  const { fake, sidecar } = current;
  return {
    opened: [...fake.workspace.opened],
    inserted: [...(fake.editor?.inserted ?? [])],
    triggered: fake.workspace.triggered.map((t) => ({
      name: t.name, source: textOf((t.data[0] as { source?: unknown } | undefined)?.source ?? t.data[2]),
    })),
    calls: [...sidecar.calls],
    created: Object.fromEntries(fake.vault.created),
    menu: Menu.shown?.dom ? Menu.shown.items.map((i) => i.title) : [],
  };
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

window.vsPictures = { open, settle, record, contrast, overflowing };

function textOf(value: unknown): string {
  return typeof value === "string" ? value : "";
}

// The one thing tests may fake: Obsidian's app. A vault of paths (and what was created in it), a workspace
// with one active Markdown editor, leaves that record what they opened where, the events views trigger
// (hover-link, file-menu), and a link format like Obsidian's default ([[Name#Heading]]). Used by the unit
// tests (happy-dom) and by the picture page (headless Chromium) alike. A fake sidecar is here too: the
// views' PluginContext.sidecar, answering from canned responses (the picture test's come from the real one).
import { Events, MarkdownView, TFile, type App } from "obsidian";

import { RpcError, type RpcErrorKind } from "../src/client";
import type { PluginContext } from "../src/context";
import type { SidecarSettings } from "../src/settings";

export interface Opened {
  path: string;
  /** The pane asked for: false (the current tab), "tab", "split", "window". */
  pane: string | boolean;
  /** 0-based line the editor scrolls to, when one was asked for. */
  line: number | null;
}

export function fileAt(path: string): TFile {
  const file = new TFile();
  file.path = path;
  return file;
}

class FakeEditor {
  readonly inserted: string[] = [];
  constructor(public text: string, public cursorLine = 0) {}
  getValue(): string {
    return this.text;
  }
  getCursor(): { line: number; ch: number } {
    return { line: this.cursorLine, ch: 0 };
  }
  replaceSelection(text: string): void {
    this.inserted.push(text);
  }
}

class FakeVault {
  readonly files = new Map<string, TFile>();
  readonly folders = new Set<string>();
  /** What vault.create wrote: path -> content. */
  readonly created = new Map<string, string>();
  constructor(paths: readonly string[]) {
    for (const p of paths) this.files.set(p, fileAt(p));
  }
  getFileByPath(path: string): TFile | null {
    return this.files.get(path) ?? null;
  }
  getAbstractFileByPath(path: string): TFile | { path: string } | null {
    return this.files.get(path) ?? (this.folders.has(path) ? { path } : null);
  }
  create(path: string, data: string): Promise<TFile> {
    if (this.files.has(path)) return Promise.reject(new Error("File already exists."));
    const file = fileAt(path);
    this.files.set(path, file);
    this.created.set(path, data);
    return Promise.resolve(file);
  }
  createFolder(path: string): Promise<void> {
    this.folders.add(path);
    return Promise.resolve();
  }
}

class FakeWorkspace extends Events {
  readonly opened: Opened[] = [];
  /** Every workspace event a view triggered, with its arguments (hover-link, file-menu). */
  readonly triggered: { name: string; data: unknown[] }[] = [];
  constructor(private readonly activeView: MarkdownView | null) {
    super();
  }
  getActiveViewOfType<T>(type: abstract new (...args: never[]) => T): T | null {
    return this.activeView instanceof type ? this.activeView : null;
  }
  getActiveFile(): TFile | null {
    return this.activeView?.file ?? null;
  }
  getMostRecentLeaf(): { view: MarkdownView } | null {
    return this.activeView ? { view: this.activeView } : null;
  }
  getLeaf(pane: string | boolean = false): { openFile: (file: TFile, state?: { eState?: { line?: number } }) => Promise<void> } {
    return {
      openFile: (file, state) => {
        this.opened.push({ path: file.path, pane, line: state?.eState?.line ?? null });
        return Promise.resolve();
      },
    };
  }
  override trigger(name: string, ...data: unknown[]): void {
    this.triggered.push({ name, data });
    super.trigger(name, ...data);
  }
}

export interface FakeApp {
  app: App;
  vault: FakeVault;
  workspace: FakeWorkspace;
  /** The active note's editor (null without an active note): its text, and the links inserted into it. */
  editor: FakeEditor | null;
}

/** An app whose vault holds `paths`, with `active` open in the editor (its buffer, the cursor's line). */
export function fakeApp(paths: readonly string[], active?: { path: string; text: string; cursorLine?: number }): FakeApp {
  const vault = new FakeVault(paths);
  let view: MarkdownView | null = null;
  let editor: FakeEditor | null = null;
  if (active) {
    editor = new FakeEditor(active.text, active.cursorLine ?? 0);
    // A MarkdownView as getActiveViewOfType(MarkdownView) finds it; only file and editor are read.
    view = Object.assign(Object.create(MarkdownView.prototype) as MarkdownView, { file: vault.getFileByPath(active.path) ?? fileAt(active.path), editor });
  }
  const workspace = new FakeWorkspace(view);
  const fileManager = {
    generateMarkdownLink: (file: TFile, _source: string, subpath = ""): string => `[[${file.basename}${subpath}]]`,
  };
  const app = { vault, workspace, fileManager } as unknown as App;
  return { app, vault, workspace, editor };
}

/** A failure as the sidecar's client throws it (kind, message, method; `data.hint`: the fix). */
export interface FakeFailure {
  kind: RpcErrorKind;
  message: string;
  method: string;
  code?: number | null;
  data?: Record<string, unknown>;
}

/** What one RPC call answers: a response, or a failure; `when`: only to calls with these params. */
export type FakeAnswer = ({ result: unknown } | { error: FakeFailure }) & { when?: Record<string, unknown> };

/** Answers by method: one for every call, or a list tried in order (the first whose `when` matches). */
export type FakeAnswers = Record<string, FakeAnswer | FakeAnswer[]>;

/** The plugin's Sidecar as views use it: events, a snapshot, and client().call answered from `answers`. */
export class FakeSidecar extends Events {
  readonly calls: { method: string; params: Record<string, unknown> }[] = [];
  snapshot: { phase: string; errorHint: string | null } = { phase: "running", errorHint: null };
  /** Set: client() itself fails (the sidecar cannot start). */
  startFailure: FakeFailure | null = null;
  /** Set: calls wait until it resolves (a sidecar still answering). */
  hold: Promise<void> | null = null;
  constructor(public answers: FakeAnswers = {}) {
    super();
  }
  client(): Promise<{ call: (method: string, params?: Record<string, unknown>) => Promise<never> }> {
    if (this.startFailure) return Promise.reject(rpcError(this.startFailure));
    return Promise.resolve({ call: (method, params = {}) => this.answer(method, params) });
  }
  private async answer(method: string, params: Record<string, unknown>): Promise<never> {
    this.calls.push({ method, params });
    if (this.hold) await this.hold;
    const given = this.answers[method];
    const answer = (Array.isArray(given) ? given : given ? [given] : [])
      .find((a) => Object.entries(a.when ?? {}).every(([k, v]) => params[k] === v));
    if (!answer) throw new RpcError("unknown", `No answer for ${method}`, method);
    if ("error" in answer) throw rpcError(answer.error);
    return answer.result as never;
  }
}

function rpcError(f: FakeFailure): RpcError {
  return new RpcError(f.kind, f.message, f.method, f.code ?? null, f.data ?? {});
}

/** The views' PluginContext: the fake app and sidecar, with the settings the views read. */
export function fakeContext(app: App, sidecar: FakeSidecar, settings: Partial<SidecarSettings> = {}): PluginContext {
  const defaults: Partial<SidecarSettings> = {
    relatedDebounceMs: 300, relatedLimit: 10, relatedShowLinked: true, searchMode: "hybrid", searchLimit: 20, reportsFolder: "",
  };
  return { app, sidecar: sidecar as never, settings: { ...defaults, ...settings } as SidecarSettings };
}

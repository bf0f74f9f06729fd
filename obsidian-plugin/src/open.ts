// Opening notes at a line, inserting links, hover previews, the row menu: the few places that touch the
// workspace. noteActions() is what every list of notes does with its rows (views/list-nav.ts wires them).

import { Keymap, MarkdownView, Menu, Notice, TFile, type App, type HoverParent, type PaneType, type Plugin } from "obsidian";

import { EDITS_VIEW, HEALTH_VIEW, RELATED_VIEW, SEARCH_VIEW } from "./context";
import type { NoteTarget, RowActions } from "./views/list-nav";

export const SEARCH_MODAL_SOURCE = "vault-sidecar-search-window";

/**
 * Hover previews follow Obsidian's page-preview rules: each list is a source the user can set (Settings >
 * Page preview) to need Mod or not. All of them need Mod by default, as Obsidian's own panes do: a pointer
 * crossing a sidebar list should not pop previews up.
 */
export function registerHoverSources(plugin: Plugin): void {
  const sources: [string, string][] = [[RELATED_VIEW, "related notes"], [SEARCH_VIEW, "search pane"],
    [SEARCH_MODAL_SOURCE, "search window"], [HEALTH_VIEW, "vault health"], [EDITS_VIEW, "agent edits"]];
  for (const [id, what] of sources) plugin.registerHoverLinkSource(id, { display: `Vault Sidecar: ${what}`, defaultMod: true });
}

/** Where a click should open: Mod-click (or middle-click) in a new tab, else the current one. */
export function paneFor(evt: MouseEvent | KeyboardEvent | null | undefined): PaneType | false {
  if (!evt) return false;
  if ("button" in evt && evt.button === 1) return "tab";
  const mod = Keymap.isModEvent(evt);
  return mod === true ? "tab" : mod;
}

/** Open `path` scrolled to 1-based `line` (if given). */
export async function openNoteAt(app: App, path: string, line: number | null, pane: PaneType | false = false): Promise<void> {
  const file = app.vault.getFileByPath(path);
  if (!(file instanceof TFile)) {
    new Notice(`Note not found: ${path}. It may have been moved; the index updates shortly.`);
    return;
  }
  const leaf = app.workspace.getLeaf(pane);
  const eState = line !== null && line > 0 ? { line: line - 1 } : undefined;
  await leaf.openFile(file, eState ? { eState, active: true } : { active: true });
}

/** A link to `path` from the active note, in the user's link format. */
export function linkTo(app: App, path: string, subpath?: string): string | null {
  const file = app.vault.getFileByPath(path);
  if (!(file instanceof TFile)) return null;
  const source = app.workspace.getActiveFile()?.path ?? "";
  return app.fileManager.generateMarkdownLink(file, source, subpath);
}

/** The editor a link goes into: the active one, else the last one used (a sidebar list has the focus). */
function targetEditor(app: App): MarkdownView | null {
  const active = app.workspace.getActiveViewOfType(MarkdownView);
  if (active) return active;
  const recent = app.workspace.getMostRecentLeaf()?.view;
  return recent instanceof MarkdownView ? recent : null;
}

/** Insert a link to `path` at the cursor of the active (or last used) Markdown editor. */
export function insertLink(app: App, path: string, subpath?: string): boolean {
  const view = targetEditor(app);
  const link = linkTo(app, path, subpath);
  if (!view || !link) {
    new Notice("Open a note in the editor to insert a link.");
    return false;
  }
  view.editor.replaceSelection(link);
  return true;
}

async function copyLink(app: App, target: NoteTarget): Promise<void> {
  const link = linkTo(app, target.path, target.subpath);
  if (!link) return;
  await navigator.clipboard.writeText(link);
  new Notice(`Copied ${link}`);
}

/** Right-click on a row: where to open it, insert or copy a link; then what other plugins add (file-menu). */
export function showNoteMenu(app: App, target: NoteTarget, evt: MouseEvent, source: string): void {
  const file = app.vault.getFileByPath(target.path);
  if (!(file instanceof TFile)) return;
  const menu = new Menu();
  const open = (pane: PaneType): void => void openNoteAt(app, target.path, target.line, pane);
  menu.addItem((i) => i.setSection("open").setTitle("Open in new tab").setIcon("file-plus").onClick(() => open("tab")));
  menu.addItem((i) => i.setSection("open").setTitle("Open to the right").setIcon("separator-vertical").onClick(() => open("split")));
  menu.addItem((i) => i.setSection("open").setTitle("Open in new window").setIcon("picture-in-picture-2").onClick(() => open("window")));
  menu.addItem((i) => i.setSection("link").setTitle("Insert link").setIcon("link")
    .onClick(() => void insertLink(app, target.path, target.subpath)));
  menu.addItem((i) => i.setSection("link").setTitle("Copy link").setIcon("copy").onClick(() => void copyLink(app, target)));
  app.workspace.trigger("file-menu", menu, file, source);
  menu.showAtMouseEvent(evt);
}

/** What every list of notes does with its rows; `source` is its hover-link source (registerHoverSources). */
export function noteActions(app: App, source: string, hoverParent: HoverParent, sourcePath: () => string = () => ""): RowActions {
  return {
    open: (t, evt) => void openNoteAt(app, t.path, t.line, paneFor(evt)),
    insertLink: (t) => void insertLink(app, t.path, t.subpath),
    menu: (t, evt) => showNoteMenu(app, t, evt, source),
    hover: (t, evt, el) => app.workspace.trigger("hover-link", {
      event: evt, source, hoverParent, targetEl: el, linktext: t.path + (t.subpath ?? ""), sourcePath: sourcePath(),
    }),
    linkText: (t) => linkTo(app, t.path, t.subpath),
  };
}

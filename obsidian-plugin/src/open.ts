// Opening notes at a line, inserting links, hover previews: the few places that touch the workspace.

import { Keymap, MarkdownView, Notice, TFile, type App, type PaneType } from "obsidian";

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

/** Insert a link to `path` at the cursor of the active Markdown editor. */
export function insertLink(app: App, path: string, subpath?: string): boolean {
  const view = app.workspace.getActiveViewOfType(MarkdownView);
  const link = linkTo(app, path, subpath);
  if (!view || !link) {
    new Notice("Open a note in the editor to insert a link.");
    return false;
  }
  view.editor.replaceSelection(link);
  return true;
}

/** Subpath (#Heading) for a heading path joined with " > ": Obsidian links the last heading. */
export function headingSubpath(heading: string): string | undefined {
  const last = heading.split(" > ").pop()?.trim();
  return last ? `#${last}` : undefined;
}

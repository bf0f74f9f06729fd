// Renders the agent-edits history: one row per edit, with its note, time, client and Undo.

import type { EditRecord, EditsResponse } from "../protocol.gen";
import { wireListKeys, wireRow, type RowActions } from "./list-nav";
import { keyLabel, renderMessage, startRender, twoDigits } from "./shared-render";

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
  return OP_LABEL[op as EditOp] ?? keyLabel(op);
}

/** Local time: "Today 14:05", "Yesterday 09:30", else "2026-12-01 14:05". */
export function formatEditTime(at: number, now: Date = new Date()): string {
  const when = new Date(at * 1000);
  const clock = `${twoDigits(when.getHours())}:${twoDigits(when.getMinutes())}`;
  const day = (d: Date): string => `${d.getFullYear()}-${twoDigits(d.getMonth() + 1)}-${twoDigits(d.getDate())}`;
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

/** The note a row links to (mainPath), and whether it is gone from the vault now (then it is no link). */
export interface EditNote {
  path: string | null;
  gone: boolean;
}

export function editNote(edit: EditRecord, exists?: (path: string) => boolean): EditNote {
  const path = mainPath(edit, exists);
  return { path, gone: path !== null && exists !== undefined && !exists(path) };
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

export const EDITS_EMPTY = "No agent edits yet. Each edit an agent makes shows here, with Undo.";
/** The sidecar runs read-only (writes_enabled false): no edits can come, and how to let them. */
export const EDITS_OFF = "Agents cannot edit notes: the sidecar runs read-only. To let them, turn on 'Serve MCP over HTTP' " +
  "and 'Let agents edit notes' in settings.";

/** One agent edit: what, the note (a link), when, who, the summary, and Undo (or why not). */
export function renderEditRow(container: HTMLElement, edit: EditRecord, handlers: EditsHandlers = {},
  { path, gone }: EditNote = editNote(edit, handlers.exists)): HTMLElement {
  const state = handlers.state?.(edit) ?? {};
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

/** The agent-edits history: newest first, or the empty state (no edits yet, or writes are off). */
export function renderEdits(container: HTMLElement, response: EditsResponse | null, handlers: EditsHandlers = {},
  emptyText = "Loading agent edits…"): void {
  if (!startRender(container, "vs-edits", response, emptyText)) return;
  if (!response.edits.length) {
    renderMessage(container, response.writes_enabled ? EDITS_EMPTY : EDITS_OFF);
    return;
  }
  const list = container.createDiv({ cls: "vs-edit-list" });
  const edits = [...response.edits].sort((a, b) => b.at - a.at || b.edit - a.edit);
  // Only the keyboard opens from the row (Enter); the mouse opens from the note's link, so a click
  // beside the Undo button does nothing unexpected.
  const actions: RowActions = { ...handlers.row, open: (t, evt) => handlers.onOpen?.(t.path, evt) };
  for (const edit of edits) {
    const note = editNote(edit, handlers.exists);
    const row = renderEditRow(list, edit, handlers, note);
    wireRow(row, note.path && !note.gone ? { path: note.path, line: null } : null, actions, { click: false });
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

// One way to use every list of notes (related, search pane, search window, health, agent edits), by
// keyboard and mouse, like Obsidian's own Backlinks and Search panes:
//   keyboard: rows focusable (one tab stop, arrows move), Enter opens, Mod+Enter in a new tab,
//             Shift+Enter inserts a link at the cursor;
//   mouse:    click opens, Mod-click and middle-click in a new tab, right-click a menu, hover a preview
//             (the workspace's page-preview rules decide whether Mod is needed), drag inserts a link.
// Rendering code marks rows with wireRow(); the list gets wireListKeys() once. No Obsidian import here:
// the views pass what to do (RowActions), so the lists render the same in unit and picture tests.

/** Where a row leads. `subpath` is "#Heading" for links and previews. */
export interface NoteTarget {
  path: string;
  line: number | null;
  subpath?: string;
}

export interface RowActions {
  /** Open the note; the view picks the pane from the event (Mod, middle button). */
  open: (target: NoteTarget, evt: MouseEvent | KeyboardEvent) => void;
  insertLink?: (target: NoteTarget) => void;
  menu?: (target: NoteTarget, evt: MouseEvent) => void;
  hover?: (target: NoteTarget, evt: MouseEvent, el: HTMLElement) => void;
  /** The link text a drag carries (the user's link format), null when the note is gone. */
  linkText?: (target: NoteTarget) => string | null;
}

const targets = new WeakMap<HTMLElement, NoteTarget>();

export const ROW_CLASS = "vs-nav-row";

/**
 * Make `row` a list option leading to `target` (null: a row that leads nowhere, focusable all the same).
 * `click: false` where something else opens rows on click (Obsidian's SuggestModal does, with the event, so
 * Mod-click works there too; an agent-edit row opens from its link).
 */
export function wireRow(row: HTMLElement, target: NoteTarget | null, actions: RowActions, opts: { click?: boolean } = {}): void {
  row.addClass(ROW_CLASS);
  if (!row.getAttribute("role")) row.setAttribute("role", "option");
  row.setAttribute("aria-selected", "false");
  if (!row.hasAttribute("tabindex")) row.setAttribute("tabindex", "-1");
  if (!target) return;
  targets.set(row, target);
  row.addClass("is-clickable");
  if (opts.click !== false) {
    row.addEventListener("click", (evt) => {
      if (evt.defaultPrevented) return; // a button or link inside the row handled it
      actions.open(target, evt);
    });
  }
  // Middle-click: "auxclick", never "click"; mousedown's default (autoscroll) would swallow it.
  row.addEventListener("mousedown", (evt) => {
    if (evt.button === 1) evt.preventDefault();
  });
  row.addEventListener("auxclick", (evt) => {
    if (evt.button !== 1 || evt.defaultPrevented) return;
    evt.preventDefault();
    actions.open(target, evt);
  });
  const { menu, hover, linkText } = actions;
  if (menu) {
    row.addEventListener("contextmenu", (evt) => {
      evt.preventDefault();
      menu(target, evt);
    });
  }
  if (hover) row.addEventListener("mouseover", (evt) => hover(target, evt, row));
  if (linkText) {
    row.setAttribute("draggable", "true");
    row.addEventListener("dragstart", (evt) => {
      const link = linkText(target);
      if (!link || !evt.dataTransfer) return;
      evt.dataTransfer.setData("text/plain", link);
      evt.dataTransfer.effectAllowed = "copy";
    });
  }
}

/** The rows of `list` a user can reach now (not inside a closed <details>). */
function reachableRows(list: HTMLElement): HTMLElement[] {
  return Array.from(list.querySelectorAll<HTMLElement>(`.${ROW_CLASS}`)).filter((r) => !r.closest("details:not([open])"));
}

function select(rows: HTMLElement[], row: HTMLElement): void {
  for (const r of rows) {
    r.setAttribute("aria-selected", String(r === row));
    r.setAttribute("tabindex", r === row ? "0" : "-1");
  }
}

/**
 * Keyboard for the rows wired inside `list` (call after rendering them): one tab stop (the first row, then
 * the last one focused), arrows/Home/End move, Enter opens (Mod+Enter: new tab), Shift+Enter inserts a link.
 * Keys on a button or link inside a row stay theirs.
 */
export function wireListKeys(list: HTMLElement, actions: RowActions, label: string): void {
  if (!list.getAttribute("role")) list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", label);
  const rows = reachableRows(list);
  const first = rows[0];
  if (first) first.setAttribute("tabindex", "0");
  list.addEventListener("focusin", (evt) => {
    const row = evt.target instanceof HTMLElement && evt.target.hasClass(ROW_CLASS) ? evt.target : null;
    if (row) select(reachableRows(list), row);
  });
  list.addEventListener("keydown", (evt) => {
    // Keys on a button or link inside a row stay theirs.
    const row = evt.target instanceof HTMLElement && evt.target.hasClass(ROW_CLASS) ? evt.target : null;
    if (!row) return;
    const target = targets.get(row);
    const all = reachableRows(list);
    const at = all.indexOf(row);
    const moveTo = (i: number): void => {
      const next = all[Math.max(0, Math.min(all.length - 1, i))];
      evt.preventDefault();
      next?.focus();
      next?.scrollIntoView({ block: "nearest" });
    };
    if (evt.key === "ArrowDown") moveTo(at + 1);
    else if (evt.key === "ArrowUp") moveTo(at - 1);
    else if (evt.key === "Home") moveTo(0);
    else if (evt.key === "End") moveTo(all.length - 1);
    else if (!target) return;
    else if (evt.key === "Enter" && evt.shiftKey && actions.insertLink) {
      evt.preventDefault();
      actions.insertLink(target);
    } else if (evt.key === "Enter") {
      evt.preventDefault();
      actions.open(target, evt);
    } else if (evt.key === "ContextMenu" && actions.menu) {
      evt.preventDefault();
      const box = row.getBoundingClientRect();
      actions.menu(target, new MouseEvent("contextmenu", { clientX: box.left + 16, clientY: box.bottom }));
    }
  });
}

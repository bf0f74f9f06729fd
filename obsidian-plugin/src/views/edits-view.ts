// Agent edits: every edit an agent made through the sidecar (edits.list), newest first, each with Undo
// (edits.undo). Refreshes on agent_edit events and on (re)connect; a refused undo (the note changed since,
// say) keeps the sidecar's reason on its row until the next manual refresh.

import type { WorkspaceLeaf } from "obsidian";

import { describeError } from "../client";
import { EDITS_VIEW, type PluginContext } from "../context";
import { noteActions, openNoteAt, paneFor } from "../open";
import { EDITS_LIST_LIMIT_DEFAULT, EDITS_LIST_LIMIT_MAX, type EditRecord, type EditsResponse } from "../protocol.gen";
import { failureOf } from "../failure";
import { SidecarPane } from "./pane";
import { renderEdits, type EditRowState } from "./edits-render";
import { renderError } from "./shared-render";

const PAGE = EDITS_LIST_LIMIT_DEFAULT;

export class EditsView extends SidecarPane {
  private readonly actions = noteActions(this.app, EDITS_VIEW, this);
  private response: EditsResponse | null = null;
  private bodyEl!: HTMLElement;
  private limit = PAGE;
  private loading = false;
  private again = false;
  private readonly rows = new Map<number, EditRowState>();

  constructor(leaf: WorkspaceLeaf, ctx: PluginContext) {
    super(leaf, ctx, { type: EDITS_VIEW, title: "Agent edits", icon: "history" });
  }

  override async onOpen(): Promise<void> {
    this.bodyEl = this.layOut("vs-edits-pane", (root) => {
      const bar = root.createDiv({ cls: "vs-edits-bar" });
      const refresh = bar.createEl("button", { text: "Refresh" });
      this.registerDomEvent(refresh, "click", () => {
        this.rows.clear(); // a manual refresh retries refused undos
        void this.refresh();
      });
    });
    this.registerEvent(this.ctx.sidecar.on("agent-edit", () => void this.refresh()));
    this.registerEvent(this.ctx.sidecar.on("connected", () => void this.refresh()));
    await this.refresh();
  }

  /** Fetch the list again; calls during a fetch coalesce into one more fetch after it. */
  async refresh(): Promise<void> {
    if (!this.bodyEl) return;
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    try {
      do {
        this.again = false;
        await this.fetchEdits();
      } while (this.again);
    } finally {
      this.loading = false;
    }
  }

  private async fetchEdits(): Promise<void> {
    try {
      const client = await this.ctx.sidecar.client();
      // edits.list pages by at most 200: "Show more" may need several.
      const first = await client.call("edits.list", { limit: Math.min(EDITS_LIST_LIMIT_MAX, this.limit) });
      const edits = [...first.edits];
      let next = first.next_offset;
      while (next !== null && edits.length < this.limit) {
        const page = await client.call("edits.list", { limit: Math.min(EDITS_LIST_LIMIT_MAX, this.limit - edits.length), offset: next });
        edits.push(...page.edits);
        next = page.edits.length ? page.next_offset : null;
      }
      this.response = { ...first, edits, next_offset: next };
      this.draw();
    } catch (err) {
      this.response = null;
      const { message, hint } = failureOf(err, this.ctx.sidecar.snapshot);
      this.draw(message, hint);
    }
  }

  private draw(error?: string, hint?: string | null): void {
    // Keep the keyboard where it was: re-rendering replaces the rows.
    const focused = this.bodyEl.querySelector<HTMLElement>(".vs-edit-row:focus")?.dataset.edit;
    if (error) {
      renderError(this.bodyEl, error, hint);
      return;
    }
    renderEdits(this.bodyEl, this.response, {
      onOpen: (path, evt) => void openNoteAt(this.app, path, null, paneFor(evt)),
      onUndo: (edit) => void this.undo(edit),
      onMore: () => {
        this.limit += PAGE;
        void this.refresh();
      },
      exists: (path) => this.app.vault.getFileByPath(path) !== null,
      state: (edit) => this.rows.get(edit.edit) ?? {},
      row: this.actions,
    });
    if (focused) this.bodyEl.querySelector<HTMLElement>(`.vs-edit-row[data-edit="${focused}"]`)?.focus();
  }

  private async undo(edit: EditRecord): Promise<void> {
    this.rows.set(edit.edit, { pending: true });
    this.draw();
    try {
      const client = await this.ctx.sidecar.client();
      await client.call("edits.undo", { edit: edit.edit });
      this.rows.delete(edit.edit);
    } catch (err) {
      this.rows.set(edit.edit, { refused: describeError(err) });
    }
    await this.refresh();
  }
}

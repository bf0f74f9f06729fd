// Right-sidebar pane: notes related to the active note, following the editor. On edits (debounced) it
// sends the UNSAVED buffer and the heading at the cursor, so suggestions follow what you are writing.

import { MarkdownView, debounce, type Debouncer, type WorkspaceLeaf } from "obsidian";

import { RELATED_VIEW, type PluginContext } from "../context";
import { headingAt } from "../headings";
import { noteActions } from "../open";
import type { RelatedParams, RelatedResponse } from "../protocol.gen";
import { SidecarPane } from "./pane";
import { renderRelated } from "./related-render";

export class RelatedView extends SidecarPane {
  private listEl!: HTMLElement;
  private headerEl!: HTMLElement;
  private seq = 0;
  private sourcePath: string | null = null;
  private last: RelatedResponse | null = null;
  private onEdit: Debouncer<[], void>;
  private debounceMs: number;
  private readonly actions = noteActions(this.app, RELATED_VIEW, this, () => this.sourcePath ?? "");

  constructor(leaf: WorkspaceLeaf, ctx: PluginContext) {
    super(leaf, ctx, { type: RELATED_VIEW, title: "Related notes", icon: "network" });
    this.debounceMs = ctx.settings.relatedDebounceMs;
    this.onEdit = debounce(() => void this.refresh(), this.debounceMs, true);
  }

  /** Debounced refresh; picks up a changed delay setting. */
  private edited(): void {
    const ms = this.ctx.settings.relatedDebounceMs;
    if (ms !== this.debounceMs) {
      this.onEdit.cancel();
      this.debounceMs = ms;
      this.onEdit = debounce(() => void this.refresh(), ms, true);
    }
    this.onEdit();
  }

  override async onOpen(): Promise<void> {
    this.listEl = this.layOut(null, (root) => {
      this.headerEl = root.createDiv({ cls: "vs-pane-header" });
    });
    const ws = this.app.workspace;
    this.registerEvent(ws.on("active-leaf-change", () => void this.refresh()));
    this.registerEvent(ws.on("file-open", () => void this.refresh()));
    this.registerEvent(ws.on("editor-change", () => this.edited()));
    this.registerEvent(this.ctx.sidecar.on("connected", () => void this.refresh()));
    this.registerEvent(this.ctx.sidecar.on("index-changed", () => this.edited()));
    await this.refresh();
  }

  override async onClose(): Promise<void> {
    this.onEdit.cancel();
    this.seq++;
  }

  /** Ask for notes related to the active Markdown note (its unsaved text and the heading at the cursor). */
  async refresh(): Promise<void> {
    const view = this.app.workspace.getActiveViewOfType(MarkdownView);
    const file = view?.file ?? null;
    if (!view || !file) {
      // Keep showing the last note's results while another pane (this one, say) has focus.
      if (!this.last) this.draw(null, "Open a note to see related notes.");
      return;
    }
    const seq = ++this.seq;
    const text = view.editor.getValue();
    const params: RelatedParams = {
      path: file.path,
      text,
      limit: this.ctx.settings.relatedLimit,
    };
    const heading = headingAt(text, view.editor.getCursor().line);
    if (heading) params.cursor_heading = heading;
    this.sourcePath = file.path;
    this.headerEl.setText(file.basename);
    try {
      const client = await this.ctx.sidecar.client();
      // The buffer's text goes along, so a note not indexed yet is answered from it (never not_found).
      const response = await client.call("related", params);
      if (seq !== this.seq) return; // a newer request is under way
      this.last = response;
      this.draw(response);
    } catch (err) {
      if (seq !== this.seq) return;
      this.last = null;
      this.showError(this.listEl, err);
    }
  }

  private draw(response: RelatedResponse | null, message?: string): void {
    renderRelated(this.listEl, response, this.actions, { showAlreadyLinked: this.ctx.settings.relatedShowLinked }, message);
  }
}

// Vault health: sections with counts; every item opens its note at the line. "Save as note" writes the
// report into the vault, and only when the user clicks it.

import { ItemView, Notice, normalizePath, type WorkspaceLeaf } from "obsidian";

import { HEALTH_VIEW, type PluginContext } from "../context";
import { openNoteAt, paneFor } from "../open";
import type { HealthResponse } from "../protocol.gen";
import { describeError } from "../client";
import { healthReportMarkdown, renderHealth, renderMessage } from "./render";

export class HealthView extends ItemView {
  private report: HealthResponse | null = null;
  private bodyEl!: HTMLElement;
  private saveButton!: HTMLButtonElement;
  private loading = false;

  constructor(leaf: WorkspaceLeaf, private readonly ctx: PluginContext) {
    super(leaf);
  }

  override getViewType(): string {
    return HEALTH_VIEW;
  }

  override getDisplayText(): string {
    return "Vault health";
  }

  override getIcon(): string {
    return "activity";
  }

  override async onOpen(): Promise<void> {
    const root = this.contentEl;
    root.empty();
    root.addClass("vs-pane", "vs-health-pane");
    const bar = root.createDiv({ cls: "vs-health-bar" });
    const refresh = bar.createEl("button", { text: "Refresh", cls: "mod-cta" });
    this.saveButton = bar.createEl("button", { text: "Save report as note" });
    this.saveButton.disabled = true;
    this.registerDomEvent(refresh, "click", () => void this.refresh());
    this.registerDomEvent(this.saveButton, "click", () => void this.save());
    this.bodyEl = root.createDiv({ cls: "vs-pane-body" });
    this.registerEvent(this.ctx.sidecar.on("connected", () => {
      if (!this.report) void this.refresh();
    }));
    await this.refresh();
  }

  async refresh(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    if (!this.report) renderHealth(this.bodyEl, null, {}, "Checking the vault…");
    try {
      const client = await this.ctx.sidecar.client();
      this.report = await client.call("health");
      this.draw();
    } catch (err) {
      this.draw();
      renderMessage(this.bodyEl, describeError(err), "error");
    } finally {
      this.loading = false;
    }
  }

  private draw(): void {
    this.saveButton.disabled = !this.report;
    renderHealth(this.bodyEl, this.report, {
      onOpen: (item, evt) => void openNoteAt(this.app, item.path, item.line, paneFor(evt)),
      onOpenPath: (path, evt) => void openNoteAt(this.app, path, null, paneFor(evt)),
    });
  }

  private async save(): Promise<void> {
    if (!this.report) return;
    const when = new Date(this.report.generated_at * 1000);
    const stamp = when.toISOString().slice(0, 16).replace("T", " ").replace(":", "");
    let path = normalizePath(`Vault health report ${stamp}.md`);
    for (let n = 2; this.app.vault.getAbstractFileByPath(path); n++) {
      path = normalizePath(`Vault health report ${stamp} (${n}).md`);
    }
    try {
      const file = await this.app.vault.create(path, healthReportMarkdown(this.report));
      new Notice(`Saved ${file.path}`);
      await this.app.workspace.getLeaf("tab").openFile(file);
    } catch (err) {
      new Notice(`Could not save the report: ${describeError(err)}`);
    }
  }
}

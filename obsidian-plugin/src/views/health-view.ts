// Vault health: sections with counts; every item opens its note at the line. "Save report as note" writes
// the sidecar's own Markdown of the report shown (no links or tags) into the report folder (never indexed),
// and only when the user clicks it.

import { ItemView, Notice, normalizePath, type HoverPopover, type WorkspaceLeaf } from "obsidian";

import { HEALTH_VIEW, type PluginContext } from "../context";
import { noteActions } from "../open";
import type { HealthResponse } from "../protocol.gen";
import { describeError } from "../client";
import { errorHint, renderError, renderHealth } from "./render";

/** "Vault health 2026-12-01 1405.md": local time, as the report inside says. */
export function reportFileName(generatedAt: number): string {
  const when = new Date(generatedAt * 1000);
  const two = (n: number): string => String(n).padStart(2, "0");
  return `Vault health ${when.getFullYear()}-${two(when.getMonth() + 1)}-${two(when.getDate())} ${two(when.getHours())}${two(when.getMinutes())}`;
}

export class HealthView extends ItemView {
  hoverPopover: HoverPopover | null = null;
  private report: HealthResponse | null = null;
  private readonly actions = noteActions(this.app, HEALTH_VIEW, this);
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
    if (!this.report) renderHealth(this.bodyEl, null, undefined, "Checking the vault…");
    try {
      const client = await this.ctx.sidecar.client();
      // With the sidecar's Markdown of the same report, so what is saved is what is shown.
      this.report = await client.call("health", { markdown: true });
      this.draw();
    } catch (err) {
      this.saveButton.disabled = true;
      renderError(this.bodyEl, describeError(err), errorHint(err, this.ctx.sidecar.snapshot.errorHint));
    } finally {
      this.loading = false;
    }
  }

  private draw(): void {
    this.saveButton.disabled = !this.report;
    renderHealth(this.bodyEl, this.report, this.actions);
  }

  private async save(): Promise<void> {
    const markdown = this.report?.markdown;
    if (!this.report || !markdown) return;
    const folder = this.ctx.settings.reportsFolder;
    const base = (folder ? `${folder}/` : "") + reportFileName(this.report.generated_at);
    let path = normalizePath(`${base}.md`);
    for (let n = 2; this.app.vault.getAbstractFileByPath(path); n++) path = normalizePath(`${base} (${n}).md`);
    try {
      if (folder && !this.app.vault.getAbstractFileByPath(normalizePath(folder))) await this.app.vault.createFolder(normalizePath(folder));
      const file = await this.app.vault.create(path, markdown);
      new Notice(`Saved ${file.path}`);
      await this.app.workspace.getLeaf("tab").openFile(file);
    } catch (err) {
      new Notice(`Could not save the report: ${describeError(err)}`);
    }
  }
}

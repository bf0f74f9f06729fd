// Vault health: the summary's counts first (one cheap call), then a section's items when it is opened, a page
// at a time ("Show more"); every item opens its note at the line. "Save report as note" asks for the whole
// report with the sidecar's own Markdown (no links or tags) and writes it into the report folder (never
// indexed), only when the user clicks it.

import { Notice, normalizePath, type WorkspaceLeaf } from "obsidian";

import { HEALTH_VIEW, type PluginContext } from "../context";
import { noteActions } from "../open";
import { HEALTH_PAGE_LIMIT_DEFAULT, type HealthResponse, type HealthSection, type HealthSummaryResponse } from "../protocol.gen";
import { describeError } from "../client";
import { SidecarPane } from "./pane";
import { openByDefault, renderHealth, type HealthPaging } from "./health-render";
import { twoDigits } from "./shared-render";

/** "Vault health 2026-12-01 1405.md": local time, as the report inside says. */
export function reportFileName(generatedAt: number): string {
  const when = new Date(generatedAt * 1000);
  const [month, day, hour, minute] = [when.getMonth() + 1, when.getDate(), when.getHours(), when.getMinutes()].map(twoDigits);
  return `Vault health ${when.getFullYear()}-${month}-${day} ${hour}${minute}`;
}

/** Items a section page brings (the sidecar's default). */
export const HEALTH_PAGE = HEALTH_PAGE_LIMIT_DEFAULT;

interface SectionState {
  section: HealthSection;
  cursor: string | null; // next_cursor of the last page loaded
  loaded: boolean; // the first page came
  loading: boolean;
  open?: boolean; // what the user chose; undefined until they toggle it
}

export class HealthView extends SidecarPane {
  private summary: HealthSummaryResponse | null = null;
  private sections = new Map<string, SectionState>();
  private readonly actions = noteActions(this.app, HEALTH_VIEW, this);
  private bodyEl!: HTMLElement;
  private saveButton!: HTMLButtonElement;
  private loading = false;
  private saving = false;
  private readonly paging: HealthPaging = {
    isOpen: (id) => this.sections.get(id)?.open,
    toggled: (id, open) => {
      const state = this.sections.get(id);
      if (!state || state.open === open) return;
      state.open = open;
      if (open && !state.loaded) void this.loadPage(state);
    },
    loading: (id) => this.sections.get(id)?.loading ?? false,
    hasMore: (id) => Boolean(this.sections.get(id)?.cursor),
    more: (id) => {
      const state = this.sections.get(id);
      if (state) void this.loadPage(state);
    },
  };

  constructor(leaf: WorkspaceLeaf, ctx: PluginContext) {
    super(leaf, ctx, { type: HEALTH_VIEW, title: "Vault health", icon: "activity" });
  }

  override async onOpen(): Promise<void> {
    this.bodyEl = this.layOut("vs-health-pane", (root) => {
      const bar = root.createDiv({ cls: "vs-health-bar" });
      const refresh = bar.createEl("button", { text: "Refresh", cls: "mod-cta" });
      this.saveButton = bar.createEl("button", { text: "Save report as note" });
      this.saveButton.disabled = true;
      this.registerDomEvent(refresh, "click", () => void this.refresh());
      this.registerDomEvent(this.saveButton, "click", () => void this.save());
    });
    this.registerEvent(this.ctx.sidecar.on("connected", () => {
      if (!this.summary) void this.refresh();
    }));
    await this.refresh();
  }

  /** The counts, then the first page of every section that is open (open ones: those with errors or warnings,
   * or what the user opened); closed sections load when opened. */
  async refresh(): Promise<void> {
    if (this.loading) return;
    this.loading = true;
    if (!this.summary) renderHealth(this.bodyEl, null, undefined, "Checking the vault…");
    try {
      const client = await this.ctx.sidecar.client();
      const summary = await client.call("health.summary", {});
      const before = this.sections;
      this.summary = summary;
      this.sections = new Map(summary.sections.map((s) => [s.id, {
        section: { ...s, items: [] }, cursor: null, loaded: false, loading: false, open: before.get(s.id)?.open,
      }]));
      this.draw();
      await Promise.all([...this.sections.values()].filter((s) => this.isOpen(s)).map((s) => this.loadPage(s)));
    } catch (err) {
      this.saveButton.disabled = true;
      this.showError(this.bodyEl, err);
    } finally {
      this.loading = false;
    }
  }

  private isOpen(state: SectionState): boolean {
    return state.section.count > 0 && (state.open ?? openByDefault(state.section));
  }

  /** The section's next page (the first when none came yet), added under the items shown. */
  private async loadPage(state: SectionState): Promise<void> {
    if (state.loading || !state.section.count || (state.loaded && !state.cursor)) return;
    state.loading = true;
    this.draw();
    try {
      const client = await this.ctx.sidecar.client();
      const page = await client.call("health.page", {
        section: state.section.id, limit: HEALTH_PAGE, ...(state.cursor ? { cursor: state.cursor } : {}),
      });
      if (this.sections.get(state.section.id) !== state) return; // a refresh came meanwhile
      state.section = { ...state.section, count: page.count, items: [...state.section.items, ...page.items] };
      state.cursor = page.next_cursor;
      state.loaded = true;
    } catch (err) {
      new Notice(`Could not load "${state.section.title}": ${describeError(err)}`);
    } finally {
      state.loading = false;
      if (this.sections.get(state.section.id) === state) this.draw();
    }
  }

  private report(): HealthResponse | null {
    if (!this.summary) return null;
    const { generated_at, took_ms, summary, rules } = this.summary;
    return { generated_at, took_ms, summary, rules, sections: [...this.sections.values()].map((s) => s.section) };
  }

  private draw(): void {
    this.saveButton.disabled = !this.summary || this.saving;
    renderHealth(this.bodyEl, this.report(), this.actions, undefined, this.paging);
  }

  /** The whole report with the sidecar's Markdown of it, asked for now: saved is what the vault is now. */
  private async save(): Promise<void> {
    if (!this.summary || this.saving) return;
    this.saving = true;
    this.saveButton.disabled = true;
    try {
      const client = await this.ctx.sidecar.client();
      const report = await client.call("health", { markdown: true });
      if (report.markdown) await this.write(report.generated_at, report.markdown);
    } catch (err) {
      new Notice(`Could not save the report: ${describeError(err)}`);
    } finally {
      this.saving = false;
      this.saveButton.disabled = !this.summary;
    }
  }

  private async write(generatedAt: number, markdown: string): Promise<void> {
    const folder = this.ctx.settings.reportsFolder;
    const base = (folder ? `${folder}/` : "") + reportFileName(generatedAt);
    let path = normalizePath(`${base}.md`);
    for (let n = 2; this.app.vault.getAbstractFileByPath(path); n++) path = normalizePath(`${base} (${n}).md`);
    if (folder && !this.app.vault.getAbstractFileByPath(normalizePath(folder))) await this.app.vault.createFolder(normalizePath(folder));
    const file = await this.app.vault.create(path, markdown);
    new Notice(`Saved ${file.path}`);
    await this.app.workspace.getLeaf("tab").openFile(file);
  }
}

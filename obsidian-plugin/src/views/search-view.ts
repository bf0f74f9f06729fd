// Sidebar search pane: keeps its query, mode and results (also across restarts of Obsidian, through the
// view state) and re-runs the search when the index changes.

import { debounce, type ViewStateResult, type WorkspaceLeaf } from "obsidian";

import { SEARCH_VIEW, type PluginContext } from "../context";
import { noteActions } from "../open";
import type { SearchMode, SearchResponse } from "../protocol.gen";
import { isSearchable, parseQuery } from "../query-syntax";
import { SidecarPane } from "./pane";
import { renderSearchResults, renderSyntaxHelp } from "./search-render";
import { USER_TEXT, renderMessage } from "./shared-render";
import { MODES, MODE_LABELS } from "./modes";

interface SearchViewState {
  query: string;
  mode: SearchMode;
}

export class SearchView extends SidecarPane {
  private query = "";
  private mode: SearchMode;
  private response: SearchResponse | null = null;
  private seq = 0;
  private inputEl!: HTMLInputElement;
  private modeEl!: HTMLSelectElement;
  private resultsEl!: HTMLElement;
  private rerun = debounce(() => void this.run(), 1500, true);
  // While typing, the sidecar takes its speed shortcuts; Enter submits the query with every word.
  private typed = debounce(() => void this.run(true), 250, true);
  private readonly actions = noteActions(this.app, SEARCH_VIEW, this);

  constructor(leaf: WorkspaceLeaf, ctx: PluginContext) {
    super(leaf, ctx, { type: SEARCH_VIEW, title: "Sidecar search", icon: "search" });
    this.mode = ctx.settings.searchMode;
  }

  override getState(): Record<string, unknown> {
    return { ...super.getState(), query: this.query, mode: this.mode } satisfies Record<string, unknown> & SearchViewState;
  }

  override async setState(state: unknown, result: ViewStateResult): Promise<void> {
    const s = (state ?? {}) as Partial<SearchViewState>;
    if (typeof s.query === "string") this.query = s.query;
    if (s.mode && MODES.includes(s.mode)) this.mode = s.mode;
    if (this.inputEl) {
      this.inputEl.value = this.query;
      this.modeEl.value = this.mode;
      await this.run();
    }
    await super.setState(state, result);
  }

  /** Set the query from outside (the "search for selection" command) and run it. */
  async search(query: string): Promise<void> {
    this.query = query;
    if (this.inputEl) this.inputEl.value = query;
    await this.run();
  }

  override async onOpen(): Promise<void> {
    this.resultsEl = this.layOut("vs-search-pane", (root) => {
      const bar = root.createDiv({ cls: "vs-search-bar" });
      this.inputEl = bar.createEl("input", {
        type: "search", cls: "vs-search-input", placeholder: "Search…", value: this.query,
        attr: { spellcheck: "false", "aria-label": "Search query", ...USER_TEXT },
      });
      this.modeEl = bar.createEl("select", { cls: "dropdown vs-mode-select", attr: { "aria-label": "Search mode" } });
      for (const mode of MODES) this.modeEl.createEl("option", { text: MODE_LABELS[mode], value: mode });
      this.modeEl.value = this.mode;
      renderSyntaxHelp(root);
    });
    this.registerDomEvent(this.inputEl, "input", () => {
      this.query = this.inputEl.value;
      this.typed();
    });
    this.registerDomEvent(this.inputEl, "keydown", (evt) => {
      if (evt.key === "Enter") {
        this.typed.cancel();
        void this.run();
      }
    });
    this.registerDomEvent(this.modeEl, "change", () => {
      this.mode = this.modeEl.value as SearchMode;
      void this.run();
    });
    this.registerEvent(this.ctx.sidecar.on("index-changed", () => {
      if (this.query) this.rerun();
    }));
    this.registerEvent(this.ctx.sidecar.on("connected", () => void this.run()));
    await this.run();
  }

  override async onClose(): Promise<void> {
    this.rerun.cancel();
    this.typed.cancel();
    this.seq++;
  }

  private async run(typing = false): Promise<void> {
    if (!this.resultsEl) return;
    const seq = ++this.seq;
    const parsed = parseQuery(this.query);
    if (!isSearchable(parsed)) {
      this.response = null;
      this.draw(this.query.trim() ? "Add some words: filters alone are not a search." : "Type to search.");
      return;
    }
    try {
      const client = await this.ctx.sidecar.client();
      const response = await client.call("search", {
        query: parsed.query, filters: parsed.filters, mode: this.mode, limit: this.ctx.settings.searchLimit,
        typed: typing,
      });
      if (seq !== this.seq) return;
      this.response = response;
      this.draw();
      for (const warning of parsed.warnings) renderMessage(this.resultsEl, warning, "info");
    } catch (err) {
      if (seq !== this.seq) return;
      // The error replaces the list: never "Type to search." above it.
      this.showError(this.resultsEl, err);
    }
  }

  private draw(emptyText?: string): void {
    renderSearchResults(this.resultsEl, this.response, this.actions, emptyText);
  }
}

// Search as you type. Enter opens at the matching heading/line, Mod+Enter in a new tab, Shift+Enter
// inserts a link (Alt+Enter too, as before); Tab switches mode. Rows also take middle-click, the menu, hover
// preview and drag, as every list does (list-nav.ts). The query syntax (path:, tag:, "phrases", -exclude)
// is parsed by query-syntax.ts.

import { SuggestModal, type App, type HoverPopover } from "obsidian";

import type { PluginContext } from "../context";
import { SEARCH_MODAL_SOURCE, insertLink, noteActions, openNoteAt, paneFor } from "../open";
import type { SearchMode, SearchResponse, SearchResult } from "../protocol.gen";
import { isSearchable, parseQuery } from "../query-syntax";
import { failureOf } from "../failure";
import { wireRow } from "./list-nav";
import { MODES, MODE_LABELS } from "./modes";
import { renderSearchResult, renderSyntaxHelp, searchNotes } from "./search-render";
import { USER_TEXT, renderError, sectionTarget } from "./shared-render";

const TYPING_DELAY_MS = 120;

export class SearchModal extends SuggestModal<SearchResult> {
  hoverPopover: HoverPopover | null = null;
  private mode: SearchMode;
  private seq = 0;
  private modesEl: HTMLElement;
  private infoEl: HTMLElement;
  private readonly actions = noteActions(this.app, SEARCH_MODAL_SOURCE, this);
  /** The last search's error, shown in the list's place (with its hint) instead of the empty text. */
  private failure: { message: string; hint: string | null } | null = null;

  constructor(app: App, private readonly ctx: PluginContext, private readonly initialQuery = "") {
    super(app);
    this.mode = ctx.settings.searchMode;
    this.limit = ctx.settings.searchLimit;
    this.emptyStateText = "Type to search your vault.";
    this.setPlaceholder("Search notes by words and meaning…");
    this.setInstructions([
      { command: "↵", purpose: "open" },
      { command: "mod ↵", purpose: "open in new tab" },
      { command: "shift ↵", purpose: "insert link" },
      { command: "tab", purpose: "switch mode" },
      { command: "esc", purpose: "close" },
    ]);
    this.modalEl.addClass("vs-search-modal");
    this.inputEl.dir = USER_TEXT.dir;
    this.modesEl = this.modalEl.createDiv({ cls: "vs-modes", prepend: true });
    // Above the results (caveat, no vectors, index building): below the instructions nobody reads them.
    this.infoEl = this.modalEl.createDiv({ cls: "vs-search-info" });
    this.resultContainerEl.insertAdjacentElement("beforebegin", this.infoEl);
    renderSyntaxHelp(this.modalEl);
    this.drawModes();
    this.scope.register(["Mod"], "Enter", (evt) => {
      this.selectActiveSuggestion(evt);
      return false;
    });
    for (const mods of [["Shift"], ["Alt"]] as const) {
      this.scope.register([...mods], "Enter", (evt) => {
        this.selectActiveSuggestion(evt);
        return false;
      });
    }
    this.scope.register([], "Tab", () => {
      this.setMode(MODES[(MODES.indexOf(this.mode) + 1) % MODES.length] ?? "hybrid");
      return false;
    });
  }

  override onOpen(): void {
    void super.onOpen();
    if (this.initialQuery) {
      this.inputEl.value = this.initialQuery;
      this.inputEl.dispatchEvent(new Event("input"));
    }
  }

  private drawModes(): void {
    this.modesEl.empty();
    for (const mode of MODES) {
      const chip = this.modesEl.createEl("button", {
        cls: "vs-mode", text: MODE_LABELS[mode], attr: { "aria-pressed": String(mode === this.mode), "data-mode": mode },
      });
      if (mode === this.mode) chip.addClass("is-active");
      chip.addEventListener("click", () => this.setMode(mode));
    }
  }

  private setMode(mode: SearchMode): void {
    this.mode = mode;
    this.drawModes();
    this.inputEl.dispatchEvent(new Event("input"));
    this.inputEl.focus();
  }

  override async getSuggestions(input: string): Promise<SearchResult[]> {
    const seq = ++this.seq;
    this.failure = null;
    const parsed = parseQuery(input);
    this.infoEl.setText(parsed.warnings.join(" · "));
    if (!isSearchable(parsed)) {
      this.emptyStateText = input.trim() ? "Add some words: filters alone are not a search." : "Type to search your vault.";
      return [];
    }
    await new Promise((resolve) => window.setTimeout(resolve, TYPING_DELAY_MS));
    if (seq !== this.seq) return [];
    try {
      const client = await this.ctx.sidecar.client();
      const response: SearchResponse = await client.call("search", {
        query: parsed.query, filters: parsed.filters, mode: this.mode, limit: this.ctx.settings.searchLimit,
        typed: true, // the modal answers every keystroke: search-as-you-type
      });
      if (seq !== this.seq) return [];
      this.infoEl.setText([...searchNotes(response), ...parsed.warnings].join(" · "));
      this.emptyStateText = "No matching notes.";
      return response.results;
    } catch (err) {
      if (seq === this.seq) {
        this.failure = failureOf(err, this.ctx.sidecar.snapshot);
        this.emptyStateText = this.failure.message;
      }
      return [];
    }
  }

  override onNoSuggestion(): void {
    super.onNoSuggestion();
    // The error in error colours with its fix, in the empty text's place.
    if (this.failure) renderError(this.resultContainerEl, this.failure.message, this.failure.hint);
  }

  override renderSuggestion(result: SearchResult, el: HTMLElement): void {
    renderSearchResult(el, result);
    // SuggestModal opens on click (with the event: Mod-click works); the rest is the lists' own.
    wireRow(el, sectionTarget(result), this.actions, { click: false });
  }

  override onChooseSuggestion(result: SearchResult, evt: MouseEvent | KeyboardEvent): void {
    if (evt.shiftKey || evt.altKey) {
      insertLink(this.app, result.path, sectionTarget(result).subpath);
      return;
    }
    void openNoteAt(this.app, result.path, result.start_line, paneFor(evt));
  }
}

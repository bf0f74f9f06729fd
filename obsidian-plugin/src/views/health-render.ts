// Renders the vault-health view: summary tiles, sections (paged) and their findings.

import type { HealthResponse, HealthSectionCount } from "../protocol.gen";
import { wireListKeys, wireRow, type RowActions } from "./list-nav";
import { keyLabel, renderMessage, renderPath, startRender } from "./shared-render";

/**
 * The summary tiles: a tile with a section of the same id carries the section's title (the sidecar's words)
 * and, clicked, opens and scrolls to it; the others (the note count, say) are plain numbers.
 */
function renderSummary(container: HTMLElement, report: HealthResponse, sectionEls: Map<string, HTMLDetailsElement>): void {
  const summary = container.createDiv({ cls: "vs-health-summary" });
  const titles = new Map(report.sections.map((s) => [s.id, s.title]));
  for (const [key, value] of Object.entries(report.summary)) {
    const cls = ["vs-chip", key === "notes" ? "is-total" : value > 0 ? "has-count" : "is-zero"];
    const section = sectionEls.get(key);
    const chip = section ? summary.createEl("button", { cls: [...cls, "is-clickable"], attr: { "data-section": key } })
      : summary.createDiv({ cls });
    chip.createSpan({ cls: "vs-chip-count", text: String(value) });
    chip.createSpan({ cls: "vs-chip-label", text: titles.get(key) ?? keyLabel(key) });
    if (section) {
      chip.setAttribute("aria-label", `${titles.get(key) ?? key}: ${value}. Show the section.`);
      chip.addEventListener("click", () => {
        section.open = true;
        section.scrollIntoView({ block: "start", behavior: "smooth" });
        section.querySelector<HTMLElement>("summary")?.focus({ preventScroll: true });
      });
    }
  }
}

/** Until the user opens or closes it, a section is open when it has findings worse than info. */
export function openByDefault(section: Pick<HealthSectionCount, "count" | "severity">): boolean {
  return section.count > 0 && section.severity !== "info";
}

/** A report whose sections load their items when opened, a page at a time (the health view). */
export interface HealthPaging {
  /** Whether the user opened (true) or closed (false) the section; undefined: not touched yet. */
  isOpen(id: string): boolean | undefined;
  toggled(id: string, open: boolean): void;
  loading(id: string): boolean;
  hasMore(id: string): boolean;
  more(id: string): void;
}

export function renderHealth(container: HTMLElement, report: HealthResponse | null, actions?: RowActions,
  emptyText = "No report yet.", paging?: HealthPaging): void {
  if (!startRender(container, "vs-health", report, emptyText)) return;
  const summarySlot = container.createDiv();
  const sectionEls = new Map<string, HTMLDetailsElement>();
  for (const section of report.sections) {
    const details = container.createEl("details", {
      cls: ["vs-health-section", `vs-severity-${section.severity}`], attr: { "data-section": section.id },
    });
    sectionEls.set(section.id, details);
    if (section.count === 0) details.addClass("is-empty");
    details.open = paging?.isOpen(section.id) ?? openByDefault(section);
    if (paging) details.addEventListener("toggle", () => paging.toggled(section.id, details.open));
    const head = details.createEl("summary", { cls: "vs-health-section-head" });
    head.createSpan({ cls: "vs-health-section-title", text: section.title });
    head.createSpan({ cls: ["vs-count", `vs-severity-${section.severity}`], text: String(section.count) });
    if (!section.items.length) {
      const text = !section.count ? "Nothing found." : paging?.loading(section.id) ? "Loading…" : "Items not listed.";
      details.createDiv({ cls: "vs-message vs-message-empty", text });
      continue;
    }
    // The same advice on every item (e.g. every credential) is said once, above the list.
    const fixes = new Set(section.items.map((item) => item.fix ?? ""));
    const sharedFix = section.items.length > 1 && fixes.size === 1 ? [...fixes][0] ?? "" : "";
    if (sharedFix) details.createDiv({ cls: ["vs-health-fix", "vs-health-section-fix"], text: sharedFix });
    const list = details.createEl("ul", { cls: "vs-health-items" });
    for (const item of section.items) {
      const li = list.createEl("li", { cls: ["vs-health-item", `vs-severity-${item.severity}`] });
      renderPath(li, item.line !== null ? `${item.path}:${item.line}` : item.path, "vs-health-path");
      li.createSpan({ cls: "vs-health-message", text: item.message });
      if (item.fix && !sharedFix) li.createDiv({ cls: "vs-health-fix", text: item.fix });
      if (actions) wireRow(li, { path: item.path, line: item.line }, actions);
      if (item.related?.length) {
        const rel = li.createDiv({ cls: "vs-health-related" });
        for (const other of item.related) {
          const link = rel.createEl("a", {
            cls: "vs-health-related-link",
            text: `${other.title || other.path} (${other.score.toFixed(2)})`,
            attr: { "data-path": other.path },
          });
          if (actions) {
            link.addEventListener("click", (evt) => {
              evt.preventDefault(); // the row leaves a click its link took
              actions.open({ path: other.path, line: null }, evt);
            });
          }
        }
      }
    }
    if (paging?.hasMore(section.id)) {
      const more = details.createEl("button", {
        cls: "vs-health-more", text: paging.loading(section.id) ? "Loading…" : `Show more (${section.items.length} of ${section.count})`,
      });
      more.disabled = paging.loading(section.id);
      more.addEventListener("click", () => paging.more(section.id));
    } else if (section.items.length < section.count) {
      details.createDiv({ cls: "vs-message vs-message-info", text: `Showing ${section.items.length} of ${section.count}.` });
    }
  }
  renderSummary(summarySlot, report, sectionEls);
  summarySlot.replaceWith(...Array.from(summarySlot.childNodes));
  if (actions) wireListKeys(container, actions, "Vault health findings");
  if (report.sections.length === 0) renderMessage(container, "No checks ran.");
}

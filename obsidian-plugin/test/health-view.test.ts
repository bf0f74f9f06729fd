// @vitest-environment happy-dom
// The health view: the summary's counts first, a section's items when it is opened, a page at a time (Show
// more, with the page's cursor). "Save report as note": the sidecar's own Markdown of the whole report, asked
// for on the click, saved into the report folder setting under the report's local time, never over an
// existing note, then opened.
import { afterEach, describe, expect, it } from "vitest";
import { Notice } from "obsidian";

import type { HealthItem, HealthPageResponse, HealthResponse, HealthSummaryResponse } from "../src/protocol.gen";
import { HEALTH_PAGE, HealthView, reportFileName } from "../src/views/health-view";
import { FakeSidecar, fakeApp, fakeContext, type FakeAnswers } from "./fake-app";

// 2026-12-01 14:05:09 local time, whatever the machine's zone (the name is local, as the report's date is).
const GENERATED = new Date(2026, 11, 1, 14, 5, 9).getTime() / 1000;
const MARKDOWN = "---\ngenerated: 2026-12-01T14:05:09+01:00\n---\n# Vault health\n\n70 notes\n";

function report(over: Partial<HealthResponse> = {}): HealthResponse {
  return { generated_at: GENERATED, summary: { notes: 70 }, sections: [], markdown: MARKDOWN, ...over } as HealthResponse;
}

const SUMMARY: HealthSummaryResponse = {
  generated_at: GENERATED, took_ms: 3, generation: "7", summary: { notes: 70, unresolved_links: 3, orphans: 60 } as never, rules: [],
  sections: [
    { id: "unresolved_links", title: "Links to notes that do not exist", severity: "error", count: 3 },
    { id: "secrets", title: "Credentials in notes", severity: "error", count: 0 },
    { id: "orphans", title: "Orphans: no links in or out", severity: "info", count: 60 },
  ],
};

function items(prefix: string, n: number, from = 0): HealthItem[] {
  return Array.from({ length: n }, (_, i) => ({
    path: `${prefix} ${from + i + 1}.md`, line: null, message: `${prefix} ${from + i + 1}`, fix: "Link it.", severity: "info",
  }));
}

function page(section: string, count: number, list: HealthItem[], offset: number, next: string | null): HealthPageResponse {
  const head = SUMMARY.sections.find((s) => s.id === section)!;
  return { generation: "7", took_ms: 1, ...head, count, offset, items: list, next_cursor: next };
}

const PAGES: FakeAnswers = {
  "health.summary": { result: SUMMARY },
  "health.page": [
    { when: { section: "unresolved_links" }, result: page("unresolved_links", 3, items("Broken", 3), 0, null) },
    { when: { section: "orphans", cursor: undefined }, result: page("orphans", 60, items("Orphan", HEALTH_PAGE), 0, "c50") },
    { when: { section: "orphans", cursor: "c50" }, result: page("orphans", 60, items("Orphan", 10, HEALTH_PAGE), HEALTH_PAGE, null) },
  ],
};

async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await new Promise((r) => setTimeout(r, 0));
}

async function open(files: string[], reportsFolder: string, answer: HealthResponse = report()) {
  const fake = fakeApp(files);
  const sidecar = new FakeSidecar({ ...PAGES, health: { result: answer } });
  const view = new HealthView({ app: fake.app } as never, fakeContext(fake.app, sidecar, { reportsFolder }));
  document.body.appendChild(view.containerEl);
  await view.onOpen();
  const save = async (): Promise<void> => {
    view.contentEl.querySelector<HTMLButtonElement>("button:not(.mod-cta)")!.click();
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
  };
  return { fake, sidecar, view, save };
}

const shown = (): string[] => (Notice as unknown as { shown: string[] }).shown;

afterEach(() => document.body.empty());

describe("health view: Save report as note", () => {
  it("names the note in local time", () => {
    expect(reportFileName(GENERATED)).toBe("Vault health 2026-12-01 1405");
  });

  it("asks for the whole report with the sidecar's Markdown on the click and saves exactly it into the report folder, creating the folder, then opens it", async () => {
    const { fake, sidecar, save } = await open([], "Reports/Health/");
    expect(sidecar.calls.map((c) => c.method)).not.toContain("health");
    await save();
    expect(sidecar.calls.at(-1)).toEqual({ method: "health", params: { markdown: true } });
    expect(fake.vault.folders).toEqual(new Set(["Reports/Health"]));
    expect(Object.fromEntries(fake.vault.created)).toEqual({ "Reports/Health/Vault health 2026-12-01 1405.md": MARKDOWN });
    expect(fake.workspace.opened).toEqual([{ path: "Reports/Health/Vault health 2026-12-01 1405.md", pane: "tab", line: null }]);
    expect(shown().at(-1)).toBe("Saved Reports/Health/Vault health 2026-12-01 1405.md");
  });

  it("never overwrites: a second save in the same minute gets (2), then (3)", async () => {
    const { fake, save } = await open(["Reports/Vault health 2026-12-01 1405.md"], "Reports");
    fake.vault.folders.add("Reports");
    await save();
    await save();
    expect([...fake.vault.created.keys()]).toEqual(["Reports/Vault health 2026-12-01 1405 (2).md", "Reports/Vault health 2026-12-01 1405 (3).md"]);
    expect(fake.vault.folders).toEqual(new Set(["Reports"]));
  });

  it("saves into the vault root when no folder is set", async () => {
    const { fake, save } = await open([], "");
    await save();
    expect([...fake.vault.created.keys()]).toEqual(["Vault health 2026-12-01 1405.md"]);
    expect(fake.vault.folders.size).toBe(0);
  });

  it("cannot save without the sidecar's Markdown (the button stays off until a report came)", async () => {
    const fake = fakeApp([]);
    const sidecar = new FakeSidecar({ "health.summary": { error: { kind: "busy", message: "busy", method: "health.summary" } } });
    const view = new HealthView({ app: fake.app } as never, fakeContext(fake.app, sidecar));
    await view.onOpen();
    expect(view.contentEl.querySelector<HTMLButtonElement>("button:not(.mod-cta)")!.disabled).toBe(true);
    const { fake: other, save } = await open([], "Reports", report({ markdown: undefined }));
    await save();
    expect(other.vault.created.size).toBe(0);
  });

  it("says why when the vault refuses the note", async () => {
    const { fake, save } = await open([], "Reports");
    fake.vault.create = () => Promise.reject(new Error("Disk full"));
    await save();
    expect(shown().at(-1)).toBe("Could not save the report: Disk full");
  });
});

describe("health view: sections in pages", () => {
  const titles = (view: HealthView): string[] =>
    [...view.contentEl.querySelectorAll(".vs-health-item .vs-health-message")].map((e) => e.textContent ?? "");
  const section = (view: HealthView, id: string): HTMLDetailsElement =>
    view.contentEl.querySelector<HTMLDetailsElement>(`details[data-section="${id}"]`)!;
  /** Open a section as a click on its summary does: open, then the toggle event. */
  const openSection = (view: HealthView, id: string): HTMLDetailsElement => {
    const el = section(view, id);
    el.open = true;
    el.dispatchEvent(new Event("toggle"));
    return el;
  };

  async function shownView(hold = false) {
    const fake = fakeApp([]);
    const sidecar = new FakeSidecar(PAGES);
    let release = (): void => undefined;
    if (hold) sidecar.hold = new Promise<void>((r) => { release = r; });
    const view = new HealthView({ app: fake.app } as never, fakeContext(fake.app, sidecar));
    document.body.appendChild(view.containerEl);
    const opened = view.onOpen();
    return { sidecar, view, opened, release };
  }

  it("shows the counts from the summary, then loads the open sections' first page (errors and warnings open)", async () => {
    const { sidecar, view, opened } = await shownView();
    await opened;
    await settle();
    expect(sidecar.calls).toEqual([
      { method: "health.summary", params: {} },
      { method: "health.page", params: { section: "unresolved_links", limit: HEALTH_PAGE } },
    ]);
    expect(section(view, "unresolved_links").open).toBe(true);
    expect(section(view, "orphans").open).toBe(false);
    expect(section(view, "unresolved_links").querySelector(".vs-count")!.textContent).toBe("3");
    expect(section(view, "orphans").querySelector(".vs-count")!.textContent).toBe("60");
    expect(titles(view)).toEqual(["Broken 1", "Broken 2", "Broken 3"]);
  });

  it("says it is checking until the summary comes, then shows the open sections' items", async () => {
    const { view, release, opened } = await shownView(true);
    await settle();
    expect(view.contentEl.querySelector(".vs-message-empty")!.textContent).toBe("Checking the vault…");
    expect(titles(view)).toEqual([]);
    release();
    await new Promise((r) => setTimeout(r, 0));
    await opened;
    await settle();
    expect(titles(view)).toHaveLength(3);
    expect(view.contentEl.textContent).not.toContain("Loading…");
  });

  it("loads a closed section when it is opened, and the next page with the cursor on Show more", async () => {
    const { sidecar, view, opened } = await shownView();
    await opened;
    await settle();
    openSection(view, "orphans");
    await settle();
    expect(sidecar.calls.at(-1)).toEqual({ method: "health.page", params: { section: "orphans", limit: HEALTH_PAGE } });
    expect(titles(view).filter((t) => t.startsWith("Orphan"))).toHaveLength(HEALTH_PAGE);
    const more = section(view, "orphans").querySelector<HTMLButtonElement>(".vs-health-more")!;
    expect(more.textContent).toBe(`Show more (${HEALTH_PAGE} of 60)`);
    more.click();
    await settle();
    expect(sidecar.calls.at(-1)).toEqual({ method: "health.page", params: { section: "orphans", limit: HEALTH_PAGE, cursor: "c50" } });
    const orphanTitles = titles(view).filter((t) => t.startsWith("Orphan"));
    expect(orphanTitles).toHaveLength(60);
    expect(orphanTitles.at(-1)).toBe("Orphan 60");
    expect(section(view, "orphans").open).toBe(true); // redrawn, still open
    expect(section(view, "orphans").querySelector(".vs-health-more")).toBeNull();
  });

  it("never asks for the items of an empty section", async () => {
    const { sidecar, view, opened } = await shownView();
    await opened;
    await settle();
    const secrets = openSection(view, "secrets");
    await settle();
    expect(sidecar.calls.filter((c) => c.params.section === "secrets")).toEqual([]);
    expect(secrets.textContent).toContain("Nothing found.");
  });
});

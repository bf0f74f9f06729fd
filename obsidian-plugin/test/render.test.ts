// @vitest-environment happy-dom
import { beforeEach, describe, expect, it, vi } from "vitest";

import type { HealthResponse, RelatedNote, RelatedResponse, SearchResponse, SearchResult, StatusResponse } from "../src/protocol.gen";
import { statusBarView } from "../src/status-bar";
import type { SidecarSnapshot } from "../src/sidecar";
import { formatEditTime, mainPath, opLabel } from "../src/views/edits-render";
import { renderHealth } from "../src/views/health-render";
import { excerptParts, renderRelated, sharedReasons } from "../src/views/related-render";
import { highlightSegments, renderSearchResult, renderSearchResults } from "../src/views/search-render";
import { readableMarkdown } from "../src/views/shared-render";
import { formatBytes, renderStatusDetails } from "../src/views/status-render";
import type { RowActions } from "../src/views/list-nav";

/** Actions that record what a row asked for. */
function recorder(): RowActions & { seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    open: (t, evt) => seen.push(`open:${t.path}:${t.line ?? ""}${"button" in evt && evt.button === 1 ? ":middle" : ""}` +
      `${evt instanceof KeyboardEvent ? ":key" : ""}${evt.ctrlKey || evt.metaKey ? ":mod" : ""}`),
    insertLink: (t) => seen.push(`insert:${t.path}${t.subpath ?? ""}`),
    menu: (t) => seen.push(`menu:${t.path}`),
    hover: (t) => seen.push(`hover:${t.path}${t.subpath ?? ""}`),
    linkText: (t) => `[[${t.path}]]`,
  };
}

function result(over: Partial<SearchResult> = {}): SearchResult {
  return {
    path: "Projects/Alpha.md", title: "Alpha", heading: "Setup > Install", heading_path: ["Setup", "Install"],
    snippet: "Install the sidecar with pipx", highlights: [[0, 7], [12, 19]], start_line: 10, end_line: 18,
    band: "high", score: 0.03,
    scores: { fused: 0.03, bm25_rank: 1, vector_similarity: 0.8, vector_rank: 2, graph_boost: null, recency_boost: null },
    reason: "keyword + meaning", other_sections: [{ heading: "Usage", start_line: 20, end_line: 30 }], ...over,
  };
}

function search(results: SearchResult[], over: Partial<SearchResponse> = {}): SearchResponse {
  return { query: "install", mode: "hybrid", took_ms: 4.2, vectors_available: true, index_building: false,
    band: "high", caveat: null, results, ...over };
}

function related(over: Partial<RelatedNote> = {}): RelatedNote {
  return { path: "Ideas/Beta.md", title: "Beta", folder: "Ideas", score: 0.7, band: "medium", heading: "Setup",
    excerpt: "See how we set it up", start_line: 3, already_linked: false,
    reasons: [{ kind: "links_here", label: "links here" }, { kind: "shares_links", label: "shares 3 links", count: 3 }], ...over };
}

let root: HTMLElement;
beforeEach(() => {
  document.body.innerHTML = "";
  root = document.body.createDiv();
});

describe("highlightSegments", () => {
  it("splits by code points, merging and clamping ranges", () => {
    expect(highlightSegments("abcdef", [[4, 9], [1, 2], [1, 3], [5, 5]])).toEqual([
      { text: "a", hit: false }, { text: "bc", hit: true }, { text: "d", hit: false }, { text: "ef", hit: true },
    ]);
  });

  it("counts astral characters (emoji) as one code point", () => {
    expect(highlightSegments("😀 café 東京", [[2, 6], [7, 9]])).toEqual([
      { text: "😀 ", hit: false }, { text: "café", hit: true }, { text: " ", hit: false }, { text: "東京", hit: true },
    ]);
  });

  it("returns the whole snippet when nothing is highlighted", () => {
    expect(highlightSegments("", [])).toEqual([{ text: "", hit: false }]);
    expect(highlightSegments("x", [])).toEqual([{ text: "x", hit: false }]);
  });
});

describe("search rendering", () => {
  it("renders title, heading path, highlighted snippet and band", () => {
    const row = renderSearchResult(root, result());
    expect(row.querySelector(".vs-title")?.textContent).toBe("Alpha");
    expect(row.querySelector(".vs-heading-path")?.textContent).toBe("Setup › Install");
    expect([...row.querySelectorAll("mark.vs-hit")].map((m) => m.textContent)).toEqual(["Install", "sidecar"]);
    expect(row.querySelector(".vs-snippet")?.textContent).toBe("Install the sidecar with pipx");
    expect(row.querySelector(".vs-band")?.classList.contains("vs-band-high")).toBe(true);
    // Only the band's name on hover: what it means is the sidecar's caveat, above the list (searchNotes).
    expect(row.querySelector(".vs-band")?.getAttribute("title")).toBe("High confidence");
    expect(row.querySelector(".vs-more")?.textContent).toBe("+1 more section");
    expect(row.querySelector(".vs-lines")?.textContent).toBe("lines 10–18");
  });

  it("shows the path once without headings and marks truncation", () => {
    const row = renderSearchResult(root, result({ heading: "", heading_path: [], truncated: true, other_sections: [] }));
    expect(row.querySelector(".vs-heading-path")).toBeNull();
    expect(row.querySelector(".vs-meta .vs-path")?.getAttribute("title")).toBe("Projects/Alpha.md");
    expect(row.querySelector(".vs-truncated")).not.toBeNull();
    expect(row.querySelector(".vs-more")).toBeNull();
  });

  it("renders a list with click handlers, caveats and empty states", () => {
    const actions = recorder();
    const onOpen = vi.fn(actions.open);
    renderSearchResults(root, search([result(), result({ path: "b.md", title: "B" })], { caveat: "Lexical only" }), { ...actions, open: onOpen });
    const rows = root.querySelectorAll<HTMLElement>(".vs-search-row");
    expect(rows).toHaveLength(2);
    expect(root.textContent).toContain("Lexical only");
    rows[1]!.click();
    expect(onOpen).toHaveBeenCalledWith(expect.objectContaining({ path: "b.md" }), expect.anything());
    expect(root.textContent).toContain("· Hybrid ·");
    renderSearchResults(root, search([]));
    expect(root.querySelectorAll(".vs-search-row")).toHaveLength(0);
    expect(root.textContent).toContain("No matching notes.");
    renderSearchResults(root, null, undefined, "Type to search.");
    expect(root.textContent).toBe("Type to search.");
  });

  it("lets the note's own words take their direction from their first letter (Arabic, Hebrew, Persian read right to left)", () => {
    const row = renderSearchResult(root, result({ title: "النسخ الاحتياطي", heading_path: ["النسخ", "الاستعادة"],
      snippet: "استعد مجلدا واحدا كل أسبوع.", highlights: [[0, 4]], path: "ملاحظات/النسخ.md" }));
    const auto = [...row.querySelectorAll("[dir=auto]")].map((el) => el.className);
    expect(auto).toEqual(["vs-title", "vs-heading-path", "vs-snippet"]);
    // The app's own words (band, lines, "+1 more section") and the path keep the pane's direction.
    expect(row.querySelector(".vs-path-name")?.hasAttribute("dir")).toBe(false);
    expect(row.querySelector(".vs-band")?.hasAttribute("dir")).toBe(false);
    expect(row.querySelector(".vs-lines")?.hasAttribute("dir")).toBe(false);
  });

  it("escapes text instead of interpreting HTML", () => {
    renderSearchResult(root, result({ title: "<img src=x onerror=alert(1)>", snippet: "<b>bold</b>", highlights: [] }));
    expect(root.querySelector("img")).toBeNull();
    expect(root.querySelector("b")).toBeNull();
    expect(root.querySelector(".vs-title")?.textContent).toBe("<img src=x onerror=alert(1)>");
  });
});

describe("related rendering", () => {
  const response = (results: RelatedNote[]): RelatedResponse =>
    ({ source_path: "a.md", took_ms: 2, vectors_available: true, index_building: false, results });

  it("renders title, folder, reason badges, excerpt and band; rows are draggable", () => {
    renderRelated(root, response([related()]), recorder());
    const row = root.querySelector<HTMLElement>(".vs-related-row")!;
    expect(row.getAttribute("draggable")).toBe("true");
    expect(row.getAttribute("role")).toBe("option");
    expect(row.closest("[role=listbox]")).not.toBeNull();
    expect(row.querySelector(".vs-title")?.textContent).toBe("Beta");
    expect(row.querySelector(".vs-folder")?.textContent).toBe("Ideas");
    expect([...row.querySelectorAll(".vs-badge")].map((b) => b.textContent)).toEqual(["links here", "shares 3 links"]);
    expect(row.querySelector(".vs-excerpt")?.textContent).toBe("Setup: See how we set it up");
    expect(row.querySelector(".vs-band-medium")).not.toBeNull();
  });

  it("gives a row's title and excerpt the direction of their first letter", () => {
    renderRelated(root, response([related({ title: "גיבוי", folder: "בית", excerpt: "לשחזר תיקייה אחת בכל שבוע" })]), recorder());
    const row = root.querySelector<HTMLElement>(".vs-related-row")!;
    expect([...row.querySelectorAll("[dir=auto]")].map((el) => el.className)).toEqual(["vs-title", "vs-excerpt"]);
  });

  it("marks or hides already-linked notes", () => {
    const notes = [related({ path: "x.md", already_linked: true }), related({ path: "y.md" })];
    renderRelated(root, response(notes), undefined, { showAlreadyLinked: true });
    const linked = root.querySelector(".vs-related-row.is-linked")!;
    expect(linked.getAttribute("data-path")).toBe("x.md");
    expect(linked.querySelector(".vs-badge-linked")?.textContent).toBe("Linked");
    renderRelated(root, response(notes), undefined, { showAlreadyLinked: false });
    expect([...root.querySelectorAll(".vs-related-row")].map((r) => r.getAttribute("data-path"))).toEqual(["y.md"]);
    renderRelated(root, response([notes[0]!]), undefined, { showAlreadyLinked: false });
    expect(root.textContent).toContain("already linked");
  });

  it("wires click, Mod-click, middle-click, menu, hover and the keyboard", () => {
    const actions = recorder();
    renderRelated(root, response([related(), related({ path: "Ideas/Gamma.md", title: "Gamma", heading: "", start_line: 1 })]), actions);
    const [row, second] = [...root.querySelectorAll<HTMLElement>(".vs-related-row")];
    row!.click();
    row!.dispatchEvent(new MouseEvent("click", { bubbles: true, ctrlKey: true, metaKey: true }));
    row!.dispatchEvent(new MouseEvent("auxclick", { bubbles: true, button: 1 }));
    row!.dispatchEvent(new MouseEvent("auxclick", { bubbles: true, button: 2 })); // not the middle button
    row!.dispatchEvent(new MouseEvent("contextmenu", { bubbles: true, cancelable: true }));
    row!.dispatchEvent(new MouseEvent("mouseover", { bubbles: true }));
    expect(row!.tabIndex).toBe(0);
    expect(second!.tabIndex).toBe(-1);
    row!.focus();
    row!.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true }));
    expect(document.activeElement).toBe(second);
    expect(second!.getAttribute("aria-selected")).toBe("true");
    expect(row!.getAttribute("aria-selected")).toBe("false");
    second!.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    second!.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, ctrlKey: true, metaKey: true }));
    second!.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, shiftKey: true }));
    second!.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowUp", bubbles: true }));
    expect(document.activeElement).toBe(row);
    expect(actions.seen).toEqual([
      "open:Ideas/Beta.md:3", "open:Ideas/Beta.md:3:mod", "open:Ideas/Beta.md:3:middle", "menu:Ideas/Beta.md",
      "hover:Ideas/Beta.md#Setup", "open:Ideas/Gamma.md:1:key", "open:Ideas/Gamma.md:1:key:mod", "insert:Ideas/Gamma.md",
    ]);
  });

  it("drops a reason pill every row shares, keeps the ones that tell rows apart", () => {
    const same = { kind: "similar_section" as const, label: "similar text" };
    const notes = [related({ reasons: [same, { kind: "links_here", label: "links here" }] }), related({ path: "z.md", reasons: [same] })];
    expect([...sharedReasons(notes)]).toEqual(["similar text"]);
    expect([...sharedReasons([notes[0]!])]).toEqual([]); // one row: its pills are its own
    renderRelated(root, response(notes));
    expect([...root.querySelectorAll(".vs-badge")].map((b) => b.textContent)).toEqual(["links here"]);
  });

  it("says when vectors are unavailable", () => {
    renderRelated(root, { ...response([related()]), vectors_available: false });
    expect(root.textContent).toContain("Links and tags only");
  });
});

const HEALTH: HealthResponse = {
  generated_at: 1_700_000_000, took_ms: 12,
  summary: { notes: 10, orphans: 1, no_inbound: 2, dead_ends: 0, unresolved_links: 1, unresolved_targets: 1,
    ambiguous_links: 0, broken_anchors: 0, near_duplicates: 1, secrets: 0, stale_drafts: 4 },
  rules: ["orphans", "unresolved_links", "near_duplicates"],
  sections: [
    { id: "unresolved_links", title: "Unresolved links", severity: "warning", count: 3,
      items: [{ path: "a.md", line: 4, message: "[[Nope]] does not resolve", fix: "Create the note or fix the link", severity: "warning" }] },
    { id: "near_duplicates", title: "Near-duplicates", severity: "info", count: 1,
      items: [{ path: "b.md", line: null, message: "Very similar to c.md", fix: null, severity: "info",
        related: [{ path: "c.md", title: "C", score: 0.97 }] }] },
    { id: "orphans", title: "Orphans", severity: "info", count: 0, items: [] },
  ],
};

describe("health rendering", () => {
  it("renders summary chips, sections with counts and clickable items", () => {
    const actions = recorder();
    renderHealth(root, HEALTH, actions);
    expect(root.querySelectorAll(".vs-chip")).toHaveLength(11);
    expect(root.textContent).toContain("Stale drafts");
    const sections = root.querySelectorAll<HTMLDetailsElement>("details.vs-health-section");
    expect(sections).toHaveLength(3);
    expect(sections[0]!.open).toBe(true);
    expect(sections[1]!.open).toBe(false);
    expect(sections[0]!.querySelector(".vs-count")?.textContent).toBe("3");
    expect(sections[0]!.textContent).toContain("Showing 1 of 3.");
    const item = sections[0]!.querySelector<HTMLElement>(".vs-health-item")!;
    expect(item.querySelector(".vs-health-path")?.textContent).toBe("a.md:4");
    item.click();
    sections[1]!.querySelector<HTMLElement>(".vs-health-related-link")!.click();
    expect(actions.seen).toEqual(["open:a.md:4", "open:c.md:"]);
    expect(sections[2]!.textContent).toContain("Nothing found.");
  });

  it("labels tiles as their sections and opens a section from its tile", () => {
    renderHealth(root, HEALTH, recorder());
    const tile = root.querySelector<HTMLButtonElement>('button.vs-chip[data-section="near_duplicates"]')!;
    expect(tile.querySelector(".vs-chip-label")?.textContent).toBe("Near-duplicates");
    const section = root.querySelector<HTMLDetailsElement>('details[data-section="near_duplicates"]')!;
    expect(section.open).toBe(false);
    tile.click();
    expect(section.open).toBe(true);
    expect(root.querySelector('button.vs-chip[data-section="notes"]')).toBeNull(); // no section: a plain tile
  });
});

const STATUS: StatusResponse = {
  version: "0.1.0", protocol_version: "1.0.0", vault: "/v", index_dir: "/i", index_bytes: 3_500_000, schema_version: 1,
  backend: "SQLite 3.50", vector_store: "sqlite-vec", vector_search: "numpy",
  model: { name: "potion", fingerprint: "abc", dim: 256, available: true, error: null },
  notes: 120, chunks: 800, chunks_with_vectors: 800, chunks_without_vectors: 0, vectors_available: true,
  skipped: [{ path: "big.md", reason: "too large" }], last_indexed_at: 1_700_000_000, building: false, complete: true,
  progress: null, mcp: { enabled: true, port: 8765 }, bands: { high: 0.6, low: 0.4, source: "auto" },
};

function snap(over: Partial<SidecarSnapshot>): SidecarSnapshot {
  return { phase: "running", status: STATUS, progress: null, error: null, errorKind: null, errorHint: null, eventsConnected: true,
    restartInMs: null, ...over };
}

describe("status", () => {
  it("says starting / indexing n/m / ready / degraded / error", () => {
    expect(statusBarView(snap({ phase: "starting", status: null })).text).toBe("Sidecar: starting");
    expect(statusBarView(snap({ progress: { phase: "vectors", done: 5, total: 9 } })).text).toBe("Sidecar: indexing 5/9");
    expect(statusBarView(snap({})).text).toBe("Sidecar: ready (120 notes)");
    const degraded = statusBarView(snap({ status: { ...STATUS, vectors_available: false,
      model: { ...STATUS.model, available: false, error: "model missing" } } }));
    expect(degraded.text).toBe("Sidecar: degraded (lexical only)");
    expect(degraded.tooltip).toBe("model missing");
    const loading = statusBarView(snap({ status: { ...STATUS, building: true, vectors_available: false, complete: false,
      model: { ...STATUS.model, available: false, loading: true } } }));  // serve's first seconds: indexing waits
    expect(loading).toMatchObject({ text: "Sidecar: loading model (lexical only)", tone: "degraded" });
    const failed = statusBarView(snap({ phase: "failed", error: "Neither `sidecar` nor Python 3 was found.\nInstall it" }));
    expect(failed).toEqual({ text: "Sidecar: error", tone: "error", tooltip: "Neither `sidecar` nor Python 3 was found." });
    expect(statusBarView(snap({ phase: "restarting", error: "crashed", restartInMs: 2000 })).tooltip).toBe("crashed Retrying in 2 s.");
  });

  it("renders details with skipped files and recent output", () => {
    renderStatusDetails(root, { headline: "Ready", status: STATUS, error: "boom", stderr: ["line 1", "line 2"] });
    expect(root.querySelector(".vs-status-error")?.textContent).toBe("boom");
    expect(root.textContent).toContain("3.3 MB");
    expect(root.textContent).toContain("big.md: too large");
    expect(root.querySelector(".vs-status-stderr")?.textContent).toBe("line 1\nline 2");
    // A failed start's headline is its error's first line: the block under it says only the rest.
    renderStatusDetails(root, { headline: "Not found: sidecar", status: null, error: "Not found: sidecar\nFix it\nCommand: x",
      stderr: [] });
    expect(root.querySelector(".vs-status-error")?.textContent).toBe("Fix it\nCommand: x");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KB");
  });

});

// Found with the picture tests (test/pictures.test.ts): raw Markdown in snippets, the note title repeated in
// heading paths and excerpts, and the same advice under every item of a health section.
describe("readable rows", () => {
  it("drops link brackets, heading marks, fences and table pipes from snippets", () => {
    expect(readableMarkdown("## Projects - [[Sourdough Bread]] — the long game - [[Miso Ramen|ramen]]"))
      .toBe("Projects - Sourdough Bread — the long game - ramen");
    expect(readableMarkdown("| Goal | Result | | --- | Yes, in March. |")).toBe("Goal · Result · Yes, in March.");
    // Subpaths as Obsidian shows a link: a heading after " › ", a block id not at all.
    expect(readableMarkdown("Lesson from [[Sourdough Bread#^dense-crumb]] and [[Bread#Crumb]], [[Bread#^x|see]]"))
      .toBe("Lesson from Sourdough Bread and Bread › Crumb, see");
    expect(readableMarkdown("## Offsite: S3 ```ini [restic-offsite] C# and #tag stay")).toBe("Offsite: S3 [restic-offsite] C# and #tag stay");
    expect(readableMarkdown(" | a | ", false, false)).toBe(" · a · ");
  });

  it("turns excerpts into plain text: emphasis, code, links, embeds, block ids, tasks, quotes, table rules", () => {
    expect(readableMarkdown("**Bold** and __strong__, *em* and _em_, ~~gone~~ ==marked== `code`"))
      .toBe("Bold and strong, em and em, gone marked code");
    expect(readableMarkdown("See ![[diagram.png]] and [the docs](https://x.org/a) ^block-1 more"))
      .toBe("See diagram.png and the docs more");
    expect(readableMarkdown("- [ ] buy flour - [x] feed starter > quoted %%hidden%% > [!quote] Data end"))
      .toBe("buy flour feed starter quoted Data end");
    expect(readableMarkdown("| Day | Grade | | --- | :---: | | Mon | 6a |")).toBe("Day · Grade · Mon · 6a");
    expect(readableMarkdown("2 * 3 * 4 and snake_case_name stay")).toBe("2 * 3 * 4 and snake_case_name stay");  });

  it("keeps highlights on the right words after the clean-up", () => {
    const snippet = "# Sourdough Bread [[Sourdough]] | starter |";
    renderSearchResult(root, result({ title: "Sourdough Bread", snippet, highlights: [[2, 11], [20, 29], [34, 41]] }));
    expect([...root.querySelectorAll("mark.vs-hit")].map((m) => m.textContent)).toEqual(["Sourdough", "Sourdough", "starter"]);
    expect(root.querySelector(".vs-snippet")?.textContent).toBe("Sourdough Bread Sourdough · starter");
  });

  it("leaves the note title out of heading paths and excerpts", () => {
    renderSearchResult(root, result({ title: "Alpha", heading_path: ["Alpha", "Setup"] }));
    expect(root.querySelector(".vs-heading-path")?.textContent).toBe("Setup");
    root.empty();
    renderSearchResult(root, result({ title: "Alpha", heading_path: ["Alpha"] }));
    expect(root.querySelector(".vs-heading-path")).toBeNull();
    expect(excerptParts({ title: "Hangboard", heading: "Hangboard > Repeaters", excerpt: "## Repeaters 7 seconds on, 3 off" }))
      .toEqual({ heading: "Repeaters", text: "7 seconds on, 3 off" });
    expect(excerptParts({ title: "Log", heading: "Log", excerpt: "# Log Sessions since [[February]]" }))
      .toEqual({ heading: "", text: "Sessions since February" });
    expect(excerptParts({ title: "Beta", heading: "Setup", excerpt: "See how we set it up" }))
      .toEqual({ heading: "Setup", text: "See how we set it up" });
  });

  it("says shared advice once per health section and tells totals, counts and zeros apart", () => {
    const fix = "Move it to a password manager";
    renderHealth(root, { ...HEALTH, sections: [{ id: "secrets", title: "Secrets", severity: "error", count: 2, items: [
      { path: "a.md", line: 1, message: "token", fix, severity: "error" },
      { path: "b.md", line: 2, message: "key", fix, severity: "error" },
    ] }, { id: "orphans", title: "Orphans", severity: "info", count: 0, items: [] }] });
    expect([...root.querySelectorAll(".vs-health-fix")].map((f) => f.textContent)).toEqual([fix]);
    expect(root.querySelector(".vs-health-section-fix")).not.toBeNull();
    expect(root.querySelector("details.is-empty .vs-health-section-title")?.textContent).toBe("Orphans");
    const chip = (label: string): Element | undefined =>
      [...root.querySelectorAll(".vs-chip")].find((c) => c.querySelector(".vs-chip-label")?.textContent === label);
    expect(chip("Notes")?.classList.contains("is-total")).toBe(true);
    expect(chip("Orphans")?.classList.contains("has-count")).toBe(true);
    expect(chip("Dead ends")?.classList.contains("is-zero")).toBe(true);
  });
});

describe("agent edit rows", () => {
  it("says when in local time: today, yesterday, else the date", () => {
    const now = new Date(2026, 11, 1, 15, 0);
    const at = (d: Date): number => d.getTime() / 1000;
    expect(formatEditTime(at(new Date(2026, 11, 1, 9, 5)), now)).toBe("Today 09:05");
    expect(formatEditTime(at(new Date(2026, 10, 30, 23, 59)), now)).toBe("Yesterday 23:59");
    expect(formatEditTime(at(new Date(2026, 0, 2, 7, 30)), now)).toBe("2026-01-02 07:30");
  });

  it("links the edit's own note: the path that comes last in the summary, preferring one that exists", () => {
    const move = { summary: "moved Inbox/A.md to Archive/A.md", paths: ["Archive/A.md", "Inbox/A.md", "Links/B.md"] };
    expect(mainPath(move)).toBe("Archive/A.md");
    const undoMove = { summary: "undid edit 3 (moved Inbox/A.md to Archive/A.md)", paths: move.paths };
    expect(mainPath(undoMove, (p) => p !== "Archive/A.md")).toBe("Inbox/A.md");
    expect(mainPath({ summary: "replaced 'X > Y' in Notes/N.md", paths: ["Notes/N.md"] })).toBe("Notes/N.md");
    expect(mainPath({ summary: "moved B.md to C.md", paths: ["B.md", "C.md"], path: "B.md" })).toBe("B.md");  // named wins
    expect(mainPath({ summary: "moved B.md to C.md", paths: ["B.md", "C.md"], path: "B.md" }, (p) => p !== "B.md")).toBe("C.md");
    expect(mainPath({ summary: "nothing", paths: [] })).toBeNull();
  });

  it("names every operation", () => {
    expect(["create", "append", "replace_section", "update_properties", "move", "delete", "restore", "undo"].map(opLabel))
      .toEqual(["Created", "Appended", "Replaced section", "Set properties", "Moved", "Deleted", "Restored", "Undo"]);
    expect(opLabel("rename_all")).toBe("Rename all");
  });
});

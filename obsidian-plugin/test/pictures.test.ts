// @vitest-environment happy-dom
// Picture tests: the plugin's own render functions (src/views/render.ts), fed with REAL responses from the
// real sidecar on a copy of the demo vault, rendered in headless Debian Chromium with an Obsidian-like dark
// theme (test/pictures/obsidian-theme.css) plus the plugin's styles.css. Screenshots are kept in
// test-artifacts/ (with the HTML, to open in a browser); the test asserts what must be visible and checks
// contrast and horizontal overflow, which is what a human would look for in the pictures.
import { build, type Plugin } from "esbuild";
import { randomBytes } from "crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "fs";
import * as path from "path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { describeError } from "../src/client";
import type { Band, EditRecord, EditsResponse, HealthResponse, RelatedResponse, SearchResponse } from "../src/protocol.gen";
import { headingAt } from "../src/headings";
import { parseQuery } from "../src/query-syntax";
import { Sidecar } from "../src/sidecar";
import { EDITS_EMPTY, formatEditTime, mainPath, noteName, opLabel, sharedReasons, summaryLabel } from "../src/views/render";
import { freePort, mcpTool } from "./mcp-agent";
import type { PictureApi } from "./pictures/page";
import { PLUGIN_DIR, listFiles, startRealSidecar, type RealSidecar } from "./real-sidecar";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const ARTIFACTS = path.join(PLUGIN_DIR, "test-artifacts");
const RELATED_SOURCE = "Hobbies/Bouldering/Climbing Gyms.md";
const MODAL_QUERY = "sourdough starter";
const PANE_QUERY = "restic backup offsite";
const BAND_LABEL: Record<Band, string> = { high: "High", medium: "Medium", low: "Low", none: "None" };

/**
 * Text colour against its background: 4.5 is WCAG AA for body text. Secondary text (paths, help) may be
 * fainter, and so may <mark> and the active mode button: text-normal on --text-highlight-bg and
 * text-on-accent on --interactive-accent are the theme's own pairs, the ones Obsidian uses for its search
 * matches and its call-to-action buttons (3.5 to 4 in the default dark theme).
 */
const MIN_CONTRAST = 4.5;
const MIN_CONTRAST_SECONDARY = 3;

interface Data {
  related: RelatedResponse;
  modal: SearchResponse;
  pane: SearchResponse;
  health: HealthResponse;
  /** edits.list before any agent edited anything, and after the agents' session below. */
  editsBefore: EditsResponse;
  edits: EditsResponse;
  /** What the sidecar said when the plugin tried to undo an edit whose note the user changed since. */
  refused: Record<number, string>;
  /** agent_edit events the plugin's Sidecar received meanwhile. */
  events: EditRecord[];
  /** Vault paths after the session. */
  existing: string[];
  /** The pane's error state: what a failed start of the sidecar looks like there, and its fix-it hint. */
  startError: string;
  startHint: string | null;
  now: number;
}

const AGENTS = { claude: "claude-code/2.0.14", cursor: "Cursor/1.7.2", codex: "codex_cli_rs/0.46.0" };

let rs: RealSidecar | null = null;
let browser: Browser | null = null;
let script = "";
let css = "";
let data: Data;
let mcp: { port: number; token: string } | null = null;

/** The browser side (test/pictures/page.ts + the plugin's render.ts), bundled for the page. */
async function bundlePage(): Promise<string> {
  // obsidian-stub imports Node's http for requestUrl and reads process.platform; the page needs neither.
  const noNode: Plugin = {
    name: "no-node-builtins",
    setup(b) {
      b.onResolve({ filter: /^(node:)?http$/ }, () => ({ path: "http", namespace: "empty" }));
      b.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "export {};", loader: "js" }));
    },
  };
  const out = await build({
    entryPoints: [path.join(PLUGIN_DIR, "test", "pictures", "page.ts")],
    bundle: true, write: false, format: "iife", platform: "browser", target: "es2022", plugins: [noNode], logLevel: "silent",
    define: { "process.platform": JSON.stringify(process.platform) },
  });
  return out.outputFiles[0]?.text ?? "";
}

async function fetchData(sidecar: RealSidecar): Promise<Data> {
  const client = await sidecar.sidecar.client();
  // The related pane while you type: the unsaved buffer (a new paragraph) and the heading at the cursor.
  const onDisk = readFileSync(path.join(sidecar.vault, RELATED_SOURCE), "utf8");
  const buffer = `${onDisk.trimEnd()}\n\n## Weekend baking\n\nFed the sourdough starter on Friday night; the levain ` +
    "peaked by morning, so the country loaf went to 75 % hydration with a long cold proof, then the dutch oven.\n";
  const related = await client.call("related", {
    path: RELATED_SOURCE, text: buffer, cursor_heading: headingAt(buffer, buffer.split("\n").length - 2), limit: 10,
  });
  const search = (q: string, limit: number): Promise<SearchResponse> => {
    const parsed = parseQuery(q);
    return client.call("search", { query: parsed.query, filters: parsed.filters, mode: "hybrid", limit });
  };
  const modal = await search(MODAL_QUERY, 6);
  const pane = await search(PANE_QUERY, 8);
  const health = await client.call("health");
  return { related, modal, pane, health, ...(await agentSession(sidecar)) };
}

/**
 * Three agents edit the demo vault over MCP (create, append, replace a section, set properties, a move that
 * relinks, a delete); the plugin undoes one edit, and fails to undo another because the user changed that
 * note meanwhile. Everything the edits view shows comes from this session.
 */
async function agentSession(sidecar: RealSidecar): Promise<Omit<Data, "related" | "modal" | "pane" | "health">> {
  const client = await sidecar.sidecar.client();
  const { port, token } = mcp!;
  const events: EditRecord[] = [];
  const ref = sidecar.sidecar.on("agent-edit", (e) => events.push(e as EditRecord));
  const editsBefore = await client.call("edits.list");
  const tool = (agent: string, name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> =>
    mcpTool(port, token, agent, name, args);
  const hash = async (path: string): Promise<string> => String((await tool(AGENTS.claude, "read_note", { path }))["content_hash"]);
  await tool(AGENTS.claude, "create_note", {
    path: "Hobbies/Bouldering/Training Plan.md",
    content: "# Training Plan\n\nTwo gym sessions a week, hangboard on Fridays. See [[Hangboard Protocol]].\n",
  });
  const bread = "Cooking/Sourdough Bread.md";
  const appended = await tool(AGENTS.cursor, "append_to_note", {
    path: bread, content: "\n## Weekend bake\n\n75 % hydration, long cold proof.\n", content_hash: await hash(bread),
  });
  await tool(AGENTS.claude, "replace_section", {
    path: "Home Lab/Backups.md", heading: "Restore drill", content_hash: await hash("Home Lab/Backups.md"),
    content: "## Restore drill\n\nEvery first Sunday: restore one folder from S3 and compare checksums.\n",
  });
  const props = await tool(AGENTS.codex, "update_properties", {
    path: "Reading/Reading List.md", properties: { status: "reviewed" }, content_hash: await hash("Reading/Reading List.md"),
  });
  const hangboard = "Hobbies/Bouldering/Hangboard Protocol.md";
  await tool(AGENTS.claude, "move_note", {
    path: hangboard, new_path: "Hobbies/Training/Hangboard Protocol.md", content_hash: await hash(hangboard),
  });
  await tool(AGENTS.codex, "delete_note", { path: "Brain Dump.md", content_hash: await hash("Brain Dump.md") });
  // The plugin undoes the properties edit (the view's Undo button calls exactly this)...
  await client.call("edits.undo", { edit: Number(props["edit"]) });
  // ...and the user edits the bread note in Obsidian, so the agent's append can no longer be undone.
  appendFileSync(path.join(sidecar.vault, bread), "\nMy own note after the bake.\n");
  const refused: Record<number, string> = {};
  try {
    await client.call("edits.undo", { edit: Number(appended["edit"]) });
    throw new Error("undo of a changed note was accepted");
  } catch (err) {
    refused[Number(appended["edit"])] = describeError(err);
  }
  const edits = await client.call("edits.list");
  // The events arrive on their own connection: wait until the last edit's has come.
  for (let i = 0; i < 100 && !events.some((e) => e.edit === edits.edits[0]?.edit); i++) await new Promise((r) => setTimeout(r, 50));
  sidecar.sidecar.offref(ref);
  // The pane's error state, from a real failed start (no such sidecar command).
  const broken = new Sidecar(() => ({ vaultPath: sidecar.vault, command: "/nonexistent/bin/sidecar" }));
  let startError = "";
  let startHint: string | null = null;
  try {
    await broken.client();
  } catch (err) {
    startError = describeError(err);
    startHint = broken.snapshot.errorHint;
  } finally {
    await broken.stop();
  }
  return {
    editsBefore, edits, refused, events, existing: listFiles(sidecar.vault), startError, startHint, now: Date.now() / 1000,
  };
}

beforeAll(async () => {
  // Fail, never skip: CI installs Debian's chromium (build_tasks/test.py); nothing is ever downloaded.
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium was not found at ${CHROMIUM}: install Debian's chromium (sudo apt-get install chromium); ` +
      "the picture tests never download a browser.");
  }
  mkdirSync(ARTIFACTS, { recursive: true });
  css = readFileSync(path.join(PLUGIN_DIR, "test", "pictures", "obsidian-theme.css"), "utf8") + "\n" +
    readFileSync(path.join(PLUGIN_DIR, "styles.css"), "utf8");
  mcp = { port: await freePort(), token: randomBytes(24).toString("hex") };
  const [bundled, started] = await Promise.all([bundlePage(),
    startRealSidecar("pictures", { mcp: { ...mcp, allowWrites: true } })]);
  script = bundled;
  rs = started;
  data = await fetchData(rs);
  writeFileSync(path.join(ARTIFACTS, "sidecar-responses.json"), JSON.stringify(data, null, 2));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 60_000 });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await rs?.dispose();
}, 60_000);

type Kind = "relatedPane" | "searchModal" | "searchPane" | "healthView" | "editsView";
type Theme = "dark" | "light";

/** A fresh page with the theme, the plugin's styles and the bundled render code, showing one view. */
async function show<K extends Kind>(kind: K, arg: Parameters<PictureApi[K]>[0], theme: Theme = "dark"): Promise<Page> {
  if (!browser) throw new Error("no browser");
  const page = await browser.newPage({ viewport: { width: 960, height: 700 }, deviceScaleFactor: 1 });
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  await page.setContent(`<!doctype html><html><head><meta charset="utf-8"><style>${css}</style></head>` +
    `<body class="theme-${theme}"></body></html>`);
  await page.addScriptTag({ content: script });
  if (errors.length) throw new Error(`The page failed: ${errors.join("\n")}`);
  await page.evaluate(([k, a]) => {
    (window.vsPictures[k] as (x: unknown) => void)(a);
  }, [kind, arg] as const);
  await page.evaluate(() => document.fonts.ready);
  if (errors.length) throw new Error(`The page failed: ${errors.join("\n")}`);
  return page;
}

async function snap(page: Page, name: string): Promise<string> {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.locator("#stage > *").first().screenshot({ path: file });
  writeFileSync(path.join(ARTIFACTS, `${name}.html`), await page.content());
  return file;
}

/** Visible (rendered with a size, inside the viewport's page) and not hidden by CSS. */
async function visibleText(page: Page, selector: string, text: string | RegExp): Promise<void> {
  const loc = page.locator(selector).filter({ hasText: text }).first();
  expect(await loc.count(), `${selector} with text ${String(text)}`).toBe(1);
  expect(await loc.isVisible(), `${selector} with text ${String(text)} is visible`).toBe(true);
  const box = await loc.boundingBox();
  expect(box && box.width > 0 && box.height > 0).toBe(true);
}

async function checkLayout(page: Page, primary: string, secondary: string): Promise<void> {
  const overflow = await page.evaluate(() => window.vsPictures.overflowing());
  expect(overflow, "elements sticking out of the view on the right").toEqual([]);
  const main = await page.evaluate((s) => window.vsPictures.contrast(s), primary);
  for (const c of main) expect(c.ratio, `contrast of ${c.selector} ("${c.text}")`).toBeGreaterThanOrEqual(MIN_CONTRAST);
  const faint = await page.evaluate((s) => window.vsPictures.contrast(s), secondary);
  for (const c of faint) expect(c.ratio, `contrast of ${c.selector} ("${c.text}")`).toBeGreaterThanOrEqual(MIN_CONTRAST_SECONDARY);
}

describe("pictures of the plugin's views with real sidecar data", () => {
  for (const theme of ["dark", "light"] as const) {
  it(`related pane (${theme}): titles, reasons, bands, linked marks`, async () => {
    const response = data.related;
    expect(response.results.length).toBeGreaterThan(3);
    const page = await show("relatedPane", { response, basename: "Climbing Gyms" }, theme);
    try {
      await snap(page, `related-pane-${theme}`);
      await visibleText(page, ".vs-pane-header", "Climbing Gyms");
      for (const note of response.results) await visibleText(page, ".vs-related-row .vs-title", note.title);
      const shared = sharedReasons(response.results);
      for (const label of new Set(response.results.flatMap((n) => n.reasons.map((r) => r.label)).filter((l) => !shared.has(l)))) {
        await visibleText(page, ".vs-badge", new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`));
      }
      // Climbing Gyms links to "Bouldering Log", which links back: both badges, and the "Linked" mark.
      await visibleText(page, ".vs-badge", /^links here$/);
      await visibleText(page, ".vs-badge-linked", /^Linked$/);
      for (const band of new Set(response.results.map((n) => n.band))) {
        await visibleText(page, `.vs-band-${band}`, BAND_LABEL[band]);
      }
      for (const label of shared) expect(await page.locator(".vs-badge", { hasText: label }).count(), `shared pill ${label}`).toBe(0);
      // Compact: more than five rows fit in a 700 px sidebar.
      const heights = await page.locator(".vs-related-row").evaluateAll((rows) => rows.map((r) => r.getBoundingClientRect().height));
      expect(700 / (heights.reduce((a, b) => a + b, 0) / heights.length)).toBeGreaterThan(7);
      expect(await page.locator(".vs-band").first().getAttribute("title")).toMatch(/confidence/i);
      await checkLayout(page, ".vs-title, .vs-excerpt, .vs-badge, .vs-band-high, .vs-band-medium, .vs-pane-header",
        ".vs-folder, .vs-band-low, .vs-band-none, .vs-badge-linked");
      const first = response.results[0]!;
      await page.locator(".vs-related-row").first().click();
      expect(await page.evaluate(() => window.vsPictures.clicks)).toEqual([`open:${first.path}:${first.start_line}`]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it(`search window (${theme}): highlighted snippets, bands, modes`, async () => {
    const response = data.modal;
    const top = response.results[0];
    expect(top?.highlights.length).toBeGreaterThan(0);
    const page = await show("searchModal", { response, query: MODAL_QUERY }, theme);
    try {
      await snap(page, `search-modal-${theme}`);
      await visibleText(page, ".suggestion-item.is-selected .vs-title", top!.title);
      await visibleText(page, ".suggestion-item.is-selected mark.vs-hit", /sourdough|starter/i);
      expect(await page.locator("mark.vs-hit").count()).toBeGreaterThanOrEqual(response.results.filter((r) => r.highlights.length).length);
      await visibleText(page, ".suggestion-item.is-selected .vs-band", BAND_LABEL[top!.band]);
      await visibleText(page, "button.vs-mode.is-active", "Hybrid");
      await visibleText(page, ".prompt-instructions", "insert link");
      for (const r of response.results) await visibleText(page, ".suggestion-item .vs-title", r.title || r.path);
      await checkLayout(page, ".vs-title, .vs-snippet, .vs-band-high, .vs-band-medium",
        ".vs-heading-path, .vs-meta, mark.vs-hit, button.vs-mode, .vs-band-low, .vs-band-none, .vs-search-help");
    } finally {
      await page.close();
    }
  }, 60_000);

  it(`search pane (${theme}): result header, highlights, bands`, async () => {
    const response = data.pane;
    expect(response.results.length).toBeGreaterThan(0);
    const page = await show("searchPane", { response, query: PANE_QUERY }, theme);
    try {
      await snap(page, `search-pane-${theme}`);
      await visibleText(page, ".vs-results-header", new RegExp(`^${response.results.length} results? · Hybrid · \\d+ ms`));
      await visibleText(page, ".vs-search-row .vs-title", response.results[0]!.title);
      await visibleText(page, "mark.vs-hit", /restic|backup|offsite/i);
      await visibleText(page, ".vs-results-header .vs-band", BAND_LABEL[response.band]);
      await checkLayout(page, ".vs-title, .vs-snippet, .vs-band-high, .vs-band-medium",
        ".vs-heading-path, .vs-meta, mark.vs-hit, .vs-results-header, .vs-band-low, .vs-band-none, .vs-search-help");
      await page.locator(".vs-search-row").first().click();
      expect(await page.evaluate(() => window.vsPictures.clicks)).toEqual([`open:${response.results[0]!.path}:${response.results[0]!.start_line}`]);
    } finally {
      await page.close();
    }
  }, 60_000);

  it(`health view (${theme}): summary counts, open sections, items`, async () => {
    const report = data.health;
    const page = await show("healthView", { report }, theme);
    try {
      await snap(page, `health-view-${theme}`);
      const titles = new Map(report.sections.map((sec) => [sec.id, sec.title]));
      for (const [key, value] of Object.entries(report.summary)) {
        const label = (titles.get(key) ?? summaryLabel(key)).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
        const chip = page.locator(".vs-chip").filter({ has: page.locator(".vs-chip-label", { hasText: new RegExp(`^${label}$`) }) });
        expect(await chip.count(), `chip ${key}`).toBe(1);
        expect(await chip.locator(".vs-chip-count").textContent()).toBe(String(value));
        expect(await chip.isVisible()).toBe(true);
      }
      expect(report.summary.notes).toBeGreaterThan(0);
      await visibleText(page, ".vs-chip", new RegExp(`^${report.summary.notes}Notes$`));
      for (const section of report.sections) await visibleText(page, ".vs-health-section-title", section.title);
      const open = report.sections.find((s) => s.severity === "error" && s.items.length > 0);
      expect(open).toBeDefined();
      const item = open!.items[0]!;
      await visibleText(page, ".vs-health-item .vs-health-path", item.line !== null ? `${item.path}:${item.line}` : item.path);
      await checkLayout(page, ".vs-chip-count, .vs-chip-label, .vs-health-section-title, .vs-health-message, .vs-health-path, .vs-count",
        ".vs-health-fix, .vs-health-related-link, .vs-message");
      await page.locator(".vs-health-item", { hasText: item.message }).first().click();
      expect(await page.evaluate(() => window.vsPictures.clicks)).toEqual([`open:${item.path}${item.line !== null ? `:${item.line}` : ""}`]);
    } finally {
      await page.close();
    }
  }, 60_000);


  it(`pane states (${theme}): error with its hint, empty, building, no vectors`, async () => {
    expect(data.startHint).toMatch(/plugin settings/);
    let page = await show("relatedPane", { response: null, basename: "Climbing Gyms", error: data.startError, hint: data.startHint }, theme);
    try {
      await snap(page, `related-pane-error-${theme}`);
      await visibleText(page, ".vs-error .vs-message-error", data.startError.split("\n")[0]!);
      await visibleText(page, ".vs-error .vs-message-hint", data.startHint!);
      expect(await page.locator(".vs-message-empty").count()).toBe(0); // never the empty state above an error
      await checkLayout(page, ".vs-message-error, .vs-message-hint", ".vs-message-error");
      // Errors are not in the empty state's grey.
      const colours = await page.evaluate(() => {
        const probe = document.body.createDiv({ cls: "vs-message vs-message-empty", text: "x" });
        const grey = getComputedStyle(probe).color;
        probe.remove();
        return { grey, error: getComputedStyle(document.querySelector(".vs-message-error")!).color };
      });
      expect(colours.error).not.toBe(colours.grey);
    } finally {
      await page.close();
    }
    page = await show("searchPane", { response: null, query: PANE_QUERY, error: data.startError, hint: data.startHint }, theme);
    try {
      await snap(page, `search-pane-error-${theme}`);
      await visibleText(page, ".vs-error .vs-message-hint", data.startHint!);
      expect(await page.locator(".vs-pane-body").textContent()).not.toContain("Type to search.");
    } finally {
      await page.close();
    }
    const degraded = { ...data.related, index_building: true, vectors_available: false };
    page = await show("relatedPane", { response: degraded, basename: "Climbing Gyms" }, theme);
    try {
      await snap(page, `related-pane-building-${theme}`);
      await visibleText(page, ".vs-message-info", "Links and tags only: the embedding model is unavailable.");
      await visibleText(page, ".vs-message-info", "The index is still being built.");
      await checkLayout(page, ".vs-title", ".vs-message-info");
    } finally {
      await page.close();
    }
    page = await show("relatedPane", { response: { ...data.related, results: [] }, basename: "Climbing Gyms" }, theme);
    try {
      await snap(page, `related-pane-empty-${theme}`);
      await visibleText(page, ".vs-message-empty", "No related notes found.");
      await checkLayout(page, ".vs-pane-header", ".vs-message-empty");
    } finally {
      await page.close();
    }
  }, 60_000);
  }

  for (const theme of ["dark", "light"] as const) {
    it(`agent edits (${theme}): newest first, what, note link, client, time, undo states`, async () => {
      const { edits, refused, existing, now } = data;
      // create, append, replace, properties, move, delete, the plugin's undo; newest first.
      expect(edits.writes_enabled).toBe(true);
      expect(edits.edits.map((e) => e.op)).toEqual(["undo", "delete", "move", "update_properties", "replace_section", "append", "create"]);
      expect(data.events.map((e) => e.edit).sort((a, b) => a - b)).toEqual(edits.edits.map((e) => e.edit).sort((a, b) => a - b));
      const page = await show("editsView", { response: edits, existing, refused, now }, theme);
      try {
        await snap(page, `edits-view-${theme}`);
        const rows = page.locator(".vs-edit-row");
        expect(await rows.count()).toBe(edits.edits.length);
        const exists = (p: string): boolean => existing.includes(p);
        for (const [i, edit] of edits.edits.entries()) {
          const row = rows.nth(i);
          expect(await row.getAttribute("data-edit")).toBe(String(edit.edit));
          expect(await row.locator(".vs-edit-op").textContent()).toBe(opLabel(edit.op));
          expect(await row.locator(".vs-edit-path").textContent()).toBe(noteName(mainPath(edit, exists)!));
          expect(await row.locator(".vs-edit-client").textContent()).toBe(edit.client);
          expect(await row.locator(".vs-edit-time").textContent()).toBe(formatEditTime(edit.at, new Date(now * 1000)));
          expect(await row.locator(".vs-edit-summary").textContent()).toBe(edit.summary);
          expect(await row.isVisible()).toBe(true);
        }
        await visibleText(page, ".vs-edit-client", /claude-code/);
        await visibleText(page, ".vs-edit-client", /Cursor/);
        await visibleText(page, ".vs-edit-time", /^Today \d\d:\d\d$/);
        // The move links to where the note is now, and says how many notes it relinked.
        const move = rows.filter({ has: page.locator(".vs-edit-op", { hasText: /^Moved$/ }) });
        expect(await move.locator("a.vs-edit-path").getAttribute("data-href")).toBe("Hobbies/Training/Hangboard Protocol.md");
        expect(await move.locator("a.vs-edit-path").textContent()).toBe("Hangboard Protocol");
        expect(await move.locator(".vs-more").textContent()).toMatch(/^\+\d+ other notes?$/);
        // A deleted note is no link.
        const deleted = rows.filter({ has: page.locator(".vs-edit-op", { hasText: /^Deleted$/ }) });
        expect(await deleted.locator("a.vs-edit-path").count()).toBe(0);
        await visibleText(page, ".vs-edit-path.is-gone", "Brain Dump");
        // Undone: disabled, says by which edit; refused: disabled, with the sidecar's reason.
        const undone = edits.edits.find((e) => e.undone_by !== null)!;
        const undoneRow = page.locator(`.vs-edit-row[data-edit="${undone.edit}"]`);
        expect(await undoneRow.locator("button.vs-edit-undo").isDisabled()).toBe(true);
        await visibleText(page, ".vs-edit-status", `Undone by edit ${undone.undone_by}.`);
        const [refusedId, reason] = Object.entries(refused)[0]!;
        expect(reason).toMatch(/changed since/);
        const refusedRow = page.locator(`.vs-edit-row[data-edit="${refusedId}"]`);
        expect(await refusedRow.locator("button.vs-edit-undo").isDisabled()).toBe(true);
        await visibleText(page, ".vs-edit-refused", `Cannot undo: ${reason}`);
        await checkLayout(page,
          ".vs-edit-op, a.vs-edit-path, .vs-edit-summary, .vs-edit-time, .vs-edit-client, .vs-more, .vs-edit-status, " +
          ".vs-edit-refused, button.vs-edit-undo:not(:disabled)",
          ".vs-edit-path.is-gone");
        // Undo, the note link, and the keyboard (rows focusable, Enter opens, arrows move).
        const create = edits.edits.find((e) => e.op === "create")!;
        const createRow = page.locator(`.vs-edit-row[data-edit="${create.edit}"]`);
        await createRow.locator("button.vs-edit-undo").click();
        await createRow.locator("a.vs-edit-path").click();
        await rows.first().focus();
        await page.keyboard.press("ArrowDown");
        await page.keyboard.press("Enter");
        const second = edits.edits[1]!;
        expect(await page.evaluate(() => document.activeElement?.getAttribute("data-edit"))).toBe(String(second.edit));
        await undoneRow.locator("button.vs-edit-undo").click({ force: true }); // disabled: no undo
        expect(await page.evaluate(() => window.vsPictures.clicks)).toEqual([
          `undo:${create.edit}`, `open:${mainPath(create, exists)}`, ...(mainPath(second, exists) && exists(mainPath(second, exists)!)
            ? [`open:${mainPath(second, exists)}:key`] : []),
        ]);
      } finally {
        await page.close();
      }
    }, 60_000);

    it(`agent edits (${theme}): empty and error states`, async () => {
      expect(data.editsBefore.edits).toEqual([]);
      let page = await show("editsView", { response: data.editsBefore, existing: [], now: data.now }, theme);
      try {
        await snap(page, `edits-view-empty-${theme}`);
        await visibleText(page, ".vs-message-empty", EDITS_EMPTY);
        await checkLayout(page, ".vs-message", ".vs-message");
      } finally {
        await page.close();
      }
      expect(data.startError).toMatch(/sidecar/i);
      expect(data.startHint).toMatch(/plugin settings/);
      page = await show("editsView", { response: null, error: data.startError, hint: data.startHint, existing: [], now: data.now }, theme);
      try {
        await snap(page, `edits-view-error-${theme}`);
        await visibleText(page, ".vs-message-error", data.startError.split("\n")[0]!);
        await visibleText(page, ".vs-message-hint", data.startHint!);
        await checkLayout(page, ".vs-message-error, .vs-message-hint", ".vs-message-error");
      } finally {
        await page.close();
      }
    }, 60_000);
  }
});

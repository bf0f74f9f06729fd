// @vitest-environment happy-dom
// Picture tests: the plugin's REAL view classes (RelatedView, SearchView, SearchModal, HealthView, EditsView,
// and the first-run SetupModal)
// opened in headless Debian Chromium on a fake Obsidian app (test/fake-app.ts, the only mock), their sidecar
// answering with REAL responses the real sidecar gave on a copy of the demo vault (and its real errors), in
// an Obsidian-like dark and light theme (test/pictures/obsidian-theme.css) plus the plugin's styles.css.
// Every view in each state a user meets: results, empty, error with its fix-it hint, index building, no
// vectors (and loading where a view has one). Screenshots are kept in test-artifacts/ (with the HTML, to
// open in a browser); the test asserts what must be visible, checks contrast (>= 4.5:1 from computed colours)
// and horizontal overflow, and drives the views as a user would (click, keys, menu, hover).
import { build, type Plugin } from "esbuild";
import { randomBytes } from "crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "fs";
import * as path from "path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { RpcError, describeError } from "../src/client";
import { HEALTH_VIEW, RELATED_VIEW, SEARCH_VIEW } from "../src/context";
import { SEARCH_MODAL_SOURCE } from "../src/open";
import type { Band, EditRecord, EditsResponse, HealthPageResponse, HealthResponse, HealthSummaryResponse, RelatedResponse, SearchResponse } from "../src/protocol.gen";
import { headingAt } from "../src/headings";
import { parseQuery } from "../src/query-syntax";
import { Sidecar, type SidecarSnapshot } from "../src/sidecar";
import { statusBarView } from "../src/status-bar";
import { HEALTH_PAGE, reportFileName } from "../src/views/health-view";
import { EDITS_EMPTY, formatEditTime, mainPath, noteName, opLabel } from "../src/views/edits-render";
import { sharedReasons } from "../src/views/related-render";
import { keyLabel } from "../src/views/shared-render";
import { detectToolchain, type Toolchain } from "../src/setup/install";
import { describeToolchain } from "../src/setup/setup-modal";
import type { FakeFailure } from "./fake-app";
import { freePort, mcpTool } from "./mcp-agent";
import type { PictureSetup, Recorded } from "./pictures/page";
import { PLUGIN_DIR, listFiles, startRealSidecar, type RealSidecar } from "./real-sidecar";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const ARTIFACTS = path.join(PLUGIN_DIR, "test-artifacts");
const RELATED_SOURCE = "Hobbies/Bouldering/Climbing Gyms.md";
const MODAL_QUERY = "sourdough starter";
const PANE_QUERY = "restic backup offsite";
/** A note in Arabic, written into the vault copy last, and a search for it: right-to-left text in a left-to-right pane. */
const RTL_NOTE = { path: "Home Lab/النسخ الاحتياطي.md", text: "# النسخ الاحتياطي\n\nكل أسبوع أنسخ مجلد الملاحظات إلى " +
  "قرص خارجي، ثم أستعيد ملفا واحدا للتأكد من أن النسخة تعمل (restic 0.16).\n" };
const RTL_QUERY = "النسخ الاحتياطي على قرص خارجي";
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
  /** The health view's own calls: the summary, and each section's first page. */
  healthSummary: HealthSummaryResponse;
  healthPages: HealthPageResponse[];
  /** edits.list before any agent edited anything, and after the agents' session below. */
  editsBefore: EditsResponse;
  edits: EditsResponse;
  /** What the sidecar said when the plugin tried to undo an edit whose note the user changed since. */
  refused: Record<number, string>;
  /** The same refusal as the client threw it, for the fake sidecar to throw again. */
  refusedFailure: Record<number, FakeFailure>;
  /** agent_edit events the plugin's Sidecar received meanwhile. */
  events: EditRecord[];
  /** Vault paths before and after the session. */
  existingBefore: string[];
  existing: string[];
  /** The status window: the running sidecar's snapshot and output, and the failed one's snapshot. */
  statusReady: SidecarSnapshot;
  statusStderr: string[];
  statusFailed: SidecarSnapshot;
  /** The panes' error state: a real failed start of the sidecar (as thrown, as shown, and its fix-it hint). */
  startFailure: FakeFailure;
  startError: string;
  startHint: string | null;
  /** The related pane's editor buffer (the note on disk plus an unsaved paragraph). */
  buffer: string;
  /** A search for RTL_NOTE once the sidecar has indexed it. */
  rtl: SearchResponse;
  now: number;
}

const AGENTS = { claude: "claude-code/2.0.14", cursor: "Cursor/1.7.2", codex: "codex_cli_rs/0.46.0" };

let rs: RealSidecar | null = null;
let browser: Browser | null = null;
let script = "";
let css = "";
let data: Data;
let mcp: { port: number; token: string } | null = null;

/** The browser side (test/pictures/page.ts + the plugin's views), bundled for the page as vitest resolves it. */
async function bundlePage(): Promise<string> {
  // obsidian-stub and the client import Node's http (requestUrl, events) and timers, and the stub reads
  // process.platform; the page makes no requests, and its timers are the window's.
  const noNode: Plugin = {
    name: "no-node-builtins",
    setup(b) {
      b.onResolve({ filter: /^(node:)?(http|timers|child_process|fs|os|path)$/ }, (args) => ({ path: args.path.replace("node:", ""), namespace: "browser" }));
      b.onLoad({ filter: /^http$/, namespace: "browser" }, () => ({ contents: "export {};", loader: "js" }));
      // The setup modal's install steps (spawn, the file system) never run in the page: its toolchain is given.
      b.onLoad({ filter: /^(child_process|fs)$/, namespace: "browser" }, () => ({
        contents: "const no = () => { throw new Error('not in the page'); };" +
          "export const spawn = no, accessSync = no, statSync = no, readdirSync = () => [], constants = {};",
        loader: "js",
      }));
      b.onLoad({ filter: /^os$/, namespace: "browser" }, () => ({ contents: "export const homedir = () => '/home/you';", loader: "js" }));
      b.onLoad({ filter: /^path$/, namespace: "browser" }, () => ({
        contents: "export const join = (...p) => p.join('/').replace(/\\/+/g, '/');" +
          "export const basename = (p) => p.split(/[\\\\/]/).pop();",
        loader: "js",
      }));
      b.onLoad({ filter: /^timers$/, namespace: "browser" }, () => ({
        contents: "export const setTimeout = (...a) => window.setTimeout(...a); export const clearTimeout = (t) => window.clearTimeout(t);",
        loader: "js",
      }));
    },
  };
  const out = await build({
    entryPoints: [path.join(PLUGIN_DIR, "test", "pictures", "page.ts")],
    bundle: true, write: false, format: "iife", platform: "browser", target: "es2022", plugins: [noNode], logLevel: "silent",
    alias: { obsidian: path.join(PLUGIN_DIR, "test", "obsidian-stub.ts") },
    define: { "process.platform": JSON.stringify(process.platform), "process.env": "{}" },
  });
  return out.outputFiles[0]?.text ?? "";
}

/** An error as the client threw it, for the fake sidecar to throw the same (an RpcError, or it is no test). */
function asFailure(err: unknown): FakeFailure {
  if (!(err instanceof RpcError)) throw new Error(`expected an RpcError, got ${String(err)}`);
  return { kind: err.kind, message: err.message, method: err.method, code: err.code, data: err.data };
}

async function fetchData(sidecar: RealSidecar): Promise<Data> {
  const client = await sidecar.sidecar.client();
  const existingBefore = listFiles(sidecar.vault);
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
  const health = await client.call("health", { markdown: true });
  const healthSummary = await client.call("health.summary", {});
  const healthPages = await Promise.all(healthSummary.sections.filter((s) => s.count > 0)
    .map((s) => client.call("health.page", { section: s.id, limit: HEALTH_PAGE })));
  const session = await agentSession(sidecar);
  return { related, modal, pane, health, healthSummary, healthPages, buffer, existingBefore, ...session, rtl: await rtlSearch(sidecar) };
}

/** RTL_NOTE written as a user would (the watcher indexes it), then searched for until the sidecar finds it. */
async function rtlSearch(sidecar: RealSidecar): Promise<SearchResponse> {
  const client = await sidecar.sidecar.client();
  writeFileSync(path.join(sidecar.vault, RTL_NOTE.path), RTL_NOTE.text);
  for (let attempt = 0; attempt < 200; attempt++) {
    const response = await client.call("search", { query: RTL_QUERY, mode: "hybrid", limit: 3 });
    if (response.results[0]?.path === RTL_NOTE.path) return response;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the sidecar never found ${RTL_NOTE.path} for "${RTL_QUERY}"`);
}

/**
 * Three agents edit the demo vault over MCP (create, append, replace a section, set properties, a move that
 * relinks, a delete); the plugin undoes one edit, and fails to undo another because the user changed that
 * note meanwhile. Everything the edits view shows comes from this session.
 */
async function agentSession(sidecar: RealSidecar): Promise<Omit<Data, "related" | "modal" | "pane" | "health" | "healthSummary" | "healthPages" | "buffer" | "existingBefore" | "rtl">> {
  const client = await sidecar.sidecar.client();
  // The port the sidecar really serves MCP on: the one asked for may have been taken between freePort()
  // and the sidecar's bind (another test's sidecar), and the sidecar then falls back to a free one.
  const { token } = mcp!;
  const port = sidecar.sidecar.snapshot.handshake?.mcp_port ?? mcp!.port;
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
  const refusedFailure: Record<number, FakeFailure> = {};
  try {
    await client.call("edits.undo", { edit: Number(appended["edit"]) });
    throw new Error("undo of a changed note was accepted");
  } catch (err) {
    refused[Number(appended["edit"])] = describeError(err);
    refusedFailure[Number(appended["edit"])] = asFailure(err);
  }
  const edits = await client.call("edits.list");
  // The events arrive on their own connection: wait until the last edit's has come.
  for (let i = 0; i < 100 && !events.some((e) => e.edit === edits.edits[0]?.edit); i++) await new Promise((r) => setTimeout(r, 50));
  sidecar.sidecar.offref(ref);
  await sidecar.sidecar.refreshStatus();
  const statusReady = structuredClone(sidecar.sidecar.snapshot);
  const statusStderr = [...sidecar.sidecar.stderr];
  // The pane's error state, from a real failed start (no such sidecar command).
  const broken = new Sidecar(() => ({ vaultPath: sidecar.vault, command: "/nonexistent/bin/sidecar" }));
  let startError = "";
  let startHint: string | null = null;
  let startFailure: FakeFailure | null = null;
  let statusFailed: SidecarSnapshot | null = null;
  try {
    await broken.client();
  } catch (err) {
    startError = describeError(err);
    startHint = broken.snapshot.errorHint;
    startFailure = asFailure(err);
    statusFailed = structuredClone(broken.snapshot);
  } finally {
    await broken.stop();
  }
  if (!startFailure || !statusFailed) throw new Error("a sidecar that does not exist started");
  return {
    editsBefore, edits, refused, refusedFailure, events, existing: listFiles(sidecar.vault), startFailure, startError, startHint,
    statusReady, statusStderr, statusFailed,
    now: Date.now() / 1000,
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

type Theme = "dark" | "light";
const THEMES = ["dark", "light"] as const;

/** A fresh page with the theme, the plugin's styles and the bundled views, showing one view as `setup` says. */
async function show(setup: PictureSetup, theme: Theme): Promise<Page> {
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
  await page.evaluate((s) => window.vsPictures.open(s), setup);
  await page.evaluate(() => document.fonts.ready);
  if (errors.length) throw new Error(`The page failed: ${errors.join("\n")}`);
  return page;
}

/** Open, check, close: the page is closed whatever the checks find. */
async function withView(setup: PictureSetup, theme: Theme, check: (page: Page) => Promise<void>): Promise<void> {
  const page = await show(setup, theme);
  try {
    await check(page);
  } finally {
    await page.close();
  }
}

const record = (page: Page): Promise<Recorded> => page.evaluate(() => window.vsPictures.record());
const settle = (page: Page): Promise<void> => page.evaluate(() => window.vsPictures.settle());

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
  expect(main.length, `text to check for contrast: ${primary}`).toBeGreaterThan(0);
  for (const c of main) expect(c.ratio, `contrast of ${c.selector} ("${c.text}")`).toBeGreaterThanOrEqual(MIN_CONTRAST);
  const faint = await page.evaluate((s) => window.vsPictures.contrast(s), secondary);
  for (const c of faint) expect(c.ratio, `contrast of ${c.selector} ("${c.text}")`).toBeGreaterThanOrEqual(MIN_CONTRAST_SECONDARY);
}

/** The error state every view shares: the real start error in error colours, its hint, no empty state. */
async function checkError(page: Page): Promise<void> {
  expect(data.startHint).toMatch(/plugin settings/);
  await visibleText(page, ".vs-error .vs-message-error", data.startError.split("\n")[0]!);
  await visibleText(page, ".vs-error .vs-message-hint", data.startHint!);
  expect(await page.locator(".vs-message-empty, .suggestion-empty").count(), "an empty state beside the error").toBe(0);
  await checkLayout(page, ".vs-message-error, .vs-message-hint", ".vs-message-error");
  // Errors are not in the empty state's grey.
  const colours = await page.evaluate(() => {
    const probe = document.body.createDiv({ cls: "vs-message vs-message-empty", text: "x" });
    const grey = getComputedStyle(probe).color;
    probe.remove();
    return { grey, error: getComputedStyle(document.querySelector(".vs-message-error")!).color };
  });
  expect(colours.error).not.toBe(colours.grey);
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
/** What a result row's open leads to: its file, the current tab, its line (0-based in the editor). */
const openedAt = (p: string, startLine: number | null, pane: string | boolean = false): Recorded["opened"][number] =>
  ({ path: p, pane, line: startLine !== null && startLine > 0 ? startLine - 1 : null });

/** The views before the agents' session, on the vault as it was then. */
function before(view: PictureSetup["view"], answers: PictureSetup["answers"], more: Partial<PictureSetup> = {}): PictureSetup {
  return { view, answers, files: data.existingBefore, ...more };
}
const failed = (view: PictureSetup["view"], more: Partial<PictureSetup> = {}): PictureSetup =>
  before(view, {}, { startFailure: data.startFailure, ...more });
const degraded = <T extends object>(r: T): T => ({ ...r, index_building: true, vectors_available: false });
/** The sidecar's words for a search it answered without vectors (sidecar/search.py NO_VECTORS), after the band's. */
const NO_VECTORS = "Semantic search is unavailable (no vectors): these are lexical results only.";
/** A search as the sidecar answers it without vectors: lexical, and the caveat says so (the plugin shows it as sent). */
const degradedSearch = (r: SearchResponse): SearchResponse =>
  ({ ...degraded(r), mode: "lexical", caveat: r.caveat ? `${r.caveat} ${NO_VECTORS}` : NO_VECTORS });

describe("pictures of the plugin's real views with real sidecar data", () => {
  const activeNote = (): PictureSetup["active"] =>
    ({ path: RELATED_SOURCE, text: data.buffer, cursorLine: data.buffer.split("\n").length - 2 });

  for (const theme of THEMES) {
    it(`related pane (${theme}): titles, reasons, bands, linked marks; click, hover, menu`, async () => {
      const response = data.related;
      expect(response.results.length).toBeGreaterThan(3);
      await withView(before("related", { related: { result: response } }, { active: activeNote() }), theme, async (page) => {
        await snap(page, `related-pane-${theme}`);
        // What the view asked: the unsaved buffer and the heading at the cursor.
        const asked = (await record(page)).calls;
        expect(asked.map((c) => c.method)).toEqual(["related"]);
        expect(asked[0]!.params).toMatchObject({ path: RELATED_SOURCE, text: data.buffer, cursor_heading: headingAt(data.buffer, data.buffer.split("\n").length - 2) });
        await visibleText(page, ".view-header", "Related notes");
        await visibleText(page, ".vs-pane-header", "Climbing Gyms");
        for (const note of response.results) await visibleText(page, ".vs-related-row .vs-title", note.title);
        const shared = sharedReasons(response.results);
        for (const label of new Set(response.results.flatMap((n) => n.reasons.map((r) => r.label)).filter((l) => !shared.has(l)))) {
          await visibleText(page, ".vs-badge", new RegExp(`^${escape(label)}$`));
        }
        // Climbing Gyms links to "Bouldering Log", which links back: both badges, and the "Linked" mark.
        await visibleText(page, ".vs-badge", /^links here$/);
        await visibleText(page, ".vs-badge-linked", /^Linked$/);
        for (const band of new Set(response.results.map((n) => n.band))) await visibleText(page, `.vs-band-${band}`, BAND_LABEL[band]);
        for (const label of shared) expect(await page.locator(".vs-badge", { hasText: label }).count(), `shared pill ${label}`).toBe(0);
        // Compact: more than seven rows fit in a 700 px sidebar.
        const heights = await page.locator(".vs-related-row").evaluateAll((rows) => rows.map((r) => r.getBoundingClientRect().height));
        expect(700 / (heights.reduce((a, b) => a + b, 0) / heights.length)).toBeGreaterThan(7);
        expect(await page.locator(".vs-band").first().getAttribute("title")).toMatch(/confidence/i);
        await checkLayout(page, ".vs-title, .vs-excerpt, .vs-badge, .vs-band-high, .vs-band-medium, .vs-pane-header",
          ".vs-folder, .vs-band-low, .vs-band-none, .vs-badge-linked");
        const [first, second] = response.results as [RelatedResponse["results"][number], RelatedResponse["results"][number]];
        const rows = page.locator(".vs-related-row");
        await rows.first().click();
        await rows.nth(1).click({ button: "middle" });
        await rows.first().hover();
        await rows.nth(1).click({ button: "right" });
        const seen = await record(page);
        expect(seen.opened).toEqual([openedAt(first.path, first.start_line), openedAt(second.path, second.start_line, "tab")]);
        expect(seen.triggered).toContainEqual({ name: "hover-link", source: RELATED_VIEW });
        expect(seen.triggered).toContainEqual({ name: "file-menu", source: RELATED_VIEW });
        expect(seen.menu).toEqual(["Open in new tab", "Open to the right", "Open in new window", "Insert link", "Copy link"]);
      });
    }, 60_000);

    it(`related pane (${theme}): error with its hint, building without vectors, empty`, async () => {
      await withView(failed("related", { active: activeNote() }), theme, async (page) => {
        await snap(page, `related-pane-error-${theme}`);
        await checkError(page);
      });
      await withView(before("related", { related: { result: degraded(data.related) } }, { active: activeNote() }), theme, async (page) => {
        await snap(page, `related-pane-building-${theme}`);
        await visibleText(page, ".vs-message-info", "Links and tags only: the embedding model is unavailable.");
        await visibleText(page, ".vs-message-info", "The index is still being built.");
        await checkLayout(page, ".vs-title", ".vs-message-info");
      });
      await withView(before("related", { related: { result: { ...data.related, results: [] } } }, { active: activeNote() }), theme, async (page) => {
        await snap(page, `related-pane-empty-${theme}`);
        await visibleText(page, ".vs-message-empty", "No related notes found.");
        await checkLayout(page, ".vs-pane-header", ".vs-message-empty");
      });
    }, 60_000);

    it(`search window (${theme}): highlighted snippets, bands, modes; Shift+Enter inserts a link`, async () => {
      const response = data.modal;
      const top = response.results[0];
      expect(top?.highlights.length).toBeGreaterThan(0);
      await withView(before("searchModal", { search: { result: response } }, { query: MODAL_QUERY, active: activeNote() }), theme, async (page) => {
        await snap(page, `search-modal-${theme}`);
        expect((await record(page)).calls.map((c) => [c.method, c.params.query, c.params.typed]))
          .toEqual([["search", parseQuery(MODAL_QUERY).query, true]]);
        expect(await page.locator(".prompt-input").inputValue()).toBe(MODAL_QUERY);
        await visibleText(page, ".suggestion-item.is-selected .vs-title", top!.title);
        await visibleText(page, ".suggestion-item.is-selected mark.vs-hit", /sourdough|starter/i);
        expect(await page.locator("mark.vs-hit").count()).toBeGreaterThanOrEqual(response.results.filter((r) => r.highlights.length).length);
        await visibleText(page, ".suggestion-item.is-selected .vs-band", BAND_LABEL[top!.band]);
        await visibleText(page, "button.vs-mode.is-active", "Hybrid");
        await visibleText(page, ".prompt-instructions", "insert link");
        for (const r of response.results) await visibleText(page, ".suggestion-item .vs-title", r.title || r.path);
        await checkLayout(page, ".vs-title, .vs-snippet, .vs-band-high, .vs-band-medium",
          ".vs-heading-path, .vs-meta, mark.vs-hit, button.vs-mode, .vs-band-low, .vs-band-none, .vs-search-help");
        await page.locator(".suggestion-item").first().hover();
        await page.locator(".prompt-input").press("Shift+Enter");
        const seen = await record(page);
        expect(seen.triggered).toContainEqual({ name: "hover-link", source: SEARCH_MODAL_SOURCE });
        const heading = top!.heading.split(" > ").pop()!.trim();
        expect(seen.inserted).toEqual([`[[${noteName(top!.path)}${heading ? `#${heading}` : ""}]]`]);
        expect(await page.locator(".prompt").count(), "the window closes on choosing").toBe(0);
      });
    }, 60_000);

    it(`search window (${theme}): no matches, error with its hint, building without vectors`, async () => {
      const setup = (answers: PictureSetup["answers"], more: Partial<PictureSetup> = {}): PictureSetup =>
        before("searchModal", answers, { query: MODAL_QUERY, ...more });
      await withView(setup({ search: { result: { ...data.modal, results: [] } } }), theme, async (page) => {
        await snap(page, `search-modal-empty-${theme}`);
        await visibleText(page, ".suggestion-empty", "No matching notes.");
        await checkLayout(page, ".suggestion-empty", ".vs-search-help");
      });
      await withView(setup({}, { startFailure: data.startFailure }), theme, async (page) => {
        await snap(page, `search-modal-error-${theme}`);
        await checkError(page);
      });
      await withView(setup({ search: { result: degradedSearch(data.modal) } }), theme, async (page) => {
        await snap(page, `search-modal-building-${theme}`);
        await visibleText(page, ".vs-search-info", "The index is still being built; results may be incomplete.");
        await visibleText(page, ".vs-search-info", NO_VECTORS);
        await checkLayout(page, ".vs-title, .vs-search-info", ".vs-meta");
      });
    }, 60_000);

    it(`search pane (${theme}): result header, highlights, bands; click and Mod+Enter`, async () => {
      const response = data.pane;
      expect(response.results.length).toBeGreaterThan(1);
      await withView(before("searchPane", { search: { result: response } }, { query: PANE_QUERY }), theme, async (page) => {
        await snap(page, `search-pane-${theme}`);
        await visibleText(page, ".view-header", "Sidecar search");
        expect(await page.locator(".vs-search-input").inputValue()).toBe(PANE_QUERY);
        await visibleText(page, ".vs-results-header", new RegExp(`^${response.results.length} results? · Hybrid · \\d+ ms`));
        await visibleText(page, ".vs-search-row .vs-title", response.results[0]!.title);
        await visibleText(page, "mark.vs-hit", /restic|backup|offsite/i);
        await visibleText(page, ".vs-results-header .vs-band", BAND_LABEL[response.band]);
        await checkLayout(page, ".vs-title, .vs-snippet, .vs-band-high, .vs-band-medium",
          ".vs-heading-path, .vs-meta, mark.vs-hit, .vs-results-header, .vs-band-low, .vs-band-none, .vs-search-help");
        const [first, second] = response.results as [SearchResponse["results"][number], SearchResponse["results"][number]];
        await page.locator(".vs-search-row").first().click();
        await page.locator(".vs-search-row").first().focus();
        await page.keyboard.press("ArrowDown");
        await page.keyboard.press(process.platform === "darwin" ? "Meta+Enter" : "Control+Enter");
        await page.locator(".vs-search-row").first().hover();
        const seen = await record(page);
        expect(seen.opened).toEqual([openedAt(first.path, first.start_line), openedAt(second.path, second.start_line, "tab")]);
        expect(seen.triggered).toContainEqual({ name: "hover-link", source: SEARCH_VIEW });
      });
    }, 60_000);

    it(`search pane (${theme}): an Arabic note and query read right to left`, async () => {
      await withView(before("searchPane", { search: { result: data.rtl } }, { query: RTL_QUERY }), theme, async (page) => {
        await snap(page, `search-pane-rtl-${theme}`);
        await visibleText(page, ".vs-search-row .vs-title", "النسخ الاحتياطي");
        for (const selector of [".vs-search-input", ".vs-search-row .vs-title", ".vs-search-row .vs-snippet"]) {
          expect(await page.locator(selector).first().evaluate((el) => el.matches(":dir(rtl)")), `${selector} reads right to left`).toBe(true);
        }
        for (const selector of [".vs-lines", ".vs-path-name"]) { // the app's own words, and a path ("name.md")
          expect(await page.locator(selector).first().evaluate((el) => el.matches(":dir(ltr)")), `${selector} stays left to right`).toBe(true);
        }
        // Right to left, the snippet's first line starts at the row's right edge (its padding aside), not its left.
        const gap = await page.locator(".vs-search-row .vs-snippet").first().evaluate((el) => {
          const range = document.createRange();
          range.selectNodeContents(el);
          const line = range.getClientRects()[0]!;
          return el.getBoundingClientRect().right - parseFloat(getComputedStyle(el).paddingRight) - line.right;
        });
        expect(Math.abs(gap)).toBeLessThan(2);
        await checkLayout(page, ".vs-title, .vs-snippet", ".vs-heading-path, .vs-meta, mark.vs-hit, .vs-results-header, .vs-search-help");
      });
    }, 60_000);

    it(`search pane (${theme}): nothing typed, no matches, error with its hint, building without vectors`, async () => {
      await withView(before("searchPane", {}), theme, async (page) => {
        await snap(page, `search-pane-empty-${theme}`);
        await visibleText(page, ".vs-message-empty", "Type to search.");
        expect((await record(page)).calls).toEqual([]);
        await checkLayout(page, ".vs-message-empty", ".vs-search-help");
      });
      await withView(before("searchPane", { search: { result: { ...data.pane, results: [] } } }, { query: PANE_QUERY }), theme, async (page) => {
        await snap(page, `search-pane-none-${theme}`);
        await visibleText(page, ".vs-message-empty", "No matching notes.");
        await checkLayout(page, ".vs-message-empty, .vs-results-header", ".vs-search-help");
      });
      await withView(failed("searchPane", { query: PANE_QUERY }), theme, async (page) => {
        await snap(page, `search-pane-error-${theme}`);
        await checkError(page);
        expect(await page.locator(".vs-pane-body").textContent()).not.toContain("Type to search.");
      });
      await withView(before("searchPane", { search: { result: degradedSearch(data.pane) } }, { query: PANE_QUERY }), theme, async (page) => {
        await snap(page, `search-pane-building-${theme}`);
        await visibleText(page, ".vs-message-info", "The index is still being built; results may be incomplete.");
        await visibleText(page, ".vs-message-info", NO_VECTORS);
        await checkLayout(page, ".vs-title, .vs-message-info", ".vs-meta");
      });
    }, 60_000);

    it(`health view (${theme}): summary counts, open sections, items; Save report as note`, async () => {
      const report = data.health;
      expect(report.markdown).toMatch(/^# Vault health$/m);
      const pages = data.healthPages.map((p) => ({ when: { section: p.id }, result: p }));
      const setup = before("health", { health: { result: report }, "health.summary": { result: data.healthSummary }, "health.page": pages },
        { settings: { reportsFolder: "Reports/Health" } });
      await withView(setup, theme, async (page) => {
        await snap(page, `health-view-${theme}`);
        const titles = new Map(report.sections.map((sec) => [sec.id, sec.title]));
        for (const [key, value] of Object.entries(report.summary)) {
          const label = escape(titles.get(key) ?? keyLabel(key));
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
        await page.locator(".vs-health-item", { hasText: item.message }).first().hover();
        // The sidecar's own Markdown, saved into the report folder under the report's local time.
        await page.getByRole("button", { name: "Save report as note" }).click();
        await settle(page);
        const seen = await record(page);
        const name = `Reports/Health/${reportFileName(report.generated_at)}.md`;
        expect(seen.opened).toEqual([openedAt(item.path, item.line), { path: name, pane: "tab", line: null }]);
        expect(seen.created).toEqual({ [name]: report.markdown });
        expect(seen.triggered).toContainEqual({ name: "hover-link", source: HEALTH_VIEW });
      });
    }, 60_000);

    it(`health view (${theme}): checking, error with its hint`, async () => {
      await withView(before("health", {}, { hold: true }), theme, async (page) => {
        await snap(page, `health-view-checking-${theme}`);
        await visibleText(page, ".vs-message-empty", "Checking the vault…");
        expect(await page.getByRole("button", { name: "Save report as note" }).isDisabled()).toBe(true);
        await checkLayout(page, ".vs-message-empty, button:not(.mod-cta)", ".vs-message-empty, button.mod-cta");
      });
      await withView(failed("health"), theme, async (page) => {
        await snap(page, `health-view-error-${theme}`);
        await checkError(page);
        expect(await page.getByRole("button", { name: "Save report as note" }).isDisabled()).toBe(true);
      });
    }, 60_000);

    it(`agent edits (${theme}): newest first, what, note link, client, time, undo states`, async () => {
      const { edits, refused, refusedFailure, existing, now } = data;
      // create, append, replace, properties, move, delete, the plugin's undo; newest first.
      expect(edits.writes_enabled).toBe(true);
      expect(edits.edits.map((e) => e.op)).toEqual(["undo", "delete", "move", "update_properties", "replace_section", "append", "create"]);
      expect(data.events.map((e) => e.edit).sort((a, b) => a - b)).toEqual(edits.edits.map((e) => e.edit).sort((a, b) => a - b));
      const [refusedId, reason] = Object.entries(refused)[0]!;
      expect(reason).toMatch(/changed since/);
      const create = edits.edits.find((e) => e.op === "create")!;
      const answers: PictureSetup["answers"] = {
        "edits.list": { result: edits },
        "edits.undo": [{ when: { edit: Number(refusedId) }, error: refusedFailure[Number(refusedId)]! },
          { result: { edit: 999, summary: `undid edit ${create.edit}`, paths: create.paths } }],
      };
      await withView({ view: "edits", answers, files: existing }, theme, async (page) => {
        const rows = page.locator(".vs-edit-row");
        // The user clicks Undo on the append whose note they changed: the sidecar refuses, the row says why.
        await page.locator(`.vs-edit-row[data-edit="${refusedId}"] button.vs-edit-undo`).click();
        await settle(page);
        await snap(page, `edits-view-${theme}`);
        expect(await rows.count()).toBe(edits.edits.length);
        const exists = (p: string): boolean => existing.includes(p);
        const today = new Date(now * 1000);
        for (const [i, edit] of edits.edits.entries()) {
          const row = rows.nth(i);
          expect(await row.getAttribute("data-edit")).toBe(String(edit.edit));
          expect(await row.locator(".vs-edit-op").textContent()).toBe(opLabel(edit.op));
          expect(await row.locator(".vs-edit-path").textContent()).toBe(noteName(mainPath(edit, exists)!));
          expect(await row.locator(".vs-edit-client").textContent()).toBe(edit.client);
          expect(await row.locator(".vs-edit-time").textContent()).toBe(formatEditTime(edit.at, today));
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
        const refusedRow = page.locator(`.vs-edit-row[data-edit="${refusedId}"]`);
        expect(await refusedRow.locator("button.vs-edit-undo").isDisabled()).toBe(true);
        await visibleText(page, ".vs-edit-refused", `Cannot undo: ${reason}`);
        await checkLayout(page,
          ".vs-edit-op, a.vs-edit-path, .vs-edit-summary, .vs-edit-time, .vs-edit-client, .vs-more, .vs-edit-status, " +
          ".vs-edit-refused, button.vs-edit-undo:not(:disabled)",
          ".vs-edit-path.is-gone");
        // Undo, the note link, and the keyboard (rows focusable, Enter opens, arrows move).
        const createRow = page.locator(`.vs-edit-row[data-edit="${create.edit}"]`);
        await createRow.locator("button.vs-edit-undo").click();
        await settle(page);
        await createRow.locator("a.vs-edit-path").click();
        await rows.first().focus();
        await page.keyboard.press("ArrowDown");
        await page.keyboard.press("Enter");
        const second = edits.edits[1]!;
        expect(await page.evaluate(() => document.activeElement?.getAttribute("data-edit"))).toBe(String(second.edit));
        await undoneRow.locator("button.vs-edit-undo").click({ force: true }); // disabled: no undo
        const seen = await record(page);
        expect(seen.calls.filter((c) => c.method === "edits.undo").map((c) => c.params.edit)).toEqual([Number(refusedId), create.edit]);
        const secondPath = mainPath(second, exists);
        expect(seen.opened).toEqual([openedAt(mainPath(create, exists)!, null),
          ...(secondPath && exists(secondPath) ? [openedAt(secondPath, null)] : [])]);
      });
    }, 60_000);

    it(`setup (${theme}): this machine's Python and the plan; no usable Python, and what to install`, async () => {
      const found = await detectToolchain(); // the real detection, in Node; the page is given what it found
      expect(found.python).not.toBeNull();
      const reason = "The sidecar is not installed.";
      await withView({ view: "setup", answers: {}, files: [], toolchain: found, reason }, theme, async (page) => {
        await visibleText(page, ".modal-title", "Set up the Vault Sidecar");
        await visibleText(page, ".vs-setup-found", describeToolchain(found));
        expect(await page.locator(".vs-setup-plan li").count()).toBe(3);
        await visibleText(page, ".vs-setup-plan li", /^Create a private environment in \/home\/you\/.+vault-sidecar/);
        await visibleText(page, ".vs-setup-plan li", /^Install the package "vault-sidecar" from your package index/);
        for (const name of ["Choose a wheel…", "Install"]) expect(await page.getByRole("button", { name }).isVisible()).toBe(true);
        await snap(page, `setup-modal-${theme}`);
        // The Install button is the theme's call-to-action pair (text-on-accent on interactive-accent): secondary.
        await checkLayout(page, ".modal-title, .modal-content p, .vs-setup-plan li, button:not(.mod-cta)",
          ".setting-item-description, button.mod-cta");
      });
      // macOS's own /usr/bin/python3 is 3.9: too old, and named as such, with what to install instead.
      const none: Toolchain = { python: null, uv: null,
        tooOld: [{ argv: ["/usr/bin/python3"], executable: "/usr/bin/python3", version: "3.9.6" }] };
      await withView({ view: "setup", answers: {}, files: [], toolchain: none, reason }, theme, async (page) => {
        await visibleText(page, ".vs-setup-found", "No Python 3.11 or newer was found; too old: 3.9.6 (/usr/bin/python3).");
        await visibleText(page, ".modal-content p", /^Install Python 3\.11 or newer \(python\.org; macOS: brew install python@3\.12; Linux/);
        await visibleText(page, ".modal-content p code", "brew install python@3.12"); // a command, set as one
        expect(await page.getByRole("button", { name: "Look again" }).isVisible()).toBe(true);
        expect(await page.getByRole("button", { name: "Install" }).count()).toBe(0);
        await snap(page, `setup-modal-no-python-${theme}`);
        await checkLayout(page, ".modal-title, .modal-content p, button", ".modal-content p");
      });
    }, 60_000);

    it(`status (${theme}): the details of the running sidecar; one that cannot start`, async () => {
      const ready = data.statusReady;
      expect(ready.phase).toBe("running");
      const buttons = ["Reindex", "Restart sidecar", "Set up / reinstall"];
      await withView({ view: "status", answers: {}, files: [], sidecarSnapshot: ready, stderr: data.statusStderr }, theme, async (page) => {
        await visibleText(page, ".modal-title", "Vault Sidecar");
        await visibleText(page, ".vs-status-headline", statusBarView(ready).tooltip);
        await visibleText(page, ".vs-status-table td", `${ready.status!.notes} notes, ${ready.status!.chunks} chunks`);
        await visibleText(page, ".vs-status-table td", /^minilm-plus-use-m3 \(512 dimensions\)$/);
        for (const name of buttons) expect(await page.getByRole("button", { name }).isVisible()).toBe(true);
        await snap(page, `status-modal-${theme}`);
        await checkLayout(page, ".modal-title, .vs-status-headline, .vs-status-table th, .vs-status-table td, button",
          ".vs-status-subhead, .vs-status-stderr");
      });
      const failedSnap = data.statusFailed;
      expect(failedSnap.phase).toBe("failed");
      await withView({ view: "status", answers: {}, files: [], sidecarSnapshot: failedSnap, stderr: [] }, theme, async (page) => {
        await visibleText(page, ".vs-status-headline", statusBarView(failedSnap).tooltip);
        const [first, ...rest] = failedSnap.error!.split("\n");
        await visibleText(page, ".vs-status-headline", first!); // said once, as the headline; the block has the rest
        await visibleText(page, ".vs-status-error", rest.join("\n").trim());
        expect(await page.locator(".vs-status-error").textContent()).not.toContain(first!);
        expect(await page.locator(".vs-status-table").count()).toBe(0);
        for (const name of buttons) expect(await page.getByRole("button", { name }).isVisible()).toBe(true);
        await snap(page, `status-modal-failed-${theme}`);
        await checkLayout(page, ".modal-title, .vs-status-headline, .vs-status-error, button", ".vs-status-error");
      });
    }, 60_000);

    it(`agent edits (${theme}): empty and error states`, async () => {
      expect(data.editsBefore.edits).toEqual([]);
      await withView({ view: "edits", answers: { "edits.list": { result: data.editsBefore } }, files: data.existingBefore }, theme, async (page) => {
        await snap(page, `edits-view-empty-${theme}`);
        await visibleText(page, ".vs-message-empty", EDITS_EMPTY);
        await checkLayout(page, ".vs-message", ".vs-message");
      });
      expect(data.startError).toMatch(/sidecar/i);
      await withView(failed("edits"), theme, async (page) => {
        await snap(page, `edits-view-error-${theme}`);
        await checkError(page);
      });
    }, 60_000);
  }
});

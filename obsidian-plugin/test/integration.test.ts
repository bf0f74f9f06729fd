// @vitest-environment happy-dom
// The plugin against the REAL sidecar: `python -m sidecar serve` on a temp copy of examples/demo-vault
// (index in another temp folder), started and watched by the plugin's own Sidecar (process manager,
// JSON-RPC client, events). Covers: ready via status events, search, related for an unsaved buffer,
// health, progress/index_changed after a note is written, restart after SIGKILL, and a clean stop.
// No fixed sleeps: everything waits on events, promises or polling with a deadline.
import { mkdirSync, readFileSync, writeFileSync } from "fs";
import * as path from "path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { SidecarClient } from "../src/client";
import { headingAt } from "../src/headings";
import type { Band, IndexChangedEvent, Progress, RelatedResponse, SearchResponse } from "../src/protocol.gen";
import { isSearchable, parseQuery } from "../src/query-syntax";
import type { SidecarPhase } from "../src/sidecar";
import { statusBarView } from "../src/status-bar";
import { highlightSegments } from "../src/views/search-render";
import { DEMO_VAULT, alive, eventually, listFiles, report, sidecarPids, startRealSidecar, until, type RealSidecar } from "./real-sidecar";

const BANDS: Band[] = ["high", "medium", "low", "none"];
const SOURCE = "Hobbies/Bouldering/Climbing Gyms.md";
const BAKING = [
  "",
  "## Weekend baking",
  "",
  "Fed the sourdough starter on Friday night. The levain peaked by morning, so the country loaf went to",
  "75 % hydration with a long cold proof in the fridge, then shaping, scoring and the dutch oven.",
  "",
].join("\n");

let rs: RealSidecar;

beforeAll(async () => {
  rs = await startRealSidecar("integration");
}, 240_000);

afterAll(async () => {
  await rs?.dispose();
}, 60_000);

function codePoints(s: string): number {
  return Array.from(s).length;
}

function checkSearchShape(response: SearchResponse, vault: string, building = false): void {
  expect(typeof response.took_ms).toBe("number");
  expect(response.vectors_available).toBe(true);
  if (!building) expect(response.index_building).toBe(false);
  expect(BANDS).toContain(response.band);
  for (const r of response.results) {
    expect(r.path).toMatch(/\.md$/);
    expect(readFileSync(path.join(vault, r.path), "utf8").length).toBeGreaterThan(0);
    expect(typeof r.title).toBe("string");
    expect(Array.isArray(r.heading_path)).toBe(true);
    expect(BANDS).toContain(r.band);
    expect(r.start_line).toBeGreaterThanOrEqual(1);
    expect(r.end_line).toBeGreaterThanOrEqual(r.start_line);
    expect(r.snippet.length).toBeGreaterThan(0);
    const n = codePoints(r.snippet);
    for (const [s, e] of r.highlights) {
      expect(Number.isInteger(s) && Number.isInteger(e)).toBe(true);
      expect(s).toBeGreaterThanOrEqual(0);
      expect(e).toBeGreaterThan(s);
      expect(e).toBeLessThanOrEqual(n);
    }
    expect(Array.isArray(r.other_sections)).toBe(true);
  }
}

function checkRelatedShape(response: RelatedResponse, vault: string): void {
  expect(typeof response.took_ms).toBe("number");
  expect(response.vectors_available).toBe(true);
  let previous = Infinity;
  for (const n of response.results) {
    expect(n.path).not.toBe(response.source_path);
    expect(readFileSync(path.join(vault, n.path), "utf8")).toBeDefined();
    expect(n.folder).toBe(path.posix.dirname(n.path) === "." ? "" : path.posix.dirname(n.path));
    expect(BANDS).toContain(n.band);
    // A note found by meaning alone whose text does not stand out has no reason, and is `low`.
    if (n.reasons.length === 0) expect(n.band).toBe("low");
    for (const reason of n.reasons) expect(reason.label.length).toBeGreaterThan(0);
    expect(n.already_linked).toBe(n.reasons.some((r) => r.kind === "linked_from_here"));
    expect(n.score).toBeLessThanOrEqual(previous);
    previous = n.score;
  }
}

describe("the plugin against the real sidecar", () => {
  it("becomes ready through status events, with the index outside the vault", async () => {
    const snap = rs.sidecar.snapshot;
    expect(snap.phase).toBe("running");
    expect(snap.eventsConnected).toBe(true);
    expect(snap.status?.vault).toBe(rs.vault);
    expect(snap.status?.index_dir).toBe(rs.index);
    expect(path.relative(rs.vault, rs.index).startsWith("..")).toBe(true);
    expect(snap.status?.notes).toBeGreaterThan(50);
    expect(snap.status?.chunks_without_vectors).toBe(0);
    expect(statusBarView(snap).text).toBe(`Sidecar: ready (${snap.status?.notes ?? "?"} notes)`);
    // The sidecar never writes into the vault.
    expect(listFiles(rs.vault)).toEqual(listFiles(DEMO_VAULT));
    report(`real sidecar: handshake after ${rs.startedMs} ms, first index complete after ${rs.readyMs} ms`);
  });

  it("searches: result shape, highlights, bands, filters from the query syntax", async () => {
    const client = await rs.sidecar.client();
    const parsed = parseQuery("sourdough starter levain");
    expect(isSearchable(parsed)).toBe(true);
    const response = await client.call("search", { query: parsed.query, filters: parsed.filters, mode: "hybrid", limit: 8 });
    checkSearchShape(response, rs.vault);
    expect(response.mode).toBe("hybrid");
    expect(response.results.length).toBeGreaterThan(0);
    const top = response.results[0]!;
    expect(top.path).toBe("Cooking/Sourdough Bread.md");
    expect(top.band).not.toBe("none");
    const hits = highlightSegments(top.snippet, top.highlights).filter((s) => s.hit).map((s) => s.text.toLowerCase());
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.some((h) => /sourdough|starter|levain/.test(h))).toBe(true);

    // Folder filter and exclusion, as the search window sends them.
    const filtered = parseQuery("backup restic path:\"Home Lab\" -proxmox");
    const inFolder = await client.call("search", { query: filtered.query, filters: filtered.filters, limit: 10 });
    checkSearchShape(inFolder, rs.vault);
    expect(inFolder.results.length).toBeGreaterThan(0);
    for (const r of inFolder.results) {
      expect(r.path.startsWith("Home Lab/")).toBe(true);
      expect(readFileSync(path.join(rs.vault, r.path), "utf8").toLowerCase()).not.toContain("proxmox");
    }

    for (const mode of ["lexical", "semantic"] as const) {
      const other = await client.call("search", { query: "sourdough bread", mode, limit: 5 });
      checkSearchShape(other, rs.vault);
      expect(other.mode).toBe(mode);
      expect(other.results.map((r) => r.path)).toContain("Cooking/Sourdough Bread.md");
    }
  }, 60_000);

  it("finds related notes for an edited, unsaved buffer", async () => {
    const client = await rs.sidecar.client();
    const onDisk = readFileSync(path.join(rs.vault, SOURCE), "utf8");
    const saved = await client.call("related", { path: SOURCE, limit: 10 });
    checkRelatedShape(saved, rs.vault);
    expect(saved.source_path).toBe(SOURCE);
    expect(saved.results.some((n) => n.reasons.some((r) => r.label === "links here"))).toBe(true);
    expect(saved.results.map((n) => n.path)).not.toContain("Cooking/Sourdough Bread.md");

    // What the related pane sends while you type: the unsaved text and the heading at the cursor, joined
    // with " > " as the protocol says. (The sidecar compares it with the LAST heading of each section only,
    // so a nested cursor heading does not weigh more yet; the assertions below hold either way.)
    const buffer = onDisk.trimEnd() + "\n" + BAKING;
    const cursorLine = buffer.split("\n").length - 2;
    const heading = headingAt(buffer, cursorLine);
    expect(heading).toBe("Climbing Gyms > Weekend baking");
    const edited = await client.call("related", { path: SOURCE, text: buffer, cursor_heading: heading, limit: 10 });
    checkRelatedShape(edited, rs.vault);
    expect(edited.source_path).toBe(SOURCE);
    const bread = edited.results.find((n) => n.path === "Cooking/Sourdough Bread.md");
    expect(bread, `Sourdough Bread should follow the unsaved paragraph; got ${edited.results.map((n) => n.path).join(", ")}`).toBeDefined();
    // The reason names a section that exists only in the buffer.
    expect(bread?.reasons.some((r) => r.kind === "similar_section" && r.label.includes("Weekend baking"))).toBe(true);
    // Links of the saved note still count.
    expect(edited.results.some((n) => n.reasons.some((r) => r.kind === "links_here"))).toBe(true);
    // Nothing was written to disk.
    expect(readFileSync(path.join(rs.vault, SOURCE), "utf8")).toBe(onDisk);

    // A note that exists only in the editor (no path yet): its text alone.
    const unsavedOnly = await client.call("related", { text: `# Baking plans\n${BAKING}`, limit: 5 });
    checkRelatedShape(unsavedOnly, rs.vault);
    expect(unsavedOnly.source_path).toBeNull();
    expect(unsavedOnly.results.slice(0, 3).map((n) => n.path)).toContain("Cooking/Sourdough Bread.md");
  }, 60_000);

  it("reports vault health with counts", async () => {
    const client = await rs.sidecar.client();
    const report = await client.call("health");
    expect(report.summary.notes).toBe(rs.sidecar.snapshot.status?.notes);
    const problems = Object.entries(report.summary).filter(([k, v]) => k !== "notes" && v > 0);
    expect(problems.length).toBeGreaterThan(3);
    for (const id of ["orphans", "unresolved_links", "broken_anchors", "near_duplicates"]) {
      expect(report.summary[id], id).toBeGreaterThan(0);
    }
    expect(report.sections.length).toBeGreaterThan(0);
    for (const section of report.sections) {
      expect(section.items.length).toBeLessThanOrEqual(section.count);
      for (const item of section.items) {
        expect(readFileSync(path.join(rs.vault, item.path), "utf8")).toBeDefined();
        if (item.line !== null) expect(item.line).toBeGreaterThanOrEqual(1);
      }
    }
  }, 60_000);

  it("sends index_changed after a new note is written into the vault, and progress while it scans", async () => {
    const client = await rs.sidecar.client();
    const notesBefore = rs.sidecar.snapshot.status?.notes ?? 0;
    const progress: Progress[] = [];
    const raw: IndexChangedEvent[] = [];
    let statuses = 0;
    const subscription = client.subscribe({
      status: () => statuses++, progress: (p) => progress.push(p), index_changed: (e) => raw.push(e),
    });
    const forwarded: IndexChangedEvent[] = [];
    const ref = rs.sidecar.on("index-changed", (e) => forwarded.push(e as IndexChangedEvent));
    try {
      // The status event arrives once the sidecar has subscribed this stream: nothing is missed after it.
      await eventually(() => (statuses > 0 ? true : undefined), 15_000, "the first status event");
      const rel = "Cooking/Kombucha.md";
      mkdirSync(path.dirname(path.join(rs.vault, rel)), { recursive: true });
      writeFileSync(path.join(rs.vault, rel),
        "---\ntags: [fermentation]\n---\n# Kombucha\n\nSecond fermentation with ginger: the scoby hotel lives next to the [[Sourdough Bread]] starter.\n");
      const event = await eventually(() => forwarded.find((e) => e.paths.includes(rel)), 90_000,
        "index_changed (forwarded by the plugin's Sidecar) for the new note");
      expect(event.notes).toBe(notesBefore + 1);
      expect(raw.some((e) => e.paths.includes(rel))).toBe(true);
      // A note the watcher names is indexed on its own, too fast for progress; a scan reports it.
      await client.call("reindex", {});
      await eventually(() => (progress.some((p) => p.phase === "done") ? true : undefined), 60_000, "a scan's progress");
      for (const p of progress) expect(p.done).toBeLessThanOrEqual(Math.max(p.total, p.done));
      // The plugin refreshes its status after index changes.
      await until(rs.sidecar, (s) => s.status?.notes === notesBefore + 1, 30_000, "the refreshed status");
      const found = await client.call("search", { query: "kombucha scoby ginger", limit: 5 });
      expect(found.results.map((r) => r.path)).toContain(rel);
    } finally {
      subscription.close();
      rs.sidecar.offref(ref);
    }
  }, 150_000);

  it("restarts the sidecar after it is killed, and the client reconnects", async () => {
    const before = await rs.sidecar.client();
    const pids = sidecarPids(rs.vault);
    expect(pids).toHaveLength(1);
    const killed = pids[0]!;
    const phases: SidecarPhase[] = [];
    const ref = rs.sidecar.on("state", (s) => {
      const phase = (s as { phase: SidecarPhase }).phase;
      if (phases[phases.length - 1] !== phase) phases.push(phase);
    });
    try {
      process.kill(killed, "SIGKILL");
      await until(rs.sidecar, (s) => s.phase === "restarting", 30_000, "the process manager to notice the crash");
      expect(rs.sidecar.snapshot.error).toMatch(/SIGKILL/);
      await until(rs.sidecar, (s) => s.phase === "running" && s.eventsConnected, 120_000, "the restarted sidecar");
    } finally {
      rs.sidecar.offref(ref);
    }
    expect(phases).toEqual(expect.arrayContaining(["restarting", "starting", "running"]));
    expect(alive(killed)).toBe(false);
    const after: SidecarClient = await rs.sidecar.client();
    expect(after).not.toBe(before);
    const now = sidecarPids(rs.vault);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(killed);
    // The index survived the kill: the new process only checks it for changes, then search answers again.
    // (Asked directly: the snapshot's status can stay at "building" when that check changes nothing.)
    const status = await eventually(async () => {
      const st = await after.call("status");
      return st.complete && !st.building ? st : undefined;
    }, 60_000, "the restarted sidecar's index check");
    expect(status.notes).toBeGreaterThan(50);
    const response = await after.call("search", { query: "sourdough starter", limit: 3 });
    checkSearchShape(response, rs.vault);
    // The index answers as before the kill (the ranking itself is the evaluation's business: with the
    // section bonus off, the Kombucha note written above, "next to the [[Sourdough Bread]] starter", can come first).
    expect(response.results.map((r) => r.path)).toContain("Cooking/Sourdough Bread.md");
  }, 180_000);

  it("stops cleanly: no sidecar process is left", async () => {
    const pids = sidecarPids(rs.vault);
    expect(pids).toHaveLength(1);
    const t0 = Date.now();
    await rs.sidecar.stop();
    const took = Date.now() - t0;
    expect(rs.sidecar.snapshot.phase).toBe("stopped");
    await eventually(() => (pids.every((pid) => !alive(pid)) ? true : undefined), 15_000, "the sidecar process to exit");
    expect(sidecarPids(rs.vault)).toEqual([]);
    report(`real sidecar: stop() took ${took} ms`);
  }, 120_000);
});

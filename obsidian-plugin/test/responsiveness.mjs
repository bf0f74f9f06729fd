// Responsiveness of the related pane against a real, large vault (not part of `npm test`).
//
//   node test/responsiveness.mjs [--vault PATH] [--index DIR] [--python PYTHON] [--calls 50]
//
// Default vault: ../shared/eval-vaults/obsidian-hub/vault (from the repository root); when it does not
// exist the script says so and exits 0. The sidecar is started by the plugin's own process manager
// (src/sidecar-process.ts) and called through the plugin's own client (src/client.ts), both bundled here
// with esbuild (the `obsidian` module replaced by test/obsidian-stub.ts, as in the tests). The index goes to
// --index or a temp folder (the first index of obsidian-hub takes a minute or two).
//
// Measures:
//   1. `related` round trips for edited buffers (50 different notes' text of a few thousand characters,
//      each with a new paragraph, plus the heading at the cursor): p50 / p95 / max. Target: the related
//      pane refreshes within 100 ms after its debounce, so p95 < 100 ms.
//   2. the same calls while `reindex {full: true}` rebuilds the index: they must keep answering.
// Exit code 1 when a call fails or the target is missed.

import { build } from "esbuild";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import process from "node:process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const PLUGIN_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = path.resolve(PLUGIN_DIR, "..");
const TARGET_MS = 100;

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function say(line = "") {
  process.stdout.write(`${line}\n`);
}

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function figures(ms) {
  const sorted = [...ms].sort((a, b) => a - b);
  const f = (x) => `${x.toFixed(1)} ms`;
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted[sorted.length - 1] ?? NaN,
    text: `n=${sorted.length}  p50 ${f(percentile(sorted, 50))}  p95 ${f(percentile(sorted, 95))}  max ${f(sorted[sorted.length - 1] ?? NaN)}` };
}

/** The plugin's process manager, client and heading helper, bundled for Node. */
async function loadPlugin(dir) {
  const out = path.join(dir, "plugin.cjs");
  await build({
    stdin: {
      contents: [
        'export { SidecarProcess } from "./src/sidecar-process";',
        'export { SidecarClient } from "./src/client";',
        'export { headingAt } from "./src/headings";',
      ].join("\n"),
      resolveDir: PLUGIN_DIR, loader: "ts", sourcefile: "responsiveness-entry.ts",
    },
    bundle: true, platform: "node", format: "cjs", target: "node20", outfile: out, logLevel: "silent",
    alias: { obsidian: path.join(PLUGIN_DIR, "test", "obsidian-stub.ts") },
  });
  return createRequire(import.meta.url)(out);
}

/** Notes of at least 2,000 characters, cut to 2,000-5,000, each with a new paragraph under a new heading. */
function buffers(vault, count) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith(".md") && statSync(full).size >= 2000) found.push(full);
    }
  };
  walk(vault);
  found.sort();
  const step = Math.max(1, Math.floor(found.length / count));
  const picked = found.filter((_, i) => i % step === 0).slice(0, count);
  return picked.map((file, i) => {
    const text = readFileSync(file, "utf8");
    const cut = text.slice(0, 2000 + ((i * 611) % 3000));
    const edited = `${cut}\n\n## Notes from today\n\nTrying a plugin that keeps a local index of the vault and shows ` +
      `related notes while I write; number ${i}: it should follow this paragraph, not only the saved file.\n`;
    return { path: path.relative(vault, file).split(path.sep).join("/"), text: edited };
  });
}

async function main() {
  const vault = path.resolve(option("vault", path.join(ROOT, "..", "shared", "eval-vaults", "obsidian-hub", "vault")));
  if (!existsSync(vault)) {
    say(`No vault at ${vault}: nothing to measure (pass --vault PATH).`);
    return 0;
  }
  const calls = Number(option("calls", "50"));
  const python = option("python", process.env.SIDECAR_PYTHON || "python3");
  const given = option("index", "");
  const index = given ? path.resolve(given) : mkdtempSync(path.join(tmpdir(), "vs-responsiveness-index-"));
  const work = mkdtempSync(path.join(tmpdir(), "vs-responsiveness-"));
  const { SidecarProcess, SidecarClient, headingAt } = await loadPlugin(work);

  say(`vault   ${vault}`);
  say(`index   ${index}${given ? "" : " (temporary)"}`);
  say(`python  ${python}`);
  const proc = new SidecarProcess({
    vaultPath: vault, command: `"${python}" -m sidecar`, handshakeTimeoutMs: 120_000,
    env: { ...process.env, SIDECAR_INDEX_DIR: index },
  });
  let failed = false;
  const t0 = performance.now();
  try {
    const connection = await proc.start();
    const client = new SidecarClient({ port: connection.port, token: connection.token, timeoutMs: 60_000 });
    say(`started in ${((performance.now() - t0) / 1000).toFixed(1)} s (pid ${connection.handshake.pid})`);

    // 0. The first index (or the check of an existing one).
    let lastLine = "";
    const events = client.subscribe({
      progress: (p) => {
        const line = `  indexing: ${p.phase} ${p.done}/${p.total}`;
        if (line !== lastLine && (p.phase === "done" || p.done % 500 === 0)) say((lastLine = line));
      },
    });
    const indexStart = performance.now();
    for (;;) {
      const st = await client.call("status");
      if (st.complete && !st.building && st.notes > 0) {
        say(`index ready after ${((performance.now() - indexStart) / 1000).toFixed(1)} s: ${st.notes} notes, ${st.chunks} chunks, ` +
          `${st.skipped.length} skipped`);
        break;
      }
      if (performance.now() - indexStart > 15 * 60_000) throw new Error("the index was not ready within 15 minutes");
      await new Promise((r) => setTimeout(r, 500));
    }

    const inputs = buffers(vault, calls);
    const related = async (b) => {
      const params = { path: b.path, text: b.text, limit: 10 };
      const heading = headingAt(b.text, b.text.split("\n").length - 2);
      if (heading) params.cursor_heading = heading;
      const start = performance.now();
      const response = await client.call("related", params);
      return { ms: performance.now() - start, response, took: response.took_ms };
    };
    for (const b of inputs.slice(0, 3)) await related(b); // warm-up

    // 1. Idle: one call after another, like edits after the debounce.
    const idle = [];
    const idleTook = [];
    let empty = 0;
    for (const b of inputs) {
      const { ms, response, took } = await related(b);
      idle.push(ms);
      idleTook.push(took);
      if (!response.results.length) empty++;
    }
    const sizes = inputs.map((b) => b.text.length).sort((a, b) => a - b);
    const idleFig = figures(idle);
    say("");
    say(`related, edited buffers (${sizes[0]}-${sizes[sizes.length - 1]} characters), idle: ${idleFig.text}`);
    say(`  of which in the sidecar (took_ms): ${figures(idleTook).text}`);
    if (empty) say(`  ${empty} call(s) returned no related notes`);

    // 2. While a full reindex runs.
    const during = [];
    const duringTook = [];
    const duringResults = [];
    const errors = [];
    const started = await client.call("reindex", { full: true });
    const reindexStart = performance.now();
    let sawBuilding = false;
    let i = 0;
    for (;;) {
      const b = inputs[i++ % inputs.length];
      try {
        const { ms, took, response } = await related(b);
        during.push(ms);
        duringTook.push(took);
        duringResults.push(response.results.length);
      } catch (err) {
        errors.push(`${err?.kind ?? "error"}: ${err?.message ?? String(err)}`);
      }
      const st = await client.call("status");
      if (st.building) sawBuilding = true;
      else if (sawBuilding || performance.now() - reindexStart > 10_000) break;
      if (performance.now() - reindexStart > 15 * 60_000) throw new Error("the full reindex did not finish within 15 minutes");
    }
    const reindexSeconds = (performance.now() - reindexStart) / 1000;
    const duringFig = figures(during);
    say(`related during reindex --full (${started.started ? "started" : "not started"}, ` +
      `${sawBuilding ? `ran ${reindexSeconds.toFixed(1)} s` : "never seen building"}): ${duringFig.text}`);
    say(`  of which in the sidecar (took_ms): ${figures(duringTook).text}`);
    const fewer = duringResults.filter((n) => n < 10).length;
    if (fewer) say(`  ${fewer} of ${duringResults.length} calls returned fewer than 10 related notes (the index was being rebuilt)`);
    if (errors.length) say(`  ${errors.length} call(s) failed, e.g. ${errors[0]}`);
    events.close();

    say("");
    const idleOk = idleFig.p95 < TARGET_MS;
    const duringOk = errors.length === 0 && during.length > 0;
    say(`${idleOk ? "OK  " : "MISS"} idle p95 ${idleFig.p95.toFixed(1)} ms (target: under ${TARGET_MS} ms after the debounce)`);
    say(`${duringOk ? "OK  " : "FAIL"} related kept answering during the full reindex (${during.length} calls, p95 ${duringFig.p95.toFixed(1)} ms, ` +
      `max ${duringFig.max.toFixed(1)} ms)`);
    failed = !idleOk || !duringOk;
    const artifacts = path.join(PLUGIN_DIR, "test-artifacts");
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(path.join(artifacts, "responsiveness.json"), JSON.stringify({ vault, idle, during, errors, reindexSeconds }, null, 1));
  } catch (err) {
    failed = true;
    say(`error: ${err?.describe?.() ?? err?.message ?? String(err)}`);
    if (proc.stderr.length) say(`sidecar stderr:\n${proc.stderr.slice(-20).join("\n")}`);
  } finally {
    await proc.stop();
    rmSync(work, { recursive: true, force: true });
    if (!given) rmSync(index, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();

// Shared set-up for the tests that run the REAL sidecar (integration and picture tests): a copy of
// examples/demo-vault in a temp folder, the index in another temp folder, and the plugin's own `Sidecar`
// (process manager + JSON-RPC client + events) started on it.
//
// The sidecar command is `$SIDECAR_PYTHON -m sidecar` (`python3 build.py test` sets SIDECAR_PYTHON to the
// project's venv), else `python3 -m sidecar` when python3 can import it. Neither: the tests FAIL with a
// message that says what to do; they never skip silently.

import { spawnSync } from "child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "fs";
import { tmpdir } from "os";
import * as path from "path";

import { Sidecar, type SidecarSnapshot } from "../src/sidecar";

export const PLUGIN_DIR = path.resolve(__dirname, "..");
export const DEMO_VAULT = path.resolve(PLUGIN_DIR, "..", "examples", "demo-vault");

export interface SidecarCommand {
  /** The plugin's "Sidecar command" setting that starts it. */
  command: string;
  python: string;
}

function canImportSidecar(python: string): { ok: boolean; detail: string } {
  const r = spawnSync(python, ["-c", "import sidecar, sys; print(sys.version.split()[0])"], {
    encoding: "utf8", timeout: 60_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  if (r.error) return { ok: false, detail: r.error.message };
  if (r.status !== 0) return { ok: false, detail: (r.stderr || r.stdout || `exit code ${String(r.status)}`).trim().split("\n").slice(-3).join(" | ") };
  return { ok: true, detail: r.stdout.trim() };
}

/** How to start the sidecar; throws (never skips) when no Python with the sidecar can be found. */
export function sidecarCommand(): SidecarCommand {
  const configured = process.env.SIDECAR_PYTHON?.trim();
  if (configured) {
    const check = canImportSidecar(configured);
    if (!check.ok) {
      throw new Error(`SIDECAR_PYTHON=${configured} cannot run the sidecar (${check.detail}). ` +
        "Point SIDECAR_PYTHON at the project's venv python (python3 build.py setup creates it).");
    }
    return { command: `"${configured}" -m sidecar`, python: configured };
  }
  const check = canImportSidecar("python3");
  if (check.ok) return { command: "python3 -m sidecar", python: "python3" };
  throw new Error("The real-sidecar tests need Python with the sidecar installed: set SIDECAR_PYTHON to the " +
    "project's venv python (`python3 build.py test` does), or install the sidecar for python3 " +
    `(python3 -m pip install -e .). python3 said: ${check.detail}`);
}

/** Resolve with the first snapshot that satisfies `pred`, or reject after `ms` saying what was awaited. */
export function until(s: Sidecar, pred: (snap: SidecarSnapshot) => boolean, ms: number, what: string): Promise<SidecarSnapshot> {
  return new Promise((resolve, reject) => {
    if (pred(s.snapshot)) {
      resolve(s.snapshot);
      return;
    }
    const ref = s.on("state", (snap) => {
      if (!pred(snap as SidecarSnapshot)) return;
      clearTimeout(timer);
      s.offref(ref);
      resolve(snap as SidecarSnapshot);
    });
    const timer = setTimeout(() => {
      s.offref(ref);
      reject(new Error(`Timed out after ${ms / 1000} s waiting for ${what}; phase ${s.snapshot.phase}, ` +
        `status ${JSON.stringify(s.snapshot.status && { notes: s.snapshot.status.notes, building: s.snapshot.status.building, complete: s.snapshot.status.complete })}, ` +
        `error ${s.snapshot.error ?? "none"}\nsidecar stderr:\n${s.stderr.slice(-20).join("\n")}`));
    }, ms);
  });
}

/** Poll `fn` until it returns a value other than undefined (errors count as "not yet"); reject at the deadline. */
export async function eventually<T>(fn: () => Promise<T | undefined> | T | undefined, ms: number, what: string,
  everyMs = 100): Promise<T> {
  const deadline = Date.now() + ms;
  let last = "";
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined) return value;
    } catch (err) {
      last = err instanceof Error ? err.message : JSON.stringify(err);
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${ms / 1000} s waiting for ${what}${last ? `; last error: ${last}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function isZombie(pid: number): boolean {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

/** True while the process exists (a zombie, dead but not yet reaped, counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !isZombie(pid);
}

/** Pids of live processes whose command line is `... serve --vault <vault> ...` (Linux: /proc). */
export function sidecarPids(vault: string): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    // No /proc (macOS): ask ps.
    const r = spawnSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
    for (const line of (r.stdout ?? "").split("\n")) {
      const m = /^\s*(\d+)\s+(.*)$/.exec(line);
      if (m?.[2]?.includes(`--vault ${vault}`) && m[2].includes(" serve ")) out.push(Number(m[1]));
    }
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const i = argv.indexOf("--vault");
    if (i > 0 && argv[i + 1] === vault && argv.includes("serve") && alive(Number(entry))) out.push(Number(entry));
  }
  return out;
}

/** A line on the test's output (vitest shows it with the test's name). */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Every file in a folder, vault-relative with `/`, sorted. */
export function listFiles(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
    .sort();
}

export interface RealSidecar {
  sidecar: Sidecar;
  /** The temp copy of the demo vault. */
  vault: string;
  /** The temp index folder (outside the vault). */
  index: string;
  command: SidecarCommand;
  /** Milliseconds from start() to "running" and to the first complete index. */
  startedMs: number;
  readyMs: number;
  /** Stop the sidecar (if still running) and remove the temp folders. */
  dispose(): Promise<void>;
}

export interface StartOptions {
  /** Deadline for the handshake plus the first index (default 180 s: slow 2-core machines, cold caches). */
  readyTimeoutMs?: number;
  /** Serve MCP over HTTP on this port (with this token), and let agents edit notes (--allow-writes). */
  mcp?: { port: number; token: string; allowWrites: boolean };
}

/** Copy the demo vault, start the real sidecar through the plugin's own Sidecar, wait for the first index. */
export async function startRealSidecar(label: string, opts: StartOptions = {}): Promise<RealSidecar> {
  const command = sidecarCommand();
  if (!existsSync(DEMO_VAULT)) throw new Error(`The demo vault is missing: ${DEMO_VAULT}`);
  const vault = path.join(mkdtempSync(path.join(tmpdir(), `vs-${label}-vault-`)), "Demo Vault");
  cpSync(DEMO_VAULT, vault, { recursive: true });
  const index = mkdtempSync(path.join(tmpdir(), `vs-${label}-index-`));
  const sidecar = new Sidecar(() => ({
    vaultPath: vault,
    command: command.command,
    // The process manager has no `--index` argument: SIDECAR_INDEX_DIR is the sidecar's documented
    // equivalent (flags > environment > default), so the index never lands in the user's cache or the vault.
    env: {
      ...process.env, SIDECAR_INDEX_DIR: index, PYTHONDONTWRITEBYTECODE: "1",
      ...(opts.mcp ? { SIDECAR_MCP_TOKEN: opts.mcp.token } : {}),
    },
    ...(opts.mcp ? { mcp: { enabled: true, port: opts.mcp.port, allowWrites: opts.mcp.allowWrites } } : {}),
    handshakeTimeoutMs: 90_000, // the plugin's 30 s default, tripled for slow CI machines
    backoff: { initialMs: 200, maxMs: 2000, maxAttempts: 5 },
  }));
  const dispose = async (): Promise<void> => {
    await sidecar.stop();
    for (const pid of sidecarPids(vault)) {
      try {
        process.kill(pid, "SIGKILL"); // never leave one behind, even after a failed test
      } catch {
        // gone meanwhile
      }
    }
    rmSync(path.dirname(vault), { recursive: true, force: true });
    rmSync(index, { recursive: true, force: true });
  };
  const t0 = Date.now();
  let startedMs = 0;
  const ref = sidecar.on("state", (snap) => {
    if (!startedMs && (snap as SidecarSnapshot).phase === "running") startedMs = Date.now() - t0;
  });
  sidecar.start();
  try {
    await until(sidecar, (s) => s.phase === "running" && s.eventsConnected && s.status !== null &&
      s.status.complete && !s.status.building && s.status.notes > 0,
    opts.readyTimeoutMs ?? 180_000, "the sidecar's first complete index (status events)");
  } catch (err) {
    await dispose();
    throw err;
  } finally {
    sidecar.offref(ref);
  }
  return { sidecar, vault, index, command, startedMs, readyMs: Date.now() - t0, dispose };
}

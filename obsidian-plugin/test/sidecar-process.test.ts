import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "fs";
import { tmpdir } from "os";
import * as path from "path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { backoffDelay } from "../src/backoff";
import {
  DEFAULT_BACKOFF,
  SidecarProcess,
  SidecarStartError,
  classifyEarlyExit,
  parseHandshake,
  protocolCompatible,
  resolveCommand,
  serveArgs,
  splitCommand,
  type ProcessState,
  type SidecarProcessOptions,
} from "../src/sidecar-process";
import { isExecutable } from "../src/setup/install";
import { pythonCandidates, type Platform } from "../src/setup/python";

const FAKE = path.resolve(__dirname, "fixtures", "fake-sidecar.mjs");
const COMMAND = `"${process.execPath}" "${FAKE}"`;

interface LogEntry {
  pid: number;
  argv: string[];
  hasToken: boolean;
  at: number;
  child?: number;
}

let dir: string;
let logFile: string;
let managers: SidecarProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "vs-proc-"));
  logFile = path.join(dir, "runs.log");
});

afterEach(async () => {
  await Promise.all(managers.map((m) => m.stop()));
  managers = [];
  rmSync(dir, { recursive: true, force: true });
});

function runs(): LogEntry[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as LogEntry);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (dead, not yet reaped by its new parent) counts as gone.
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

async function gone(pid: number, ms = 2000): Promise<boolean> {
  const start = Date.now();
  while (Date.now() - start < ms) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !alive(pid);
}

function manager(mode: string, extra: Partial<SidecarProcessOptions> = {}): SidecarProcess {
  const m = new SidecarProcess({
    vaultPath: dir,
    command: COMMAND,
    env: { ...process.env, FAKE_MODE: mode, FAKE_LOG: logFile },
    handshakeTimeoutMs: 5000,
    stopGraceMs: 500,
    backoff: { initialMs: 100, factor: 2, maxMs: 1000, maxAttempts: 4, resetAfterMs: 60_000 },
    ...extra,
  });
  managers.push(m);
  return m;
}

function waitForState(m: SidecarProcess, pred: (s: ProcessState) => boolean, ms = 8000): Promise<ProcessState> {
  return new Promise((resolve, reject) => {
    if (pred(m.state)) {
      resolve(m.state);
      return;
    }
    const timer = setTimeout(() => {
      off();
      reject(new Error(`timed out; state ${m.state.phase}`));
    }, ms);
    const off = m.onState((s) => {
      if (pred(s)) {
        clearTimeout(timer);
        off();
        resolve(s);
      }
    });
  });
}

describe("pure helpers", () => {
  it("splits command lines with quotes", () => {
    expect(splitCommand(`"/Applications/My Python/python3" -m sidecar`)).toEqual(["/Applications/My Python/python3", "-m", "sidecar"]);
    expect(splitCommand(" sidecar  ")).toEqual(["sidecar"]);
    expect(splitCommand(`a 'b c' "d \\" e" ""`)).toEqual(["a", "b c", 'd " e', ""]);
    expect(splitCommand("")).toEqual([]);
  });

  it("builds serve args without the token", () => {
    expect(serveArgs({ vaultPath: "/v", mcp: { enabled: false, port: 1 } })).toEqual(
      ["serve", "--vault", "/v", "--rpc-port", "0", "--no-mcp"]);
    expect(serveArgs({ vaultPath: "/v", mcp: { enabled: true, port: 8765 }, exclude: ["Archive/", " ", "*.tmp"] })).toEqual(
      ["serve", "--vault", "/v", "--rpc-port", "0", "--mcp-port", "8765", "--exclude", "Archive/", "--exclude", "*.tmp"]);
    // writes only on request, and only with MCP on
    expect(serveArgs({ vaultPath: "/v", mcp: { enabled: true, port: 8765, allowWrites: true } })).toEqual(
      ["serve", "--vault", "/v", "--rpc-port", "0", "--mcp-port", "8765", "--allow-writes"]);
    expect(serveArgs({ vaultPath: "/v", mcp: { enabled: false, port: 8765, allowWrites: true } })).toEqual(
      ["serve", "--vault", "/v", "--rpc-port", "0", "--no-mcp"]);
  });

  it("parses and checks handshakes", () => {
    const h = parseHandshake('{"rpc_port": 5000, "mcp_port": null, "pid": 7, "version": "1", "protocol_version": "1.2.0"}');
    expect(h.rpc_port).toBe(5000);
    expect(h.mcp_note).toBeNull();
    const moved = parseHandshake('{"rpc_port": 5000, "mcp_port": 51235, "pid": 7, "version": "0.1.0", "protocol_version": "1.3.0", '
      + '"mcp_requested_port": 8765, "mcp_note": "MCP port 8765 is in use"}');
    expect([moved.mcp_port, moved.mcp_requested_port, moved.mcp_note]).toEqual([51235, 8765, "MCP port 8765 is in use"]);
    expect(() => parseHandshake("nope")).toThrow(SidecarStartError);
    expect(() => parseHandshake('{"rpc_port": 0, "protocol_version": "1.0.0"}')).toThrow(/incomplete/);
    expect(protocolCompatible("1.9.3", "1.0.0")).toBe(true);
    expect(protocolCompatible("2.0.0", "1.0.0")).toBe(false);
  });

  it("restarts on the default schedule: 0.5 s doubling to 30 s", () => {
    expect([1, 2, 3, 4, 10].map((a) => backoffDelay(a, DEFAULT_BACKOFF))).toEqual([500, 1000, 2000, 4000, 30_000]);
  });

  it("classifies early exits from stderr", () => {
    expect(classifyEarlyExit(["OSError: [Errno 48] Address already in use"], 1, [], 8765).kind).toBe("port_in_use");
    expect(classifyEarlyExit(["SyntaxError: invalid syntax"], 1, []).kind).toBe("python_too_old");
    const missing = classifyEarlyExit(["/usr/bin/python3: No module named sidecar"], 1, []);
    expect(missing.kind).toBe("not_found");
    expect(missing.hint).not.toMatch(/pipx/);
    expect(classifyEarlyExit(["SyntaxError: invalid syntax"], 1, []).hint).not.toMatch(/pipx/);
    const other = classifyEarlyExit(["boom"], 2, ["x"]);
    expect(other.kind).toBe("exited");
    expect(other.describe()).toContain("boom");
    // What the status modal shows beside the output: the output is not in it a second time.
    expect(other.summary()).toContain("Command: x");
    expect(other.summary()).not.toContain("boom");
  });
});

describe("command resolution", () => {
  function thrown(fn: () => unknown): SidecarStartError | null {
    try {
      fn();
    } catch (e) {
      return e as SidecarStartError;
    }
    return null;
  }

  function exe(name: string, body: string): string {
    const file = path.join(dir, name);
    writeFileSync(file, `#!/bin/sh\n${body}\n`);
    chmodSync(file, 0o755);
    return file;
  }

  it("prefers the setting, then the plugin's own sidecar, then sidecar on PATH, then python -m sidecar", () => {
    const env = { PATH: dir };
    const none = thrown(() => resolveCommand("", env, []));
    expect(none?.message).toMatch(/not installed/);
    // The fix names what really works: the plugin's setup, or pip with the release's wheel (no pipx package exists).
    expect(none?.hint).toMatch(/Set up the sidecar/);
    expect(none?.hint).toMatch(/pip install --user vault_sidecar-VERSION-py3-none-any\.whl/);
    expect(none?.hint).not.toMatch(/pipx/);
    const py = exe("python3", "echo 3.12");
    expect(resolveCommand("", env, [])).toEqual({ argv: [py, "-P", "-m", "sidecar"], source: "python" });
    const sc = exe("sidecar", "exit 0");
    expect(resolveCommand("", env, [])).toEqual({ argv: [sc], source: "path" });
    expect(resolveCommand("", env, [], "/data/vault-sidecar/env/bin/sidecar"))
      .toEqual({ argv: ["/data/vault-sidecar/env/bin/sidecar"], source: "managed" });
    expect(resolveCommand(`"${py}" -m sidecar`, env, [], "/managed").source).toBe("setting");
    expect(resolveCommand(`"${py}" -m sidecar`, env, [])).toEqual({ argv: [py, "-m", "sidecar"], source: "setting" });
    const err = thrown(() => resolveCommand("/no/such/thing serve", env, []));
    expect(err?.kind).toBe("not_found");
    expect(err?.fatal).toBe(true);
  });

  it("runs `python -m sidecar` with the Python the setup would pick (the one candidate list)", () => {
    const env = { PATH: dir };
    exe("python3", "echo 3.9");
    const newer = exe("python3.12", "echo 3.12");
    const host = { platform: process.platform as Platform, env, home: dir };
    expect(pythonCandidates(host, isExecutable, [])[0]?.argv).toEqual([newer]);
    expect(resolveCommand("", env, [])).toEqual({ argv: [newer, "-P", "-m", "sidecar"], source: "python" });
  });

  it("searches the extra folders after PATH", () => {
    const sub = path.join(dir, "bin");
    mkdirSync(sub);
    const file = path.join(sub, "sidecar");
    writeFileSync(file, "#!/bin/sh\n");
    chmodSync(file, 0o755);
    expect(resolveCommand("", { PATH: "/nonexistent" }, [sub]).argv).toEqual([file]);
  });

  it.skipIf(process.platform === "win32")("refuses a Python that is too old", async () => {
    exe("python3", "echo 3.9");
    // Only PATH: the machine's own folders (extraPath's default) may hold a newer python3.1x, tried first.
    const m = manager("ok", { command: "", env: { PATH: dir }, extraPath: [] });
    const err = await m.start().catch((e: unknown) => e as SidecarStartError);
    expect(err).toBeInstanceOf(SidecarStartError);
    expect((err as SidecarStartError).kind).toBe("python_too_old");
    expect(m.state.phase).toBe("failed");
  });
});

describe("SidecarProcess", () => {
  it("starts, reads the handshake, passes the token in the environment only", async () => {
    const m = manager("ok");
    const conn = await m.start();
    expect(conn.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(conn.port).toBe(conn.handshake.rpc_port);
    const [run] = runs();
    expect(run!.hasToken).toBe(true);
    expect(run!.argv).toEqual(["serve", "--vault", dir, "--rpc-port", "0", "--no-mcp"]);
    expect(run!.argv.join(" ")).not.toContain(conn.token);
    expect(m.state.phase).toBe("running");
    expect(m.stderr.join("\n")).toContain("fake sidecar starting");
    const pid = m.pid!;
    expect(alive(pid)).toBe(true);
    await m.stop();
    expect(alive(pid)).toBe(false);
    expect(m.state.phase).toBe("stopped");
  });

  it("uses a fresh token per run", async () => {
    const m = manager("ok");
    const a = await m.start();
    const b = await m.restart();
    expect(a.token).not.toBe(b.token);
    expect(runs()).toHaveLength(2);
  });

  it("restarts with exponential back-off when it dies, then gives up", async () => {
    const m = manager("die");
    const phases: string[] = [];
    m.onState((s) => phases.push(s.phase === "restarting" ? `restarting:${s.delayMs}` : s.phase));
    await m.start();
    const failed = await waitForState(m, (s) => s.phase === "failed");
    expect(failed.phase === "failed" && failed.error.kind).toBe("crashed");
    expect(failed.phase === "failed" && failed.error.stderrTail.join("\n")).toContain("something broke");
    const starts = runs().map((r) => r.at);
    expect(starts).toHaveLength(4);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // each gap = time alive (~50 ms) + back-off (100, 200, 400 ms)
    expect(gaps[0]).toBeGreaterThanOrEqual(140);
    expect(gaps[1]).toBeGreaterThanOrEqual(240);
    expect(gaps[2]).toBeGreaterThanOrEqual(440);
    expect(gaps[2]!).toBeGreaterThan(gaps[0]!);
    expect(phases).toContain("restarting:100");
    expect(phases).toContain("restarting:200");
    expect(phases).toContain("restarting:400");
    expect(runs().every((r) => !alive(r.pid))).toBe(true);
  });

  it("recovers when a later start succeeds", async () => {
    const m = manager("die-once");
    const conn = await m.start();
    expect(conn.port).toBeGreaterThan(0);
    expect(runs()).toHaveLength(2);
  });

  it("does not retry a port clash, and says which port", async () => {
    const m = manager("port", { mcp: { enabled: true, port: 8765 } });
    const err = (await m.start().catch((e: unknown) => e)) as SidecarStartError;
    expect(err.kind).toBe("port_in_use");
    expect(err.message).toContain("8765");
    expect(runs()).toHaveLength(1);
    expect(runs()[0]!.argv).toContain("--mcp-port");
  });

  it("reports an old Python from its stderr", async () => {
    const err = (await manager("old").start().catch((e: unknown) => e)) as SidecarStartError;
    expect(err.kind).toBe("python_too_old");
    expect(err.fatal).toBe(true);
  });

  it("reports a missing command clearly", async () => {
    const m = manager("ok", { command: path.join(dir, "missing-sidecar") });
    const err = (await m.start().catch((e: unknown) => e)) as SidecarStartError;
    expect(err.kind).toBe("not_found");
    expect(err.describe()).toMatch(/not found/);
  });

  it("times out without a handshake and kills the process", async () => {
    const m = manager("silent", { handshakeTimeoutMs: 300, backoff: { maxAttempts: 1 } });
    const err = (await m.start().catch((e: unknown) => e)) as SidecarStartError;
    expect(err.kind).toBe("handshake_timeout");
    expect(alive(runs()[0]!.pid)).toBe(false);
  });

  it("rejects a first line that is not a handshake, and a protocol mismatch", async () => {
    const bad = (await manager("garbage", { backoff: { maxAttempts: 1 } }).start().catch((e: unknown) => e)) as SidecarStartError;
    expect(bad.kind).toBe("bad_handshake");
    const mismatch = (await manager("mismatch").start().catch((e: unknown) => e)) as SidecarStartError;
    expect(mismatch.kind).toBe("protocol_mismatch");
    expect(runs().every((r) => !alive(r.pid))).toBe(true);
  });

  it.skipIf(process.platform === "win32")("SIGKILLs a process that ignores SIGTERM after the grace period", async () => {
    const m = manager("ignore-term", { stopGraceMs: 300 });
    await m.start();
    const pid = m.pid!;
    const started = Date.now();
    await m.stop();
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(alive(pid)).toBe(false);
    expect(m.state.phase).toBe("stopped");
  });

  it.skipIf(process.platform === "win32")("leaves no orphan: children of the sidecar go too", async () => {
    const m = manager("child");
    await m.start();
    const run = runs()[0]!;
    expect(alive(run.child!)).toBe(true);
    await m.stop();
    expect(alive(run.pid)).toBe(false);
    expect(await gone(run.child!)).toBe(true);
  });

  it("stop() during back-off cancels the restart", async () => {
    const m = manager("die", { backoff: { initialMs: 400, maxAttempts: 5 } });
    await m.start();
    await waitForState(m, (s) => s.phase === "restarting");
    await m.stop();
    await new Promise((r) => setTimeout(r, 600));
    expect(runs()).toHaveLength(1);
    expect(m.state.phase).toBe("stopped");
  });

  it("ready() waits through a restart", async () => {
    const m = manager("die-once");
    const conn = await m.ready();
    expect(conn.handshake.version).toBe("0.0.0-test");
  });
});

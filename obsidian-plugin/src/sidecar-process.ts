// Starts, watches and stops the Python sidecar (`sidecar serve`).
//
// - finds the command: the user's setting, else `sidecar` on PATH, else `python3 -m sidecar`
// - a fresh random token per run, passed in SIDECAR_RPC_TOKEN (never on the command line)
// - reads the one-line JSON handshake from stdout, with a timeout
// - keeps the last lines of stderr to explain failures
// - restarts with exponential back-off when the process dies; gives up on errors a restart cannot fix
// - stops it with SIGTERM, then SIGKILL after a grace period; stdin stays open as a lifeline, so the
//   sidecar also exits if Obsidian itself dies
//
// No Obsidian imports: this module is plain Node and is tested against real child processes.

import { spawn, type ChildProcess } from "child_process";
import { randomBytes } from "crypto";
import { clearTimeout, setTimeout } from "timers";

import { backoffDelay, type BackoffSchedule } from "./backoff";
import { PROTOCOL_VERSION } from "./protocol.gen";
import { currentHost, installedSidecar, isExecutable, probePython } from "./setup/install";
import { extraDirs, findExecutable, MIN_PYTHON, parsePythonVersion, pythonCandidates, pythonTooOld, type HostInfo } from "./setup/python";

export { MIN_PYTHON, parsePythonVersion, pythonTooOld };

/** The fix when nothing usable is installed: the plugin's own setup, or a manual install that works. */
export const SETUP_HINT = "Run \"Vault Sidecar: Set up the sidecar\" (command palette, or Settings → Vault Sidecar → Reinstall): "
  + `it installs the sidecar into a private environment. Or install it yourself with Python ${MIN_PYTHON.join(".")}+ `
  + "(`python3 -m pip install --user vault_sidecar-VERSION-py3-none-any.whl`, the wheel from the release) and set the sidecar command.";

/** The fix when the Python found is too old: a newer one (`where` to get it), then the setup. */
function newerPythonHint(where = ""): string {
  return `Install Python ${MIN_PYTHON.join(".")} or newer${where}, then ${SETUP_HINT.charAt(0).toLowerCase()}${SETUP_HINT.slice(1)}`;
}

export interface Handshake {
  rpc_port: number;
  mcp_port: number | null;
  pid: number;
  version: string;
  protocol_version: string;
  /** The MCP port asked for; differs from mcp_port after a fallback (the port was in use). */
  mcp_requested_port: number | null;
  /** Why MCP is not where it was asked for; null when it is. */
  mcp_note: string | null;
}

export interface Connection {
  port: number;
  token: string;
  handshake: Handshake;
}

export type StartErrorKind =
  | "not_found" // the command (or Python) does not exist
  | "python_too_old"
  | "port_in_use"
  | "protocol_mismatch"
  | "handshake_timeout"
  | "bad_handshake"
  | "exited" // died before the handshake
  | "crashed" // died after the handshake, too often
  | "spawn_failed";

/** Errors a restart cannot fix: the user has to change something first. */
const FATAL: ReadonlySet<StartErrorKind> = new Set(["not_found", "python_too_old", "port_in_use", "protocol_mismatch"]);

export class SidecarStartError extends Error {
  readonly kind: StartErrorKind;
  /** What to do about it, in words. */
  readonly hint: string;
  readonly stderrTail: string[];
  readonly exitCode: number | null;
  readonly command: string[];

  constructor(
    kind: StartErrorKind,
    message: string,
    opts: { hint?: string; stderrTail?: string[]; exitCode?: number | null; command?: string[] } = {},
  ) {
    super(message);
    this.name = "SidecarStartError";
    this.kind = kind;
    this.hint = opts.hint ?? "";
    this.stderrTail = opts.stderrTail ?? [];
    this.exitCode = opts.exitCode ?? null;
    this.command = opts.command ?? [];
  }

  get fatal(): boolean {
    return FATAL.has(this.kind);
  }

  /** Message, hint and command, ready to show next to the sidecar's output (which is not repeated). */
  summary(): string {
    const lines = [this.message];
    if (this.hint) lines.push(this.hint);
    if (this.command.length) lines.push(`Command: ${this.command.join(" ")}`);
    return lines.join("\n");
  }

  /** The summary and the end of stderr, for a place that shows nothing else. */
  describe(): string {
    const lines = [this.summary()];
    if (this.stderrTail.length) lines.push("Last lines of its output:", ...this.stderrTail.slice(-15));
    return lines.join("\n");
  }
}

export type ProcessState =
  | { phase: "stopped" }
  | { phase: "starting"; attempt: number }
  | { phase: "running"; connection: Connection; pid: number }
  | { phase: "restarting"; attempt: number; delayMs: number; error: SidecarStartError }
  | { phase: "failed"; error: SidecarStartError };

/** When to restart (backoff.ts's schedule), when a run counts as healthy, when to give up. */
export interface BackoffOptions extends BackoffSchedule {
  /** A run that lasted this long resets the attempt counter. */
  resetAfterMs: number;
  /** Consecutive failed starts or crashes before giving up. */
  maxAttempts: number;
}

export interface SidecarProcessOptions {
  vaultPath: string;
  /** The user's command setting; empty means auto-detect. */
  command?: string;
  mcp?: { enabled: boolean; port: number; allowWrites?: boolean };
  exclude?: string[];
  handshakeTimeoutMs?: number;
  stopGraceMs?: number;
  stderrLines?: number;
  backoff?: Partial<BackoffOptions>;
  /** Environment for the child (SIDECAR_RPC_TOKEN is added); defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Extra folders searched after PATH (Obsidian started from a desktop icon often has a short PATH). */
  extraPath?: string[];
  /** The sidecar the plugin installed itself (setup/install.ts); tried after the setting. Default: look. */
  managedSidecar?: string | null;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  initialMs: 500,
  maxMs: 30_000,
  factor: 2,
  resetAfterMs: 60_000,
  maxAttempts: 8,
};

// ---- command resolution -------------------------------------------------------------------

/** Split a command line into argv: whitespace separates, "double" and 'single' quotes group. */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  let current = "";
  let quote: string | null = null;
  let has = false;
  for (let i = 0; i < line.length; i++) {
    const c = line.charAt(i);
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && (line[i + 1] === '"' || line[i + 1] === "\\")) current += line.charAt(++i);
      else current += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (/\s/.test(c)) {
      if (has) out.push(current);
      current = "";
      has = false;
    } else {
      current += c;
      has = true;
    }
  }
  if (has) out.push(current);
  return out;
}

export function defaultExtraPath(): string[] {
  return extraDirs(currentHost());
}

/** The system, with the environment the child gets (its PATH is what is searched). */
function hostWith(env: NodeJS.ProcessEnv): HostInfo {
  return { ...currentHost(), env };
}

/** Find `name` on PATH (then in `extra`), like `which`: setup/python.ts's search, or a path as given. */
export function which(name: string, env: NodeJS.ProcessEnv = process.env, extra: string[] = []): string | null {
  if (name.includes("/") || (process.platform === "win32" && name.includes("\\"))) {
    return isExecutable(name) ? name : null;
  }
  return findExecutable(name, hostWith(env), isExecutable, extra);
}

export interface ResolvedCommand {
  argv: string[];
  /** How it was found, for messages: the setting, the plugin's own environment, PATH, or `python -m`. */
  source: "setting" | "managed" | "path" | "python";
}

/** The argv that starts the sidecar, before the `serve ...` arguments: the setting, the plugin's own
 * environment, `sidecar` on PATH (and the usual folders), then `python3 -m sidecar`. */
export function resolveCommand(setting: string | undefined, env: NodeJS.ProcessEnv = process.env,
  extra: string[] = defaultExtraPath(), managed: string | null = null): ResolvedCommand {
  const configured = splitCommand(setting ?? "");
  if (configured.length) {
    const exe = which(configured[0] ?? "", env, extra);
    if (!exe) {
      throw new SidecarStartError("not_found", `The sidecar command was not found: ${configured[0] ?? ""}`, {
        hint: "Check the command in the plugin settings (an absolute path is safest), or leave it empty to auto-detect.",
        command: configured,
      });
    }
    return { argv: [exe, ...configured.slice(1)], source: "setting" };
  }
  if (managed) return { argv: [managed], source: "managed" };
  const sidecar = which("sidecar", env, extra);
  if (sidecar) return { argv: [sidecar], source: "path" };
  // The Python the setup and the settings' Installation row would pick first (checkPython proves its version).
  const python = pythonCandidates(hostWith(env), isExecutable, extra)[0];
  // -P: the vault folder (or wherever Obsidian runs) must not shadow a module the sidecar imports.
  if (python) return { argv: [...python.argv, "-P", "-m", "sidecar"], source: "python" };
  throw new SidecarStartError("not_found", "The sidecar is not installed (neither `sidecar` nor Python 3 was found).", {
    hint: SETUP_HINT,
  });
}

/** argv for `sidecar serve`. The token is NOT here: it travels in the environment. */
export function serveArgs(opts: Pick<SidecarProcessOptions, "vaultPath" | "mcp" | "exclude">): string[] {
  const args = ["serve", "--vault", opts.vaultPath, "--rpc-port", "0"];
  if (opts.mcp?.enabled) args.push("--mcp-port", String(opts.mcp.port));
  else args.push("--no-mcp");
  if (opts.mcp?.enabled && opts.mcp.allowWrites) args.push("--allow-writes");
  for (const pattern of opts.exclude ?? []) {
    if (pattern.trim()) args.push("--exclude", pattern.trim());
  }
  return args;
}

export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

// ---- handshake and failure classification ---------------------------------------------------

export function parseHandshake(line: string): Handshake {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    throw new SidecarStartError("bad_handshake", `The sidecar's first line is not JSON: ${line.slice(0, 200)}`, {
      hint: "Is this really the Vault Sidecar? `sidecar serve` prints one JSON line first.",
    });
  }
  const h = (data && typeof data === "object" ? data : {}) as Record<string, unknown>;
  const port = (p: unknown): number | null =>
    typeof p === "number" && Number.isInteger(p) && p > 0 && p < 65536 ? p : null;
  const rpcPort = port(h.rpc_port);
  const mcpPort = h.mcp_port === null || h.mcp_port === undefined ? null : port(h.mcp_port);
  const protocol = h.protocol_version;
  if (rpcPort === null || typeof protocol !== "string" || (h.mcp_port != null && mcpPort === null)) {
    throw new SidecarStartError("bad_handshake", `The sidecar's handshake is incomplete: ${line.slice(0, 200)}`);
  }
  return {
    rpc_port: rpcPort,
    mcp_port: mcpPort,
    pid: typeof h.pid === "number" ? h.pid : 0,
    version: typeof h.version === "string" ? h.version : "unknown",
    protocol_version: protocol,
    mcp_requested_port: port(h.mcp_requested_port),
    mcp_note: typeof h.mcp_note === "string" && h.mcp_note ? h.mcp_note : null,
  };
}

export function protocolCompatible(theirs: string, ours: string = PROTOCOL_VERSION): boolean {
  return theirs.split(".")[0] === ours.split(".")[0];
}

/** Why a process that died before its handshake died, from its stderr. */
export function classifyEarlyExit(stderr: string[], exitCode: number | null, command: string[],
  mcpPort?: number): SidecarStartError {
  const text = stderr.join("\n");
  const opts = { stderrTail: stderr, exitCode, command };
  if (/address already in use|EADDRINUSE|Errno 98|Errno 48|WinError 10048|port \d+ is (already )?in use/i.test(text)) {
    return new SidecarStartError("port_in_use", mcpPort
      ? `Port ${mcpPort} (MCP) is already in use.`
      : "A port the sidecar needs is already in use.", {
      ...opts,
      hint: "Choose another MCP port in the plugin settings, turn MCP off, or stop the program using the port.",
    });
  }
  if (/requires? python|python 3\.\d+ or newer|python_requires|SyntaxError|version_info/i.test(text)) {
    return new SidecarStartError("python_too_old", `The sidecar needs Python ${MIN_PYTHON.join(".")} or newer.`, {
      ...opts,
      hint: newerPythonHint(" (python.org, `brew install python@3.12`, your package manager, or uv)"),
    });
  }
  if (/No module named .?sidecar|command not found|is not recognized as an internal or external command/i.test(text)) {
    return new SidecarStartError("not_found", "Python was found, but the sidecar is not installed for it.", {
      ...opts,
      hint: SETUP_HINT,
    });
  }
  return new SidecarStartError("exited",
    `The sidecar exited before it was ready (exit code ${exitCode ?? "none"}).`, opts);
}

class LineBuffer {
  private partial = "";
  constructor(private readonly limit: number, readonly lines: string[] = []) {}
  push(chunk: string): void {
    const parts = (this.partial + chunk).split(/\r?\n/);
    this.partial = parts.pop() ?? "";
    for (const line of parts) this.add(line);
  }
  flush(): void {
    if (this.partial) this.add(this.partial);
    this.partial = "";
  }
  private add(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.limit) this.lines.splice(0, this.lines.length - this.limit);
  }
}

// ---- the manager ---------------------------------------------------------------------------

type Listener = (state: ProcessState) => void;

interface Run {
  child: ChildProcess;
  exited: Promise<void>;
  startedAt: number;
  stderr: LineBuffer;
}

export class SidecarProcess {
  private readonly opts: SidecarProcessOptions;
  private readonly backoff: BackoffOptions;
  private current: ProcessState = { phase: "stopped" };
  private listeners = new Set<Listener>();
  private run: Run | null = null;
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  private attempt = 0;
  private stopping = false;
  private waiters: { resolve: (c: Connection) => void; reject: (e: Error) => void }[] = [];
  /** stderr of the current (or last) run, newest last. */
  readonly stderr: string[] = [];

  constructor(opts: SidecarProcessOptions) {
    this.opts = opts;
    this.backoff = { ...DEFAULT_BACKOFF, ...(opts.backoff ?? {}) };
  }

  get state(): ProcessState {
    return this.current;
  }

  get pid(): number | null {
    return this.run?.child.pid ?? null;
  }

  onState(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Start (if not running) and resolve once the handshake arrived; rejects when it gives up. */
  start(): Promise<Connection> {
    if (this.current.phase === "running") return Promise.resolve(this.current.connection);
    const promise = new Promise<Connection>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.current.phase === "stopped" || this.current.phase === "failed") {
      this.stopping = false;
      this.attempt = 0;
      void this.launch();
    }
    return promise;
  }

  /** Resolves with the connection when running, waiting through restarts. */
  ready(): Promise<Connection> {
    if (this.current.phase === "running") return Promise.resolve(this.current.connection);
    if (this.current.phase === "stopped" || this.current.phase === "failed") return this.start();
    return new Promise<Connection>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Stop for good: SIGTERM, then SIGKILL after the grace period. Resolves when the process is gone. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    const run = this.run;
    if (run) await this.kill(run);
    this.run = null;
    this.setState({ phase: "stopped" });
    this.rejectWaiters(new SidecarStartError("exited", "The sidecar was stopped."));
  }

  /** Stop, then start again (e.g. after the settings changed). */
  async restart(): Promise<Connection> {
    await this.stop();
    return this.start();
  }

  private setState(state: ProcessState): void {
    this.current = state;
    for (const listener of [...this.listeners]) {
      try {
        listener(state);
      } catch (err) {
        console.error("vault-sidecar: state listener failed", err);
      }
    }
  }

  private rejectWaiters(error: Error): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(error);
  }

  private async launch(): Promise<void> {
    if (this.stopping) return;
    this.attempt++;
    this.setState({ phase: "starting", attempt: this.attempt });
    let connection: Connection;
    try {
      connection = await this.spawnOnce();
    } catch (err) {
      const error = err instanceof SidecarStartError ? err
        : new SidecarStartError("spawn_failed", `The sidecar could not be started: ${String(err)}`);
      this.scheduleRestart(error);
      return;
    }
    if (this.stopping) return;
    this.setState({ phase: "running", connection, pid: this.run?.child.pid ?? connection.handshake.pid });
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve(connection);
  }

  private scheduleRestart(error: SidecarStartError): void {
    if (this.stopping) return;
    if (error.fatal || this.attempt >= this.backoff.maxAttempts) {
      this.setState({ phase: "failed", error });
      this.rejectWaiters(error);
      return;
    }
    const delayMs = backoffDelay(this.attempt, this.backoff);
    this.setState({ phase: "restarting", attempt: this.attempt, delayMs, error });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.launch();
    }, delayMs);
  }

  private async checkPython(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
    // Only for `python -m sidecar`: a too-old Python fails in confusing ways otherwise.
    const python = argv.slice(0, argv.indexOf("-m"));
    const found = await probePython(python, env, 10_000);
    const version = found ? parsePythonVersion(found.version) : null;
    if (version && pythonTooOld(version)) {
      throw new SidecarStartError("python_too_old",
        `${python[0] ?? ""} is Python ${version.join(".")}; the sidecar needs ${MIN_PYTHON.join(".")} or newer.`, {
          hint: newerPythonHint(),
          command: argv,
        });
    }
  }

  private async spawnOnce(): Promise<Connection> {
    const env: NodeJS.ProcessEnv = { ...(this.opts.env ?? process.env) };
    const managed = this.opts.managedSidecar === undefined ? installedSidecar() : this.opts.managedSidecar;
    const resolved = resolveCommand(this.opts.command, env, this.opts.extraPath ?? defaultExtraPath(), managed);
    if (resolved.source === "python") await this.checkPython(resolved.argv, env);
    if (this.stopping) throw new SidecarStartError("exited", "Stopped while starting.");

    const token = newToken();
    const argv = [...resolved.argv, ...serveArgs(this.opts)];
    env.SIDECAR_RPC_TOKEN = token;
    env.PYTHONUNBUFFERED = "1";
    env.PYTHONIOENCODING = "utf-8";

    const stderr = new LineBuffer(this.opts.stderrLines ?? 50, []);
    let child: ChildProcess;
    try {
      child = spawn(argv[0] ?? "", argv.slice(1), {
        env,
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
        // Own process group on POSIX, so that stop() reaches wrapper scripts' children too.
        detached: process.platform !== "win32",
      });
    } catch (err) {
      throw new SidecarStartError("spawn_failed", `Could not start ${argv[0] ?? ""}: ${String(err)}`, { command: argv });
    }
    const exited = new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", () => { if (child.pid === undefined) resolve(); });
    });
    const run: Run = { child, exited, startedAt: Date.now(), stderr };
    this.run = run;
    this.stderr.length = 0;
    child.stdin?.on("error", () => undefined); // EPIPE when it exits first
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr.push(chunk);
      this.stderr.splice(0, this.stderr.length, ...stderr.lines);
    });

    const handshake = await new Promise<Handshake>((resolve, reject) => {
      let buffered = "";
      let settled = false;
      const finish = (fn: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
      };
      const timeoutMs = this.opts.handshakeTimeoutMs ?? 30_000;
      const timer = setTimeout(() => finish(() => reject(new SidecarStartError("handshake_timeout",
        `The sidecar did not report ready within ${Math.round(timeoutMs / 1000)} s.`,
        { stderrTail: [...stderr.lines], command: argv }))), timeoutMs);
      child.stdout?.setEncoding("utf8");
      child.stdout?.on("data", (chunk: string) => {
        if (settled) return; // after the handshake, stdout is drained and ignored
        buffered += chunk;
        const newline = buffered.indexOf("\n");
        if (newline === -1) {
          if (buffered.length > 64_000) {
            finish(() => reject(new SidecarStartError("bad_handshake", "The sidecar's first line is too long.", { command: argv })));
          }
          return;
        }
        const line = buffered.slice(0, newline).trim();
        finish(() => {
          try {
            resolve(parseHandshake(line));
          } catch (err) {
            reject(err instanceof SidecarStartError
              ? new SidecarStartError(err.kind, err.message, { hint: err.hint, stderrTail: [...stderr.lines], command: argv })
              : new SidecarStartError("bad_handshake", String(err), { command: argv }));
          }
        });
      });
      child.once("error", (err: NodeJS.ErrnoException) => finish(() => reject(err.code === "ENOENT"
        ? new SidecarStartError("not_found", `The sidecar command was not found: ${argv[0] ?? ""}`, {
          command: argv, hint: "Check the command in the plugin settings." })
        : new SidecarStartError("spawn_failed", `Could not start the sidecar: ${err.message}`, { command: argv }))));
      child.once("exit", (code) => {
        // Let the last stderr chunk arrive before classifying.
        setTimeout(() => finish(() => {
          stderr.flush();
          reject(classifyEarlyExit([...stderr.lines], code, argv, this.opts.mcp?.enabled ? this.opts.mcp.port : undefined));
        }), 50);
      });
    }).catch(async (err: unknown) => {
      await this.kill(run);
      if (this.run === run) this.run = null;
      throw err;
    });

    if (!protocolCompatible(handshake.protocol_version)) {
      await this.kill(run);
      if (this.run === run) this.run = null;
      throw new SidecarStartError("protocol_mismatch",
        `The sidecar speaks protocol ${handshake.protocol_version}, this plugin ${PROTOCOL_VERSION}.`, {
          hint: `Update the sidecar to this plugin's version: ${SETUP_HINT}`, command: argv,
        });
    }

    child.once("exit", (code, signal) => this.onExit(run, code, signal));
    return { port: handshake.rpc_port, token, handshake };
  }

  private onExit(run: Run, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.run !== run) return;
    this.run = null;
    if (this.stopping) return;
    run.stderr.flush();
    if (Date.now() - run.startedAt >= this.backoff.resetAfterMs) this.attempt = 0;
    const error = new SidecarStartError("crashed",
      `The sidecar stopped unexpectedly (${signal ? `signal ${signal}` : `exit code ${code ?? "none"}`}).`,
      { stderrTail: [...run.stderr.lines], exitCode: code });
    this.scheduleRestart(error);
  }

  private signal(run: Run, sig: NodeJS.Signals): void {
    const pid = run.child.pid;
    if (pid === undefined) return;
    try {
      if (process.platform !== "win32") process.kill(-pid, sig); // the whole process group
      else run.child.kill(sig);
    } catch {
      try {
        run.child.kill(sig);
      } catch {
        // already gone
      }
    }
  }

  private async kill(run: Run): Promise<void> {
    const child = run.child;
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      // Not started or already exited; still make sure the group is gone.
      if (child.pid !== undefined) this.signal(run, "SIGKILL");
      return;
    }
    try {
      child.stdin?.end();
    } catch {
      // ignore
    }
    this.signal(run, "SIGTERM");
    const grace = this.opts.stopGraceMs ?? 3000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killed = await Promise.race([
      run.exited.then(() => false),
      new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), grace); }),
    ]);
    if (timer) clearTimeout(timer);
    if (killed) {
      this.signal(run, "SIGKILL");
      await Promise.race([run.exited, new Promise((r) => setTimeout(r, 2000))]);
    } else {
      // The leader exited; leftovers of the group (a wrapper's children) get SIGKILL.
      this.signal(run, "SIGKILL");
    }
  }
}

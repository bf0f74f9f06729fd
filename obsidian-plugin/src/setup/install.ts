// The plugin installs its own sidecar: find a Python >= 3.11 (or uv), create a private environment in
// the plugin's data folder (setup/python.ts: dataDir) and install the sidecar into it, streaming the log.
// Plain Node (no Obsidian imports): tested against real child processes.

import { spawn } from "child_process";
import { accessSync, constants as fsConstants, readdirSync, statSync } from "fs";
import { homedir } from "os";
import * as path from "path";
import { clearTimeout, setTimeout } from "timers";

import {
  compareVersions, envExecutable, findExecutable, managedEnvDir, MIN_PYTHON, parsePythonVersion, pythonCandidates, pythonTooOld,
  type FileProbe, type HostInfo, type Platform,
} from "./python";

/** The package index name, used when no wheel file is at hand. */
export const INDEX_PACKAGE = "vault-sidecar";

export function currentHost(): HostInfo {
  return { platform: process.platform as Platform, env: process.env, home: homedir() };
}

export const isExecutable: FileProbe = (file) => {
  try {
    if (!statSync(file).isFile()) return false;
    if (process.platform !== "win32") accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
};

export interface FoundPython {
  argv: string[];
  /** sys.executable, as Python reports it. */
  executable: string;
  version: string;
}

export interface Toolchain {
  python: FoundPython | null;
  uv: string | null;
  /** Pythons that answered but are too old, for the explanation. */
  tooOld: FoundPython[];
}

/** The one way the plugin runs a short-lived command (a version probe, an install step): no stdin, no console
 * window on Windows, killed after `timeoutMs`; every chunk of stdout and stderr goes to `onText`, a failure to
 * start as its message. Resolves with the exit code (null: it did not start, or was killed), never rejects. */
function runChild(argv: string[], env: NodeJS.ProcessEnv, timeoutMs: number, onText: (text: string) => void): Promise<number | null> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn(argv[0] ?? "", argv.slice(1), { env, stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    } catch (err) {
      onText(String(err));
      resolve(null);
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    const done = (code: number | null): void => {
      clearTimeout(timer);
      resolve(code);
    };
    child.stdout.on("data", (d: Buffer) => onText(d.toString()));
    child.stderr.on("data", (d: Buffer) => onText(d.toString()));
    child.on("error", (err) => {
      onText(String(err));
      done(null);
    });
    child.on("close", done);
  });
}

/** Run a short command, resolve with its exit code and output (never rejects). */
export async function runQuiet(argv: string[], timeoutMs = 15_000, env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; out: string }> {
  let out = "";
  const code = await runChild(argv, env, timeoutMs, (text) => { out += text; });
  return { code, out };
}

const VERSION_SCRIPT = "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(sys.executable)";

/** Run `python` (its argv) and ask its version; null when it does not answer like a Python. */
export async function probePython(python: string[], env: NodeJS.ProcessEnv = process.env,
  timeoutMs?: number): Promise<FoundPython | null> {
  const { code, out } = await runQuiet([...python, "-c", VERSION_SCRIPT], timeoutMs, env);
  const [versionLine, executable] = out.trim().split(/\r?\n/);
  if (code !== 0 || !parsePythonVersion(versionLine ?? "")) return null;
  return { argv: python, executable: (executable ?? python[0] ?? "").trim(), version: (versionLine ?? "").trim() };
}

/** The first Python >= 3.11 that really runs, and uv if it is there. */
export async function detectToolchain(host: HostInfo = currentHost(), probe: FileProbe = isExecutable): Promise<Toolchain> {
  const tooOld: FoundPython[] = [];
  let python: FoundPython | null = null;
  for (const candidate of pythonCandidates(host, probe)) {
    const found = await probePython(candidate.argv);
    if (!found) continue;
    const version = parsePythonVersion(found.version);
    if (version && pythonTooOld(version)) {
      tooOld.push(found);
      continue;
    }
    python = found;
    break;
  }
  return { python, uv: findExecutable("uv", host, probe), tooOld };
}

/** What to install: a wheel file, or a package from the index. */
export type InstallSource = { kind: "wheel"; file: string } | { kind: "index"; name: string };

/** Newest `vault_sidecar-*.whl` in `folder` (the release zip puts one beside the plugin). */
export function wheelBeside(folder: string): string | null {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return null;
  }
  const wheels = names.filter((n) => /^vault_sidecar-[^-]+-.*\.whl$/.test(n)).sort(compareWheelNames);
  const newest = wheels[wheels.length - 1];
  return newest ? path.join(folder, newest) : null;
}

function compareWheelNames(a: string, b: string): number {
  return compareVersions(a.split("-")[1] ?? "", b.split("-")[1] ?? "");
}

/** The user's pick first, then a wheel beside the plugin, then the index. */
export function chooseSource(picked: string | null, pluginDir: string | null): InstallSource {
  if (picked) return { kind: "wheel", file: picked };
  const beside = pluginDir ? wheelBeside(pluginDir) : null;
  return beside ? { kind: "wheel", file: beside } : { kind: "index", name: INDEX_PACKAGE };
}

export interface InstallStep {
  title: string;
  argv: string[];
}

/** The commands that create the environment and install the sidecar into it. */
export function installSteps(tools: Toolchain, source: InstallSource, envDir: string, host: HostInfo = currentHost()): InstallStep[] {
  const envPython = envExecutable(host, envDir, "python");
  const what = source.kind === "wheel" ? source.file : source.name;
  if (tools.python) {
    return [
      { title: `Creating the environment (${tools.python.version})`, argv: [...tools.python.argv, "-m", "venv", "--clear", envDir] },
      { title: `Installing ${source.kind === "wheel" ? path.basename(source.file) : source.name}`,
        argv: [envPython, "-m", "pip", "install", "--disable-pip-version-check", "--upgrade", what] },
    ];
  }
  if (tools.uv) {
    return [
      { title: "Creating the environment (uv)", argv: [tools.uv, "venv", "--clear", "--python", `>=${MIN_PYTHON.join(".")}`, envDir] },
      { title: `Installing ${source.kind === "wheel" ? path.basename(source.file) : source.name}`,
        argv: [tools.uv, "pip", "install", "--python", envPython, "--upgrade", what] },
    ];
  }
  throw new Error(`Neither Python ${MIN_PYTHON.join(".")}+ nor uv was found.`);
}

export class InstallError extends Error {
  constructor(message: string, readonly hint: string, readonly log: string[]) {
    super(message);
    this.name = "InstallError";
  }
}

/** Run the steps one after another; every output line goes to `onLine`. */
export async function runSteps(steps: InstallStep[], onLine: (line: string) => void,
  onStep: (index: number, step: InstallStep) => void = () => undefined, timeoutMs = 15 * 60_000): Promise<void> {
  const log: string[] = [];
  const line = (text: string): void => {
    log.push(text);
    if (log.length > 400) log.splice(0, log.length - 400);
    onLine(text);
  };
  for (const [i, step] of steps.entries()) {
    onStep(i, step);
    line(`$ ${step.argv.join(" ")}`);
    const code = await streamed(step.argv, line, timeoutMs);
    if (code !== 0) {
      throw new InstallError(`${step.title} failed (exit code ${code ?? "none"}).`, hintFor(log), [...log]);
    }
  }
}

/** Run an install step, its output to `line` line by line. */
async function streamed(argv: string[], line: (text: string) => void, timeoutMs: number): Promise<number | null> {
  let partial = "";
  const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PYTHONIOENCODING: "utf-8" };
  const code = await runChild(argv, env, timeoutMs, (text) => {
    const parts = (partial + text).split(/\r?\n/);
    partial = parts.pop() ?? "";
    for (const p of parts) if (p.trim()) line(p);
  });
  if (partial.trim()) line(partial);
  return code;
}

/** What to do, read from the log of a failed install. */
export function hintFor(log: string[]): string {
  const text = log.join("\n");
  if (/No matching distribution found for vault-sidecar|404 Client Error|not found in the package registry/i.test(text)) {
    return "The package index has no vault-sidecar: download the wheel (vault_sidecar-….whl) from the release page and choose it with \"Choose a wheel…\".";
  }
  if (/located at .* is invalid|BadZipFile|not a zip file|invalid zip/i.test(text)) {
    return "The wheel file is damaged or is no wheel (a download cut short?): download vault_sidecar-….whl again from the release page and choose it with \"Choose a wheel…\".";
  }
  if (/No matching distribution|Could not find a version|Failed to establish a new connection|Name or service not known|getaddrinfo|network/i.test(text)) {
    return "The sidecar's dependencies (numpy, aiohttp, …) come from PyPI: connect to the internet once, or install from a wheelhouse (`pip install --no-index --find-links DIR FILE.whl`) and set the sidecar command in the settings.";
  }
  if (/ensurepip|No module named venv|venv.*not available/i.test(text)) {
    return "This Python cannot create environments: install the python3-venv package (Debian/Ubuntu: `sudo apt install python3-venv`), or install uv.";
  }
  if (/Permission denied|Access is denied|EACCES/i.test(text)) {
    return "The plugin's data folder is not writable: check its permissions, or set the sidecar command in the settings.";
  }
  return "See the log above; you can also install it yourself (`python3 -m pip install --user FILE.whl`) and set the sidecar command in the settings.";
}

export interface ManagedEnv {
  dir: string;
  python: string;
  sidecar: string;
}

export function managedEnv(host: HostInfo = currentHost()): ManagedEnv {
  const dir = managedEnvDir(host);
  return { dir, python: envExecutable(host, dir, "python"), sidecar: envExecutable(host, dir, "sidecar") };
}

/** The sidecar this plugin installed, when it is there. */
export function installedSidecar(host: HostInfo = currentHost(), probe: FileProbe = isExecutable): string | null {
  const env = managedEnv(host);
  return probe(env.sidecar) ? env.sidecar : null;
}

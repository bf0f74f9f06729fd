// The plugin's own setup: where Python, uv and the sidecar are looked for on Windows, macOS and Linux
// (pure, with a fake file probe), and the install steps against real child processes.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import * as path from "path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  chooseSource, detectToolchain, hintFor, InstallError, installSteps, runSteps, wheelBeside, type Toolchain,
} from "../src/setup/install";
import {
  compareVersions, dataDir, envExecutable, extraDirs, findExecutable, managedEnvDir, pythonCandidates, whereToLook, type HostInfo,
} from "../src/setup/python";
import { versionAdvice } from "../src/setup/notices";
import { installLines } from "../src/setup/settings-info";
import type { SidecarSnapshot } from "../src/sidecar";
import type { StatusResponse } from "../src/protocol.gen";

const WIN: HostInfo = {
  platform: "win32", home: "C:\\Users\\ana",
  env: { Path: "C:\\Windows\\system32;C:\\Users\\ana\\AppData\\Local\\Microsoft\\WindowsApps", APPDATA: "C:\\Users\\ana\\AppData\\Roaming",
    LOCALAPPDATA: "C:\\Users\\ana\\AppData\\Local", SystemRoot: "C:\\Windows" },
};
// Started from the Dock: launchd's PATH, no Homebrew, no ~/.local/bin.
const MAC: HostInfo = { platform: "darwin", home: "/Users/ana", env: { PATH: "/usr/bin:/bin:/usr/sbin:/sbin" } };
const LINUX: HostInfo = { platform: "linux", home: "/home/ana", env: { PATH: "/usr/bin:/bin", XDG_DATA_HOME: "" } };

const probeOf = (...files: string[]) => (file: string): boolean => files.includes(file);

describe("where to look, per system", () => {
  it("Windows: the py launcher, per-user Scripts of every Python 3.1x, python.org's folders", () => {
    const dirs = extraDirs(WIN);
    expect(dirs).toContain("C:\\Users\\ana\\AppData\\Roaming\\Python\\Python312\\Scripts");
    expect(dirs).toContain("C:\\Users\\ana\\AppData\\Local\\Programs\\Python\\Python313");
    expect(dirs).toContain("C:\\Users\\ana\\AppData\\Local\\Programs\\Python\\Launcher");
    expect(whereToLook("sidecar", WIN)).toContain("C:\\Users\\ana\\AppData\\Roaming\\Python\\Python311\\Scripts\\sidecar.exe");
    const sidecar = "C:\\Users\\ana\\AppData\\Roaming\\Python\\Python312\\Scripts\\sidecar.exe";
    expect(findExecutable("sidecar", WIN, probeOf(sidecar))).toBe(sidecar);
    const py = "C:\\Windows\\py.exe";
    const python = "C:\\Users\\ana\\AppData\\Local\\Programs\\Python\\Python312\\python.exe";
    expect(pythonCandidates(WIN, probeOf(python, py)).map((c) => c.argv)).toEqual([[py, "-3"], [python]]);
    expect(dataDir(WIN)).toBe("C:\\Users\\ana\\AppData\\Local\\vault-sidecar");
    expect(envExecutable(WIN, managedEnvDir(WIN), "sidecar")).toBe("C:\\Users\\ana\\AppData\\Local\\vault-sidecar\\env\\Scripts\\sidecar.exe");
  });

  it("macOS from the Dock: Homebrew, /usr/local, ~/.local/bin and python.org's framework after the short PATH", () => {
    const looked = whereToLook("python3", MAC);
    expect(looked.slice(0, 4)).toEqual(["/usr/bin/python3", "/bin/python3", "/usr/sbin/python3", "/sbin/python3"]);
    for (const file of ["/opt/homebrew/bin/python3", "/usr/local/bin/python3", "/Users/ana/.local/bin/python3",
      "/Library/Frameworks/Python.framework/Versions/3.12/bin/python3"]) expect(looked).toContain(file);
    // Newest versioned name first; Xcode's /usr/bin/python3 (3.9) is still a candidate, refused later by its version.
    const candidates = pythonCandidates(MAC, probeOf("/usr/bin/python3", "/opt/homebrew/bin/python3.13", "/opt/homebrew/bin/python3"));
    expect(candidates.map((c) => c.argv[0])).toEqual(["/opt/homebrew/bin/python3.13", "/usr/bin/python3"]);
    expect(findExecutable("uv", MAC, probeOf("/Users/ana/.local/bin/uv"))).toBe("/Users/ana/.local/bin/uv");
    expect(dataDir(MAC)).toBe("/Users/ana/Library/Application Support/vault-sidecar");
  });

  it("Linux: ~/.local/bin and /usr/local/bin, XDG_DATA_HOME for the environment", () => {
    expect(extraDirs(LINUX)).toEqual(["/home/ana/.local/bin", "/home/ana/.cargo/bin", "/usr/local/bin", "/usr/bin"]);
    expect(whereToLook("sidecar", LINUX).filter((f) => f === "/usr/bin/sidecar")).toHaveLength(1); // PATH and extras: once
    expect(managedEnvDir(LINUX)).toBe("/home/ana/.local/share/vault-sidecar/env");
    expect(managedEnvDir({ ...LINUX, env: { XDG_DATA_HOME: "/data" } })).toBe("/data/vault-sidecar/env");
    expect(envExecutable(LINUX, "/e", "python")).toBe("/e/bin/python");
  });
});

describe("what to install and how", () => {
  let dir = "";
  beforeEach(() => { dir = mkdtempSync(path.join(tmpdir(), "vs-setup-")); });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("prefers the picked wheel, then the newest wheel beside the plugin, then the index", () => {
    for (const v of ["0.9.0", "0.10.0"]) writeFileSync(path.join(dir, `vault_sidecar-${v}-py3-none-any.whl`), "");
    writeFileSync(path.join(dir, "other-1.0-py3-none-any.whl"), "");
    expect(wheelBeside(dir)).toBe(path.join(dir, "vault_sidecar-0.10.0-py3-none-any.whl"));
    expect(chooseSource("/picked.whl", dir)).toEqual({ kind: "wheel", file: "/picked.whl" });
    expect(chooseSource(null, dir)).toEqual({ kind: "wheel", file: path.join(dir, "vault_sidecar-0.10.0-py3-none-any.whl") });
    expect(chooseSource(null, path.join(dir, "none"))).toEqual({ kind: "index", name: "vault-sidecar" });
  });

  it("plans venv + pip with Python, uv venv + uv pip without, and refuses with neither", () => {
    const python: Toolchain = { python: { argv: ["/usr/bin/python3"], executable: "/usr/bin/python3", version: "3.12.3" }, uv: null, tooOld: [] };
    const steps = installSteps(python, { kind: "wheel", file: "/w/vault_sidecar-0.1.0-py3-none-any.whl" }, "/env", LINUX);
    expect(steps.map((s) => s.argv)).toEqual([
      ["/usr/bin/python3", "-m", "venv", "--clear", "/env"],
      ["/env/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--upgrade", "/w/vault_sidecar-0.1.0-py3-none-any.whl"],
    ]);
    const uv = installSteps({ python: null, uv: "/u/uv", tooOld: [] }, { kind: "index", name: "vault-sidecar" }, "/env", LINUX);
    expect(uv.map((s) => s.argv)).toEqual([
      ["/u/uv", "venv", "--clear", "--python", ">=3.11", "/env"],
      ["/u/uv", "pip", "install", "--python", "/env/bin/python", "--upgrade", "vault-sidecar"],
    ]);
    expect(() => installSteps({ python: null, uv: null, tooOld: [] }, { kind: "index", name: "x" }, "/env", LINUX)).toThrow(/Neither/);
  });

  it.skipIf(process.platform === "win32")("finds a real Python >= 3.11 and skips one that is too old", async () => {
    const real = process.env.SIDECAR_PYTHON ?? "python3";
    writeFileSync(path.join(dir, "python3.13"), "#!/bin/sh\necho 3.9.18; echo /old/python\n"); // answers, too old
    writeFileSync(path.join(dir, "python3"), `#!/bin/sh\nexec "${real}" "$@"\n`);
    chmodSync(path.join(dir, "python3.13"), 0o755);
    chmodSync(path.join(dir, "python3"), 0o755);
    const host: HostInfo = { platform: process.platform as "linux", home: path.join(dir, "home"), env: { PATH: dir } };
    const onlyHere = (file: string): boolean => file.startsWith(dir) && [path.join(dir, "python3.13"), path.join(dir, "python3")].includes(file);
    const tools = await detectToolchain(host, onlyHere);
    expect(tools.tooOld.map((p) => p.version)).toEqual(["3.9.18"]);
    expect(tools.python?.argv).toEqual([path.join(dir, "python3")]);
    expect(Number(tools.python?.version.split(".")[1])).toBeGreaterThanOrEqual(11);
    expect(tools.uv).toBeNull();
  });

  it("runs the steps with their output streamed, and stops at the first failure with a hint", async () => {
    const node = process.execPath;
    const lines: string[] = [];
    const titles: string[] = [];
    const steps = [
      { title: "One", argv: [node, "-e", "console.log('made'); console.error('warned')"] },
      { title: "Two", argv: [node, "-e", "console.error('ERROR: No matching distribution found for vault-sidecar'); process.exit(1)"] },
      { title: "Three", argv: [node, "-e", "console.log('never')"] },
    ];
    const err = await runSteps(steps, (l) => lines.push(l), (_i, s) => titles.push(s.title)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InstallError);
    expect((err as InstallError).message).toBe("Two failed (exit code 1).");
    expect((err as InstallError).hint).toMatch(/download the wheel/);
    expect(titles).toEqual(["One", "Two"]);
    expect(lines).toContain("made");
    expect(lines).toContain("warned");
    expect(lines).not.toContain("never");
  });

  it("reads the fix from a failed install's log", () => {
    expect(hintFor(["Failed to establish a new connection"])).toMatch(/PyPI/);
    expect(hintFor(["The virtual environment was not created successfully because ensurepip is not available"])).toMatch(/python3-venv/);
    expect(hintFor(["Permission denied: '/x'"])).toMatch(/not writable/);
    expect(hintFor(["ERROR: Wheel 'vault-sidecar' located at /x/vault_sidecar-0.1.0-py3-none-any.whl is invalid."])).toMatch(/damaged/);
    expect(hintFor(["  Caused by: invalid Zip archive: Could not find EOCD"])).toMatch(/damaged/); // uv's words
    expect(hintFor(["anything"])).toMatch(/pip install --user/);
  });
});

describe("versions", () => {
  it("offers an upgrade when the sidecar is older, a plugin update when it is newer", () => {
    expect(compareVersions("0.10.0", "0.9.1")).toBeGreaterThan(0);
    expect(versionAdvice("0.2.0", "0.2.0")).toBeNull();
    expect(versionAdvice("0.2.0", "0.1.0")).toMatch(/upgrade the sidecar/);
    expect(versionAdvice("0.2.0", "0.3.0")).toMatch(/update the plugin/);
  });
});

describe("the settings' Installation row", () => {
  const base: SidecarSnapshot = { phase: "failed", status: null, progress: null, error: "The sidecar is not installed.\nRun setup.",
    errorKind: "not_found", errorHint: "Run setup.", eventsConnected: false, restartInMs: null, handshake: null };

  it("says what was found: the sidecar's version or why there is none, who installed it, the index folder, Python", () => {
    expect(installLines(base, null, "Python 3.12.3 at /usr/bin/python3.")).toEqual([
      "Sidecar: failed (The sidecar is not installed.)",
      "Not installed by this plugin (the command setting, PATH or python -m sidecar)",
      "Python 3.12.3 at /usr/bin/python3.",
    ]);
    const running: SidecarSnapshot = { ...base, phase: "running", error: null, errorKind: null, errorHint: null,
      status: { index_dir: "/cache/vault-sidecar/notes-1a2b" } as StatusResponse,
      handshake: { rpc_port: 1, mcp_port: null, pid: 42, version: "0.1.0", protocol_version: "1.3.0", mcp_requested_port: null, mcp_note: null } };
    expect(installLines(running, "/data/vault-sidecar/env/bin/sidecar", null)).toEqual([
      "Sidecar 0.1.0 (protocol 1.3.0), pid 42",
      "Installed by this plugin: /data/vault-sidecar/env/bin/sidecar",
      "Index folder: /cache/vault-sidecar/notes-1a2b",
    ]);
  });
});

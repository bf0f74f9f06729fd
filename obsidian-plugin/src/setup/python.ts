// Where Python, uv and an installed sidecar live on each system. Pure: the platform, environment, home
// folder and a file probe come in as arguments, so one test covers Windows, macOS and Linux.
//
// Why the extra folders: Obsidian started from the Dock (macOS) or a desktop icon gets the system's short
// PATH, without Homebrew (/opt/homebrew/bin, /usr/local/bin) or ~/.local/bin. On Windows `pip install
// --user` puts scripts in %APPDATA%\Python\Python3XY\Scripts, the python.org installer puts Python in
// %LOCALAPPDATA%\Programs\Python\Python3XY, and the `py` launcher picks the newest Python 3.

export type Platform = "win32" | "darwin" | "linux";

export interface HostInfo {
  platform: Platform;
  env: Record<string, string | undefined>;
  home: string;
}

/** Does this file exist and may we run it? */
export type FileProbe = (file: string) => boolean;

export const MIN_PYTHON: readonly [number, number] = [3, 11];
/** Python 3 minors worth looking for in versioned folders, newest first. */
const MINORS = [14, 13, 12, 11];

function join(platform: Platform, ...parts: string[]): string {
  const sep = platform === "win32" ? "\\" : "/";
  return parts.map((p, i) => (i === 0 ? p.replace(/[\\/]+$/, "") : p.replace(/^[\\/]+|[\\/]+$/g, ""))).join(sep);
}

function pathDirs(host: HostInfo): string[] {
  const raw = host.env.PATH ?? host.env.Path ?? "";
  return raw.split(host.platform === "win32" ? ";" : ":").filter(Boolean);
}

/** Folders searched after PATH, for `sidecar`, `python3` and `uv`. */
export function extraDirs(host: HostInfo): string[] {
  const { platform, env, home } = host;
  const j = (...p: string[]): string => join(platform, ...p);
  if (platform === "win32") {
    const appData = env.APPDATA ?? j(home, "AppData", "Roaming");
    const local = env.LOCALAPPDATA ?? j(home, "AppData", "Local");
    return [
      ...MINORS.map((m) => j(appData, "Python", `Python3${m}`, "Scripts")), // pip install --user
      ...MINORS.flatMap((m) => [j(local, "Programs", "Python", `Python3${m}`), j(local, "Programs", "Python", `Python3${m}`, "Scripts")]),
      j(local, "Programs", "Python", "Launcher"),
      j(env.SystemRoot ?? "C:\\Windows"), // py.exe for all users
      j(home, ".local", "bin"), // uv, pipx
      j(home, ".cargo", "bin"),
    ];
  }
  const dirs = [j(home, ".local", "bin"), j(home, ".cargo", "bin")];
  if (platform === "darwin") {
    dirs.push("/opt/homebrew/bin", "/usr/local/bin",
      ...MINORS.map((m) => `/Library/Frameworks/Python.framework/Versions/3.${m}/bin`));
  } else {
    dirs.push("/usr/local/bin");
  }
  dirs.push("/usr/bin");
  return dirs;
}

/** Windows' executable extensions (PATHEXT, lower case), after the name as given; none elsewhere. */
function executableExts(host: HostInfo): string[] {
  if (host.platform !== "win32") return [""];
  return ["", ...(host.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";").filter(Boolean).map((e) => e.toLowerCase())];
}

/** Every place `name` may be, PATH first, then `extra` (by default the usual folders, extraDirs). The one
 * search of PATH: the sidecar process, the setup and the settings' Installation row all look through it. */
export function whereToLook(name: string, host: HostInfo, extra: string[] = extraDirs(host)): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  const exts = executableExts(host);
  for (const dir of [...pathDirs(host), ...extra]) {
    for (const ext of exts) {
      const file = join(host.platform, dir, name + ext);
      const key = host.platform === "win32" ? file.toLowerCase() : file;
      if (!seen.has(key)) {
        seen.add(key);
        out.push(file);
      }
    }
  }
  return out;
}

export function findExecutable(name: string, host: HostInfo, probe: FileProbe, extra?: string[]): string | null {
  return whereToLook(name, host, extra).find(probe) ?? null;
}

/** A way to run Python: the argv before the script's own arguments. */
export interface PythonCandidate {
  argv: string[];
}

/** Pythons to try, most likely to be a good one first (each still has to prove its version). The one list:
 * the setup, the settings' Installation row and the sidecar process's `python -m sidecar` all take it. */
export function pythonCandidates(host: HostInfo, probe: FileProbe, extra?: string[]): PythonCandidate[] {
  const out: PythonCandidate[] = [];
  const add = (file: string | null, ...args: string[]): void => {
    if (file && !out.some((c) => c.argv[0] === file && c.argv.length === args.length + 1)) out.push({ argv: [file, ...args] });
  };
  if (host.platform === "win32") {
    add(findExecutable("py", host, probe, extra), "-3"); // the launcher picks the newest Python 3
    add(findExecutable("python", host, probe, extra));
    // Windows' Store alias (WindowsApps\python.exe) opens the Store instead of running: skipped by the
    // version check, which it fails.
  } else {
    for (const m of MINORS) add(findExecutable(`python3.${m}`, host, probe, extra));
    add(findExecutable("python3", host, probe, extra));
    add(findExecutable("python", host, probe, extra));
  }
  return out;
}

/** Parse "3.12.4" (or "Python 3.12.4") into [3, 12]; null when it cannot be read. */
export function parsePythonVersion(text: string): [number, number] | null {
  const m = /(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/** Order of two version strings ("0.10.0" after "0.9.1"; "+" and "-" parts count as further numbers). */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string): number[] => v.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return 0;
}

export function pythonTooOld(version: [number, number]): boolean {
  return version[0] < MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] < MIN_PYTHON[1]);
}

/** Where the plugin keeps its own environment: per user, outside every vault (a venv holds absolute paths
 * and ~150 MB; a vault is often synced to other machines, where it would be broken and in the way). */
export function dataDir(host: HostInfo): string {
  const { platform, env, home } = host;
  if (platform === "win32") return join(platform, env.LOCALAPPDATA ?? join(platform, home, "AppData", "Local"), "vault-sidecar");
  if (platform === "darwin") return join(platform, home, "Library", "Application Support", "vault-sidecar");
  return join(platform, env.XDG_DATA_HOME || join(platform, home, ".local", "share"), "vault-sidecar");
}

export function managedEnvDir(host: HostInfo): string {
  return join(host.platform, dataDir(host), "env");
}

/** The environment's own python and sidecar command. */
export function envExecutable(host: HostInfo, envDir: string, name: "python" | "sidecar"): string {
  return host.platform === "win32" ? join(host.platform, envDir, "Scripts", `${name}.exe`) : join(host.platform, envDir, "bin", name);
}

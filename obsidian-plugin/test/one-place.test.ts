// Rules the plugin keeps in one place: a second copy of one somewhere in src/ fails here.

import { readdirSync, readFileSync } from "fs";
import * as path from "path";
import { describe, expect, it } from "vitest";

const SRC = path.join(__dirname, "..", "src");

/** Every source file, by its path under src/ ("views/pane.ts"). */
function sources(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith(".ts")) out.set(path.relative(SRC, file).split(path.sep).join("/"), readFileSync(file, "utf8"));
    }
  };
  walk(SRC);
  return out;
}

/** The files (other than `owners`) where `pattern` occurs. */
function copiesOf(pattern: RegExp, owners: string[]): string[] {
  return [...sources()].filter(([file, text]) => !owners.includes(file) && pattern.test(text)).map(([file]) => file);
}

describe("one place per rule", () => {
  it("sees the source files", () => {
    expect(sources().has("sidecar.ts")).toBe(true);
  });

  it("what to do about an error is decided by failureOf alone (failure.ts)", () => {
    // Reading an error's hint, the snapshot's start-failure hint or data.hint is deciding the fix again.
    // sidecar-process.ts makes the start errors' hints and sidecar.ts copies them into the snapshot: they make
    // hints, they do not choose which one the user reads.
    expect(copiesOf(/\berr(?:or)?\??\.hint\b|\berrorHint\b|\bdata\??\.hint\b|Restart the sidecar \(/,
      ["failure.ts", "sidecar.ts", "sidecar-process.ts"])).toEqual([]);
  });

  it("PATH is searched, and Python's names listed, only in setup/python.ts; its version asked only in setup/install.ts", () => {
    expect(copiesOf(/\.(?:PATH|Path|PATHEXT)\b|"python3(?:\.\d+)?"|"py"/, ["setup/python.ts"])).toEqual([]);
    expect(copiesOf(/sys\.version_info\[/, ["setup/install.ts"])).toEqual([]);
  });

  it("child processes start in two places: the sidecar (sidecar-process.ts) and every short command (install.ts runChild)", () => {
    const spawns = [...sources()].flatMap(([file, text]) => (text.match(/\bspawn\(/g) ?? []).map(() => file));
    expect(spawns.sort()).toEqual(["setup/install.ts", "sidecar-process.ts"]);
  });

  it("what a band means is the sidecar's caveat (fuse.py CAVEATS), not restated in the plugin", () => {
    expect(copiesOf(/BAND_MEANING|the vault does not answer|nearest notes|least distant|worded differently|(?:strong|weak) evidence|likely match/i, [])).toEqual([]);
  });
});

// @vitest-environment happy-dom
// The first-run "Set up the sidecar" modal, opened for real: it looks for this machine's Python with the real
// detection, says what it found and what it will do, and on Install runs the real steps as child processes
// (here into a throwaway home, with a wheel that is no wheel), then shows the step that failed, its log, the
// hint and a way back.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import * as path from "path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import type { App } from "obsidian";

import { managedEnv } from "../src/setup/install";
import { SetupModal } from "../src/setup/setup-modal";
import { Notice } from "./obsidian-stub"; // the module vitest puts in place of obsidian: it keeps what was shown

const WHEEL = "vault_sidecar-0.1.0-py3-none-any.whl";

let home = "";
let pluginDir = "";
// Where the plugin puts its environment, per system (python.ts dataDir): all pointed into the throwaway home.
const HOME_VARS = ["HOME", "USERPROFILE", "XDG_DATA_HOME", "LOCALAPPDATA"] as const;
let saved: Partial<Record<(typeof HOME_VARS)[number], string>> = {};

beforeEach(() => {
  home = mkdtempSync(path.join(tmpdir(), "vs-setup-home-"));
  pluginDir = path.join(home, "plugin");
  mkdirSync(pluginDir);
  writeFileSync(path.join(pluginDir, WHEEL), "this is not a zip archive");
  saved = Object.fromEntries(HOME_VARS.map((v) => [v, process.env[v]]));
  Object.assign(process.env, { HOME: home, USERPROFILE: home, XDG_DATA_HOME: path.join(home, ".local", "share"),
    LOCALAPPDATA: path.join(home, "AppData", "Local") });
});

afterEach(() => {
  for (const v of HOME_VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
  rmSync(home, { recursive: true, force: true });
  document.body.innerHTML = "";
});

async function until<T>(what: () => T | null | undefined | false, timeoutMs: number): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = what();
    if (got) return got;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms; the modal says: ${document.body.textContent ?? ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function button(name: string): HTMLButtonElement | undefined {
  return [...document.querySelectorAll("button")].find((b) => b.textContent === name);
}

describe("the setup modal, on this machine's real Python", () => {
  it("says what it found and plans, then shows a failed install's step, log and hint, and goes back", async () => {
    const stop = vi.fn(() => Promise.resolve());
    const restart = vi.fn(() => Promise.resolve());
    const modal = new SetupModal({ app: {} as App, pluginDir, reason: "The sidecar is not installed.", stop, restart });
    modal.open();
    expect(modal.titleEl.textContent).toBe("Set up the Vault Sidecar");
    expect(modal.contentEl.textContent).toContain("Looking for an interpreter");

    const found = await until(() => {
      const text = modal.contentEl.querySelector(".vs-setup-found")?.textContent ?? "";
      return text.startsWith("Python ") && text;
    }, 30_000);
    expect(found).toMatch(/^Python 3\.(1[1-9]|[2-9]\d)\.\d+.* at \//);
    const plan = [...modal.contentEl.querySelectorAll(".vs-setup-plan li")].map((li) => li.textContent);
    const envDir = managedEnv().dir;
    expect(envDir.startsWith(home)).toBe(true); // checked before Install creates anything
    expect(plan).toEqual([
      `Create a private environment in ${envDir} (about 150 MB; replaces an earlier one).`,
      `Install the wheel ${path.join(pluginDir, WHEEL)} into it, with its dependencies from PyPI.`,
      "Start it. Nothing else on your system changes; your notes never leave this computer.",
    ]);
    expect(button("Choose a wheel…")).toBeDefined();
    expect(button("Install")?.classList.contains("mod-cta")).toBe(true);

    button("Install")!.click();
    const hint = await until(() => modal.contentEl.querySelector(".vs-setup-hint")?.textContent, 120_000);
    const step = modal.contentEl.querySelector(".vs-setup-step")?.textContent ?? "";
    const log = modal.contentEl.querySelector(".vs-setup-log")?.textContent ?? "";
    expect(step).toMatch(new RegExp(`^Installing ${WHEEL.replace(/\./g, "\\.")} failed \\(exit code \\d+\\)\\.$`));
    expect(log).toContain(`-m venv --clear ${envDir}`); // the environment was created first
    expect(log).toContain(`-m pip install --disable-pip-version-check --upgrade ${path.join(pluginDir, WHEEL)}`);
    expect(log.split("\n").length).toBeGreaterThan(3); // pip's own words, not just the commands
    expect(hint).toMatch(/^The wheel file is damaged/); // pip's "is invalid", read into what to do
    expect(stop).toHaveBeenCalledTimes(1); // the running sidecar is stopped before its environment is replaced
    expect(restart).not.toHaveBeenCalled();
    expect(Notice.shown.some((n) => n.startsWith(`Vault Sidecar: ${step}`))).toBe(true);

    button("Back")!.click();
    expect(modal.contentEl.querySelectorAll(".vs-setup-plan li")).toHaveLength(3);
    expect(button("Install")).toBeDefined();
    modal.close();
  }, 150_000);
});

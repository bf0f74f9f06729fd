// @vitest-environment happy-dom
// The status bar's details window, opened as a user opens it (a click on the status bar) on the plugin's real
// Sidecar running the real sidecar on a copy of the demo vault: what it says of the index, that it follows
// the sidecar live (here: stopped under it), that its three buttons do what they say, and that it lets go of
// the sidecar's events once closed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { App } from "obsidian";

import { StatusBar, statusBarView, type StatusActions } from "../src/status-bar";
import { startRealSidecar, until, type RealSidecar } from "./real-sidecar";

let rs: RealSidecar;

beforeAll(async () => {
  rs = await startRealSidecar("status-modal");
}, 240_000);

afterAll(async () => {
  await rs?.dispose();
}, 60_000);

function recorder(): StatusActions & { seen: string[] } {
  const seen: string[] = [];
  return { seen, reindex: () => seen.push("reindex"), restart: () => seen.push("restart"),
    setup: (reason) => seen.push(`setup:${reason}`) };
}

function button(name: string): HTMLButtonElement {
  const found = [...document.querySelectorAll(".modal button")].find((b) => b.textContent === name);
  if (!(found instanceof HTMLButtonElement)) throw new Error(`no ${name} button; the window says: ${document.body.textContent ?? ""}`);
  return found;
}

function row(label: string): string {
  const th = [...document.querySelectorAll(".vs-status-table th")].find((h) => h.textContent === label);
  return th?.nextElementSibling?.textContent ?? "";
}

describe("the status window, on the real sidecar", () => {
  it("says what the index holds, does what its buttons say, and follows the sidecar until closed", async () => {
    const actions = recorder();
    const bar = document.body.createDiv();
    new StatusBar(bar, {} as App, rs.sidecar, actions);
    bar.click();
    const status = rs.sidecar.snapshot.status;
    expect(status).not.toBeNull();
    expect(document.querySelector(".modal-title")?.textContent).toBe("Vault Sidecar");
    expect(document.querySelector(".vs-status-headline")?.textContent).toBe(statusBarView(rs.sidecar.snapshot).tooltip);
    expect(row("Notes")).toBe(`${status!.notes} notes, ${status!.chunks} chunks`);
    expect(row("Vectors")).toBe(`${status!.chunks_with_vectors} with, 0 without`);
    expect(row("Model")).toMatch(/^minilm-plus-use-m3 \(512 dimensions\)$/);
    expect(row("Vault")).toBe(rs.vault);

    button("Reindex").click();
    button("Restart sidecar").click();
    expect(actions.seen).toEqual(["reindex", "restart"]);

    // Stopped under it: the open window says so without being reopened.
    const modal = document.querySelector(".modal-container");
    await rs.sidecar.stop();
    await until(rs.sidecar, (s) => s.phase === "stopped", 30_000, "the sidecar to stop");
    expect(document.querySelector(".vs-status-headline")?.textContent).toBe(statusBarView(rs.sidecar.snapshot).tooltip);
    expect(statusBarView(rs.sidecar.snapshot).tone).toBe("stopped");

    // "Set up / reinstall" closes the window and opens setup with the reason; closed, it no longer redraws.
    const details = document.querySelector(".vs-status-details");
    button("Set up / reinstall").click();
    expect(actions.seen.at(-1)).toBe("setup:Reinstall the sidecar.");
    expect(modal?.isConnected).toBe(false);
    details?.replaceChildren();
    rs.sidecar.trigger("state", rs.sidecar.snapshot);
    expect(details?.childElementCount).toBe(0);
  }, 120_000);
});

// @vitest-environment happy-dom
// The health view's "Save report as note": the sidecar's own Markdown of the report shown, saved into the
// report folder setting under the report's local time, never over an existing note, then opened.
import { afterEach, describe, expect, it } from "vitest";
import { Notice } from "obsidian";

import type { HealthResponse } from "../src/protocol.gen";
import { HealthView, reportFileName } from "../src/views/health-view";
import { FakeSidecar, fakeApp, fakeContext } from "./fake-app";

// 2026-12-01 14:05:09 local time, whatever the machine's zone (the name is local, as the report's date is).
const GENERATED = new Date(2026, 11, 1, 14, 5, 9).getTime() / 1000;
const MARKDOWN = "---\ngenerated: 2026-12-01T14:05:09+01:00\n---\n# Vault health\n\n70 notes\n";

function report(over: Partial<HealthResponse> = {}): HealthResponse {
  return { generated_at: GENERATED, summary: { notes: 70 }, sections: [], markdown: MARKDOWN, ...over } as HealthResponse;
}

async function open(files: string[], reportsFolder: string, answer: HealthResponse = report()) {
  const fake = fakeApp(files);
  const sidecar = new FakeSidecar({ health: { result: answer } });
  const view = new HealthView({ app: fake.app } as never, fakeContext(fake.app, sidecar, { reportsFolder }));
  document.body.appendChild(view.containerEl);
  await view.onOpen();
  const save = async (): Promise<void> => {
    view.contentEl.querySelector<HTMLButtonElement>("button:not(.mod-cta)")!.click();
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 0));
  };
  return { fake, sidecar, view, save };
}

const shown = (): string[] => (Notice as unknown as { shown: string[] }).shown;

afterEach(() => document.body.empty());

describe("health view: Save report as note", () => {
  it("names the note in local time", () => {
    expect(reportFileName(GENERATED)).toBe("Vault health 2026-12-01 1405");
  });

  it("asks for the sidecar's Markdown and saves exactly it into the report folder, creating the folder, then opens it", async () => {
    const { fake, sidecar, save } = await open([], "Reports/Health/");
    expect(sidecar.calls).toEqual([{ method: "health", params: { markdown: true } }]);
    await save();
    expect(fake.vault.folders).toEqual(new Set(["Reports/Health"]));
    expect(Object.fromEntries(fake.vault.created)).toEqual({ "Reports/Health/Vault health 2026-12-01 1405.md": MARKDOWN });
    expect(fake.workspace.opened).toEqual([{ path: "Reports/Health/Vault health 2026-12-01 1405.md", pane: "tab", line: null }]);
    expect(shown().at(-1)).toBe("Saved Reports/Health/Vault health 2026-12-01 1405.md");
  });

  it("never overwrites: a second save in the same minute gets (2), then (3)", async () => {
    const { fake, save } = await open(["Reports/Vault health 2026-12-01 1405.md"], "Reports");
    fake.vault.folders.add("Reports");
    await save();
    await save();
    expect([...fake.vault.created.keys()]).toEqual(["Reports/Vault health 2026-12-01 1405 (2).md", "Reports/Vault health 2026-12-01 1405 (3).md"]);
    expect(fake.vault.folders).toEqual(new Set(["Reports"]));
  });

  it("saves into the vault root when no folder is set", async () => {
    const { fake, save } = await open([], "");
    await save();
    expect([...fake.vault.created.keys()]).toEqual(["Vault health 2026-12-01 1405.md"]);
    expect(fake.vault.folders.size).toBe(0);
  });

  it("cannot save without the sidecar's Markdown (the button stays off until a report came)", async () => {
    const fake = fakeApp([]);
    const sidecar = new FakeSidecar({ health: { error: { kind: "busy", message: "busy", method: "health" } } });
    const view = new HealthView({ app: fake.app } as never, fakeContext(fake.app, sidecar));
    await view.onOpen();
    expect(view.contentEl.querySelector<HTMLButtonElement>("button:not(.mod-cta)")!.disabled).toBe(true);
    const { fake: other, save } = await open([], "Reports", report({ markdown: undefined }));
    await save();
    expect(other.vault.created.size).toBe(0);
  });

  it("says why when the vault refuses the note", async () => {
    const { fake, save } = await open([], "Reports");
    fake.vault.create = () => Promise.reject(new Error("Disk full"));
    await save();
    expect(shown().at(-1)).toBe("Could not save the report: Disk full");
  });
});

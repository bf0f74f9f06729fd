// @vitest-environment happy-dom
// The agent-edits view as Obsidian drives it: opened on a leaf, fed by a sidecar whose client answers
// edits.list / edits.undo, refreshed by agent-edit and connected events.
import { describe, expect, it } from "vitest";
import { Events, TFile } from "obsidian";

import { RpcError } from "../src/client";
import type { PluginContext } from "../src/context";
import type { EditRecord, EditsResponse } from "../src/protocol.gen";
import { EditsView } from "../src/views/edits-view";
import { EDITS_EMPTY, EDITS_OFF } from "../src/views/edits-render";

function edit(id: number, over: Partial<EditRecord> = {}): EditRecord {
  return { edit: id, at: 1_790_000_000 + id * 60, client: "claude-code 2.0", op: "append", summary: `appended to N${id}.md`,
    path: `N${id}.md`, paths: [`N${id}.md`], undone_by: null, ...over };
}

class FakeSidecar extends Events {
  edits: EditRecord[] = [];
  calls: string[] = [];
  fail: Error | null = null;
  writes = true;
  refuse = new Map<number, RpcError>();
  snapshot = { phase: "running", errorHint: null as string | null };
  client(): Promise<{ call: (method: string, params?: Record<string, unknown>) => Promise<unknown> }> {
    if (this.fail) return Promise.reject(this.fail);
    return Promise.resolve({
      call: (method: string, params: Record<string, unknown> = {}) => {
        this.calls.push(`${method}${typeof params.edit === "number" ? `:${params.edit}` : ""}`);
        if (method === "edits.list") {
          const limit = Number(params.limit ?? 50);
          const offset = Number(params.offset ?? 0);
          const page = this.edits.slice(offset, offset + limit);
          const next = offset + page.length < this.edits.length ? offset + page.length : null;
          return Promise.resolve({ writes_enabled: this.writes, edits: page, total: this.edits.length, next_offset: next } satisfies EditsResponse);
        }
        const id = Number(params.edit);
        const refusal = this.refuse.get(id);
        if (refusal) return Promise.reject(refusal);
        const undo = edit(100 + id, { op: "undo", summary: `undid edit ${id}`, client: "Obsidian (undo)" });
        this.edits = [undo, ...this.edits.map((e) => (e.edit === id ? { ...e, undone_by: undo.edit } : e))];
        return Promise.resolve({ edit: undo.edit, summary: undo.summary, paths: undo.paths });
      },
    });
  }
}

/** A TFile as the vault returns it (the stub's class, so openNoteAt's instanceof holds). */
function fileAt(path: string): TFile {
  const file = new TFile();
  file.path = path;
  return file;
}

async function open(sidecar: FakeSidecar, files: string[] = []): Promise<{ view: EditsView; opened: string[] }> {
  const opened: string[] = [];
  const app = {
    vault: { getFileByPath: (p: string) => (files.includes(p) ? fileAt(p) : null) },
    workspace: { getLeaf: () => ({ openFile: (f: TFile) => { opened.push(f.path); return Promise.resolve(); } }) },
  };
  const ctx = { app, settings: {}, sidecar } as unknown as PluginContext;
  const view = new EditsView({ app } as never, ctx);
  document.body.appendChild(view.containerEl);
  await view.onOpen();
  return { view, opened };
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 0));
const rows = (view: EditsView): string[] =>
  Array.from(view.contentEl.querySelectorAll(".vs-edit-row")).map((r) => r.getAttribute("data-edit") ?? "");

describe("agent edits view", () => {
  it("shows the empty state, then the edits newest first when an agent_edit arrives", async () => {
    const sidecar = new FakeSidecar();
    const { view } = await open(sidecar);
    expect(view.contentEl.querySelector(".vs-message-empty")?.textContent).toBe(EDITS_EMPTY);
    expect(view.getDisplayText()).toBe("Agent edits");
    sidecar.edits = [edit(1), edit(3), edit(2)];
    sidecar.trigger("agent-edit", edit(3));
    await settle();
    expect(rows(view)).toEqual(["3", "2", "1"]);
    sidecar.edits = [edit(4), ...sidecar.edits];
    sidecar.trigger("connected");
    await settle();
    expect(rows(view)).toEqual(["4", "3", "2", "1"]);
    await (view as unknown as { close(): Promise<void> }).close(); // the stub's: what Obsidian does on close
    sidecar.trigger("agent-edit", edit(5));
    await settle();
    expect(sidecar.calls.filter((c) => c === "edits.list")).toHaveLength(3); // no refresh once closed
  });

  it("says writes are off, and how to turn them on, when the sidecar runs read-only", async () => {
    const sidecar = new FakeSidecar();
    sidecar.writes = false; // the sidecar's answer then: no edits
    const { view } = await open(sidecar);
    const message = (): string | null | undefined => view.contentEl.querySelector(".vs-message-empty")?.textContent;
    expect(message()).toBe(EDITS_OFF);
    expect(message()).toContain("Let agents edit notes");
    expect(view.contentEl.querySelector("button.vs-edit-undo")).toBeNull();
    sidecar.writes = true; // turned on: the sidecar restarts with --allow-writes and connects again
    sidecar.trigger("connected");
    await settle();
    expect(message()).toBe(EDITS_EMPTY);
  });

  it("undoes an edit and refreshes; a refused undo keeps the sidecar's reason until Refresh", async () => {
    const sidecar = new FakeSidecar();
    sidecar.edits = [edit(2), edit(1)];
    sidecar.refuse.set(2, new RpcError("conflict", "'N2.md' was changed since; nothing was undone", "edits.undo", -32014));
    const { view } = await open(sidecar, ["N1.md", "N2.md"]);
    const undoButton = (id: string): HTMLButtonElement =>
      view.contentEl.querySelector<HTMLButtonElement>(`.vs-edit-row[data-edit="${id}"] button.vs-edit-undo`)!;
    undoButton("1").click();
    expect(undoButton("1").textContent).toBe("Undoing…");
    expect(undoButton("1").disabled).toBe(true);
    await settle();
    await settle();
    expect(sidecar.calls).toContain("edits.undo:1");
    expect(rows(view)).toEqual(["101", "2", "1"]);
    expect(undoButton("1").disabled).toBe(true);
    expect(view.contentEl.querySelector('.vs-edit-row[data-edit="1"] .vs-edit-status')?.textContent).toBe("Undone by edit 101.");

    undoButton("2").click();
    await settle();
    await settle();
    expect(undoButton("2").disabled).toBe(true);
    expect(view.contentEl.querySelector('.vs-edit-row[data-edit="2"] .vs-edit-refused')?.textContent)
      .toBe("Cannot undo: 'N2.md' was changed since; nothing was undone");
    sidecar.trigger("agent-edit", edit(3)); // an event refresh keeps the reason
    await settle();
    expect(undoButton("2").disabled).toBe(true);
    sidecar.refuse.clear();
    view.contentEl.querySelector<HTMLButtonElement>(".vs-edits-bar button")!.click();
    await settle();
    expect(undoButton("2").disabled).toBe(false);
  });

  it("opens the note from the link and with Enter on a focused row", async () => {
    const sidecar = new FakeSidecar();
    sidecar.edits = [edit(2, { op: "move", summary: "moved A.md to B/A.md", path: "B/A.md", paths: ["A.md", "B/A.md", "C.md"] }), edit(1)];
    const { view, opened } = await open(sidecar, ["B/A.md", "C.md", "N1.md"]);
    const row = view.contentEl.querySelector<HTMLElement>('.vs-edit-row[data-edit="2"]')!;
    expect(row.tabIndex).toBe(0);
    expect(row.querySelector(".vs-edit-path")?.textContent).toBe("A");
    expect(row.querySelector(".vs-more")?.textContent).toBe("+2 other notes");
    row.querySelector<HTMLElement>("a.vs-edit-path")!.click();
    row.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    await settle();
    expect(opened).toEqual(["B/A.md", "B/A.md"]);
  });

  it("pages past 200 with Show more", async () => {
    const sidecar = new FakeSidecar();
    sidecar.edits = Array.from({ length: 260 }, (_, i) => edit(260 - i));
    const { view } = await open(sidecar);
    expect(rows(view)).toHaveLength(50);
    for (let i = 0; i < 4; i++) {
      view.contentEl.querySelector<HTMLButtonElement>("button.vs-edits-more")!.click();
      await settle();
      await settle();
    }
    expect(rows(view)).toHaveLength(250);
    expect(view.contentEl.querySelector("button.vs-edits-more")?.textContent).toBe("Show more (250 of 260)");
    expect(sidecar.calls.filter((c) => c === "edits.list").length).toBe(6); // 1 + 3 + 2 (200 + 50)
  });

  it("shows the error with the fix-it hint when the sidecar cannot start", async () => {
    const sidecar = new FakeSidecar();
    // As Sidecar.client() rejects after a failed start: the start error's fix rides along in data.hint.
    sidecar.fail = new RpcError("transport", "The sidecar command was not found: /x/sidecar", "", null,
      { kind: "start_failed", hint: "Check the command in the plugin settings." });
    sidecar.snapshot = { phase: "failed", errorHint: "Check the command in the plugin settings." };
    const { view } = await open(sidecar);
    expect(view.contentEl.querySelector(".vs-message-error")?.textContent)
      .toBe("The sidecar is not available: The sidecar command was not found: /x/sidecar");
    expect(view.contentEl.querySelector(".vs-message-hint")?.textContent).toBe("Check the command in the plugin settings.");
  });
});

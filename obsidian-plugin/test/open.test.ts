// @vitest-environment happy-dom
// What every list does with its rows (noteActions) and the row menu (showNoteMenu), on a fake app.
import { afterEach, describe, expect, it, vi } from "vitest";
import { Menu, Notice } from "obsidian";

import { noteActions, showNoteMenu } from "../src/open";
import { fakeApp } from "./fake-app";

const NOTE = { path: "Cooking/Sourdough Bread.md", line: 12, subpath: "#Troubleshooting" };
const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 0));
const hoverParent = { hoverPopover: null };

function menuFor(target = NOTE): { fake: ReturnType<typeof fakeApp>; menu: Menu } {
  const fake = fakeApp([NOTE.path, "Home.md"], { path: "Home.md", text: "# Home\n" });
  showNoteMenu(fake.app, target, new MouseEvent("contextmenu", { clientX: 40, clientY: 60 }), "test-source");
  const menu = (Menu as unknown as { shown: Menu | null }).shown;
  if (!menu) throw new Error("no menu shown");
  return { fake, menu };
}

afterEach(() => {
  (Menu as unknown as { shown: Menu | null }).shown = null;
  document.body.empty();
});

describe("showNoteMenu", () => {
  it("offers where to open, insert and copy a link, in two sections, then lets other plugins add theirs", () => {
    const { fake, menu } = menuFor();
    const items = (menu as unknown as { items: { title: string; section: string; icon: string }[] }).items;
    expect(items.map((i) => [i.section, i.title])).toEqual([
      ["open", "Open in new tab"], ["open", "Open to the right"], ["open", "Open in new window"],
      ["link", "Insert link"], ["link", "Copy link"],
    ]);
    expect(items.every((i) => i.icon)).toBe(true);
    const fileMenu = fake.workspace.triggered.find((t) => t.name === "file-menu");
    expect(fileMenu?.data[0]).toBe(menu);
    expect((fileMenu?.data[1] as { path: string }).path).toBe(NOTE.path);
    expect(fileMenu?.data[2]).toBe("test-source");
    expect(document.querySelectorAll(".menu .menu-item")).toHaveLength(5); // shown at the mouse
  });

  it("opens the note at its line in a new tab, to the right, in a new window", async () => {
    for (const [title, pane] of [["Open in new tab", "tab"], ["Open to the right", "split"], ["Open in new window", "window"]] as const) {
      const { fake, menu } = menuFor();
      (menu as unknown as { click(t: string): void }).click(title);
      await settle();
      expect(fake.workspace.opened).toEqual([{ path: NOTE.path, pane, line: 11 }]);
    }
  });

  it("inserts a link to the section at the editor's cursor", () => {
    const { fake, menu } = menuFor();
    (menu as unknown as { click(t: string): void }).click("Insert link");
    expect(fake.editor?.inserted).toEqual(["[[Sourdough Bread#Troubleshooting]]"]);
  });

  it("copies the link and says so", async () => {
    const writeText = vi.fn(() => Promise.resolve());
    vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText } });
    try {
      const { menu } = menuFor();
      (menu as unknown as { click(t: string): void }).click("Copy link");
      await settle();
      expect(writeText).toHaveBeenCalledWith("[[Sourdough Bread#Troubleshooting]]");
      expect((Notice as unknown as { shown: string[] }).shown.at(-1)).toBe("Copied [[Sourdough Bread#Troubleshooting]]");
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it("shows no menu for a note that is gone", () => {
    const fake = fakeApp([]);
    showNoteMenu(fake.app, NOTE, new MouseEvent("contextmenu"), "test-source");
    expect((Menu as unknown as { shown: Menu | null }).shown).toBeNull();
    expect(fake.workspace.triggered).toEqual([]);
  });
});

describe("noteActions", () => {
  const setup = (): { fake: ReturnType<typeof fakeApp>; actions: ReturnType<typeof noteActions> } => {
    const fake = fakeApp([NOTE.path, "Home.md"], { path: "Home.md", text: "# Home\n" });
    return { fake, actions: noteActions(fake.app, "test-source", hoverParent, () => "Home.md") };
  };

  it("opens in the current tab, or a new one on Mod-click, middle-click and Mod+Enter", async () => {
    const { fake, actions } = setup();
    const mod = process.platform === "darwin" ? { metaKey: true } : { ctrlKey: true };
    actions.open(NOTE, new MouseEvent("click"));
    actions.open(NOTE, new MouseEvent("click", mod));
    actions.open(NOTE, new MouseEvent("auxclick", { button: 1 }));
    actions.open({ path: NOTE.path, line: null }, new KeyboardEvent("keydown", { key: "Enter", ...mod }));
    await settle();
    expect(fake.workspace.opened).toEqual([
      { path: NOTE.path, pane: false, line: 11 }, { path: NOTE.path, pane: "tab", line: 11 },
      { path: NOTE.path, pane: "tab", line: 11 }, { path: NOTE.path, pane: "tab", line: null },
    ]);
  });

  it("says so when the note is gone instead of opening nothing", async () => {
    const { fake, actions } = setup();
    actions.open({ path: "Moved.md", line: 3 }, new MouseEvent("click"));
    await settle();
    expect(fake.workspace.opened).toEqual([]);
    expect((Notice as unknown as { shown: string[] }).shown.at(-1)).toMatch(/^Note not found: Moved\.md/);
  });

  it("inserts links, drags the link text, and asks for Obsidian's hover preview with its source", () => {
    const { fake, actions } = setup();
    actions.insertLink?.(NOTE);
    expect(fake.editor?.inserted).toEqual(["[[Sourdough Bread#Troubleshooting]]"]);
    expect(actions.linkText?.(NOTE)).toBe("[[Sourdough Bread#Troubleshooting]]");
    expect(actions.linkText?.({ path: "Gone.md", line: null })).toBeNull();
    const row = document.body.createDiv();
    const evt = new MouseEvent("mouseover");
    actions.hover?.(NOTE, evt, row);
    expect(fake.workspace.triggered).toEqual([{ name: "hover-link", data: [{
      event: evt, source: "test-source", hoverParent, targetEl: row, linktext: `${NOTE.path}#Troubleshooting`, sourcePath: "Home.md",
    }] }]);
  });

  it("tells the user to open a note when there is no editor to insert into", () => {
    const fake = fakeApp([NOTE.path]);
    noteActions(fake.app, "test-source", hoverParent).insertLink?.(NOTE);
    expect((Notice as unknown as { shown: string[] }).shown.at(-1)).toBe("Open a note in the editor to insert a link.");
  });

  it("opens the menu through showNoteMenu with the list's source", () => {
    const { fake, actions } = setup();
    actions.menu?.(NOTE, new MouseEvent("contextmenu"));
    expect(fake.workspace.triggered.map((t) => [t.name, t.data[2]])).toEqual([["file-menu", "test-source"]]);
  });
});

// Commands. No default hotkeys: the README suggests one for the search window.

import { Notice, type Plugin, type WorkspaceLeaf } from "obsidian";

import { EDITS_VIEW, HEALTH_VIEW, RELATED_VIEW, SEARCH_VIEW, type PluginContext } from "./context";
import { SearchModal } from "./views/search-modal";
import { SearchView } from "./views/search-view";
import { describeError } from "./client";
import type { EditRecord } from "./protocol.gen";
import type { Sidecar } from "./sidecar";

/** Show (creating if needed) the view of `type` in the right sidebar or, for health, in a tab. */
export async function revealView(ctx: PluginContext, type: string, where: "right" | "tab"): Promise<WorkspaceLeaf | null> {
  const ws = ctx.app.workspace;
  let leaf = ws.getLeavesOfType(type)[0] ?? null;
  if (!leaf) {
    leaf = where === "right" ? ws.getRightLeaf(false) : ws.getLeaf("tab");
    if (!leaf) return null;
    await leaf.setViewState({ type, active: true });
  }
  await ws.revealLeaf(leaf);
  return leaf;
}

export async function reindex(ctx: PluginContext, full = false): Promise<void> {
  try {
    const client = await ctx.sidecar.client();
    const { started } = await client.call("reindex", { full });
    new Notice(started ? "Reindexing the vault…" : "Indexing is already running.");
  } catch (err) {
    new Notice(`Reindex failed: ${describeError(err)}`);
  }
}

export async function copyMcpConfig(ctx: PluginContext): Promise<void> {
  try {
    const client = await ctx.sidecar.client();
    const config = await client.call("mcp.config");
    await navigator.clipboard.writeText(config.text);
    new Notice(ctx.settings.mcpEnabled
      ? "MCP client configuration copied."
      : "MCP client configuration copied. The HTTP server is off: turn it on in the settings, or use the stdio entries.");
  } catch (err) {
    new Notice(`Could not copy the MCP configuration: ${describeError(err)}`);
  }
}

/** "Agent edited X — Undo": every agent edit, with a button that reverses it (edits.undo). */
export function showAgentEdit(sidecar: Sidecar, edit: EditRecord): Notice {
  const others = edit.paths.length > 1 ? ` (+${edit.paths.length - 1})` : "";
  let undo: HTMLElement | null = null;
  const message = createFragment((f) => {
    f.createSpan({ text: `Agent edited ${edit.path ?? edit.paths[0] ?? "the vault"}${others}: ${edit.summary} ` });
    undo = f.createEl("button", { text: "Undo" });
  });
  const notice = new Notice(message, 15_000);
  (undo as HTMLElement | null)?.addEventListener("click", () => {
    notice.hide();
    void undoAgentEdit(sidecar, edit);
  });
  return notice;
}

async function undoAgentEdit(sidecar: Sidecar, edit: EditRecord): Promise<void> {
  try {
    const client = await sidecar.client();
    await client.call("edits.undo", { edit: edit.edit });
    new Notice(`Undone: ${edit.summary}`);
  } catch (err) {
    new Notice(`Could not undo: ${describeError(err)}`);
  }
}

export function registerCommands(plugin: Plugin, ctx: PluginContext): void {
  plugin.addCommand({
    id: "open-search",
    name: "Search notes",
    callback: () => new SearchModal(ctx.app, ctx).open(),
  });
  plugin.addCommand({
    id: "open-search-pane",
    name: "Open search pane",
    callback: () => void revealView(ctx, SEARCH_VIEW, "right"),
  });
  plugin.addCommand({
    id: "search-selection",
    name: "Search for selection",
    editorCheckCallback: (checking, editor) => {
      const selection = editor.getSelection().trim();
      if (!selection) return false;
      if (!checking) new SearchModal(ctx.app, ctx, selection.replace(/\s+/g, " ").slice(0, 500)).open();
      return true;
    },
  });
  plugin.addCommand({
    id: "search-selection-in-pane",
    name: "Search for selection in the search pane",
    editorCheckCallback: (checking, editor) => {
      const selection = editor.getSelection().trim();
      if (!selection) return false;
      if (!checking) {
        void revealView(ctx, SEARCH_VIEW, "right").then((leaf) => {
          if (leaf?.view instanceof SearchView) void leaf.view.search(selection.replace(/\s+/g, " ").slice(0, 500));
        });
      }
      return true;
    },
  });
  plugin.addCommand({
    id: "open-related-pane",
    name: "Open related notes pane",
    callback: () => void revealView(ctx, RELATED_VIEW, "right"),
  });
  plugin.addCommand({
    id: "open-health-view",
    name: "Open vault health",
    callback: () => void revealView(ctx, HEALTH_VIEW, "tab"),
  });
  plugin.addCommand({
    id: "open-agent-edits",
    name: "Open agent edits",
    callback: () => void revealView(ctx, EDITS_VIEW, "right"),
  });
  plugin.addCommand({
    id: "reindex",
    name: "Reindex the vault",
    callback: () => void reindex(ctx),
  });
  plugin.addCommand({
    id: "reindex-full",
    name: "Rebuild the index from scratch",
    callback: () => void reindex(ctx, true),
  });
  plugin.addCommand({
    id: "copy-mcp-config",
    name: "Copy MCP client configuration",
    callback: () => void copyMcpConfig(ctx),
  });
  plugin.addCommand({
    id: "restart-sidecar",
    name: "Restart the sidecar",
    callback: () => void ctx.sidecar.restart(),
  });
}

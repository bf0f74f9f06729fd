// What the sidebar panes (related, search, health, agent edits) share: their identity in the workspace, the
// pane's layout (the CSS reads .vs-pane > .vs-pane-body) and how a failed call shows in it.

import { ItemView, type HoverPopover, type WorkspaceLeaf } from "obsidian";

import type { PluginContext } from "../context";
import { failureOf } from "../failure";
import { renderError } from "./shared-render";

/** The view type it registers under, its tab title and its icon. */
export interface PaneKind {
  type: string;
  title: string;
  icon: string;
}

export abstract class SidecarPane extends ItemView {
  hoverPopover: HoverPopover | null = null; // rows hover-preview their note (Obsidian reads it)

  constructor(leaf: WorkspaceLeaf, protected readonly ctx: PluginContext, private readonly kind: PaneKind) {
    super(leaf);
  }

  override getViewType(): string {
    return this.kind.type;
  }

  override getDisplayText(): string {
    return this.kind.title;
  }

  override getIcon(): string {
    return this.kind.icon;
  }

  /** Empty the pane, build what stands above its body (`top`), and return the body. */
  protected layOut(cls: string | null, top: (root: HTMLElement) => void): HTMLElement {
    const root = this.contentEl;
    root.empty();
    root.addClass("vs-pane", ...(cls ? [cls] : []));
    top(root);
    return root.createDiv({ cls: "vs-pane-body" });
  }

  /** The error in place of `el`, with the fix the sidecar gave (or its start failure's). */
  protected showError(el: HTMLElement, err: unknown): void {
    const { message, hint } = failureOf(err, this.ctx.sidecar.snapshot);
    renderError(el, message, hint);
  }
}

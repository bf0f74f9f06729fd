// The status bar item: starting / indexing n/m / loading model / ready (N notes) / degraded (lexical only) / error.
// Clicking it opens the details (status, last error, recent sidecar output).

import { Modal, Setting, type App } from "obsidian";

import type { Sidecar, SidecarSnapshot } from "./sidecar";
import { renderStatusDetails } from "./views/status-render";

export type StatusTone = "starting" | "indexing" | "ready" | "degraded" | "error" | "stopped";

export interface StatusBarView {
  text: string;
  tone: StatusTone;
  tooltip: string;
}

/** What the status bar says for a snapshot. Pure. */
export function statusBarView(s: SidecarSnapshot): StatusBarView {
  const prefix = "Sidecar: ";
  switch (s.phase) {
    case "stopped":
      return { text: `${prefix}stopped`, tone: "stopped", tooltip: "The sidecar is not running." };
    case "failed":
      return { text: `${prefix}error`, tone: "error", tooltip: firstLine(s.error) ?? "The sidecar could not start." };
    case "restarting":
      return {
        text: `${prefix}restarting`, tone: "error",
        tooltip: `${firstLine(s.error) ?? "The sidecar stopped."} Retrying in ${Math.ceil((s.restartInMs ?? 0) / 1000)} s.`,
      };
    case "starting":
      return { text: `${prefix}starting`, tone: "starting", tooltip: "Starting the sidecar…" };
    case "running":
      break;
  }
  const p = s.progress;
  if (p && p.phase !== "done") {
    const count = p.total > 0 ? ` ${p.done}/${p.total}` : "";
    return { text: `${prefix}indexing${count}`, tone: "indexing", tooltip: `Indexing (${p.phase})…` };
  }
  const st = s.status;
  if (!st) return { text: `${prefix}starting`, tone: "starting", tooltip: "Connected; waiting for status…" };
  if (st.model.loading) {  // the first seconds after start: keyword search works, notes are indexed without vectors
    return {
      text: `${prefix}loading model (lexical only)`, tone: "degraded",
      tooltip: "The embedding model is loading: search uses keywords until it is ready, in a second or two.",
    };
  }
  if (st.building) return { text: `${prefix}indexing`, tone: "indexing", tooltip: "Indexing…" };
  if (!st.vectors_available) {
    return {
      text: `${prefix}degraded (lexical only)`, tone: "degraded",
      tooltip: st.model.error ?? "No embedding model: search uses keywords only.",
    };
  }
  const notes = `${st.notes} note${st.notes === 1 ? "" : "s"}`;
  return { text: `${prefix}ready (${notes})`, tone: "ready", tooltip: `${notes}, ${st.chunks} chunks indexed.` };
}

function firstLine(text: string | null): string | null {
  return text ? (text.split("\n")[0] ?? null) : null;
}

export interface StatusActions {
  reindex: () => void;
  restart: () => void;
  /** Open the setup modal (install, reinstall or upgrade the sidecar). */
  setup: (reason: string) => void;
}

export class StatusBar {
  private readonly el: HTMLElement;

  constructor(el: HTMLElement, private readonly app: App, private readonly sidecar: Sidecar,
    private readonly actions: StatusActions) {
    this.el = el;
    this.el.addClass("vs-status-bar", "mod-clickable");
    this.el.setAttr("role", "button");
    this.el.addEventListener("click", () => this.showDetails());
    this.render(sidecar.snapshot);
  }

  render(snapshot: SidecarSnapshot): void {
    const view = statusBarView(snapshot);
    this.el.setText(view.text);
    this.el.setAttr("aria-label", view.tooltip);
    this.el.setAttr("data-tooltip-position", "top");
    for (const tone of ["starting", "indexing", "ready", "degraded", "error", "stopped"]) {
      this.el.toggleClass(`vs-tone-${tone}`, tone === view.tone);
    }
  }

  showDetails(): void {
    new StatusModal(this.app, this.sidecar, this.actions).open();
  }
}

export class StatusModal extends Modal {
  private off: (() => void) | null = null;

  constructor(app: App, private readonly sidecar: Sidecar,
    private readonly actions: StatusActions) {
    super(app);
  }

  override onOpen(): void {
    this.titleEl.setText("Vault Sidecar");
    const body = this.contentEl.createDiv();
    // s.error is the message, hint and command; the sidecar's output follows once, as its own block.
    const draw = (s: SidecarSnapshot): void =>
      renderStatusDetails(body, { headline: statusBarView(s).tooltip, status: s.status, error: s.error, stderr: this.sidecar.stderr });
    draw(this.sidecar.snapshot);
    const ref = this.sidecar.on("state", (s) => draw(s as SidecarSnapshot));
    this.off = () => this.sidecar.offref(ref);
    void this.sidecar.refreshStatus();
    new Setting(this.contentEl)
      .addButton((b) => b.setButtonText("Reindex").onClick(() => this.actions.reindex()))
      .addButton((b) => b.setButtonText("Restart sidecar").onClick(() => this.actions.restart()))
      .addButton((b) => b.setButtonText("Set up / reinstall").onClick(() => {
        this.close();
        this.actions.setup(this.sidecar.snapshot.error?.split("\n")[0] ?? "Reinstall the sidecar.");
      }));
  }

  override onClose(): void {
    this.off?.();
    this.contentEl.empty();
  }
}

// What the user is told about the sidecar's life, as Obsidian Notices with the fix: a start failure
// (with "Set up" where installing fixes it; the setup modal opens by itself the first time nothing is
// installed), a version that differs from the plugin's (with "Upgrade"), and MCP on another port.

import { Notice, type Plugin } from "obsidian";

import { failureOf } from "../failure";
import type { Sidecar } from "../sidecar";
import type { Handshake, SidecarStartError } from "../sidecar-process";
import { compareVersions } from "./python";
import { SetupModal } from "./setup-modal";

/** Start failures that installing (or reinstalling) the sidecar fixes. */
const SETUP_FIXES: ReadonlySet<string> = new Set(["not_found", "python_too_old", "protocol_mismatch"]);

export interface NoticeHost {
  plugin: Plugin;
  sidecar: Sidecar;
  /** The plugin's version (manifest.json); the sidecar's should be the same. */
  version: string;
  openSetup: (reason: string) => void;
}

export interface SetupWiring {
  plugin: Plugin;
  sidecar: Sidecar;
  /** The plugin's folder on disk (a wheel beside it is installed first), or null. */
  pluginDir: string | null;
  restart: () => Promise<void>;
}

/** The setup modal, its command, and the Notices; returns how to open the modal (settings' Reinstall). */
export function registerSetup(w: SetupWiring): (reason: string) => void {
  const openSetup = (reason: string): void =>
    new SetupModal({ app: w.plugin.app, pluginDir: w.pluginDir, reason, restart: w.restart, stop: () => w.sidecar.stop() }).open();
  w.plugin.addCommand({
    id: "setup-sidecar",
    name: "Set up the sidecar (install or upgrade)",
    callback: () => openSetup("Installs the sidecar this plugin uses into its own environment."),
  });
  watchSidecar({ plugin: w.plugin, sidecar: w.sidecar, version: w.plugin.manifest.version, openSetup });
  return openSetup;
}

/** "Upgrade" when the sidecar is older, "update the plugin" when it is newer; null when they agree. */
export function versionAdvice(plugin: string, sidecar: string): string | null {
  if (plugin === sidecar || sidecar === "unknown") return null;
  const older = compareVersions(sidecar, plugin) < 0;
  return older
    ? `The sidecar is version ${sidecar}, this plugin ${plugin}: upgrade the sidecar to match.`
    : `The sidecar is version ${sidecar}, newer than this plugin (${plugin}): update the plugin (Settings → Community plugins), or install the sidecar matching it.`;
}

function noticeWithButton(text: string, button: string | null, onClick: () => void, ms = 20_000): Notice {
  let btn: HTMLElement | null = null;
  const notice = new Notice(createFragment((f) => {
    f.createDiv({ text });
    if (button) btn = f.createEl("button", { text: button });
  }), ms);
  (btn as HTMLElement | null)?.addEventListener("click", () => {
    notice.hide();
    onClick();
  });
  return notice;
}

export function watchSidecar(host: NoticeHost): void {
  const { plugin, sidecar } = host;
  let lastFailure = "";
  let setupShown = false;
  plugin.registerEvent(sidecar.on("failed", (e) => {
    const err = e as SidecarStartError;
    const { message, hint } = failureOf(err);
    const text = `Vault Sidecar: ${message}${hint ? `\n${hint}` : ""}`;
    if (text === lastFailure) return; // the same failure again (a restart from the settings): once is enough
    lastFailure = text;
    const fixable = SETUP_FIXES.has(err.kind);
    if (err.kind === "not_found" && !setupShown) {
      setupShown = true;
      host.openSetup(err.message);
    }
    noticeWithButton(text, fixable ? "Set up the sidecar" : null, () => host.openSetup(err.message));
  }));
  plugin.registerEvent(sidecar.on("handshake", (h) => {
    lastFailure = "";
    const hs = h as Handshake;
    if (hs.mcp_note) new Notice(`Vault Sidecar: ${hs.mcp_note}. Copy the MCP client configuration again for agents.`, 15_000);
    const advice = versionAdvice(host.version, hs.version);
    if (advice) {
      const older = compareVersions(hs.version, host.version) < 0;
      noticeWithButton(`Vault Sidecar: ${advice}`, older ? "Upgrade" : null, () => host.openSetup(advice));
    }
  }));
}

// The settings' "Installation" row: what was found (Python and its version, the sidecar's version and
// where it runs from, the index folder), with "Test connection" and "Reinstall".

import { Notice, type Setting } from "obsidian";

import { failureOf } from "../failure";
import type { Sidecar } from "../sidecar";
import { detectToolchain, installedSidecar } from "./install";
import { describeToolchain } from "./setup-modal";

export interface InstallInfoHost {
  sidecar: Sidecar;
  openSetup(reason: string): void;
}

/** The lines the row shows, from what is known now. Pure. */
export function installLines(sidecar: Sidecar["snapshot"], managed: string | null, python: string | null): string[] {
  const hs = sidecar.handshake;
  const st = sidecar.status;
  const lines = [
    hs ? `Sidecar ${hs.version} (protocol ${hs.protocol_version}), pid ${hs.pid}` : `Sidecar: ${sidecar.phase}${sidecar.error ? ` (${sidecar.error.split("\n")[0] ?? ""})` : ""}`,
    managed ? `Installed by this plugin: ${managed}` : "Not installed by this plugin (the command setting, PATH or python -m sidecar)",
  ];
  if (st) lines.push(`Index folder: ${st.index_dir}`);
  if (python) lines.push(python);
  return lines;
}

export function renderInstallInfo(setting: Setting, host: InstallInfoHost): void {
  const draw = (python: string | null): void => {
    setting.setDesc(createFragment((f) => {
      for (const line of installLines(host.sidecar.snapshot, installedSidecar(), python)) f.createDiv({ text: line });
    }));
  };
  draw("Looking for Python…");
  void detectToolchain().then((tools) => draw(describeToolchain(tools)));
  setting
    .addButton((b) => b.setButtonText("Test connection").onClick(() => void testConnection(host.sidecar)))
    .addButton((b) => b.setButtonText("Reinstall").onClick(() => host.openSetup("Reinstalls the sidecar into this plugin's own environment.")));
}

export async function testConnection(sidecar: Sidecar): Promise<void> {
  try {
    const client = await sidecar.client();
    const st = await client.call("status");
    new Notice(`Vault Sidecar: connected to sidecar ${st.version}: ${st.notes} notes indexed in ${st.index_dir}`
      + (st.mcp.note ? `\n${st.mcp.note}` : ""));
  } catch (err) {
    const { message, hint } = failureOf(err);
    new Notice(`Vault Sidecar: no connection. ${message}${hint ? `\n${hint}` : ""}`, 15_000);
  }
}

// Vault Sidecar: lifecycle only. Everything else lives in its own module.

import * as path from "path";
import { FileSystemAdapter, Notice, Plugin } from "obsidian";

import { copyMcpConfig, registerCommands, reindex, showAgentEdit } from "./commands";
import { registerHoverSources } from "./open";
import { EDITS_VIEW, HEALTH_VIEW, RELATED_VIEW, SEARCH_VIEW, type PluginContext } from "./context";
import { RESTART_KEYS, SidecarSettingTab, exclusionList, normalizeSettings, type SettingsHost, type SidecarSettings } from "./settings";
import type { EditRecord } from "./protocol.gen";
import { registerSetup } from "./setup/notices";
import { Sidecar, type SidecarSnapshot } from "./sidecar";
import { StatusBar } from "./status-bar";
import { EditsView } from "./views/edits-view";
import { HealthView } from "./views/health-view";
import { RelatedView } from "./views/related-view";
import { SearchView } from "./views/search-view";

export default class VaultSidecarPlugin extends Plugin implements SettingsHost, PluginContext {
  declare settings: SidecarSettings;
  sidecar!: Sidecar;
  private restartTimer: number | null = null;
  openSetup: (reason: string) => void = () => undefined;

  override async onload(): Promise<void> {
    this.settings = normalizeSettings(await this.loadData());

    const adapter = this.app.vault.adapter;
    const vaultPath = adapter instanceof FileSystemAdapter ? adapter.getBasePath() : "";
    this.sidecar = new Sidecar(() => ({
      vaultPath,
      command: this.settings.sidecarCommand,
      mcp: { enabled: this.settings.mcpEnabled, port: this.settings.mcpPort, allowWrites: this.settings.mcpAllowWrites },
      exclude: exclusionList(this.settings),
    }));

    this.openSetup = registerSetup({ plugin: this, sidecar: this.sidecar, restart: () => this.restartSidecar(),
      pluginDir: vaultPath && this.manifest.dir ? path.join(vaultPath, this.manifest.dir) : null });
    const statusBar = new StatusBar(this.addStatusBarItem(), this.app, this.sidecar, {
      reindex: () => void reindex(this),
      restart: () => void this.restartSidecar(),
      setup: (reason) => this.openSetup(reason),
    });
    this.registerEvent(this.sidecar.on("state", (s) => statusBar.render(s as SidecarSnapshot)));
    this.registerEvent(this.sidecar.on("agent-edit", (edit) => showAgentEdit(this.sidecar, edit as EditRecord)));

    this.registerView(RELATED_VIEW, (leaf) => new RelatedView(leaf, this));
    this.registerView(SEARCH_VIEW, (leaf) => new SearchView(leaf, this));
    this.registerView(HEALTH_VIEW, (leaf) => new HealthView(leaf, this));
    this.registerView(EDITS_VIEW, (leaf) => new EditsView(leaf, this));
    registerHoverSources(this);
    registerCommands(this, this);
    this.addSettingTab(new SidecarSettingTab(this.app, this));

    if (!vaultPath) {
      new Notice("Vault Sidecar needs a vault on the local file system.");
      return;
    }
    this.app.workspace.onLayoutReady(() => this.sidecar.start());
  }

  override onunload(): void {
    if (this.restartTimer !== null) window.clearTimeout(this.restartTimer);
    void this.sidecar.stop();
  }

  async updateSetting<K extends keyof SidecarSettings>(key: K, value: SidecarSettings[K]): Promise<void> {
    if (this.settings[key] === value) return;
    this.settings = { ...this.settings, [key]: value };
    await this.saveData(this.settings);
    if (RESTART_KEYS.has(key)) {
      // Typing a command or a port fires on every key: restart once the user pauses.
      if (this.restartTimer !== null) window.clearTimeout(this.restartTimer);
      this.restartTimer = window.setTimeout(() => {
        this.restartTimer = null;
        void this.restartSidecar();
      }, 1500);
    }
  }

  async restartSidecar(): Promise<void> {
    await this.sidecar.restart();
  }

  async copyMcpConfig(): Promise<void> {
    await copyMcpConfig(this);
  }
}

// What views and commands need from the plugin (kept as an interface so they do not import main.ts).

import type { App } from "obsidian";

import type { SidecarSettings } from "./settings";
import type { Sidecar } from "./sidecar";

export interface PluginContext {
  app: App;
  settings: SidecarSettings;
  sidecar: Sidecar;
}

export const RELATED_VIEW = "vault-sidecar-related";
export const SEARCH_VIEW = "vault-sidecar-search";
export const HEALTH_VIEW = "vault-sidecar-health";
export const EDITS_VIEW = "vault-sidecar-edits";

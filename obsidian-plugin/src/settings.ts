// Settings, declared once (SETTING_SPECS) and shown both through Obsidian 1.13's declarative settings
// (getSettingDefinitions, searchable) and through display() for older versions.

import { PluginSettingTab, Setting, type App, type Plugin, type SettingDefinitionItem, type SettingGroupItem } from "obsidian";

import { RELATED_LIMIT_MAX, RELATED_LIMIT_MIN, SEARCH_LIMIT_MAX, SEARCH_LIMIT_MIN, type SearchMode } from "./protocol.gen";
import { renderInstallInfo, type InstallInfoHost } from "./setup/settings-info";
import { MODE_LABELS } from "./views/modes";

export interface SidecarSettings {
  /** Command that starts the sidecar; empty = auto-detect (`sidecar` on PATH, then `python3 -m sidecar`). */
  sidecarCommand: string;
  /** Extra gitignore-style exclusions, one per line, on top of .indexignore and Obsidian's excluded files. */
  exclusions: string;
  relatedDebounceMs: number;
  relatedLimit: number;
  relatedShowLinked: boolean;
  searchMode: SearchMode;
  searchLimit: number;
  mcpEnabled: boolean;
  mcpPort: number;
  /** Let agents edit notes (`--allow-writes`); every edit is kept in a history and can be undone. */
  mcpAllowWrites: boolean;
  /** Folder "Save report as note" writes into; never indexed (so a saved report never changes the next one). */
  reportsFolder: string;
}

export const DEFAULT_SETTINGS: SidecarSettings = {
  sidecarCommand: "",
  exclusions: "",
  relatedDebounceMs: 800,
  relatedLimit: 10,
  relatedShowLinked: true,
  searchMode: "hybrid",
  searchLimit: 20,
  mcpEnabled: false,
  mcpPort: 8765,
  mcpAllowWrites: false,
  reportsFolder: "Sidecar reports",
};

/** Settings whose change needs a sidecar restart. */
export const RESTART_KEYS: ReadonlySet<keyof SidecarSettings> = new Set(["sidecarCommand", "exclusions", "mcpEnabled", "mcpPort", "mcpAllowWrites", "reportsFolder"]);


/** Coerce stored data (possibly from an older version) into valid settings. */
export function normalizeSettings(data: unknown): SidecarSettings {
  const raw = (data && typeof data === "object" ? data : {}) as Partial<Record<keyof SidecarSettings, unknown>>;
  const str = (v: unknown, d: string): string => (typeof v === "string" ? v : d);
  const bool = (v: unknown, d: boolean): boolean => (typeof v === "boolean" ? v : d);
  const int = (v: unknown, d: number, min: number, max: number): number =>
    typeof v === "number" && Number.isFinite(v) ? Math.min(max, Math.max(min, Math.round(v))) : d;
  const d = DEFAULT_SETTINGS;
  return {
    sidecarCommand: str(raw.sidecarCommand, d.sidecarCommand).trim(),
    exclusions: str(raw.exclusions, d.exclusions),
    relatedDebounceMs: int(raw.relatedDebounceMs, d.relatedDebounceMs, 100, 10_000),
    relatedLimit: int(raw.relatedLimit, d.relatedLimit, RELATED_LIMIT_MIN, RELATED_LIMIT_MAX),
    relatedShowLinked: bool(raw.relatedShowLinked, d.relatedShowLinked),
    searchMode: typeof raw.searchMode === "string" && raw.searchMode in MODE_LABELS ? (raw.searchMode as SearchMode) : d.searchMode,
    searchLimit: int(raw.searchLimit, d.searchLimit, SEARCH_LIMIT_MIN, SEARCH_LIMIT_MAX),
    mcpEnabled: bool(raw.mcpEnabled, d.mcpEnabled),
    mcpPort: int(raw.mcpPort, d.mcpPort, 1024, 65535),
    mcpAllowWrites: bool(raw.mcpAllowWrites, d.mcpAllowWrites),
    reportsFolder: reportsFolder(raw.reportsFolder, d.reportsFolder),
  };
}

export function exclusionList(settings: SidecarSettings): string[] {
  const own = settings.exclusions.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  // Saved health reports are never indexed: not in search, related notes or the next report.
  return settings.reportsFolder ? [...own, `/${settings.reportsFolder}/`] : own;
}

/** A vault-relative folder without leading/trailing slashes; "" (the vault root) only if asked for. */
function reportsFolder(v: unknown, d: string): string {
  if (typeof v !== "string") return d;
  return v.trim().replace(/\\/g, "/").replace(/^\/+|\/+$/g, "").split("/").filter((p) => p && p !== "." && p !== "..").join("/");
}

/** What the settings tab needs from the plugin. */
export interface SettingsHost extends Plugin, InstallInfoHost {
  settings: SidecarSettings;
  updateSetting<K extends keyof SidecarSettings>(key: K, value: SidecarSettings[K]): Promise<void>;
  copyMcpConfig(): Promise<void>;
  restartSidecar(): Promise<void>;
}

type Spec =
  | { kind: "text" | "textarea"; key: "sidecarCommand" | "exclusions" | "reportsFolder"; name: string; desc: string; placeholder: string }
  | { kind: "number"; key: "relatedDebounceMs" | "relatedLimit" | "searchLimit" | "mcpPort"; name: string; desc: string; min: number; max: number }
  | { kind: "toggle"; key: "relatedShowLinked" | "mcpEnabled" | "mcpAllowWrites"; name: string; desc: string }
  | { kind: "dropdown"; key: "searchMode"; name: string; desc: string; options: Record<string, string> }
  | { kind: "action"; name: string; desc: string; button: string; run: (host: SettingsHost) => Promise<void> }
  | { kind: "render"; name: string; desc: string; render: (setting: Setting, host: SettingsHost) => void };

interface Group {
  heading: string;
  items: Spec[];
}

export const SETTING_SPECS: Group[] = [
  {
    heading: "Sidecar",
    items: [
      { kind: "render", name: "Installation", desc: "What was found: Python, the sidecar's version, the index folder.",
        render: (setting, host) => renderInstallInfo(setting, host) },
      { kind: "text", key: "sidecarCommand", name: "Sidecar command",
        desc: "Leave empty to use the sidecar this plugin installed (Reinstall above), else `sidecar` from your PATH, else `python3 -m sidecar`. An absolute path is safest.",
        placeholder: "/usr/local/bin/sidecar" },
      { kind: "textarea", key: "exclusions", name: "Extra exclusions",
        desc: "Gitignore-style patterns, one per line, that are never indexed (on top of .indexignore and Obsidian's excluded files).",
        placeholder: "Private/\n*.excalidraw.md" },
      { kind: "action", name: "Restart the sidecar", desc: "Stop it and start it again with the current settings.",
        button: "Restart", run: (host) => host.restartSidecar() },
    ],
  },
  {
    heading: "Related notes",
    items: [
      { kind: "number", key: "relatedDebounceMs", name: "Update delay (ms)",
        desc: "How long to wait after you stop typing before the related pane updates.", min: 100, max: 10_000 },
      { kind: "number", key: "relatedLimit", name: "Number of related notes", desc: "At most this many rows.", min: RELATED_LIMIT_MIN, max: RELATED_LIMIT_MAX },
      { kind: "toggle", key: "relatedShowLinked", name: "Show already-linked notes",
        desc: "Keep notes the current note already links to (they are marked)." },
    ],
  },
  {
    heading: "Search",
    items: [
      { kind: "dropdown", key: "searchMode", name: "Default mode",
        desc: "Hybrid: keywords and meaning together. Keywords: exact words only. Meaning: similar ideas, other words.", options: MODE_LABELS },
      { kind: "number", key: "searchLimit", name: "Number of results", desc: "At most this many results.", min: SEARCH_LIMIT_MIN, max: SEARCH_LIMIT_MAX },
    ],
  },
  {
    heading: "Vault health",
    items: [
      { kind: "text", key: "reportsFolder", name: "Report folder",
        desc: "Where \"Save report as note\" puts reports. Nothing in it is indexed: saved reports stay out of search, related notes and the next report.",
        placeholder: "Sidecar reports" },
    ],
  },
  {
    heading: "Agents (MCP)",
    items: [
      { kind: "toggle", key: "mcpEnabled", name: "Serve MCP over HTTP",
        desc: "Let local AI agents search this vault while Obsidian runs. Only this computer can connect, with a token." },
      { kind: "number", key: "mcpPort", name: "MCP port", desc: "Local port of the MCP server. When it is in use (another vault's sidecar has it), a free port is used instead and a notice says which; give each vault its own port to keep agent configurations stable.", min: 1024, max: 65535 },
      { kind: "toggle", key: "mcpAllowWrites", name: "Let agents edit notes",
        desc: "Agents may create, edit, move and delete notes (deleted notes go to .trash). Every edit is kept in a history; a notice offers Undo." },
      { kind: "action", name: "Copy client configuration",
        desc: "Copies ready-to-paste MCP settings for Claude Code, Cursor and Codex.",
        button: "Copy", run: (host) => host.copyMcpConfig() },
    ],
  },
];

export class SidecarSettingTab extends PluginSettingTab {
  private readonly host: SettingsHost;

  constructor(app: App, host: SettingsHost) {
    super(app, host);
    this.host = host;
  }

  // Obsidian 1.13+: declarative, searchable settings.
  override getSettingDefinitions(): SettingDefinitionItem[] {
    return SETTING_SPECS.map((group) => ({
      type: "group" as const,
      heading: group.heading,
      items: group.items.map((spec) => this.definition(spec)),
    }));
  }

  private definition(spec: Spec): SettingGroupItem {
    switch (spec.kind) {
      case "text":
      case "textarea":
        return { name: spec.name, desc: spec.desc, control: { type: spec.kind, key: spec.key, placeholder: spec.placeholder } };
      case "number":
        return {
          name: spec.name, desc: spec.desc,
          control: { type: "number", key: spec.key, min: spec.min, max: spec.max, defaultValue: DEFAULT_SETTINGS[spec.key] },
        };
      case "toggle":
        return { name: spec.name, desc: spec.desc, control: { type: "toggle", key: spec.key } };
      case "dropdown":
        return { name: spec.name, desc: spec.desc, control: { type: "dropdown", key: spec.key, options: spec.options } };
      case "action":
        return { name: spec.name, desc: spec.desc, action: () => void spec.run(this.host) };
      case "render":
        return { name: spec.name, desc: spec.desc, render: (setting) => spec.render(setting, this.host) };
    }
  }

  override getControlValue(key: string): unknown {
    return this.host.settings[key as keyof SidecarSettings];
  }

  override async setControlValue(key: string, value: unknown): Promise<void> {
    const next = normalizeSettings({ ...this.host.settings, [key]: value });
    const k = key as keyof SidecarSettings;
    await this.host.updateSetting(k, next[k]);
  }

  // Before 1.13: the classic settings API, built from the same specs.
  override display(): void {
    const { containerEl } = this;
    containerEl.empty();
    for (const group of SETTING_SPECS) {
      new Setting(containerEl).setName(group.heading).setHeading();
      for (const spec of group.items) this.classic(containerEl, spec);
    }
  }

  private classic(containerEl: HTMLElement, spec: Spec): void {
    const setting = new Setting(containerEl).setName(spec.name).setDesc(spec.desc);
    const s = this.host.settings;
    switch (spec.kind) {
      case "text":
        setting.addText((t) => t.setPlaceholder(spec.placeholder).setValue(s[spec.key])
          .onChange((v) => void this.host.updateSetting(spec.key, v.trim())));
        break;
      case "textarea":
        setting.addTextArea((t) => t.setPlaceholder(spec.placeholder).setValue(s[spec.key])
          .onChange((v) => void this.host.updateSetting(spec.key, v)));
        break;
      case "number":
        setting.addText((t) => {
          t.inputEl.type = "number";
          t.setValue(String(s[spec.key])).onChange((v) => {
            const n = Number(v);
            if (v.trim() && Number.isFinite(n) && n >= spec.min && n <= spec.max) {
              void this.host.updateSetting(spec.key, Math.round(n));
            }
          });
        });
        break;
      case "toggle":
        setting.addToggle((t) => t.setValue(s[spec.key]).onChange((v) => void this.host.updateSetting(spec.key, v)));
        break;
      case "dropdown":
        setting.addDropdown((d) => d.addOptions(spec.options).setValue(s[spec.key])
          .onChange((v) => void this.host.updateSetting(spec.key, v as SearchMode)));
        break;
      case "action":
        setting.addButton((b) => b.setButtonText(spec.button).onClick(() => void spec.run(this.host)));
        break;
      case "render":
        spec.render(setting, this.host);
        break;
    }
  }
}

// "Set up the sidecar": says what was found and what will happen, then on one click creates the
// plugin's own environment and installs the sidecar into it, showing each step and the log.

import { Modal, Notice, Setting, type App } from "obsidian";

import {
  chooseSource, detectToolchain, InstallError, installSteps, managedEnv, runSteps, type InstallSource, type Toolchain,
} from "./install";
import { MIN_PYTHON } from "./python";

export interface SetupHost {
  app: App;
  /** The plugin's own folder (where the release zip puts the wheel), or null when unknown. */
  pluginDir: string | null;
  /** Why the modal opened, shown first ("The sidecar is not installed." / "Version 0.1 is older…"). */
  reason: string;
  /** Stop the running sidecar first: the environment it runs from is replaced (Windows locks its files). */
  stop: () => Promise<void>;
  /** Start the freshly installed sidecar. */
  restart: () => Promise<void>;
  /** How Python and uv are looked for (default: detectToolchain, this machine's). */
  detect?: () => Promise<Toolchain>;
}

/** What the toolchain means for the user, in one sentence. */
export function describeToolchain(tools: Toolchain): string {
  if (tools.python) return `Python ${tools.python.version} at ${tools.python.executable}${tools.uv ? ` (uv at ${tools.uv} too)` : ""}.`;
  if (tools.uv) return `No Python ${MIN_PYTHON.join(".")}+ found, but uv at ${tools.uv}: it brings its own Python.`;
  const old = tools.tooOld.map((p) => `${p.version} (${p.executable})`).join(", ");
  return `No Python ${MIN_PYTHON.join(".")} or newer was found${old ? `; too old: ${old}` : ""}.`;
}

export function describeSource(source: InstallSource): string {
  return source.kind === "wheel" ? `the wheel ${source.file}`
    : `the package "${source.name}" from your package index (PyPI unless pip is configured otherwise)`;
}

export class SetupModal extends Modal {
  private tools: Toolchain | null = null;
  private picked: string | null = null;
  private running = false;

  constructor(private readonly host: SetupHost) {
    super(host.app);
  }

  override onOpen(): void {
    this.titleEl.setText("Set up the Vault Sidecar");
    this.contentEl.addClass("vs-setup");
    this.contentEl.createEl("p", { text: this.host.reason });
    this.contentEl.createEl("p", { cls: "vs-setup-found", text: "Looking for an interpreter…" });
    void this.detect().then((tools) => {
      this.tools = tools;
      this.draw();
    });
  }

  override onClose(): void {
    this.contentEl.empty();
  }

  private detect(): Promise<Toolchain> {
    return (this.host.detect ?? detectToolchain)();
  }

  private draw(): void {
    const tools = this.tools;
    if (!tools || this.running) return;
    const el = this.contentEl;
    el.empty();
    el.createEl("p", { text: this.host.reason });
    el.createEl("p", { cls: "vs-setup-found", text: describeToolchain(tools) });
    const env = managedEnv();
    const source = chooseSource(this.picked, this.host.pluginDir);
    if (!tools.python && !tools.uv) {
      const what = el.createEl("p", { text: `Install Python ${MIN_PYTHON.join(".")} or newer (python.org; macOS: ` });
      what.createEl("code", { text: "brew install python@3.12" });
      what.appendText("; Linux: your package manager), or uv (docs.astral.sh/uv), then open this again.");
      new Setting(el).addButton((b) => b.setButtonText("Look again").onClick(() => {
        this.tools = null;
        void this.detect().then((t) => { this.tools = t; this.draw(); });
      }));
      return;
    }
    const plan = el.createEl("ol", { cls: "vs-setup-plan" });
    plan.createEl("li", { text: `Create a private environment in ${env.dir} (about 150 MB; replaces an earlier one).` });
    plan.createEl("li", { text: `Install ${describeSource(source)} into it${source.kind === "index" ? "" : ", with its dependencies from PyPI"}.` });
    plan.createEl("li", { text: "Start it. Nothing else on your system changes; your notes never leave this computer." });
    new Setting(el)
      .setName("Sidecar wheel")
      .setDesc(this.picked ?? "Optional: a vault_sidecar-….whl file from the release page.")
      .addButton((b) => b.setButtonText("Choose a wheel…").onClick(() => this.pickWheel()))
      .addButton((b) => b.setButtonText("Install").setCta().onClick(() => void this.install(tools, source)));
  }

  private pickWheel(): void {
    const input = createEl("input", { type: "file", attr: { accept: ".whl" } });
    input.addEventListener("change", () => {
      const file = input.files?.[0];
      const picked = file ? filePath(file) : null;
      if (file && !picked) new Notice("Could not read that file's location; put the wheel beside the plugin instead.");
      this.picked = picked;
      this.draw();
    });
    input.click();
  }

  private async install(tools: Toolchain, source: InstallSource): Promise<void> {
    this.running = true;
    const el = this.contentEl;
    el.empty();
    const stepEl = el.createEl("p", { cls: "vs-setup-step", text: "Starting…" });
    const logEl = el.createEl("pre", { cls: "vs-setup-log" });
    const steps = installSteps(tools, source, managedEnv().dir);
    try {
      stepEl.setText("Stopping the sidecar…");
      await this.host.stop();
      await runSteps(steps, (line) => {
        logEl.appendText(line + "\n");
        logEl.scrollTop = logEl.scrollHeight;
      }, (i, step) => stepEl.setText(`Step ${i + 1} of ${steps.length}: ${step.title}…`));
      stepEl.setText("Installed. Starting the sidecar…");
      new Notice("Vault Sidecar: the sidecar is installed; starting it.");
      await this.host.restart();
      this.close();
    } catch (err) {
      const fail = err instanceof InstallError ? err : new InstallError(String(err), "", []);
      stepEl.setText(fail.message);
      el.createEl("p", { cls: "vs-setup-hint", text: fail.hint });
      new Notice(`Vault Sidecar: ${fail.message} ${fail.hint}`, 15_000);
      this.running = false;
      new Setting(el).addButton((b) => b.setButtonText("Back").onClick(() => this.draw()));
    }
  }
}

/** A picked file's path: Electron's webUtils (Electron 32+ dropped File.path), else File.path. */
function filePath(file: File): string | null {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- Electron is only reachable this way in Obsidian
    const electron = require("electron") as { webUtils?: { getPathForFile(f: File): string } };
    const viaUtils = electron.webUtils?.getPathForFile(file);
    if (viaUtils) return viaUtils;
  } catch {
    // not in Electron (tests)
  }
  const legacy = (file as File & { path?: string }).path;
  return legacy || null;
}

// Renders the status details (the status bar's modal) and the MCP configuration text for the clipboard.

import type { StatusResponse } from "../protocol.gen";

export interface StatusDetails {
  /** One line: what the status bar says. */
  headline: string;
  status: StatusResponse | null;
  error: string | null;
  stderr: string[];
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit] ?? "TB"}`;
}

export function renderStatusDetails(container: HTMLElement, d: StatusDetails): void {
  container.empty();
  container.addClass("vs-status-details");
  container.createDiv({ cls: "vs-status-headline", text: d.headline });
  // The headline is often the error's first line already (statusBarView): the block says the rest once.
  const error = d.error && d.error.startsWith(`${d.headline}\n`) ? d.error.slice(d.headline.length + 1) : d.error;
  if (error) container.createEl("pre", { cls: "vs-status-error", text: error });
  const s = d.status;
  if (s) {
    const table = container.createEl("table", { cls: "vs-status-table" });
    const row = (label: string, value: string): void => {
      const tr = table.createEl("tr");
      tr.createEl("th", { text: label });
      tr.createEl("td", { text: value });
    };
    row("Sidecar", `${s.version} (protocol ${s.protocol_version})`);
    row("Vault", s.vault);
    row("Index", `${s.index_dir} (${formatBytes(s.index_bytes)})`);
    row("Notes", `${s.notes} notes, ${s.chunks} chunks`);
    row("Vectors", `${s.chunks_with_vectors} with, ${s.chunks_without_vectors} without`);
    row("Model", s.model.available ? `${s.model.name ?? "?"} (${s.model.dim ?? "?"} dimensions)` : `Unavailable: ${s.model.error ?? "unknown"}`);
    row("Backend", `${s.backend}; ${s.vector_store}; ${s.vector_search}`);
    row("Last indexed", s.last_indexed_at ? new Date(s.last_indexed_at * 1000).toLocaleString() : "Never");
    row("MCP", s.mcp.enabled ? `On, port ${s.mcp.port ?? "?"}` : "Off");
    if (s.progress) row("Progress", `${s.progress.phase} ${s.progress.done}/${s.progress.total}`);
    if (s.skipped.length) {
      container.createDiv({ cls: "vs-status-subhead", text: `Skipped files (${s.skipped.length})` });
      const ul = container.createEl("ul", { cls: "vs-status-skipped" });
      for (const f of s.skipped.slice(0, 50)) ul.createEl("li", { text: `${f.path}: ${f.reason}` });
      if (s.skipped.length > 50) ul.createEl("li", { text: `… and ${s.skipped.length - 50} more` });
    }
  }
  if (d.stderr.length) {
    container.createDiv({ cls: "vs-status-subhead", text: "Recent sidecar output" });
    container.createEl("pre", { cls: "vs-status-stderr", text: d.stderr.slice(-50).join("\n") });
  }
}

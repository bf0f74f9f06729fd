// The running sidecar as the rest of the plugin sees it: the process, a client for its current
// port and token, the events stream, and one snapshot of the state for the status bar and views.
//
// Events (Obsidian's Events, so views can registerEvent them):
//   "state"          (snapshot: SidecarSnapshot)    anything in the snapshot changed
//   "index-changed"  (event: IndexChangedEvent)     notes were (re)indexed or removed
//   "connected"      ()                              a (new) connection is up: views may refresh
//   "agent-edit"     (edit: EditRecord)              an agent edited the vault (writes on)
//   "failed"         (error: SidecarStartError)      it cannot start (or gave up restarting): show the fix
//   "handshake"      (handshake: Handshake)          a run started: versions, MCP port really used
//
// Every failure a caller sees comes with a fix-it hint: failure.ts failureOf(err) gives { message, hint } for
// any error (a SidecarStartError's hint, an RpcError's data.hint, a restart for a lost connection), so a pane
// shows the same fix as the Notice.

import { Events } from "obsidian";

import { RpcError, SidecarClient, type EventSubscription } from "./client";
import type { Progress, StatusResponse } from "./protocol.gen";
import { SidecarProcess, SidecarStartError, type Handshake, type ProcessState, type SidecarProcessOptions } from "./sidecar-process";

export type SidecarPhase = ProcessState["phase"];

export interface SidecarSnapshot {
  phase: SidecarPhase;
  status: StatusResponse | null;
  progress: Progress | null;
  /** Latest problem, ready to show: message, hint and command (the sidecar's output is `Sidecar.stderr`). */
  error: string | null;
  /** Kind of the latest start error, e.g. `not_found`, `python_too_old`. */
  errorKind: string | null;
  /** What to do about the latest start error ("Install the sidecar … or set its full path …"). */
  errorHint: string | null;
  eventsConnected: boolean;
  restartInMs: number | null;
  /** The running sidecar's handshake: its version, and the MCP port it really serves on. */
  handshake?: Handshake | null;
}

/** A start error as the RpcError callers get, keeping its hint. */
function startFailure(err: SidecarStartError): RpcError {
  return new RpcError("transport", err.message, "", null, { kind: "start_failed", start_kind: err.kind, hint: err.hint });
}

export class Sidecar extends Events {
  private process: SidecarProcess | null = null;
  private current: SidecarClient | null = null;
  private subscription: EventSubscription | null = null;
  private options: () => SidecarProcessOptions;
  private unlisten: (() => void) | null = null;
  private statusTimer: number | null = null;
  snapshot: SidecarSnapshot = {
    phase: "stopped", status: null, progress: null, error: null, errorKind: null, errorHint: null, eventsConnected: false, restartInMs: null,
    handshake: null,
  };

  constructor(options: () => SidecarProcessOptions) {
    super();
    this.options = options;
  }

  /** stderr of the sidecar (last lines). */
  get stderr(): string[] {
    return this.process?.stderr ?? [];
  }

  start(): void {
    if (this.process) return;
    const proc = new SidecarProcess(this.options());
    this.process = proc;
    this.unlisten = proc.onState((state) => this.onProcessState(state));
    proc.start().catch(() => undefined); // failures arrive as states
  }

  async stop(): Promise<void> {
    const proc = this.process;
    this.process = null;
    this.unlisten?.();
    this.unlisten = null;
    this.disconnect();
    this.update({ phase: "stopped", progress: null, restartInMs: null });
    if (!proc) return;
    // Ask politely first; the process manager SIGTERMs and SIGKILLs as needed.
    const client = this.current;
    if (client) await Promise.race([client.call("shutdown").catch(() => undefined), sleep(500)]);
    await proc.stop();
  }

  async restart(): Promise<void> {
    await this.stop();
    this.update({ error: null, errorKind: null, errorHint: null, status: null });
    this.start();
  }

  /** The client, once the sidecar is running (waits through starts and restarts). */
  async client(): Promise<SidecarClient> {
    if (this.current) return this.current;
    if (!this.process) this.start();
    const proc = this.process;
    if (!proc) throw new RpcError("transport", "The sidecar is stopped.", "");
    if (proc.state.phase === "failed") {
      // Do not respawn on every request: the user fixes the cause, then restarts (settings or command).
      throw startFailure(proc.state.error);
    }
    try {
      await proc.ready();
    } catch (err) {
      throw err instanceof SidecarStartError ? startFailure(err) : err;
    }
    if (!this.current) throw new RpcError("transport", "The sidecar is not connected.", "");
    return this.current;
  }

  /** Fetch status now and publish it. */
  async refreshStatus(): Promise<StatusResponse | null> {
    const client = this.current;
    if (!client) return null;
    try {
      const status = await client.call("status");
      if (client === this.current) this.update({ status, progress: status.progress });
      return status;
    } catch (err) {
      if (err instanceof RpcError && client === this.current) this.update({ error: err.message });
      return null;
    }
  }

  private update(patch: Partial<SidecarSnapshot>): void {
    this.snapshot = { ...this.snapshot, ...patch };
    this.trigger("state", this.snapshot);
  }

  private disconnect(): void {
    this.subscription?.close();
    this.subscription = null;
    this.current = null;
    if (this.statusTimer !== null) window.clearTimeout(this.statusTimer);
    this.statusTimer = null;
  }

  private onProcessState(state: ProcessState): void {
    switch (state.phase) {
      case "starting":
        this.update({ phase: "starting", restartInMs: null });
        break;
      case "running": {
        this.disconnect();
        const client = new SidecarClient({ port: state.connection.port, token: state.connection.token });
        this.current = client;
        this.subscription = client.subscribe({
          status: (status) => this.update({ status, progress: status.progress }),
          progress: (progress) => this.update({ progress: progress.phase === "done" ? null : progress }),
          index_changed: (event) => {
            this.trigger("index-changed", event);
            this.scheduleStatus();
          },
          agent_edit: (edit) => this.trigger("agent-edit", edit),
          connection: (connected) => this.update({ eventsConnected: connected }),
        });
        this.update({ phase: "running", error: null, errorKind: null, errorHint: null, restartInMs: null,
          handshake: state.connection.handshake });
        this.trigger("handshake", state.connection.handshake);
        this.trigger("connected");
        void this.refreshStatus();
        break;
      }
      case "restarting":
        this.disconnect();
        this.update({
          phase: "restarting", error: state.error.summary(), errorKind: state.error.kind, errorHint: state.error.hint || null,
          restartInMs: state.delayMs, handshake: null,
        });
        break;
      case "failed":
        this.disconnect();
        this.update({
          phase: "failed", error: state.error.summary(), errorKind: state.error.kind, errorHint: state.error.hint || null,
          restartInMs: null, handshake: null,
        });
        this.trigger("failed", state.error);
        break;
      case "stopped":
        this.disconnect();
        this.update({ phase: "stopped" });
        break;
    }
  }

  /** index_changed comes in bursts while indexing: refresh status at most every 2 s. */
  private scheduleStatus(): void {
    if (this.statusTimer !== null) return;
    this.statusTimer = window.setTimeout(() => {
      this.statusTimer = null;
      void this.refreshStatus();
    }, 2000);
  }
}


function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => window.setTimeout(resolve, ms));
}

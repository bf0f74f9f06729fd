// @vitest-environment happy-dom
// The plugin's view of the sidecar (process + client + events) against a fake sidecar that serves
// JSON-RPC and server-sent events on the port it announces.
import * as path from "path";
import { afterEach, describe, expect, it } from "vitest";

import { RpcError } from "../src/client";
import type { IndexChangedEvent } from "../src/protocol.gen";
import { failureOf } from "../src/failure";
import { Sidecar, type SidecarSnapshot } from "../src/sidecar";
import { SidecarStartError, type Handshake } from "../src/sidecar-process";
import { watchSidecar } from "../src/setup/notices";
import { Notice, type Plugin } from "obsidian";
import { statusBarView } from "../src/status-bar";

const FAKE = path.resolve(__dirname, "fixtures", "fake-sidecar.mjs");
let sidecar: Sidecar | null = null;

afterEach(async () => {
  await sidecar?.stop();
  sidecar = null;
});

function make(mode: string): Sidecar {
  sidecar = new Sidecar(() => ({
    vaultPath: "/tmp",
    command: `"${process.execPath}" "${FAKE}"`,
    env: { ...process.env, FAKE_MODE: mode },
    handshakeTimeoutMs: 5000,
    backoff: { initialMs: 50, maxAttempts: 2 },
  }));
  return sidecar;
}

/** What `s` emits as `event`, in order (from now on). */
function recorded<T>(s: Sidecar, event: string): T[] {
  const seen: T[] = [];
  s.on(event, (x) => seen.push(x as T));
  return seen;
}

function until(s: Sidecar, pred: (snap: SidecarSnapshot) => boolean, ms = 8000): Promise<SidecarSnapshot> {
  return new Promise((resolve, reject) => {
    if (pred(s.snapshot)) {
      resolve(s.snapshot);
      return;
    }
    const timer = setTimeout(() => reject(new Error(`timed out in phase ${s.snapshot.phase}`)), ms);
    const ref = s.on("state", (snap) => {
      if (pred(snap as SidecarSnapshot)) {
        clearTimeout(timer);
        s.offref(ref);
        resolve(snap as SidecarSnapshot);
      }
    });
  });
}

describe("Sidecar", () => {
  it("starts, connects events, publishes status, forwards index changes, stops", async () => {
    const s = make("serve");
    const changed = recorded<IndexChangedEvent>(s, "index-changed");
    s.start();
    const ready = await until(s, (snap) => snap.phase === "running" && snap.status !== null && snap.eventsConnected);
    expect(statusBarView(ready).text).toBe("Sidecar: ready (3 notes)");
    const client = await s.client();
    expect(await client.call("reindex")).toEqual({ started: true });
    await until(s, () => changed.length === 1);
    expect(changed[0]!.paths).toEqual(["a.md"]);
    await s.stop();
    expect(s.snapshot.phase).toBe("stopped");
  });

  it("reports a start failure without respawning on every request", async () => {
    const s = make("port");
    s.start();
    const failed = await until(s, (snap) => snap.phase === "failed");
    expect(failed.errorKind).toBe("port_in_use");
    expect(statusBarView(failed).text).toBe("Sidecar: error");
    await expect(s.client()).rejects.toThrow(/in use/);
    expect(s.snapshot.phase).toBe("failed");
  });

  it("gives every failure a fix-it hint, and keeps the sidecar's output out of the error text", async () => {
    const s = make("old");
    const failed = recorded<SidecarStartError>(s, "failed");
    s.start();
    const snap = await until(s, (x) => x.phase === "failed");
    expect(failed.map((e) => e.kind)).toEqual(["python_too_old"]);
    const err = await s.client().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    const { message, hint } = failureOf(err);
    expect(message).toMatch(/needs Python 3\.11 or newer/);
    expect(hint).toMatch(/Set up the sidecar/);
    expect(hint).toBe(snap.errorHint);
    // The status modal shows snap.error and then the output once: the output is not inside snap.error.
    expect(s.stderr.join("\n")).toMatch(/SyntaxError/);
    expect(snap.error).not.toMatch(/SyntaxError/);
    expect(snap.error).toContain(hint ?? "?");
    expect(failureOf(new RpcError("transport", "connection refused", "search")).hint).toMatch(/Restart the sidecar/);
    expect(failureOf(new RpcError("invalid_params", "query is empty", "search")).hint).toBeNull();
  });

  it("falls back to the start failure's fix only while the sidecar is failed or restarting", () => {
    const plain = new RpcError("internal", "boom", "search");
    const snap = (phase: SidecarSnapshot["phase"]) => ({ phase, errorHint: "Run setup." });
    expect(failureOf(plain, snap("failed")).hint).toBe("Run setup.");
    expect(failureOf(plain, snap("restarting")).hint).toBe("Run setup.");
    expect(failureOf(plain, snap("starting")).hint).toBeNull();
    expect(failureOf(plain, snap("running")).hint).toBeNull();
    // The fix the error carries wins over the snapshot's.
    const carried = new RpcError("transport", "x", "", null, { hint: "Check the command." });
    expect(failureOf(carried, snap("failed"))).toEqual({ message: "The sidecar is not available: x", hint: "Check the command." });
  });

  it("publishes the handshake: the sidecar's version and the MCP port really used", async () => {
    const s = make("serve");
    const seen = recorded<Handshake>(s, "handshake");
    s.start();
    const snap = await until(s, (x) => x.phase === "running");
    expect(seen).toHaveLength(1);
    expect(snap.handshake?.version).toBe(seen[0]?.version);
  });
});

describe("Notices with the fix", () => {
  it("shows a start failure once with its hint, opens the setup when nothing is installed, and tells of MCP moving", () => {
    const s = new Sidecar(() => ({ vaultPath: "/tmp" }));
    const opened: string[] = [];
    const plugin = { registerEvent: () => undefined } as unknown as Plugin;
    watchSidecar({ plugin, sidecar: s, version: "0.2.0", openSetup: (why) => opened.push(why) });
    const shown = (Notice as unknown as { shown: string[] }).shown;
    const before = shown.length;
    const missing = new SidecarStartError("not_found", "The sidecar is not installed.", { hint: "Run Set up the sidecar." });
    s.trigger("failed", missing);
    s.trigger("failed", missing);
    expect(opened).toEqual(["The sidecar is not installed."]);
    expect(shown.slice(before)).toEqual(["Vault Sidecar: The sidecar is not installed.\nRun Set up the sidecar.Set up the sidecar"]);
    s.trigger("handshake", { rpc_port: 1, mcp_port: 51235, pid: 1, version: "0.1.0", protocol_version: "1.3.0",
      mcp_requested_port: 8765, mcp_note: "MCP port 8765 is in use: MCP serves on port 51235 instead" } satisfies Handshake);
    const later = shown.slice(before + 1);
    expect(later[0]).toMatch(/MCP port 8765 is in use.*Copy the MCP client configuration again/);
    expect(later[1]).toMatch(/sidecar is version 0\.1\.0, this plugin 0\.2\.0: upgrade the sidecar.*Upgrade$/);
  });
});

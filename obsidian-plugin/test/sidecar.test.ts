// @vitest-environment happy-dom
// The plugin's view of the sidecar (process + client + events) against a fake sidecar that serves
// JSON-RPC and server-sent events on the port it announces.
import * as path from "path";
import { afterEach, describe, expect, it } from "vitest";

import type { IndexChangedEvent } from "../src/protocol.gen";
import { Sidecar, type SidecarSnapshot } from "../src/sidecar";
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
    const changed: IndexChangedEvent[] = [];
    s.on("index-changed", (e) => changed.push(e as IndexChangedEvent));
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
});

import * as http from "http";
import type { AddressInfo } from "net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { EventSubscription, RpcError, SidecarClient, SseParser, errorFromResponse } from "../src/client";
import type { IndexChangedEvent, Progress } from "../src/protocol.gen";

const TOKEN = "test-token";

interface Rpc {
  jsonrpc: string;
  id: number;
  method: string;
  params: Record<string, unknown>;
}

/** A tiny JSON-RPC + SSE server standing in for the sidecar's HTTP side. */
class FakeServer {
  server: http.Server;
  port = 0;
  calls: { rpc: Rpc; headers: http.IncomingHttpHeaders }[] = [];
  busyLeft = 0;
  streams: http.ServerResponse[] = [];
  eventConnections = 0;

  constructor() {
    this.server = http.createServer((req, res) => this.handle(req, res));
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.streams) s.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  send(event: string, data: unknown): void {
    for (const s of this.streams) s.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  dropStreams(): void {
    for (const s of this.streams) s.destroy();
    this.streams = [];
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401).end();
      return;
    }
    if (req.method === "GET" && req.url === "/events") {
      this.eventConnections++;
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(": hello\n\n");
      this.streams.push(res);
      return;
    }
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const rpc = JSON.parse(body) as Rpc;
      this.calls.push({ rpc, headers: req.headers });
      const reply = (payload: object): void => {
        res.writeHead(200, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, ...payload }));
      };
      switch (rpc.method) {
        case "reindex":
          reply({ result: { started: rpc.params.full === true } });
          break;
        case "search":
          if (this.busyLeft > 0) {
            this.busyLeft--;
            reply({ error: { code: -32011, message: "busy", data: { kind: "busy", retryable: true } } });
          } else {
            reply({ result: { query: rpc.params.query, results: [] } });
          }
          break;
        case "note.links":
          reply({ error: { code: -32004, message: "No such note: x.md", data: { kind: "not_found" } } });
          break;
        case "slow":
          break; // never answers
        case "garbage":
          res.writeHead(500).end("oops");
          break;
        case "starting":
          res.writeHead(503, { "Content-Type": "application/json" }).end('{"error": {"code": "starting"}}');
          break;
        default:
          reply({ error: { code: -32601, message: "Method not found" } });
      }
    });
  }
}

let server: FakeServer;
let client: SidecarClient;

beforeEach(async () => {
  server = new FakeServer();
  await server.listen();
  client = new SidecarClient({ port: server.port, token: TOKEN, timeoutMs: 1500 });
});

afterEach(async () => {
  await server.close();
});

function waitFor(pred: () => boolean, ms = 5000): Promise<void> {
  const start = Date.now();
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (pred()) resolve();
      else if (Date.now() - start > ms) reject(new Error("timed out waiting"));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

describe("SidecarClient.call", () => {
  it("sends JSON-RPC 2.0 with the bearer token and by-name params", async () => {
    const result = await client.call("reindex", { full: true });
    expect(result).toEqual({ started: true });
    const { rpc, headers } = server.calls[0]!;
    expect(rpc.jsonrpc).toBe("2.0");
    expect(rpc.method).toBe("reindex");
    expect(rpc.params).toEqual({ full: true });
    expect(headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(headers["content-type"]).toBe("application/json");
    expect(headers.host).toBe(`127.0.0.1:${server.port}`);
  });

  it("allows omitting params when all are optional", async () => {
    await client.call("reindex");
    expect(server.calls[0]!.rpc.params).toEqual({});
  });

  it("maps error codes to kinds", async () => {
    const err = await client.call("note.links", { path: "x.md" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).kind).toBe("not_found");
    expect((err as RpcError).code).toBe(-32004);
    expect((err as RpcError).message).toBe("No such note: x.md");
  });

  it("retries busy errors, then succeeds", async () => {
    server.busyLeft = 2;
    const result = await client.call("search", { query: "x" });
    expect(result.query).toBe("x");
    expect(server.calls).toHaveLength(3);
  });

  it("gives up on busy after the retries", async () => {
    server.busyLeft = 10;
    const err = await client.call("search", { query: "x" }).catch((e: unknown) => e);
    expect((err as RpcError).kind).toBe("busy");
    expect((err as RpcError).retryable).toBe(true);
    expect(server.calls).toHaveLength(3);
  });

  it("reports a wrong token as unauthorized", async () => {
    const bad = new SidecarClient({ port: server.port, token: "nope" });
    const err = await bad.call("reindex").catch((e: unknown) => e);
    expect((err as RpcError).kind).toBe("unauthorized");
  });

  it("reports non-JSON answers, timeouts and dead servers", async () => {
    const untyped = client as unknown as { call(m: string): Promise<unknown> };
    expect(((await untyped.call("garbage").catch((e: unknown) => e)) as RpcError).kind).toBe("http");
    expect(((await untyped.call("slow").catch((e: unknown) => e)) as RpcError).kind).toBe("timeout");
    const starting = (await untyped.call("starting").catch((e: unknown) => e)) as RpcError;
    expect(starting.kind).toBe("transport");
    expect(starting.retryable).toBe(true);
    await server.close();
    server = new FakeServer();
    await server.listen();
    const dead = new SidecarClient({ port: 1, token: TOKEN, timeoutMs: 1500 });
    expect(((await dead.call("reindex").catch((e: unknown) => e)) as RpcError).kind).toBe("transport");
  });

  it("maps unknown codes by data.kind, or to unknown", () => {
    expect(errorFromResponse("m", { code: -1, message: "x", data: { kind: "vault" } }).kind).toBe("vault");
    expect(errorFromResponse("m", { code: -1 }).kind).toBe("unknown");
    expect(errorFromResponse("m", { code: -32013, message: "bye" }).kind).toBe("shutting_down");
  });
});

describe("SseParser", () => {
  it("parses events across chunk boundaries, comments and CRLF", () => {
    const p = new SseParser();
    expect(p.feed(": ping\n\nevent: progress\nda")).toEqual([]);
    expect(p.feed('ta: {"a":1}\r\n\r\nevent: x\ndata: line1\ndata: line2\n')).toEqual([
      { event: "progress", data: '{"a":1}' },
    ]);
    expect(p.feed("\n")).toEqual([{ event: "x", data: "line1\nline2" }]);
    expect(p.feed("data: plain\r")).toEqual([]);
    expect(p.feed("\n\n")).toEqual([{ event: "message", data: "plain" }]);
  });
});

describe("events subscription", () => {
  let sub: EventSubscription | null = null;
  afterEach(() => sub?.close());

  it("delivers typed events and reconnects after the stream drops", async () => {
    const progress: Progress[] = [];
    const changed: IndexChangedEvent[] = [];
    const states: boolean[] = [];
    sub = client.subscribe({
      progress: (p) => progress.push(p),
      index_changed: (e) => changed.push(e),
      connection: (c) => states.push(c),
    }, { initialDelayMs: 50 });
    await waitFor(() => server.streams.length === 1);
    server.send("progress", { phase: "notes", done: 1, total: 3 });
    server.send("unknown_event", { x: 1 });
    server.send("index_changed", { paths: ["a.md"], notes: 1, chunks: 2 });
    await waitFor(() => changed.length === 1);
    expect(progress).toEqual([{ phase: "notes", done: 1, total: 3 }]);
    expect(changed[0]!.paths).toEqual(["a.md"]);

    server.dropStreams();
    await waitFor(() => server.streams.length === 1 && sub!.connected);
    expect(server.eventConnections).toBe(2);
    server.send("progress", { phase: "done", done: 3, total: 3 });
    await waitFor(() => progress.length === 2);
    expect(states).toEqual([true, false, true]);
  });

  it("stops reconnecting once closed", async () => {
    sub = client.subscribe({}, { initialDelayMs: 20 });
    await waitFor(() => server.streams.length === 1);
    sub.close();
    server.dropStreams();
    await new Promise((r) => setTimeout(r, 150));
    expect(server.eventConnections).toBe(1);
  });

  it("reconnects when the stream goes idle", async () => {
    sub = client.subscribe({}, { initialDelayMs: 20, idleTimeoutMs: 200 });
    await waitFor(() => server.eventConnections >= 2, 3000);
  });
});

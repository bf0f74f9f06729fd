// Typed JSON-RPC client for the sidecar, over Obsidian's requestUrl (POST /rpc), and a server-sent
// events subscription (GET /events) over Node's http module, since requestUrl cannot stream.

import * as http from "http";
import { clearTimeout, setTimeout } from "timers";
import { requestUrl } from "obsidian";

import { backoffDelay, type BackoffSchedule } from "./backoff";
import {
  ERROR_CODES,
  type ErrorKind,
  type SidecarEvent,
  type SidecarEvents,
  type SidecarMethod,
  type SidecarMethods,
} from "./protocol.gen";

export type ParamsOf<M extends SidecarMethod> = SidecarMethods[M]["params"];
export type ResultOf<M extends SidecarMethod> = SidecarMethods[M]["result"];

/** Methods whose params are all optional may be called without them. */
type ParamsArg<M extends SidecarMethod> = Record<string, never> extends ParamsOf<M>
  ? [params?: ParamsOf<M>]
  : [params: ParamsOf<M>];

/** Kinds from the protocol, plus what can go wrong before a JSON-RPC answer exists. */
export type RpcErrorKind = ErrorKind | "transport" | "timeout" | "http" | "unauthorized" | "unknown";

const KIND_BY_CODE = new Map<number, ErrorKind>(
  (Object.entries(ERROR_CODES) as [ErrorKind, number][]).map(([kind, code]) => [code, kind]),
);

export class RpcError extends Error {
  readonly kind: RpcErrorKind;
  readonly code: number | null;
  readonly data: Record<string, unknown>;
  readonly method: string;

  constructor(kind: RpcErrorKind, message: string, method: string, code: number | null = null,
    data: Record<string, unknown> = {}) {
    super(message);
    this.name = "RpcError";
    this.kind = kind;
    this.code = code;
    this.data = data;
    this.method = method;
  }

  /** Worth trying again shortly (the sidecar said busy, or it is restarting). */
  get retryable(): boolean {
    return this.kind === "busy" || this.kind === "transport" || this.data.retryable === true;
  }
}

/** Map a JSON-RPC error object to an RpcError by its stable code. */
export function errorFromResponse(method: string, error: unknown): RpcError {
  const e = (error ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof e.code === "number" ? e.code : null;
  const data = e.data && typeof e.data === "object" ? (e.data as Record<string, unknown>) : {};
  const kind: RpcErrorKind = (code !== null ? KIND_BY_CODE.get(code) : undefined)
    ?? (typeof data.kind === "string" && data.kind in ERROR_CODES ? (data.kind as ErrorKind) : "unknown");
  const message = typeof e.message === "string" && e.message ? e.message : `${method} failed (${code ?? "no code"})`;
  return new RpcError(kind, message, method, code, data);
}

export interface ClientOptions {
  port: number;
  token: string;
  host?: string;
  timeoutMs?: number;
  /** Retries for retryable errors (busy), BUSY_BACKOFF apart (150 ms, 450 ms, ...). */
  retries?: number;
}

/** Between retries of a call the sidecar answered "busy": 150 ms, tripled per retry (2 retries by default). */
const BUSY_BACKOFF: BackoffSchedule = { initialMs: 150, factor: 3, maxMs: 5_000 };

export class SidecarClient {
  readonly port: number;
  private readonly token: string;
  private readonly host: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private nextId = 1;

  constructor(opts: ClientOptions) {
    this.port = opts.port;
    this.token = opts.token;
    this.host = opts.host ?? "127.0.0.1";
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.retries = opts.retries ?? 2;
  }

  get baseUrl(): string {
    return `http://${this.host}:${this.port}`;
  }

  /** Call `method` with by-name params; resolves with its typed result or rejects with an RpcError. */
  async call<M extends SidecarMethod>(method: M, ...args: ParamsArg<M>): Promise<ResultOf<M>> {
    const params = (args[0] ?? {}) as ParamsOf<M>;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.callOnce(method, params);
      } catch (err) {
        if (err instanceof RpcError && err.kind === "busy" && attempt < this.retries) {
          await sleep(backoffDelay(attempt + 1, BUSY_BACKOFF));
          continue;
        }
        throw err;
      }
    }
  }

  private async callOnce<M extends SidecarMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    const id = this.nextId++;
    const body = JSON.stringify({ jsonrpc: "2.0", id, method, params });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RpcError("timeout",
        `The sidecar did not answer ${method} within ${Math.round(this.timeoutMs / 1000)} s.`, method)), this.timeoutMs);
    });
    let response: { status: number; text: string };
    try {
      response = await Promise.race([
        requestUrl({
          url: `${this.baseUrl}/rpc`,
          method: "POST",
          contentType: "application/json",
          headers: { Authorization: `Bearer ${this.token}` },
          body,
          throw: false,
        }),
        timeout,
      ]);
    } catch (err) {
      if (err instanceof RpcError) throw err;
      throw new RpcError("transport", `Cannot reach the sidecar: ${errorText(err)}`, method);
    } finally {
      if (timer) clearTimeout(timer);
    }
    if (response.status === 401 || response.status === 403) {
      throw new RpcError("unauthorized", `The sidecar refused the request (HTTP ${response.status}).`, method);
    }
    if (response.status === 503) {
      throw new RpcError("transport", "The sidecar is still starting.", method, null, { retryable: true });
    }
    let payload: unknown;
    try {
      payload = JSON.parse(response.text);
    } catch {
      throw new RpcError("http", `The sidecar answered HTTP ${response.status} without JSON.`, method);
    }
    const msg = payload as { jsonrpc?: unknown; id?: unknown; result?: unknown; error?: unknown };
    if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") {
      throw new RpcError("http", `Not a JSON-RPC 2.0 answer (HTTP ${response.status}).`, method);
    }
    if (msg.error !== undefined && msg.error !== null) throw errorFromResponse(method, msg.error);
    if (msg.id !== id) throw new RpcError("http", `Answer for request ${String(msg.id)}, expected ${id}.`, method);
    if (!("result" in msg)) throw new RpcError("http", "JSON-RPC answer without result.", method);
    return msg.result as ResultOf<M>;
  }

  /** Subscribe to server-sent events; reconnects until closed. */
  subscribe(handlers: EventHandlers, opts: SubscribeOptions = {}): EventSubscription {
    return new EventSubscription(this.host, this.port, this.token, handlers, opts);
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---- server-sent events ----------------------------------------------------------------------

export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

/** Incremental text/event-stream parser (https://html.spec.whatwg.org/#event-stream-interpretation). */
export class SseParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private id: string | undefined;

  /** Feed a chunk; returns the messages it completed. */
  feed(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      if (!match) break;
      // A lone \r at the end may be the first half of \r\n: wait for more.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const message = this.line(line);
      if (message) out.push(message);
    }
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === "") {
      if (!this.data.length) {
        this.event = "";
        return null;
      }
      const message: SseMessage = { event: this.event || "message", data: this.data.join("\n") };
      if (this.id !== undefined) message.id = this.id;
      this.event = "";
      this.data = [];
      return message;
    }
    if (line.startsWith(":")) return null; // comment (ping)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
    return null;
  }
}

export type EventHandlers = {
  [E in SidecarEvent]?: (data: SidecarEvents[E]) => void;
} & {
  /** Connected (true) or lost (false); called on every change. */
  connection?: (connected: boolean, error?: string) => void;
};

export interface SubscribeOptions {
  /** First reconnect delay; doubles per failed reconnect up to maxDelayMs (backoff.ts). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Reconnect when nothing (not even a ping) arrived for this long. */
  idleTimeoutMs?: number;
}

export class EventSubscription {
  private closed = false;
  private request: http.ClientRequest | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly backoff: BackoffSchedule;
  /** Reconnects since the stream last answered. */
  private failures = 0;
  private connectedNow = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly token: string,
    private readonly handlers: EventHandlers,
    private readonly opts: SubscribeOptions,
  ) {
    this.backoff = { initialMs: opts.initialDelayMs ?? 1000, factor: 2, maxMs: opts.maxDelayMs ?? 15_000 };
    this.connect();
  }

  get connected(): boolean {
    return this.connectedNow;
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.retryTimer = null;
    this.idleTimer = null;
    this.request?.destroy();
    this.request = null;
    this.setConnected(false);
  }

  private setConnected(value: boolean, error?: string): void {
    if (this.connectedNow === value && value) return;
    const changed = this.connectedNow !== value;
    this.connectedNow = value;
    if (changed || error) this.handlers.connection?.(value, error);
  }

  private touch(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const idle = this.opts.idleTimeoutMs ?? 45_000;
    this.idleTimer = setTimeout(() => this.request?.destroy(new Error("no data from the sidecar")), idle);
  }

  private connect(): void {
    if (this.closed) return;
    const parser = new SseParser();
    const req = http.get({
      host: this.host,
      port: this.port,
      path: "/events",
      headers: { Authorization: `Bearer ${this.token}`, Accept: "text/event-stream" },
    });
    this.request = req;
    req.on("response", (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        req.destroy(new Error(`HTTP ${res.statusCode ?? "?"} from /events`));
        return;
      }
      this.failures = 0;
      this.setConnected(true);
      this.touch();
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        this.touch();
        for (const message of parser.feed(chunk)) this.dispatch(message);
      });
      res.on("end", () => this.retry(req, "the event stream ended"));
      res.on("error", (err) => this.retry(req, err.message));
    });
    req.on("error", (err) => this.retry(req, err.message));
    req.on("close", () => this.retry(req, "the event stream closed"));
  }

  private dispatch(message: SseMessage): void {
    const handler = this.handlers[message.event as SidecarEvent] as ((data: unknown) => void) | undefined;
    if (!handler) return;
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      console.warn(`vault-sidecar: ignored an event with invalid JSON: ${message.event}`);
      return;
    }
    try {
      handler(data);
    } catch (err) {
      console.error(`vault-sidecar: ${message.event} handler failed`, err);
    }
  }

  private retry(req: http.ClientRequest, reason: string): void {
    if (req !== this.request) return; // a stale request's late events
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.request = null;
    if (this.closed || this.retryTimer) return;
    this.setConnected(false, reason);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect();
    }, backoffDelay(++this.failures, this.backoff));
  }
}

/** An error as the user should read it in a pane or a notice. */
export function describeError(err: unknown): string {
  if (err instanceof RpcError) {
    switch (err.kind) {
      case "index_not_ready":
        return "The index is being built; results appear when it is ready.";
      case "busy":
        return "The sidecar is busy; try again in a moment.";
      case "transport":
      case "timeout":
        return `The sidecar is not available: ${err.message}`;
      default:
        return err.message;
    }
  }
  return err instanceof Error ? err.message : String(err);
}

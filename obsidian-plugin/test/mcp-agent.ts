// A tiny MCP client for the tests: tools/call over the sidecar's stateless streamable-HTTP endpoint
// (POST /mcp, plain JSON answers), the way an agent edits notes when "Let agents edit notes" is on. The
// User-Agent stands in for the agent's name (the sidecar logs "http client (<user agent>)").

import * as http from "http";
import * as net from "net";

/** A free local port (for --mcp-port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let nextId = 1;

/** Call an MCP tool; resolves with its structured content, rejects with the tool's error text. */
export function mcpTool(port: number, token: string, agent: string, name: string,
  args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name, arguments: args } });
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: "127.0.0.1", port, path: "/mcp", method: "POST",
      headers: {
        Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream",
        "User-Agent": agent, "Content-Length": Buffer.byteLength(body),
      },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        try {
          const msg = JSON.parse(text) as { result?: { isError?: boolean; structuredContent?: Record<string, unknown>;
            content?: { text?: string }[] }; error?: { message?: string } };
          if (msg.error) throw new Error(`${name}: ${msg.error.message ?? text}`);
          if (!msg.result || msg.result.isError || !msg.result.structuredContent) {
            throw new Error(`${name} failed: ${msg.result?.content?.[0]?.text ?? text}`);
          }
          resolve(msg.result.structuredContent);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

"""Round trips through the running service: `sidecar serve` on an existing index, then search over
JSON-RPC and over MCP with 1 and 8 concurrent clients (threads of this process, then 8 processes of
their own), the health report, and the time from starting `serve` to its first answer. Prints a
table; asserts nothing.

    python bench/bench_service.py --vault V --index DIR [-n 200] [--queries Q.json] [--health-edits N]
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attack.common import JSON, MCP_ACCEPT, Live, mcp_outcome, percentile, vault_notes


def load_queries(path: Path | None, n: int) -> list[str]:
    if path is None or not path.exists():
        words = ["notes", "plugin", "sync", "daily", "template", "graph", "search", "theme", "canvas", "tasks"]
        return [" ".join(random.Random(i).sample(words, 2)) for i in range(n)]
    data = json.loads(path.read_text())
    pool = [q["q"] for kind in ("lexical", "semantic", "mixed") for q in data.get(kind, [])]
    random.Random(5).shuffle(pool)
    return (pool * (n // max(1, len(pool)) + 1))[:n]


class KeptConnections:
    """POSTs over one kept-alive connection per client thread, as the plugin's requestUrl and the MCP
    SDK's HTTP client do; the other rows open a connection per call (the stdlib test client)."""

    def __init__(self, port: int, path: str, headers: dict[str, str]) -> None:
        self.port, self.path, self.headers = port, path, headers
        self._local = threading.local()

    def post(self, payload: dict[str, object]) -> dict[str, object]:
        body = json.dumps(payload).encode()
        for attempt in (1, 2):  # the server may close an idle connection: reconnect once
            conn = getattr(self._local, "conn", None) or http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self._local.conn = conn
            try:
                conn.request("POST", self.path, body, {**self.headers, "Host": f"127.0.0.1:{self.port}"})
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt == 2:
                    raise
                continue
            if resp.status != 200:
                raise SystemExit(f"HTTP {resp.status} {raw[:300]!r}")
            return json.loads(raw)  # type: ignore[no-any-return]
        raise AssertionError("unreachable")

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def port_connection(port: str, number: int, token: str) -> KeptConnections:
    """Kept-alive connections to one of the two ports ("JSON-RPC" or "MCP")."""
    path, accept = ("/rpc", {}) if port == "JSON-RPC" else ("/mcp", {"Accept": MCP_ACCEPT})
    return KeptConnections(number, path, {"Authorization": f"Bearer {token}", "Content-Type": JSON, **accept})


def search_body(port: str, query: str) -> dict[str, object]:
    if port == "JSON-RPC":
        return {"jsonrpc": "2.0", "id": 1, "method": "search", "params": {"query": query}}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {"query": query}}}


def searched(port: str, connection: KeptConnections, query: str) -> dict[str, object]:
    """One search over `port`: the JSON-RPC reply, or an MCP reply read as {"ok"} / {"error"}."""
    reply = connection.post(search_body(port, query))
    return reply if port == "JSON-RPC" else mcp_outcome(reply)


def kept_calls(live: Live) -> tuple[object, object]:
    """search over JSON-RPC and over MCP, each client thread on its own kept-alive connection."""
    rpc = port_connection("JSON-RPC", live.rpc_port, live.rpc_token)
    mcp = port_connection("MCP", live.mcp_port, live.mcp_token)
    return (lambda q: searched("JSON-RPC", rpc, q)), (lambda q: searched("MCP", mcp, q))


def client_process(job: tuple[str, int, str, list[str], bool, float]) -> tuple[list[float], int]:
    """One client in a process of its own (pickled into a pool): its queries back to back from `start_at`
    (wall clock) on, over one kept-alive connection or a new one per call; each call's wall time, and errors."""
    port, number, token, queries, kept_alive, start_at = job
    connection = port_connection(port, number, token)
    time.sleep(max(0.0, start_at - time.time()))  # every process is up before any call: they start together
    times, errors = [], 0
    for query in queries:
        started = time.perf_counter()
        outcome = searched(port, connection, query)
        times.append(time.perf_counter() - started)
        errors += "error" in outcome
        if not kept_alive:
            connection.close()
    return times, errors


def timed_processes(live: Live, queries: list[str], clients: int, kept_alive: bool) -> dict[str, tuple[list[float], int]]:
    """search over each port from `clients` processes, each with its share of the queries. Separate
    processes, as separate agents and Obsidian windows are: threads of one client process also wait for
    each other's GIL to read their answers, which the server's latency does not include (docs/benchmarks.md)."""
    out: dict[str, tuple[list[float], int]] = {}
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        for port, number, token in (("JSON-RPC", live.rpc_port, live.rpc_token), ("MCP", live.mcp_port, live.mcp_token)):
            start_at = time.time() + 1.0
            jobs = [(port, number, token, queries[i::clients], kept_alive, start_at) for i in range(clients)]
            results = pool.map(client_process, jobs)
            out[f"{port} search"] = ([t for times, _ in results for t in times], sum(e for _, e in results))
    return out


def timed(call: object, queries: list[str], clients: int) -> tuple[list[float], int]:
    """Each client runs its share of the queries back to back; returns every call's wall time, and how
    many answers were errors (a JSON-RPC error object, an MCP tool error: an HTTP error stops the run)."""
    times: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def worker(part: list[str]) -> None:
        for query in part:
            started = time.perf_counter()
            reply = call(query)  # type: ignore[operator]
            elapsed = time.perf_counter() - started
            with lock:
                times.append(elapsed)
                errors[0] += isinstance(reply, dict) and "error" in reply

    threads = [threading.Thread(target=worker, args=(queries[i::clients],)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, errors[0]


def under_load(busy: object, probe: object, queries: list[str], busy_clients: int = 8) -> tuple[list[float], int]:
    """`probe` timed for each of the queries (two clients) while `busy_clients` threads run `busy`."""
    stop = threading.Event()

    def hammer(start: int) -> None:
        i = start
        while not stop.is_set():
            busy(queries[i % len(queries)])  # type: ignore[operator]
            i += busy_clients

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(busy_clients)]
    for t in threads:
        t.start()
    try:
        return timed(probe, queries, 2)
    finally:
        stop.set()
        for t in threads:
            t.join()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True, help="an existing index (built by sidecar index)")
    parser.add_argument("--queries", type=Path)
    parser.add_argument("-n", type=int, default=400, help="queries per phase (400: p99 is the 5th slowest call)")
    parser.add_argument("--health-edits", type=int, default=0,
                        help="also time health after an edit: edits this many notes of the vault (each restored "
                             "after), so point --vault at a copy")
    args = parser.parse_args()
    queries = load_queries(args.queries, args.n)
    started = time.perf_counter()
    with Live(args.vault, args.index, "--no-watch") as live:
        handshake = time.perf_counter() - started
        while "result" not in (reply := live.rpc("search", query="first answer", limit=1)):
            time.sleep(0.01)
        first = time.perf_counter() - started
        first_kind = "lexical, the model still loading" if reply["result"].get("vectors_loading") else "hybrid"
        while reply["result"].get("vectors_loading"):  # serve answers lexically until its model is in
            time.sleep(0.01)
            reply = live.rpc("search", query="first answer", limit=1)
        hybrid = time.perf_counter() - started
        status = live.wait_ready()  # the start-up index run done: the phases below measure answers alone
        for q in queries[:30]:  # warm-up
            live.rpc("search", query=q)
        rows = []
        for clients in (1, 8):
            rpc = timed(lambda q: live.rpc("search", query=q), queries, clients)
            mcp = timed(lambda q: live.mcp("search", query=q), queries, clients)
            for name, (times, errors) in ((f"JSON-RPC search, {clients} client(s)", rpc),
                                          (f"MCP search, {clients} client(s)", mcp)):
                rows.append((name, len(times), *(percentile(times, p) * 1000 for p in (50, 95, 99)), errors))
        rpc_kept, mcp_kept = kept_calls(live)
        for clients in (1, 8):
            for name, call in (("JSON-RPC", rpc_kept), ("MCP", mcp_kept)):
                times, errors = timed(call, queries, clients)
                rows.append((f"{name} search, {clients}, kept-alive", len(times),
                             *(percentile(times, p) * 1000 for p in (50, 95, 99)), errors))
        for kept_alive in (False, True):
            for name, (times, errors) in timed_processes(live, queries, 8, kept_alive).items():
                rows.append((f"{name}, 8 processes{', kept-alive' if kept_alive else ''}", len(times),
                             *(percentile(times, p) * 1000 for p in (50, 95, 99)), errors))
        lexical, errors = under_load(lambda q: live.rpc("search", query=q),
                                     lambda q: live.rpc("search", query=q, mode="lexical"), queries[:200])
        rows.append(("lexical, 8 others searching hybrid", len(lexical),
                     *(percentile(lexical, p) * 1000 for p in (50, 95, 99)), errors))
        health = []
        for _ in range(3):  # a report of a big vault takes a while: wait as long as it takes
            t = time.perf_counter()
            payload = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "health", "params": {}}).encode()
            reply = live.server.http("POST", "/rpc", payload, {"Authorization": f"Bearer {live.rpc_token}",
                                                               "Content-Type": "application/json"}, timeout=600)
            health.append(time.perf_counter() - t)
            if not isinstance(reply.body, dict) or "result" not in reply.body:
                raise SystemExit(f"health failed: HTTP {reply.status} {reply.raw[:300]!r}")
            items = sum(len(s["items"]) for s in reply.body["result"]["sections"])
            size = len(reply.raw)
    print(f"service: {args.vault.name}: {status['notes']:,} notes, {status['chunks']:,} chunks ({status['backend']})")
    print(f"  serve -> handshake {handshake * 1000:.0f} ms; serve -> first search answered {first * 1000:.0f} ms "
          f"({first_kind}); serve -> first hybrid answer {hybrid * 1000:.0f} ms")
    print(f"  {'call':42} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'errors':>6}")
    for name, n, p50, p95, p99, failed in rows:
        print(f"  {name:42} {n:>5} {p50:>8.1f} {p95:>8.1f} {p99:>8.1f} {failed:>6}")
    print(f"  health report over JSON-RPC: best of 3 {min(health) * 1000:.0f} ms ({items:,} items, {size / 1e6:.1f} MB of JSON)")
    if args.health_edits:
        health_pages(args.vault, args.index, args.health_edits)
    return 0


def health_pages(vault: Path, index: Path, edits: int) -> None:
    """health.summary and a section page p50 (findings kept), then edit -> a summary that shows the edit:
    a new broken link appended to a note, seen through the watcher (its debounce included)."""
    with Live(vault, index) as live:
        while live.server.call("status")["model"]["loading"]:  # serve answers before the model is in
            time.sleep(0.05)
        while "result" not in live.rpc("health.summary"):
            time.sleep(0.05)  # the first summary finds everything from scratch
        summary = [timed_call(lambda: live.rpc("health.summary")) for _ in range(20)]
        pages = {sid: [timed_call(lambda s=sid: live.rpc("health.page", section=s, limit=50)) for _ in range(10)]
                 for sid in ("unresolved_links", "no_inbound")}
        notes = vault_notes(vault)
        fresh, page_after, server = [], [], []
        for i, note in enumerate(random.Random(17).sample(notes, edits)):
            text = note.read_text(encoding="utf-8")
            before = unresolved(live)[0]
            try:
                started = time.perf_counter()
                note.write_text(text + f"\n\nBench edit [[Bench missing target {i}]]\n", encoding="utf-8")
                while (now := unresolved(live))[0] == before:
                    time.sleep(0.005)
                fresh.append(time.perf_counter() - started)
                server.append(now[1] / 1000)  # that summary's own time: the findings advanced by the edit
                page_after.append(timed_call(lambda: live.rpc("health.page", section="unresolved_links", limit=50)))
            finally:
                note.write_text(text, encoding="utf-8")
                while unresolved(live)[0] != before:
                    time.sleep(0.01)
    print(f"  health.summary p50 {percentile(summary, 50) * 1000:.1f} ms; health.page (50 items) p50: "
          + ", ".join(f"{sid} {percentile(t, 50) * 1000:.1f} ms" for sid, t in pages.items()))
    print(f"  health after one edit ({edits} edits, watcher debounce included): summary shows it p50 "
          f"{percentile(fresh, 50) * 1000:.0f} ms, max {max(fresh) * 1000:.0f} ms; next page p50 "
          f"{percentile(page_after, 50) * 1000:.1f} ms")
    print("    each edit, ms: " + ", ".join(f"{t * 1000:.0f}" for t in fresh))
    print(f"    of which the summary that showed it (findings advanced by the edit, in the server): p50 "
          f"{percentile(server, 50) * 1000:.0f} ms, max {max(server) * 1000:.0f} ms; each: "
          + ", ".join(f"{t * 1000:.0f}" for t in server))


def unresolved(live: Live) -> tuple[int, float]:
    """The summary's count of broken links, and how long the summary took in the server (ms)."""
    reply = live.rpc("health.summary")
    if "result" not in reply:
        raise SystemExit(f"health.summary failed: {reply}")
    return int(reply["result"]["summary"]["unresolved_links"]), float(reply["result"]["took_ms"])


def timed_call(call: object) -> float:
    started = time.perf_counter()
    reply = call()  # type: ignore[operator]
    if "result" not in reply:
        raise SystemExit(f"health call failed: {reply}")
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())

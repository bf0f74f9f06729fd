#!/usr/bin/env python3
"""Load: concurrent clients on both ports while full reindexes run back to back.

    python bench/attack/load.py [--quick] [--out DIR] [--seconds S] [--clients N] [--files N]

CLIENTS threads, each mixing JSON-RPC (search, related with an unsaved buffer, note.links,
status) and MCP (search, read_note, related_notes, note_links, index_status) calls for SECONDS,
while `reindex` with full=true is requested again as soon as the previous one ends.

Targets: no error other than the documented retryable busy (-32011 / "busy"); no partial
result: every search hit well-formed, and sentinel notes (a unique word each) are found by
every search for their word, also in the middle of a full rebuild; the server's RSS flat
(sampled every 0.5 s); p50/p99 latency per call type.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Live, Result, mcp_outcome, percentile, rss_kb, say, table, workdir, write_json

sys.path.insert(0, str(ROOT / "bench"))
from generate_vault import generate

SENTINELS = 5
HIT_FIELDS = {"path": str, "title": str, "snippet": str, "band": str, "score": (int, float), "start_line": int,
              "end_line": int}
BUFFER = "# Draft\n\nNotes on sourdough starters, espresso extraction and the garden; see [[Home]].\n" * 20


def well_formed(hits: Any) -> str | None:
    if not isinstance(hits, list):
        return "results is not a list"
    for h in hits:
        for key, kind in HIT_FIELDS.items():
            if not isinstance(h.get(key), kind):
                return f"hit field {key!r} missing or of the wrong type: {str(h)[:200]}"
        if h["start_line"] < 1 or h["end_line"] < h["start_line"] or not h["path"].endswith(".md"):
            return f"hit with impossible lines or path: {str(h)[:200]}"
    return None


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.busy = 0
        self.calls = 0

    def add(self, name: str, seconds: float) -> None:
        with self.lock:
            self.latency[name].append(seconds)
            self.calls += 1


def is_busy(error: Any) -> bool:
    text = str(error)
    return "-32011" in text or "'busy'" in text or '"busy"' in text


def client(live: Live, n: int, stop: threading.Event, stats: Stats, result: Result, paths: list[str],
           sentinels: dict[str, str]) -> None:
    rng = random.Random(n)
    while not stop.is_set():
        op = rng.choice(("rpc search", "rpc related buffer", "rpc note.links", "rpc status", "mcp search",
                         "mcp read_note", "mcp related_notes", "mcp note_links", "mcp index_status", "sentinel"))
        path = rng.choice(paths)
        started = time.perf_counter()
        try:
            if op == "sentinel":
                word, want = rng.choice(list(sentinels.items()))
                reply = live.rpc("search", query=word, mode="lexical", limit=5)
                outcome = reply.get("result") or {}
                if "error" in reply:
                    outcome = {"error": reply["error"]}
                elif [h["path"] for h in outcome["results"]][:1] != [want]:
                    result.fail(f"partial result: search {word} gave {[h['path'] for h in outcome['results']]} "
                                f"(building={outcome.get('index_building')})")
            elif op.startswith("rpc"):
                method, params = {
                    "rpc search": ("search", {"query": rng.choice(("sourdough starter", "espresso grinder", "garden",
                                                                   "ERR_CODE", "plan review")), "limit": 10}),
                    "rpc related buffer": ("related", {"text": BUFFER, "limit": 10}),
                    "rpc note.links": ("note.links", {"path": path}),
                    "rpc status": ("status", {}),
                }[op]
                reply = live.rpc(method, **params)
                outcome = {"error": reply["error"]} if "error" in reply else {"ok": reply["result"]}
            else:
                tool, args = {
                    "mcp search": ("search", {"query": rng.choice(("sourdough", "coffee beans", "tomato seedlings")),
                                              "limit": 10, "explain": True}),  # title and score too
                    "mcp read_note": ("read_note", {"path": path, "max_chars": 2000}),
                    "mcp related_notes": ("related_notes", {"path": path, "limit": 5}),
                    "mcp note_links": ("note_links", {"path": path}),
                    "mcp index_status": ("index_status", {}),
                }[op]
                outcome = mcp_outcome(live.mcp_raw(tool, args).body)
        except Exception as exc:
            with stats.lock:
                stats.errors[f"{op}: {type(exc).__name__}"] += 1
            result.fail(f"{op}: transport error {type(exc).__name__}: {str(exc)[:200]}")
            continue
        stats.add(op, time.perf_counter() - started)
        error = outcome.get("error")
        if error is not None:
            if is_busy(error):
                with stats.lock:
                    stats.busy += 1
                continue
            with stats.lock:
                stats.errors[f"{op}: {str(error)[:80]}"] += 1
            result.fail(f"{op} {path}: {str(error)[:200]}")
            continue
        body = outcome.get("ok")
        if op in ("rpc search", "mcp search") and isinstance(body, dict):
            problem = well_formed(body.get("results"))
            if problem:
                result.fail(f"{op}: {problem}")


def run(quick: bool = False, out: Path | None = None, seconds: float | None = None, clients: int = 8,
        files: int | None = None) -> Result:
    result = Result("load")
    seconds = seconds or (8.0 if quick else 30.0)
    files = files or (300 if quick else 3000)
    with workdir("load") as base:
        vault = base / "vault"
        generate(vault, files, 3, base / "queries.json")
        sentinels = {}
        for i in range(SENTINELS):
            word = f"sentinelword{i}x{random.Random(i).randrange(10**6)}"
            (vault / f"Sentinel {i}.md").write_text(f"# Sentinel {i}\n\nThe {word} lives here.\n")
            sentinels[word] = f"Sentinel {i}.md"
        paths = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))[:500]
        with Live(vault, base / "index", "--no-parent-watch") as live:
            live.wait_ready(900)
            stats = Stats()
            stop = threading.Event()
            threads = [threading.Thread(target=client, args=(live, n, stop, stats, result, paths, sentinels),
                                        daemon=True) for n in range(clients)]
            rss: list[tuple[float, int]] = []
            reindexes = 0
            started = time.monotonic()
            for t in threads:
                t.start()
            building_seen = 0
            while time.monotonic() - started < seconds:
                status = live.rpc("status")["result"]
                building_seen += bool(status["building"])
                if not status["building"] and status["progress"] is None:
                    live.rpc("reindex", full=True)
                    reindexes += 1
                rss.append((time.monotonic() - started, rss_kb(live.pid)[0]))
                time.sleep(0.5)
            stop.set()
            for t in threads:
                t.join(timeout=60)
            _cur, peak = rss_kb(live.pid)
            if not result.ok:  # say why, not only that: the sidecar logged the traceback on stderr
                tail = live.server.stderr_tail()
                if "Traceback" in tail:
                    result.fail("sidecar stderr: " + tail[tail.rindex("Traceback"):][:1500])
        third = max(1, len(rss) // 3)
        first = sum(r for _t, r in rss[:third]) / third / 1024
        last = sum(r for _t, r in rss[-third:]) / third / 1024
        rows = []
        for name, values in sorted(stats.latency.items()):
            rows.append([name, len(values), f"{percentile(values, 50) * 1000:.1f}", f"{percentile(values, 99) * 1000:.1f}"])
        print(table(["call", "count", "p50 ms", "p99 ms"], rows))
        result.figures.update(clients=clients, seconds=seconds, notes=files + SENTINELS, calls=stats.calls,
                              full_reindexes_requested=reindexes, status_samples_building=building_seen,
                              busy=stats.busy, errors=dict(stats.errors), rss_first_third_mb=round(first, 1),
                              rss_last_third_mb=round(last, 1), rss_peak_mb=round(peak / 1024, 1),
                              rss_mb_every_5s=[round(r / 1024) for t, r in rss[::10]],
                              latency_ms={r[0]: {"p50": float(r[2]), "p99": float(r[3])} for r in rows})
        if last > first * 1.5 and last - first > 100:
            result.fail(f"memory grows: {first:.0f} MB in the first third, {last:.0f} MB in the last")
        if reindexes < 1:
            result.fail("no full reindex ran during the load")
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--files", type=int)
    args = parser.parse_args()
    result = run(args.quick, args.out, args.seconds, args.clients, args.files)
    write_json(args.out, "load.json", result.to_json())
    say(f"load: {'PASS' if result.ok else 'FAIL'} "
        f"{ {k: v for k, v in result.figures.items() if k != 'latency_ms'} }")
    for failure in result.failures[:30]:
        say(f"  - {failure}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

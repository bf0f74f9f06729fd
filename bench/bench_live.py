"""Edit -> searchable through the real file watcher: `sidecar serve` on an existing index, then one
note at a time gets a new word appended; as the plugin does, the bench waits for the server's
`index_changed` event naming the note (on /events), then searches for the word. The figure
includes the watcher's own wait (watch.py: it yields a batch once no event came for STEP_MS, at
most DEBOUNCE_MS after the first), stated beside it. The vault is restored afterwards.

    python bench/bench_live.py --vault V --index DIR [-n 40]
"""

from __future__ import annotations

import argparse
import http.client
import json
import queue
import random
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attack.common import Live, percentile, vault_notes

POLL_SECONDS = 0.005
EVENT_WAIT_SECONDS = 10.0


def index_changes(live: Live) -> queue.Queue[tuple[float, list[str]]]:
    """(arrival time, paths) of every index_changed event, read from /events on a thread."""
    events: queue.Queue[tuple[float, list[str]]] = queue.Queue()
    conn = http.client.HTTPConnection("127.0.0.1", live.rpc_port, timeout=600)
    conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{live.rpc_port}",
                                            "Authorization": f"Bearer {live.rpc_token}"})
    stream = conn.getresponse()

    def read() -> None:
        kind = ""
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:].strip()
            elif line.startswith("data: ") and kind == "index_changed":
                events.put((time.perf_counter(), json.loads(line[6:]).get("paths", [])))

    threading.Thread(target=read, daemon=True).start()
    return events


def wait_for(events: queue.Queue[tuple[float, list[str]]], rel: str, deadline: float) -> float | None:
    while (left := deadline - time.perf_counter()) > 0:
        try:
            at, paths = events.get(timeout=left)
        except queue.Empty:
            return None
        if rel in paths:
            return at
    return None


def edit_at_start_up(live: Live, path: Path, vault: Path) -> tuple[float, bool]:
    """Seconds from an edit made just after the handshake to its word being found, and whether the model
    was still loading then (10 s at most: slower counts as 10)."""
    word = f"zqstartup{random.randrange(10**9)}"
    rel = path.relative_to(vault).as_posix()
    started = time.perf_counter()
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n\nA thought from the first second, mentioning {word}.\n")
    while time.perf_counter() - started < 10:
        found = live.server.call("search", query=word, limit=5, mode="lexical")
        if any(h["path"] == rel for h in found["results"]):
            return time.perf_counter() - started, bool(found["vectors_loading"])
        time.sleep(POLL_SECONDS)
    return 10.0, bool(live.server.call("status")["model"]["loading"])


def ready(status: dict[str, object]) -> bool:
    model = status.get("model")
    return not status["building"] and not (isinstance(model, dict) and model.get("loading"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, required=True, help="an existing index (built by sidecar index)")
    parser.add_argument("-n", type=int, default=40, help="edits, one at a time")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    from sidecar.serve.watch import DEBOUNCE_MS, STEP_MS  # noqa: PLC0415  (the venv's sidecar)

    notes = vault_notes(args.vault)
    rng = random.Random(args.seed)
    sample = rng.sample(notes, min(args.n + 1, len(notes)))
    early, sample = sample[0], sample[1:]  # edited at once after the handshake, while the model loads
    originals = {p: p.read_bytes() for p in [early, *sample]}
    times: list[float] = []
    runs_s: list[float] = []  # each edit's event-driven run, as status reports it
    misses = 0
    try:
        with Live(args.vault, args.index, "--no-mcp") as live:
            start_up = edit_at_start_up(live, early, args.vault)
            live.wait_ready()
            while not ready(live.server.call("status")):  # the start-up scan, the model
                time.sleep(0.1)
            # What start-up loaded is warmed in the background (server._warm_up): a search waits for that,
            # and so would an edit made meanwhile; the figures below start after it.
            started = time.perf_counter()
            live.server.call("search", query="warm-up", limit=1)
            warm_up = time.perf_counter() - started
            events = index_changes(live)
            time.sleep(0.5)  # the stream is subscribed
            for k, path in enumerate(sample):
                word = f"zqlive{args.seed}x{k}w{rng.randrange(10**9)}"
                rel = path.relative_to(args.vault).as_posix()
                started = time.perf_counter()
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(f"\n\nA live thought mentioning {word}.\n")
                if wait_for(events, rel, started + EVENT_WAIT_SECONDS) is None:
                    misses += 1
                while True:
                    hits = live.server.call("search", query=word, limit=5, mode="lexical")["results"]
                    if any(h["path"] == rel for h in hits):
                        break
                    if time.perf_counter() - started > 10:
                        misses += 1
                        break
                    time.sleep(POLL_SECONDS)
                times.append(time.perf_counter() - started)
                runs_s.append((live.server.call("status")["indexing"]["last_event_run"] or {}).get("seconds", 0.0))
                time.sleep(0.3)  # let the watcher settle: edits one at a time, as a person types and saves
            runs = live.server.call("status")["indexing"]
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
    print(f"live: {args.vault.name}: edit -> searchable through the watcher, {len(times)} edits: "
          f"p50 {percentile(times, 50) * 1000:.0f} ms, p99 {percentile(times, 99) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms, misses {misses}")
    print(f"  slowest: {', '.join(f'{t * 1000:.0f}' for t in sorted(times)[-5:])} ms; the indexing runs: p50 "
          f"{percentile(runs_s, 50) * 1000:.1f} ms, max {max(runs_s) * 1000:.1f} ms")
    print(f"  measured once the start-up load of the vectors was done (waited {warm_up * 1000:.0f} ms for it after "
          "the scan and the model)")
    took, loading = start_up
    print(f"  an edit made right after the handshake: searchable by its words after {took * 1000:.0f} ms, the model "
          f"{'still loading' if loading else 'loaded'} by then (the start-up scan indexes it; no watcher involved)")
    print(f"  of which the watcher waits {STEP_MS} ms of quiet (at most {DEBOUNCE_MS} ms) before it yields; "
          f"search polled every {POLL_SECONDS * 1000:.0f} ms")
    last = runs["last_event_run"] or {}
    print(f"  event-driven runs {runs['event_runs']}, scans {runs['scans']}; last event run "
          f"{last.get('seconds', 0) * 1000:.1f} ms ({last.get('cpu_seconds', 0) * 1000:.1f} ms CPU); last scan "
          f"{(runs['last_scan'] or {}).get('seconds', 0) * 1000:.0f} ms (the reconcile's cost)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

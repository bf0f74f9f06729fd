#!/usr/bin/env python3
# ruff: noqa: PLW0108  (the cases are lambdas on purpose: each file is built only when its turn comes)
"""Hostile notes: files built to break a parser, an indexer or memory, one at a time and all together.

    python bench/attack/hostile.py [--quick] [--out DIR]

Each file is indexed alone (`sidecar index` as a child, next to one normal note) and measured:
exit code, indexing seconds (the run's own report, model loading excluded), peak RSS of the
child (wait4), and whether it was indexed or skipped with a reason in `status` and `health`.
Then all of them go into one vault behind `sidecar serve`, and every note is read back over MCP
(read_note, note_links, related_notes) and JSON-RPC (note.links, related) with a time limit.

Targets: no crash; each file indexed in under 4 s of CPU time (2 s on two cores; the run's own
`cpu_seconds`, model loading and calibration excluded: on a busy machine wall time measures the
neighbours) or skipped with a reason shown in status and health; peak RSS bounded
(reported against the one-small-note baseline); every read-back under 2 s of the server's CPU.
"""

from __future__ import annotations

import codecs
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Live, Result, cpu_seconds, main_for, rss_kb, run_sidecar, say, sidecar_cmd, table, workdir

LIMIT_S = 2.0  # a serve read-back, in the server's CPU seconds
# Indexing one file: 2 s of wall time on an idle 2-core machine is up to 4 s of CPU time, since the
# encoder's threads run beside the parser (CPU seconds add up across threads).
INDEX_CPU_LIMIT_S = 4.0
MB = 1_000_000


def prose(n_chars: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dogs", "while", "vault", "sidecar", "indexes", "notes", "about", "many", "topics"]
    out, size = [], 0
    while size < n_chars:
        line = " ".join(rng.choices(words, k=12)) + ".\n"
        out.append(line)
        size += len(line)
        if rng.random() < 0.05:
            out.append(f"\n## Section {size}\n\n")
    return "".join(out)[:n_chars]


def nested_list(limit: int) -> str:
    """A list nested one level deeper on every line (tabs), up to `limit` characters."""
    out, size, i = [], 0, 0
    while True:
        line = "\t" * i + f"- level {i}\n"
        if size + len(line) > limit:
            return "".join(out)
        out.append(line)
        size += len(line)
        i += 1


def _alias_bomb() -> str:
    lines = ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [{', '.join(f'*{prev}' for _ in range(9))}]")
        prev = name
    return "\n".join([*lines, "---", "# Bomb", "body"]) + "\n"


CASES: dict[str, Callable[[], bytes]] = {
    "huge prose (1.99 MB, under the limit)": lambda: prose(1_990_000).encode(),
    "too large (6 MB)": lambda: prose(6_000_000).encode(),
    "one line 10 MB": lambda: ("word " * 2_000_000).encode(),
    "one line 1.99 MB": lambda: ("word " * 398_000).encode(),
    "one token 1.99 MB": lambda: ("x" * 1_990_000).encode(),
    "binary with NULs": lambda: random.Random(1).randbytes(200_000),
    "binary without NULs": lambda: bytes(b or 1 for b in random.Random(2).randbytes(200_000)),
    "invalid UTF-8": lambda: b"# Bad\n\ncaf\xe9 \xff\xfe\xc0\xae overlong \xed\xa0\x80 surrogate\n" * 1000,
    "UTF-16 LE with BOM": lambda: codecs.BOM_UTF16_LE + "# Sixteen\n\nhello utf16 text\n".encode("utf-16-le"),
    "UTF-16 BE with BOM": lambda: codecs.BOM_UTF16_BE + "# Sixteen\n\nhello utf16 text\n".encode("utf-16-be"),
    "UTF-16 LE without BOM": lambda: "# Sixteen\n\nhello utf16 text\n".encode("utf-16-le"),
    "UTF-8 BOM": lambda: codecs.BOM_UTF8 + b"---\ntitle: Bom\n---\n# Bom\n\ntext\n",
    "CRLF": lambda: b"---\r\ntags: [a]\r\n---\r\n# Crlf\r\n\r\n- item [[Normal]]\r\n" * 2000,
    "CR only": lambda: b"---\rtags: [a]\r---\r# Cr\r\r- item [[Normal]]\r" * 2000,
    "YAML alias bomb": lambda: _alias_bomb().encode(),
    "YAML alias bomb, no frontmatter end": lambda: _alias_bomb().replace("---\n# Bomb", "# Bomb").encode(),
    "malformed frontmatter": lambda: b"---\ntitle: [unclosed\n\tbad: : :\n  - x\n---\n# Body\ntext\n",
    "deep YAML nesting": lambda: ("---\nx: " + "[" * 50_000 + "]" * 50_000 + "\n---\n# Deep\n").encode(),
    "1,900 nested list levels": lambda: nested_list(1_990_000).encode(),
    "100k nested brackets": lambda: ("[" * 100_000 + "x" + "]" * 100_000).encode(),
    "50k nested wikilink openers": lambda: ("[[" * 50_000 + "x" + "]]" * 50_000).encode(),
    "20k nested blockquotes": lambda: (">" * 20_000 + " deep\n" + "> " * 5_000 + "x\n").encode(),
    "100k links": lambda: "".join(f"[[N{i}]] [m](F/{i}.md)\n" for i in range(50_000)).encode(),
    "50k headings": lambda: "".join(f"{'#' * (1 + i % 6)} Heading {i}\n" for i in range(50_000)).encode(),
    "100k tags": lambda: " ".join(f"#tag{i}" for i in range(100_000)).encode(),
    "100k unclosed fences": lambda: b"```python\ncode\n~~~\n" * 100_000,
    "unclosed HTML comment": lambda: b"# C\n<!--\n" + prose(1_900_000).encode(),
    "10k-column table": lambda: ("|" + "|".join(f"c{i}" for i in range(10_000)) + "|\n|" + "---|" * 10_000 + "\n").encode() * 3,
    "combining marks (zalgo) 1 MB": lambda: ("a" + "\u0301" * 200 + " ").encode() * 2_500,
    "control characters": lambda: bytes(range(1, 32)).replace(b"\n", b"") * 10_000,
    "many block ids": lambda: "".join(f"para {i} ^block{i}\n\n" for i in range(80_000)).encode(),
    "embeds of itself": lambda: b"# Self\n" + b"![[Self]]\n" * 50_000,
}
QUICK = ("one line 10 MB", "1,900 nested list levels", "100k tags", "binary with NULs", "invalid UTF-8", "UTF-16 LE with BOM", "UTF-16 LE without BOM", "CR only",
         "YAML alias bomb", "deep YAML nesting", "100k nested brackets", "20k nested blockquotes", "100k links")


def file_name(case: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in case).strip("-") + ".md"


def index_child(vault: Path, index_dir: Path) -> dict[str, Any]:
    """`sidecar index --json` as a child; its report, wall time and peak RSS (KiB, from wait4)."""
    started = time.perf_counter()
    proc = subprocess.Popen(sidecar_cmd("index", "--vault", str(vault), "--index", str(index_dir), "--json"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    # Peak RSS from VmHWM while it runs: wait4's ru_maxrss would include this (forking) process's own peak.
    peak = 0
    reader = threading.Thread(target=lambda: chunks.update(out=proc.stdout.read(), err=proc.stderr.read()),  # type: ignore[union-attr]
                              daemon=True)
    chunks: dict[str, bytes] = {}
    reader.start()
    deadline = time.monotonic() + 300
    while proc.poll() is None:
        peak = max(peak, rss_kb(proc.pid)[1])
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.01)
    reader.join()
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    code = proc.returncode
    report: dict[str, Any] = {}
    if code == 0:
        report = json.loads(out)
    return {"code": code, "wall_s": time.perf_counter() - started, "peak_rss_kb": peak,
            "report": report.get("report", {}), "status": report.get("status", {}), "stderr": err.decode(errors="replace")}


def run(quick: bool = False, out: Path | None = None) -> Result:
    result = Result("hostile")
    cases = {k: v for k, v in CASES.items() if not quick or k in QUICK}
    rows: list[list[Any]] = []
    with workdir("hostile") as base:
        baseline_vault = base / "baseline"
        baseline_vault.mkdir()
        (baseline_vault / "Normal.md").write_text("# Normal\n\na normal note [[Other]]\n")
        baseline = index_child(baseline_vault, base / "idx-baseline")
        result.figures["baseline_peak_rss_mb"] = round(baseline["peak_rss_kb"] / 1024, 1)
        all_vault = base / "all"
        all_vault.mkdir()
        (all_vault / "Normal.md").write_text("# Normal\n\na normal note\n")
        peaks = []
        for i, (case, make) in enumerate(cases.items()):
            data = make()
            vault = base / f"v{i}"
            vault.mkdir()
            (vault / "Normal.md").write_text("# Normal\n\na normal note\n")
            name = file_name(case)
            (vault / name).write_bytes(data)
            (all_vault / name).write_bytes(data)
            got = index_child(vault, base / f"idx{i}")
            peaks.append(got["peak_rss_kb"])
            skipped = {s["path"]: s["reason"] for s in got["status"].get("skipped", [])}
            seconds = got["report"].get("cpu_seconds")  # the run's own CPU time: model loading and calibration excluded
            outcome = "skipped: " + skipped[name] if name in skipped else "indexed"
            if got["code"] != 0:
                result.fail(f"{case}: `sidecar index` exited {got['code']}: {got['stderr'][-500:]}")
                outcome = f"CRASH (exit {got['code']})"
            elif got["status"].get("notes", 0) < 1 + (name not in skipped):
                result.fail(f"{case}: not indexed and not skipped (notes={got['status'].get('notes')})")
            elif name not in skipped and seconds is not None and seconds > INDEX_CPU_LIMIT_S:
                result.fail(f"{case}: indexing took {seconds:.2f} s of CPU (limit {INDEX_CPU_LIMIT_S} s)")
            if "Traceback" in got["stderr"]:
                result.fail(f"{case}: a traceback on stderr: {got['stderr'][-300:]}")
            if name in skipped:
                health = run_sidecar("health", "--vault", str(vault), "--index", str(base / f"idx{i}"), "--json",
                                     "--section", "skipped")
                if name not in health.stdout:
                    result.fail(f"{case}: skipped in status but not shown in health: {health.stdout[:300]}")
            rows.append([case, f"{len(data) / MB:.2f}", outcome[:60], "-" if seconds is None else f"{seconds:.2f}",
                         f"{got['peak_rss_kb'] / 1024:.0f}"])
            say(f"{case}: {rows[-1][2:]}")
        result.figures["files"] = len(cases)
        result.figures["max_peak_rss_mb"] = round(max(peaks) / 1024, 1)
        result.figures["max_index_s"] = max((float(r[3]) for r in rows if r[3] != "-" and not r[2].startswith("skipped")),
                                            default=0.0)
        result.figures["skipped"] = sum(r[2].startswith("skipped") for r in rows)
        serve_all(all_vault, base / "idx-all", result)
    print(table(["file", "MB", "outcome", "index CPU s", "peak RSS MB"], rows))
    return result


def serve_all(vault: Path, index_dir: Path, result: Result) -> None:
    """Every hostile note behind `sidecar serve`: read it back through both ports, in bounded time."""
    with Live(vault, index_dir, "--no-parent-watch") as live:
        live.wait_ready(600)
        notes = [p.name for p in vault.iterdir()]
        slowest = 0.0
        for name in notes:
            for label, fn in (("mcp read_note", lambda n=name: live.mcp("read_note", path=n)),
                              ("mcp note_links", lambda n=name: live.mcp("note_links", path=n)),
                              ("mcp related_notes", lambda n=name: live.mcp("related_notes", path=n)),
                              ("rpc note.links", lambda n=name: live.rpc("note.links", path=n)),
                              ("rpc related", lambda n=name: live.rpc("related", path=n))):
                started = cpu_seconds(live.pid)
                answer = fn()
                took = cpu_seconds(live.pid) - started
                slowest = max(slowest, took)
                err = answer.get("error")
                if err and "not_found" not in json.dumps(err) and "-32004" not in json.dumps(err):
                    result.fail(f"serve: {label} {name}: {json.dumps(err)[:200]}")
                if took > LIMIT_S:
                    result.fail(f"serve: {label} {name} took {took:.2f} s of the server's CPU")
        for query in ("word", "[[[[", "lol", "x" * 200):
            answer = live.rpc("search", query=query, limit=10)
            if "error" in answer:
                result.fail(f"serve: search {query[:20]!r}: {answer['error']}")
        health = live.rpc("health")
        if "error" in health:
            result.fail(f"serve: health: {health['error']}")
        _cur, peak = rss_kb(live.pid)
        result.figures["serve_peak_rss_mb"] = round(peak / 1024, 1)
        result.figures["serve_slowest_call_s"] = round(slowest, 2)


if __name__ == "__main__":
    raise SystemExit(main_for(run))

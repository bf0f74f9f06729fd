#!/usr/bin/env python3
"""Secrets: redaction rate per kind, false positives, zero secret bytes in the index files and in
every answer of both ports, and no old secret left after a redaction-rule change.

    python bench/attack/secrets_leak.py [--quick] [--out DIR] [--no-hub]

1. Corpus: format-valid fake credentials of every kind in sidecar.redact.KINDS (generated as in
   tests/test_redact.py), placed mid-line, in frontmatter, in code fences, in URLs and across a
   chunk boundary. Target: >= 99 % redacted, per kind.
2. False positives: an ordinary-notes corpus full of hashes, UUIDs, base64 images, block ids,
   URLs, digests, versions, placeholders. Target: <= 1 finding per 10,000 lines. The eval vaults
   (../shared/eval-vaults), when present, are counted too (copied first, for information).
3. The corpus behind `sidecar serve`: search, related, read_note, get_context, note_links, health
   over both ports; every raw answer and the index files (database, WAL, SHM, while serving and
   after the stop) are scanned for each secret (exact, and the lowercase middle of each long
   alphanumeric run, which is how an FTS5 term would sit in a segment). Target: zero.
4. Rule change: a custom token the rules miss is indexed, then `sidecar index` runs again with a
   stricter rule patched in (a child process); no byte of the token may be left in the index
   files. On obsidian-hub (when present) the cost of that purge is measured.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import random
import re
import secrets
import shutil
import string
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import EVAL_VAULTS, ROOT, Live, Result, run_sidecar, say, table, workdir, write_json

from sidecar.ingest.redact import KINDS, redact
from tests.test_redact import _samples

WORDS = ["alpha", "beta", "gamma", "delta", "notes", "meeting", "project", "review", "deploy", "release", "plan", "summary", "draft", "idea"]


# ---- 1. the corpus --------------------------------------------------------------------------------
def filler(rng: random.Random, n_chars: int) -> str:
    lines, size = [], 0
    while size < n_chars:
        line = " ".join(rng.choices(WORDS, k=10)) + "."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


PLACEMENTS = ("mid_line", "frontmatter", "code_fence", "url", "chunk_boundary")


def place(placement: str, snippet: str, url: str | None, mark: str, rng: random.Random) -> str | None:
    if placement == "mid_line":
        return f"# {mark}\n\nSome prose first, then {snippet} and more prose.\nSecond line.\n"
    if placement == "frontmatter":
        return f"---\ntitle: {mark}\nref: {snippet}\ntags: [ops]\n---\n# {mark}\n\nBody text.\n"
    if placement == "code_fence":
        return f"# {mark}\n\nRun this:\n\n```bash\n{snippet}\n```\n\nDone.\n"
    if placement == "url":
        return None if url is None else f"# {mark}\n\nOpen <{url}> later, or [the link]({url}).\n"
    # a long note whose chunk split (1,600 characters) falls where the secret is
    head = filler(rng, 1560)
    return f"# {mark}\n\n{head}\n{snippet}\n{filler(rng, 1800)}\n\n## Later\n\n{filler(rng, 400)}\n"


def build_corpus(vault: Path, seeds: list[int]) -> list[dict[str, Any]]:
    items = []
    for seed in seeds:
        rng = random.Random(seed)
        for kind, samples in _samples(random.Random(seed)).items():
            for i, sample in enumerate(samples):
                for placement in PLACEMENTS:
                    mark = f"NOTEMARK{len(items):05d}"
                    text = place(placement, sample.snippet, sample.url, mark, rng)
                    if text is None:
                        continue
                    rel = f"Secrets/{kind}/{seed}-{i}-{placement}.md"
                    path = vault / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
                    items.append({"kind": kind, "placement": placement, "secret": sample.secret, "path": rel,
                                  "mark": mark, "text": text})
    return items


def redaction_rates(items: list[dict[str, Any]], result: Result) -> list[list[Any]]:
    per_kind: dict[str, list[int]] = {k: [0, 0] for k in KINDS}
    for item in items:
        out = redact(item["text"]).text
        ok = item["secret"] not in out
        per_kind[item["kind"]][0] += ok
        per_kind[item["kind"]][1] += 1
        if not ok:
            result.fail(f"not redacted: {item['kind']} ({item['placement']}) in {item['path']}")
    rows = []
    for kind, (good, total) in per_kind.items():
        rate = 100.0 * good / total if total else 0.0
        rows.append([kind, total, good, f"{rate:.1f}"])
        if total == 0:
            result.fail(f"no sample for kind {kind}")
        elif rate < 99.0:
            result.fail(f"{kind}: {rate:.1f} % redacted (target 99 %)")
    total = sum(v[1] for v in per_kind.values())
    result.figures["redacted_pct"] = round(100.0 * sum(v[0] for v in per_kind.values()) / max(1, total), 2)
    result.figures["secrets_planted"] = total
    result.figures["min_kind_pct"] = min(float(r[3]) for r in rows)
    return rows


# ---- 2. false positives ---------------------------------------------------------------------------
def ordinary_lines(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    hexd, alnum = "0123456789abcdef", string.ascii_letters + string.digits

    def h(k: int) -> str:
        return "".join(rng.choices(hexd, k=k))

    makers = [
        lambda: f"Fixed in commit {h(40)} (short {h(7)}).",
        lambda: f"- sha256: {h(64)}",
        lambda: f"id: {uuid.UUID(int=rng.getrandbits(128))}",
        lambda: f"See [[Meeting notes#^{h(6)}]] for the decision ^{h(6)}",
        lambda: f"![chart](data:image/png;base64,{base64.b64encode(rng.randbytes(300)).decode()})",
        lambda: f"https://github.com/org/repo/blob/{h(40)}/src/main.py#L{rng.randint(1, 999)}",
        lambda: f"https://example.com/search?q={rng.choice(WORDS)}&page={rng.randint(1, 9)}&sort=desc#results",
        lambda: f"docker pull ghcr.io/org/app@sha256:{h(64)}",
        lambda: f'"integrity": "sha512-{base64.b64encode(rng.randbytes(64)).decode()}"',
        lambda: f"Version v{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)} released {rng.randint(2019, 2025)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        lambda: f"color: #{h(6)}; background: rgba(0,0,0,0.{rng.randint(1, 9)})",
        lambda: "api_key: ${API_KEY}  # from the environment",
        lambda: "password: <your password here>",
        lambda: f"The token expires after {rng.randint(1, 24)} hours; refresh it with the CLI.",
        lambda: f"secret: {rng.choice(WORDS)} {rng.choice(WORDS)} (the plot twist)",
        lambda: f"IMG_{rng.randint(2019, 2025)}0{rng.randint(1, 9)}1{rng.randint(0, 9)}_{h(6)}.jpg",
        lambda: f"- [ ] {' '.join(rng.choices(WORDS, k=6))} #task/{rng.choice(WORDS)}",
        lambda: f"key = value_{rng.choice(WORDS)}",
        lambda: f"ISBN 978-{rng.randint(0, 9)}-{rng.randint(100, 999)}-{rng.randint(10000, 99999)}-{rng.randint(0, 9)}",
        lambda: f"Object id {''.join(rng.choices(alnum, k=24))} in the logs (a Mongo ObjectId is hex: {h(24)})",
        lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{''.join(rng.choices(alnum, k=43))} me@laptop",
        lambda: f"$x = \\frac{{{rng.randint(1, 9)}}}{{{rng.randint(1, 9)}}}$ and `{rng.choice(WORDS)}_{rng.choice(WORDS)}()`",
        lambda: " ".join(rng.choices(WORDS, k=14)),
        lambda: f"| {rng.choice(WORDS)} | {h(8)} | {rng.randint(1, 999)} |",
    ]
    return [rng.choice(makers)() for _ in range(n)]


def false_positives(lines: list[str]) -> tuple[int, Counter[str], list[str]]:
    findings: Counter[str] = Counter()
    examples = []
    hits = 0
    for line in lines:
        found = redact(line).findings
        if found:
            hits += 1
            findings.update(f.kind for f in found)
            if len(examples) < 10:
                examples.append(line[:160])
    return hits, findings, examples


def eval_vault_lines(limit_files: int = 100_000) -> dict[str, tuple[int, int, Counter[str]]]:
    """(lines, lines with a finding, kinds) per eval vault; read-only, nothing is written there."""
    out = {}
    for name in ("obsidian-hub", "kepano-obsidian"):
        root = EVAL_VAULTS / name
        if not root.is_dir():
            continue
        lines = hits = 0
        kinds: Counter[str] = Counter()
        for i, path in enumerate(sorted(root.rglob("*.md"))):
            if i >= limit_files:
                break
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            lines += text.count("\n") + 1
            found = redact(text).findings
            hits += len({f.line for f in found})
            kinds.update(f.kind for f in found)
        out[name] = (lines, hits, kinds)
    return out


# ---- 3. bytes in files and answers ----------------------------------------------------------------
def needles(secret: str) -> list[bytes]:
    """The secret, and the lowercase middle of each long alphanumeric run (an FTS5 term in a segment
    is lowercased, its start may be shared with the previous term and its end stemmed)."""
    out = [secret.encode()]
    for run in re.findall(r"[A-Za-z0-9]{16,}", secret):
        out.append(run[6:-4].lower().encode())
    return out


def scan_bytes(blobs: dict[str, bytes], secret_list: list[str]) -> list[tuple[str, str]]:
    found = []
    lowered = {name: data.lower() for name, data in blobs.items()}
    for secret in secret_list:
        for needle in needles(secret):
            for name, data in blobs.items():
                if needle in data or (needle.islower() and needle in lowered[name]):
                    found.append((secret[:12] + "...", name))
                    break
    return found


def index_files(index_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in index_dir.glob("index.sqlite3*") if p.is_file()}


def answers(live: Live, items: list[dict[str, Any]], sample: int, rng: random.Random) -> dict[str, bytes]:
    """Raw answers of every reading call on both ports, for a sample of the corpus notes."""
    out: dict[str, bytes] = {}
    chosen = rng.sample(items, min(sample, len(items)))
    for n, item in enumerate(chosen):
        path, mark = item["path"], item["mark"]
        calls: list[tuple[str, str, str, dict[str, Any]]] = [
            ("rpc search", "rpc", "search", {"query": f"{mark} prose", "limit": 5, "max_tokens": 800}),
            ("rpc related path", "rpc", "related", {"path": path, "limit": 5}),
            ("rpc related text", "rpc", "related", {"text": f"# Draft\n\nabout {mark}", "limit": 5}),
            ("rpc note.links", "rpc", "note.links", {"path": path}),
            ("mcp search", "mcp", "search", {"query": mark, "limit": 5, "max_tokens": 800}),
            ("mcp read_note", "mcp", "read_note", {"path": path}),
            ("mcp read_note title", "mcp", "read_note", {"title": mark}),
            ("mcp get_context", "mcp", "get_context", {"query": f"what is in {mark}", "max_tokens": 2000}),
            ("mcp related_notes", "mcp", "related_notes", {"path": path, "limit": 5}),
            ("mcp note_links", "mcp", "note_links", {"path": path}),
        ]
        for name, port, method, params in calls:
            reply = live.rpc_raw(method, params) if port == "rpc" else live.mcp_raw(method, params)
            out[f"{name} #{n}"] = reply.raw
    for name, fn in (("rpc health", lambda: live.rpc_raw("health", {})),
                     ("mcp vault_health", lambda: live.mcp_raw("vault_health", {})),
                     ("mcp list_notes", lambda: live.mcp_raw("list_notes", {"limit": 500})),
                     ("mcp vault_overview", lambda: live.mcp_raw("vault_overview", {})),
                     ("rpc status", lambda: live.rpc_raw("status", {}))):
        out[name] = fn().raw
    for key in list(out):  # the decoded text too: JSON escapes must not hide a secret from the scan
        with contextlib.suppress(ValueError):
            out[key + " (decoded)"] = json.dumps(json.loads(out[key]), ensure_ascii=False).encode()
    return out


# ---- 4. rule change -------------------------------------------------------------------------------
PATCH = """
import re, sys
import sidecar.ingest.redact as r
r._RULES = r._RULES + (r._Rule("generic_secret", 95, re.compile(r"ACME-[A-Za-z0-9]{32}"), lambda m: m.span()),)
from sidecar.commands.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def index_with_patch(vault: Path, index_dir: Path) -> float:
    started = time.perf_counter()
    done = run_sidecar_patched(["index", "--vault", str(vault), "--index", str(index_dir), "--json"])
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return time.perf_counter() - started


def run_sidecar_patched(args: list[str]) -> Any:
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    return subprocess.run([sys.executable, "-c", PATCH, *args], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, cwd=ROOT, check=False)


def rule_change(base: Path, result: Result) -> dict[str, Any]:
    vault = base / "rc-vault"
    (vault / "Ops").mkdir(parents=True)
    tokens = ["ACME-" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32)) for _ in range(5)]
    for i, tok in enumerate(tokens):
        (vault / "Ops" / f"launch {i}.md").write_text(f"# Launch {i}\n\nThe launch phrase is {tok} today.\n\n"
                                                     f"{filler(random.Random(i), 3000)}\n\nAgain: {tok}\n")
        assert tok in redact(tok).text, "the stock rules must miss the custom token"
    index_dir = base / "rc-index"
    done = run_sidecar("index", "--vault", str(vault), "--index", str(index_dir), "--json")
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    before = scan_bytes(index_files(index_dir), tokens)
    if not before:
        result.fail("rule change: the custom token is not found in the index before the change (the scan is blind)")
    took = index_with_patch(vault, index_dir)
    after = scan_bytes(index_files(index_dir), tokens)
    for secret, where in after:
        result.fail(f"rule change: {secret} still in {where} after the reindex with the stricter rule")
    return {"rule_change_found_before": len(before), "rule_change_left_after": len(after),
            "rule_change_reindex_s": round(took, 2)}


def hub_cost(base: Path, result: Result) -> dict[str, Any]:
    src = EVAL_VAULTS / "obsidian-hub" / "vault"
    if not src.is_dir():
        src = EVAL_VAULTS / "obsidian-hub"
    if not src.is_dir():
        return {"hub": "absent"}
    vault = base / "hub"
    shutil.copytree(src, vault, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    index_dir = base / "hub-index"
    started = time.perf_counter()
    done = run_sidecar("index", "--vault", str(vault), "--index", str(index_dir), "--json", timeout=1800)
    full_s = time.perf_counter() - started
    if done.returncode != 0:
        result.fail(f"hub: index failed: {done.stderr[-500:]}")
        return {}
    notes = json.loads(done.stdout)["status"]["notes"]
    size_before = sum(len(b) for b in index_files(index_dir).values())
    started = time.perf_counter()
    run_sidecar("index", "--vault", str(vault), "--index", str(index_dir), "--json", timeout=1800)
    noop_s = time.perf_counter() - started
    purge_s = index_with_patch(vault, index_dir)
    size_after = sum(len(b) for b in index_files(index_dir).values())
    return {"hub_notes": notes, "hub_full_index_s": round(full_s, 1), "hub_noop_index_s": round(noop_s, 1),
            "hub_rule_change_reindex_purge_s": round(purge_s, 1), "hub_index_mb_before": round(size_before / 1e6, 1),
            "hub_index_mb_after_purge": round(size_after / 1e6, 1)}


def run(quick: bool = False, out: Path | None = None, hub: bool = True) -> Result:
    result = Result("secrets")
    rng = random.Random(5)
    with workdir("secrets") as base:
        vault = base / "vault"
        vault.mkdir()
        items = build_corpus(vault, [101] if quick else [101, 202, 303, 404])
        rows = redaction_rates(items, result)
        print(table(["kind", "planted", "redacted", "%"], rows))
        lines = ordinary_lines(10_000 if quick else 100_000)
        hits, kinds, examples = false_positives(lines)
        per10k = hits * 10_000 / len(lines)
        result.figures.update(fp_lines=len(lines), fp_lines_flagged=hits, fp_per_10k_lines=round(per10k, 2),
                              fp_kinds=dict(kinds))
        if per10k > 1.0:
            result.fail(f"false positives: {per10k:.2f} per 10,000 lines (target <= 1): {examples[:5]}")
        if not quick:
            for name, (n, h, k) in eval_vault_lines().items():
                result.figures[f"eval_{name}_findings_per_10k_lines"] = round(h * 10_000 / max(1, n), 2)
                result.figures[f"eval_{name}_lines"] = n
                result.figures[f"eval_{name}_kinds"] = dict(k)
        # ordinary notes in the served vault too, so searches have something else to find
        (vault / "Ordinary.md").write_text("# Ordinary\n\n" + "\n".join(lines[:2000]) + "\n", encoding="utf-8")
        secret_list = sorted({i["secret"] for i in items})
        with Live(vault, base / "index", "--no-parent-watch") as live:
            live.wait_ready(600)
            captured = answers(live, items, 40 if quick else 300, rng)
            files_live = index_files(base / "index")
        files_after = index_files(base / "index")
        leaks_answers = scan_bytes(captured, secret_list)
        leaks_files = scan_bytes({f"{k} (serving)": v for k, v in files_live.items()} |
                                 {f"{k} (stopped)": v for k, v in files_after.items()}, secret_list)
        for secret, where in leaks_answers[:20]:
            result.fail(f"secret {secret} in the answer of {where}")
        for secret, where in leaks_files[:20]:
            result.fail(f"secret {secret} in index file {where}")
        result.figures.update(answers_scanned=len(captured), answer_bytes=sum(map(len, captured.values())),
                              index_bytes_scanned=sum(map(len, files_live.values())) + sum(map(len, files_after.values())),
                              secret_bytes_in_answers=len(leaks_answers), secret_bytes_in_index_files=len(leaks_files))
        result.figures.update(rule_change(base, result))
        if hub and not quick:
            result.figures.update(hub_cost(base, result))
    say(json.dumps({k: v for k, v in result.figures.items() if not isinstance(v, dict)}))
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-hub", action="store_true", help="skip the purge cost on obsidian-hub")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attack")
    args = parser.parse_args()
    result = run(args.quick, args.out, hub=not args.no_hub)
    write_json(args.out, "secrets.json", result.to_json())
    say(f"secrets: {'PASS' if result.ok else 'FAIL'}")
    for failure in result.failures[:30]:
        say(f"  - {failure}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())



#!/usr/bin/env python3
"""Path confinement: generated hostile paths and names through every path-taking call on both ports.

    python bench/attack/paths.py [--quick] [--out DIR]

A vault with canaries (unique strings) planted in every file that must never be served: files
outside the vault (a sibling `vault-evil/` too), files behind symlinks and symlinked folders that
leave the vault, hidden files (`.obsidian/`, `.git/`, at any depth), `.indexignore`d and
Obsidian-excluded files, and an in-vault symlink to an excluded file. Every input goes through
JSON-RPC `note.links`, `related` (path, and path + buffer), `search` (folder filter) and MCP
`read_note`, `note_links`, `related_notes` (path and title each) and `search` (folder).

Targets: no canary byte in any response; the answer for "outside/excluded" equals the answer for
"not found": every input is sent twice, with the forbidden files present and then deleted, and
the error objects must be identical. A race phase swaps a symlink between a note inside and a
file outside in a tight loop while reading it (and while the watcher re-indexes it).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Live, Result, canary, main_for, say, table, workdir

WORD = "pineapple"  # in every file, so a search for it would surface any file that got into the index
NFD_NAME = unicodedata.normalize("NFD", "Noël.md")


class Layout:
    """The vault, its forbidden files and their canaries."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.vault = base / "vault"
        self.canaries: dict[str, str] = {}  # canary -> where it was planted
        self.forbidden_files: list[Path] = []

    def plant(self, path: Path, label: str, text: str | None = None) -> None:
        mark = canary(label)
        self.canaries[mark] = str(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text.replace("{canary}", mark) if text else f"# {path.stem}\n\n{WORD} {mark}\n\n[[Inside]]\n"
        path.write_text(body, encoding="utf-8")
        self.forbidden_files.append(path)

    def build(self) -> None:
        v = self.vault
        (v / "Notes").mkdir(parents=True)
        (v / "Notes" / "Inside.md").write_text(f"# Inside\n\n{WORD} INSIDEOK [[Other]]\n", encoding="utf-8")
        (v / "Notes" / "Other.md").write_text(f"# Other\n\n{WORD} other [[Inside]]\n", encoding="utf-8")
        (v / "Notes" / "RaceInside.md").write_text(f"# RaceInside\n\n{WORD} RACEINSIDEOK\n", encoding="utf-8")
        (v / "Café.md").write_text(f"# Café\n\n{WORD} cafe [[Noël]]\n", encoding="utf-8")
        (v / NFD_NAME).write_text(f"# Noël\n\n{WORD} NFDOK\n", encoding="utf-8")
        # config files with canaries (they stay in phase B: they carry the rules)
        (v / ".obsidian").mkdir()
        app = {"userIgnoreFilters": ["Excluded/", "/regex-secret\\.md$/"], "marker": "{canary}"}
        self.plant(v / ".obsidian" / "app.json", "appjson", json.dumps(app))
        self.plant(v / ".indexignore", "indexignore", "Private/\n# {canary}\n")
        self.config = [v / ".obsidian" / "app.json", v / ".indexignore"]
        self.forbidden_files = []
        for rel in ("Private/secret.md", "Excluded/secret.md", "Notes/regex-secret.md", ".obsidian/canary.md",
                    ".git/notes.md", "sub/.obsidian/deep.md", "sub/deeper/.git/deep.md", ".hidden.md",
                    ".trash/trashed.md", ".OBSIDIAN/upper.md", ".Git/mixed.md"):
            self.plant(v / rel, rel.replace("/", "").replace(".", "")[:12])
        self.plant(v / ".git" / "config", "gitconfig", "[core]\n\tsecret = {canary}\n")
        self.plant(self.base / "outside.md", "outside")
        self.plant(self.base / "outdir" / "n.md", "outdir")
        self.plant(self.base / "vault-evil" / "secret.md", "sibling")
        self.plant(self.base / "race_outside.md", "race")
        (v / "Escape.md").symlink_to(self.base / "outside.md")
        (v / "EscRel.md").symlink_to(Path("..") / "outside.md")
        (v / "EscDir").symlink_to(self.base / "outdir", target_is_directory=True)
        (v / "Sibling").symlink_to(self.base / "vault-evil", target_is_directory=True)
        (v / "InLink.md").symlink_to(Path("Private") / "secret.md")
        (v / "Race.md").symlink_to(Path("Notes") / "RaceInside.md")

    def delete_forbidden(self) -> None:
        for path in self.forbidden_files:
            path.unlink(missing_ok=True)


# ---- inputs ---------------------------------------------------------------------------------------
TARGETS = (
    "../outside.md", "../vault-evil/secret.md", "../outdir/n.md", "../race_outside.md",
    "Private/secret.md", "Excluded/secret.md", "Notes/regex-secret.md", ".obsidian/app.json", ".obsidian/canary.md",
    ".git/config", ".git/notes.md", "sub/.obsidian/deep.md", "sub/deeper/.git/deep.md", ".hidden.md",
    ".trash/trashed.md", ".indexignore", "Escape.md", "EscRel.md", "EscDir/n.md", "Sibling/secret.md", "InLink.md",
    ".OBSIDIAN/upper.md", ".Git/mixed.md",
)


def _case_variants(t: str) -> list[str]:
    out = [t.upper(), t.swapcase()]
    out += [t.replace(".obsidian", v) for v in (".Obsidian", ".OBSIDIAN", ".obsidian.", ".obsidian ", ".obsidian..")
            if ".obsidian" in t]
    out += [t.replace(".git", v) for v in (".GIT", ".Git", ".git.", ".git ", ".git::$INDEX_ALLOCATION") if ".git/" in t]
    out += [re.sub(r"^(Private|Excluded)", lambda m: m.group(1).lower(), t),
            re.sub(r"^(Private|Excluded)", lambda m: m.group(1) + ".", t),
            re.sub(r"^(Private|Excluded)", lambda m: m.group(1) + " ", t)] if t.startswith(("Private", "Excluded")) else []
    return out


def transforms(t: str, vault: Path) -> list[str]:
    comps = t.split("/")
    out = [
        t, t.removesuffix(".md"), "./" + t, "Notes/../" + t, "Notes/./../" + t, f"../{vault.name}/{t}",
        str(vault / t), t.replace("/", "\\"), t.replace("/", "//"), "/" + t, t + "/", t + "/.",
        t.replace(".", "%2e").replace("/", "%2f"), t.replace(".", "%2E").replace("/", "%2F"),
        t.replace(".", "%252e").replace("/", "%252f"), t.replace(".", "%c0%ae").replace("/", "%c0%af"),
        t.replace(".", "%e0%80%ae"), t.replace(".", "\u00c0\u00ae").replace("/", "\u00c0\u00af"),
        t + "\x00", t + "\x00.md", "Notes/Inside.md\x00/../" + t, "\x00" + t,
        t.replace("/", "\uff0f").replace(".", "\uff0e"), t.replace("/", "\u2215"), t.replace("..", "\u2025"),
        "~/" + t, "~" + t, "file://" + str(vault / t), "C:\\" + t.replace("/", "\\"), "C:" + t,
        "\\\\localhost\\share\\" + t.replace("/", "\\"), "//localhost/share/" + t, "\\\\?\\C:\\" + t,
        t + "#Heading", t + "|alias", f"[[{t}]]", " " + t, t + " ", t + "?x=1", "./" * 40 + t,
        "a/" * 20 + "../" * 20 + t, "/".join(c + "." for c in comps), "/".join(c + " " for c in comps),
        unicodedata.normalize("NFD", t), unicodedata.normalize("NFKD", t), t + "\u200b", "\u202e" + t,
    ]
    out += _case_variants(t)
    return out


def fixed_inputs(base: Path) -> list[str]:
    vault = base / "vault"
    return [
        "/etc/passwd", "../../../../../../../../etc/passwd", "..\\..\\..\\..\\etc\\passwd", "/proc/self/environ",
        "/proc/self/cmdline", "~", "~root", "~/.ssh/id_rsa", "..", ".", "/", "//", "\\", "C:", "C:\\Windows\\win.ini",
        "\\\\?\\C:\\Windows", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%252e%252e%252fetc%252fpasswd",
        "%c0%ae%c0%ae%c0%afetc%c0%afpasswd", str(base / "vault-evil"), str(base / "vault-evil" / "secret.md"),
        str(vault) + "-evil/secret.md", str(vault) + "/../outside.md", str(vault), str(vault) + "/",
        str(base / "outside.md"), "x" * 1100, "../" * 400 + "etc/passwd", "\u0000", " ", "\t", "\n",
        "secret", "Secret", "outside", "n", "deep", "trashed", "hidden", "canary", "regex-secret", "app", "config",
        "mixed", "upper", "notes", "race_outside", "EscDir", "Sibling", "Private", ".obsidian", ".git",
    ]


def all_inputs(base: Path) -> list[str]:
    seen: dict[str, None] = {}
    for t in TARGETS:
        for value in transforms(t, base / "vault"):
            seen.setdefault(value, None)
    for value in fixed_inputs(base):
        seen.setdefault(value, None)
    return list(seen)


# ---- calls ----------------------------------------------------------------------------------------
CALLS = ("rpc note.links", "rpc related path", "rpc related path+text", "rpc search folder",
         "mcp read_note path", "mcp read_note title", "mcp note_links path", "mcp note_links title",
         "mcp related_notes path", "mcp related_notes title", "mcp search folder")


def call(live: Live, name: str, value: str) -> tuple[dict[str, Any], bytes]:
    """(outcome: {"ok": ...} or {"error": ...}, raw bytes of the HTTP answer)."""
    if name.startswith("rpc"):
        method, params = {
            "rpc note.links": ("note.links", {"path": value}),
            "rpc related path": ("related", {"path": value, "limit": 5}),
            "rpc related path+text": ("related", {"path": value, "text": f"# Draft\n{WORD} buffer", "limit": 5}),
            "rpc search folder": ("search", {"query": WORD, "limit": 20, "filters": {"folder": value}}),
        }[name]
        reply = live.rpc_raw(method, params)
        body = reply.body if isinstance(reply.body, dict) else {"error": {"http": reply.status}}
        return ({"error": body["error"]} if "error" in body else {"ok": body.get("result")}), reply.raw
    tool, key = {
        "mcp read_note path": ("read_note", "path"), "mcp read_note title": ("read_note", "title"),
        "mcp note_links path": ("note_links", "path"), "mcp note_links title": ("note_links", "title"),
        "mcp related_notes path": ("related_notes", "path"), "mcp related_notes title": ("related_notes", "title"),
        "mcp search folder": ("search", "folder"),
    }[name]
    args: dict[str, Any] = {key: value}
    if tool == "search":
        args.update(query=WORD, limit=20)
    if tool == "related_notes":
        args["limit"] = 5
    reply = live.mcp_raw(tool, args)
    from common import mcp_outcome  # noqa: PLC0415

    body = reply.body if isinstance(reply.body, dict) else {"error": {"http": reply.status}}
    return mcp_outcome(body), reply.raw


def leaked(raw: bytes, canaries: dict[str, str]) -> list[str]:
    text = raw.decode("utf-8", "replace")
    return [where for mark, where in canaries.items() if mark in text]


ALLOWED_PATHS = {"Notes/Inside.md", "Notes/Other.md", "Notes/RaceInside.md", "Café.md", "Noël.md", "Race.md"}


def paths_in(outcome: dict[str, Any]) -> set[str]:
    """Every note path a successful answer names (results, source, links)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("path", "source_path") and isinstance(v, str):
                    found.add(v)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(outcome.get("ok"))
    return found


def normalise(error: Any, value: str) -> str:
    text = json.dumps(error, sort_keys=True, ensure_ascii=False)
    for form in (repr(value[:200]), repr(value)):
        text = text.replace(json.dumps(form, ensure_ascii=False)[1:-1], "<ref>")
    text = re.sub(r" Did you mean [^?]*\?", "", text)
    return re.sub(r'"suggestions": \[[^\]]*\]', '"suggestions": []', text)


def sweep(live: Live, inputs: list[str], layout: Layout, result: Result, phase: str) -> dict[tuple[int, str], str]:
    answers: dict[tuple[int, str], str] = {}
    for i, value in enumerate(inputs):
        for name in CALLS:
            outcome, raw = call(live, name, value)
            result.figures["requests"] = result.figures.get("requests", 0) + 1
            where = leaked(raw, layout.canaries)
            if where:
                result.fail(f"[{phase}] {name} {value!r}: canary from {where} in the answer")
            if "ok" in outcome:
                bad = paths_in(outcome) - ALLOWED_PATHS
                if name == "rpc related path+text":
                    bad.discard(value)  # the unsaved buffer's own path, echoed back: nothing was read from it
                if bad:
                    result.fail(f"[{phase}] {name} {value!r}: answer names paths outside the allowed set: {sorted(bad)}")
                answers[(i, name)] = "ok"
            else:
                answers[(i, name)] = json.dumps(outcome["error"], sort_keys=True, ensure_ascii=False)
    return answers


def raw_bodies(live: Live, layout: Layout, result: Result) -> int:
    """Invalid UTF-8 (overlong sequences) straight in the JSON body, on both ports."""
    sent = 0
    for seq in (b"\xc0\xae\xc0\xae\xc0\xafoutside.md", b"..\xc0\xafoutside.md", b"\xe0\x80\xae\xe0\x80\xae/outside.md",
                b"Private\xc0\xafsecret.md", b"\xff\xfe../outside.md"):
        bodies = [
            (live.rpc_port, live.rpc_token, b'{"jsonrpc":"2.0","id":1,"method":"note.links","params":{"path":"' + seq + b'"}}'),
            (live.mcp_port, live.mcp_token, b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note",'
                                            b'"arguments":{"path":"' + seq + b'"}}}'),
        ]
        for port, token, body in bodies:
            reply = live.server.http("POST", "/rpc" if port == live.rpc_port else "/mcp", body,
                                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
                                      "Accept": "application/json, text/event-stream"}, port=port)
            sent += 1
            if leaked(reply.raw, layout.canaries):
                result.fail(f"raw body {seq!r} on port {port}: canary in the answer")
            if reply.status >= 500:
                port_name = "rpc" if port == live.rpc_port else "mcp"
                result.fail(f"raw body {seq!r} on the {port_name} port: HTTP {reply.status} {reply.raw[:120]!r}")
    return sent


def race(live: Live, layout: Layout, seconds: float, result: Result) -> dict[str, Any]:
    """Swap Race.md between a note inside and a file outside while reading it over both ports."""
    link = layout.vault / "Race.md"
    inside, outside = Path("Notes") / "RaceInside.md", layout.base / "race_outside.md"
    layout.plant(outside, "race2")  # a fresh canary: phase B deleted the first one
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        tmp = layout.vault / ".race-tmp"
        while not stop.is_set():
            for target in (outside, inside):
                tmp.unlink(missing_ok=True)
                tmp.symlink_to(target)
                os.replace(tmp, link)
                swaps += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    reads = ok_reads = 0
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for name in ("mcp read_note path", "rpc note.links", "mcp related_notes path", "rpc search folder"):
                outcome, raw = call(live, name, "Race.md" if name != "rpc search folder" else "")
                reads += 1
                ok_reads += "ok" in outcome
                if leaked(raw, layout.canaries):
                    result.fail(f"race: {name} answered with the outside file's canary")
    finally:
        stop.set()
        thread.join()
    link.unlink(missing_ok=True)
    link.symlink_to(inside)
    time.sleep(1.0)  # let the watcher pick up the last state, then look for the canary in the index
    live.server.wait_until(lambda: not live.rpc("status")["result"]["building"], 30, "index idle")
    for name in ("rpc search folder", "mcp search folder"):
        outcome, raw = call(live, name, "")
        if leaked(raw, layout.canaries):
            result.fail(f"race: after the race, {name} finds the outside file's canary (it was indexed)")
    for mark in layout.canaries:
        hits = live.rpc("search", query=mark, mode="lexical", limit=5)["result"]["results"]
        if hits:
            result.fail(f"race: canary {mark} is searchable in the index after the race: {hits[0]['path']}")
    return {"race_seconds": seconds, "race_swaps": swaps, "race_reads": reads, "race_reads_ok": ok_reads}


def run(quick: bool = False, out: Path | None = None, race_seconds: float | None = None) -> Result:
    result = Result("paths")
    with workdir("paths") as base:
        layout = Layout(base)
        layout.build()
        inputs = all_inputs(base)
        if quick:
            inputs = inputs[::5]
        result.figures["inputs"] = len(inputs)
        result.figures["calls"] = len(CALLS)
        with Live(layout.vault, base / "index", "--no-parent-watch") as live:
            live.wait_ready()
            status = live.rpc("status")["result"]
            indexed = {r["path"] for r in live.rpc("search", query=WORD, mode="lexical", limit=50)["result"]["results"]}
            result.figures["indexed_notes"] = status["notes"]
            if indexed - ALLOWED_PATHS:
                result.fail(f"indexed notes outside the allowed set: {sorted(indexed - ALLOWED_PATHS)}")
            for form in ("Noël.md", NFD_NAME):
                outcome, _raw = call(live, "mcp read_note path", form)
                if "ok" not in outcome or "NFDOK" not in json.dumps(outcome["ok"], ensure_ascii=False):
                    result.fail(f"NFC/NFD: the note stored under an NFD file name is not readable as {form!r}: {outcome}")
            ok_inside, _ = call(live, "mcp read_note path", "Notes/Inside.md")
            if "ok" not in ok_inside:
                result.fail(f"control: reading Notes/Inside.md failed: {ok_inside}")
            baseline = {name: normalise(call(live, name, v)[0].get("error"), v)
                        for name in CALLS for v in ["Notes/DoesNotExist.md"]}
            say(f"phase A: {len(inputs)} inputs x {len(CALLS)} calls, forbidden files present")
            started = time.perf_counter()
            phase_a = sweep(live, inputs, layout, result, "A")
            result.figures["raw_bodies"] = raw_bodies(live, layout, result)
            layout.delete_forbidden()
            say("phase B: the same inputs with every forbidden file deleted")
            phase_b = sweep(live, inputs, layout, result, "B")
            result.figures["sweep_seconds"] = round(time.perf_counter() - started, 1)
            differ = [(inputs[i], name) for (i, name), a in phase_a.items() if phase_b[(i, name)] != a]
            for value, name in differ[:20]:
                result.fail(f"{name} {value!r}: the answer differs when the forbidden file exists "
                            f"({phase_a[(inputs.index(value), name)][:160]} vs {phase_b[(inputs.index(value), name)][:160]})")
            result.figures["answers_differing_present_vs_absent"] = len(differ)
            classes: dict[str, set[str]] = {}
            for (i, name), answer in phase_a.items():
                if answer != "ok":
                    classes.setdefault(name, set()).add(normalise(json.loads(answer), inputs[i]))
            odd = {name: sorted(c - {baseline[name]}) for name, c in classes.items()}
            for name, extra in odd.items():
                for e in extra:
                    if "invalid_params" not in e and "-32602" not in e and "string_too_long" not in e:
                        result.fail(f"{name}: an error that differs from 'not found' ({baseline[name][:120]}): {e[:200]}")
            result.figures["error_classes"] = {name: len(c) for name, c in classes.items()}
            result.figures["successes_on_forbidden_inputs"] = sum(a == "ok" for a in phase_a.values())
            result.figures.update(race(live, layout, race_seconds or (3.0 if quick else 15.0), result))
    result.figures["leaks"] = sum("canary" in f for f in result.failures)
    print(table(["figure", "value"], sorted((k, v) for k, v in result.figures.items())))
    return result


if __name__ == "__main__":
    raise SystemExit(main_for(run))

"""Set up, index the demo vault, and show what the sidecar answers (the README's first command)."""

from __future__ import annotations

from build_tasks.common import DEMO_VAULT, say, sh, venv_bin
from build_tasks.setup import ensure_venv

QUERIES = (
    ("hybrid", "why does the database say it is locked"),
    ("hybrid", "SQLITE_BUSY"),
    ("hybrid", "receita de pão de queijo"),  # the seeds' false friend: no such recipe here
)


def run(args: list[str]) -> int:
    ensure_venv()
    sidecar = str(venv_bin("sidecar"))
    vault = ("--vault", str(DEMO_VAULT))
    sh(sidecar, "index", *vault)
    for mode, query in QUERIES:
        say(f"search ({mode}): {query}")
        sh(sidecar, "search", query, "--mode", mode, "--limit", "3", *vault)
    say("related notes for a note")
    sh(sidecar, "related", "Search Engine", "--limit", "5", *vault)
    say(f"next: {sidecar} serve --vault {DEMO_VAULT}   (JSON-RPC + MCP on localhost; see README)")
    return 0

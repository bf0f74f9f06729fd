"""What an agent pays to use the MCP port: bytes and tokens of tools/list and of typical answers.

Runs the real MCP server in-process (the official client, `mcp.Client(server)`) over an index of
a vault and counts what the model reads (the text content of each result) with a real tokenizer:
the English model's WordPiece tokenizer (`sidecar/models/minilm-l6-m2v-256-int8/tokenizer.json`).

    .venv/bin/python bench/mcp_tokens.py --vault ../shared/eval-vaults/obsidian-hub/vault
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client
from tokenizers import Tokenizer

from sidecar.adapters.mcp.server import build_mcp
from sidecar.config import Settings
from sidecar.core import VaultIndex

TOKENIZER = Path(__file__).parent.parent / "sidecar" / "models" / "minilm-l6-m2v-256-int8" / "tokenizer.json"
BIG_NOTE = "Uncategorized plugins"  # obsidian-hub's largest note (277,760 characters)
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("search, 10 hits", "search", {"query": "sync my vault between devices", "limit": 10}),
    ("read_note, default", "read_note", {"title": BIG_NOTE}),
    ("note_links, default", "note_links", {"title": BIG_NOTE}),
    ("list_notes, default", "list_notes", {}),
    ("vault_health, default", "vault_health", {}),
    ("get_context, default", "get_context", {"query": "sync my vault between devices"}),
    ("related_notes, default", "related_notes", {"title": BIG_NOTE}),
    ("vault_overview", "vault_overview", {}),
]


def count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


async def measure(core: VaultIndex) -> list[tuple[str, int, int]]:
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_truncation()
    rows: list[tuple[str, int, int]] = []
    async with Client(build_mcp(core)) as client:
        listed = await client.list_tools()
        text = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools],
                          ensure_ascii=False)
        rows.append(("tools/list", len(text.encode()), count(tokenizer, text)))
        for label, name, args in CALLS:
            result = await client.call_tool(name, args)
            body = "".join(getattr(c, "text", "") for c in result.content)
            rows.append((label, len(body.encode()), count(tokenizer, body)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--index", type=Path, help="an existing index folder (default: a fresh temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        core = VaultIndex(Settings(vault=args.vault.resolve(), index_dir=args.index or Path(tmp) / "index"))
        core.index()
        rows = asyncio.run(measure(core))
        core.close()
    print("| what | bytes | tokens |\n|---|---:|---:|")
    for label, size, tokens in rows:
        print(f"| {label} | {size:,} | {tokens:,} |")


if __name__ == "__main__":
    main()

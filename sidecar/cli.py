"""The `sidecar` command: argument parsing and printing only; the work happens in VaultIndex."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sidecar import __version__
from sidecar.app import VaultIndex
from sidecar.config import from_env, setting_help
from sidecar.indexer import Progress

Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler: Handler = args.handler
    try:
        return handler(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"sidecar: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sidecar", description="Local-first hybrid retrieval for Obsidian vaults.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    for name, (handler, help_text, extra) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        _common_options(cmd)
        extra(cmd)
        cmd.set_defaults(handler=handler)
    return parser


def _common_options(cmd: argparse.ArgumentParser) -> None:
    helps = setting_help()
    cmd.add_argument("--vault", type=Path, default=os.environ.get("SIDECAR_VAULT"),
                     help="the Obsidian vault folder (env SIDECAR_VAULT)")
    cmd.add_argument("--index", type=Path, dest="index_dir", help=helps["index_dir"][0] + " (env SIDECAR_INDEX_DIR)")
    cmd.add_argument("--model", help=helps["model"][0] + " (env SIDECAR_MODEL)")
    cmd.add_argument("--json", action="store_true", help="print JSON instead of text")
    cmd.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")


def open_index(args: argparse.Namespace, **kwargs: Any) -> VaultIndex:
    if not args.vault:
        raise ValueError("which vault? pass --vault PATH (or set SIDECAR_VAULT)")
    settings = from_env(Path(args.vault), index_dir=args.index_dir, model=args.model)
    if not settings.vault.is_dir():
        raise FileNotFoundError(f"vault folder not found: {args.vault}")
    return VaultIndex(settings, **kwargs)


def emit(args: argparse.Namespace, payload: object, text: Callable[[], str]) -> None:
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(text())


# ---- index ------------------------------------------------------------------------------
def cmd_index(args: argparse.Namespace) -> int:
    index = open_index(args)
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())  # Ctrl-C: finish the batch, then stop
    try:
        report = index.index(full=args.full, progress=_progress_printer(), cancel=cancel)
    finally:
        signal.signal(signal.SIGINT, previous)
    status = index.status()
    emit(args, {"report": report.to_json(), "status": status}, lambda: _index_text(report.to_json(), status))
    return 130 if report.cancelled else 0


def _progress_printer() -> Callable[[Progress], None]:
    if not sys.stderr.isatty():
        return lambda _p: None

    def show(p: Progress) -> None:
        if p.total:
            width = 30
            filled = int(width * p.done / p.total)
            bar = "#" * filled + "-" * (width - filled)
            sys.stderr.write(f"\r{p.phase:8} [{bar}] {p.done}/{p.total}   ")
        else:
            sys.stderr.write(f"\r{p.phase:8} ...{' ' * 40}")
        if p.phase == "done":
            sys.stderr.write("\r" + " " * 70 + "\r")
        sys.stderr.flush()

    return show


def _index_text(report: dict[str, Any], status: dict[str, Any]) -> str:
    lines = [
        f"indexed {status['vault']} in {report['seconds']:.2f} s"
        f"{' (full rebuild)' if report['full'] else ''}{' (cancelled: run again to finish)' if report['cancelled'] else ''}",
        f"  files scanned {report['scanned']}: added {report['added']}, updated {report['updated']}, "
        f"renamed {report['renamed']}, deleted {report['deleted']}, unchanged {report['unchanged']}",
        f"  chunks embedded this run {report['embedded']}",
    ]
    lines.append(_status_text(status))
    return "\n".join(lines)


# ---- status -----------------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> int:
    status = open_index(args).status()
    emit(args, status, lambda: _status_text(status))
    return 0


def _status_text(s: dict[str, Any]) -> str:
    model = s["model"]
    state = "complete" if s["complete"] else (
        "INCOMPLETE: chunks without vectors (lexical search only for them)" if s["chunks_without_vectors"] else "not built")
    lines = [
        f"index {s['index_dir']} ({s['index_bytes'] / 1e6:.1f} MB): {state}",
        f"  notes {s['notes']}, chunks {s['chunks']} (with vectors {s['chunks_with_vectors']}, "
        f"without {s['chunks_without_vectors']})",
        f"  backend {s['backend']}; vectors stored in {s['vector_store']}, searched with {s['vector_search']}",
        f"  model {model['name']} fingerprint {model['fingerprint']}" if model["available"]
        else f"  model UNAVAILABLE: {model['error']}",
    ]
    if s["skipped"]:
        lines.append(f"  skipped {len(s['skipped'])} file(s):")
        lines += [f"    {x['path']}: {x['reason']}" for x in s["skipped"][:20]]
        if len(s["skipped"]) > 20:
            lines.append(f"    ... and {len(s['skipped']) - 20} more (see --json)")
    return "\n".join(lines)


def _no_options(_cmd: argparse.ArgumentParser) -> None:
    return None


def _index_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--full", action="store_true", help="rebuild from scratch instead of updating what changed")


COMMANDS: dict[str, tuple[Handler, str, Callable[[argparse.ArgumentParser], None]]] = {
    "index": (cmd_index, "index the vault (incremental; --full rebuilds)", _index_options),
    "status": (cmd_status, "what is indexed, what was skipped and why, which backend and model", _no_options),
}

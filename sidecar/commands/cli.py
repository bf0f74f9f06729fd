"""The `sidecar` command: argument parsing and printing only; the work happens in VaultIndex."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast, get_args

from sidecar import __version__
from sidecar.config import (
    OBSIDIAN_CONFIG_ENV,
    SETTING,
    SETTINGS,
    VAULT_ENV,
    Setting,
    Settings,
    default_text,
    env_text,
    from_env,
)
from sidecar.core import VaultIndex, index_not_built, refuse_unusable_index_folder
from sidecar.errors import InvalidParams, SidecarError
from sidecar.ingest.vault import refuse_unusable_vault
from sidecar.protocol_types import (
    RELATED_LIMIT_DEFAULT,
    SEARCH_LIMIT_DEFAULT,
    RelatedResponse,
    SearchMode,
    SearchResponse,
)
from sidecar.serve.params import check_params
from sidecar.store.indexer import Progress

Handler = Callable[[argparse.Namespace], int]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser (its usage), naming a setting given to the wrong command
        args.parser.error(_unknown_arguments(unknown))
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("watchfiles").setLevel(logging.INFO)  # its debug lines name every changed file, unredacted
    handler: Handler = args.handler
    try:
        return handler(args)
    except SidecarError as exc:
        if getattr(args, "json", False):
            print(json.dumps({"error": exc.to_json()}, ensure_ascii=False, indent=2))
        print(f"sidecar: {exc.message}", file=sys.stderr)
        # an option out of its range is a usage error, as a bad setting is; checked where a JSON-RPC
        # request's params are (serve/params.py), so the CLI and the ports give the same message
        return 2 if isinstance(exc, InvalidParams) else 1
    except (FileNotFoundError, ValueError) as exc:
        print(f"sidecar: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `sidecar search ... | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sidecar", description="Local-first hybrid retrieval for Obsidian vaults.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    for name, (handler, help_text, extra) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        _common_options(cmd, name)
        extra(cmd)
        cmd.set_defaults(handler=handler, parser=cmd)
    return parser


def _unknown_arguments(unknown: list[str]) -> str:
    """argparse's "unrecognized arguments", and for a setting of other commands which ones take it."""
    flags = {s.flag: s for s in SETTINGS if s.commands is not None}
    elsewhere = [f"{flag} is a setting of {' and '.join(flags[flag].commands or ())} only"
                 for flag in dict.fromkeys(a.split("=", 1)[0] for a in unknown) if flag in flags]
    return "; ".join([f"unrecognized arguments: {' '.join(unknown)}", *elsewhere])


def _common_options(cmd: argparse.ArgumentParser, command: str) -> None:
    for setting in SETTINGS:
        if setting.commands is None or command in setting.commands:
            _setting_option(cmd, setting)
    cmd.add_argument("--json", action="store_true", help="print JSON instead of text")
    cmd.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")


def _setting_option(cmd: argparse.ArgumentParser, s: Setting) -> None:
    """The flag of one declared setting. Its default is None (not given), so from_env can tell a flag
    from a variable and a variable from the declared default."""
    shown = ("required" if s.required else f"default {default_text(s)}") + (f"; env {s.env}" if s.env else "")
    if s.kind is bool:
        cmd.add_argument(s.flag, dest=s.name, action=argparse.BooleanOptionalAction, help=f"{s.help} ({shown})")
    elif s.kind is tuple:
        cmd.add_argument(s.flag, dest=s.name, action="append", metavar="PATTERN", help=f"{s.help} ({shown})")
    else:
        cmd.add_argument(s.flag, dest=s.name, type=_flag_parser(s), metavar=_METAVARS.get(s.kind, s.name.upper()),
                         help=f"{s.help} ({shown})")


_METAVARS: dict[type, str] = {Path: "PATH", int: "N", float: "N", str: "NAME"}


def _flag_parser(s: Setting) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return s.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _whole_number(minimum: int, maximum: int | None = None, why: str = "") -> Callable[[str], int]:
    """An integer option's type: out of range is a usage error (exit 2), as a bad setting is."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"at least {minimum}" if maximum is None else f"{minimum}-{maximum}"
            raise argparse.ArgumentTypeError(f"must be {bounds}{why}, not {value}")
        return value

    return parse


def open_index(args: argparse.Namespace, *, built: bool = False, **kwargs: Any) -> VaultIndex:
    """The vault's index; `built`: it must exist already (a command that only reads it never makes an
    empty one where a mistyped --index points)."""
    settings = _index_settings(args)
    if built and not settings.db_path.exists():
        raise index_not_built(settings)
    return VaultIndex(settings, **kwargs)


def _index_settings(args: argparse.Namespace) -> Settings:
    """The settings of a command that opens the vault's index: the vault is a folder, and the index
    folder is one the index may live in, checked before "not built yet" suggests an `index` run that
    would be refused."""
    settings = _vault_settings(args)
    refuse_unusable_index_folder(settings)
    return settings


def _vault_settings(args: argparse.Namespace) -> Settings:
    """settings_from, for a vault that is there and is a folder."""
    settings = settings_from(args)
    refuse_unusable_vault(settings.vault)
    return settings


def given_vault(args: argparse.Namespace) -> Path | None:
    """--vault, else the vault's environment variable, else None."""
    text = env_text(VAULT_ENV)
    return args.vault or (cast(Path, SETTING["vault"].parse(text)) if text else None)


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the flags this command has (None: not given) over the environment."""
    vault = given_vault(args)
    if vault is None:
        raise ValueError(f"which vault? pass --vault PATH (or set {VAULT_ENV})")
    return from_env(vault, **{s.name: _flag_value(args, s) for s in SETTINGS if s.name != "vault"})


def _flag_value(args: argparse.Namespace, s: Setting) -> object:
    """A setting's flag as Settings holds it (None: not given or not this command's): a repeated
    flag's values come as a list (action="append"), a tuple setting is a tuple."""
    value = getattr(args, s.name, None)
    return tuple(value) if s.kind is tuple and value else value


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


def _progress_printer(lines: bool = False) -> Callable[[Progress], None]:
    """A progress bar on stderr when it is a terminal; else nothing, or with `lines` a line per phase."""
    if not sys.stderr.isatty():
        return _phase_lines() if lines else lambda _p: None

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


def _phase_lines() -> Callable[[Progress], None]:
    seen: set[str] = set()

    def show(p: Progress) -> None:
        if p.phase not in seen:
            seen.add(p.phase)
            print(f"index: {p.phase}" + (f" ({p.total})" if p.total else ""), file=sys.stderr, flush=True)

    return show


def _index_text(report: dict[str, Any], status: Mapping[str, Any]) -> str:
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
    from sidecar.serve.ports import running_state  # noqa: PLC0415

    index = open_index(args, built=True)
    # and a running `serve` for this index, or None
    status: dict[str, Any] = {**index.status(), "serving": running_state(index.settings.index_dir)}
    emit(args, status, lambda: _status_text(status))
    return 0


def _status_text(s: Mapping[str, Any]) -> str:
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
    if s.get("serving"):
        lines.append(_serving_text(s["serving"]))
    if s["skipped"]:
        lines.append(f"  skipped {len(s['skipped'])} file(s):")
        lines += [f"    {x['path']}: {x['reason']}" for x in s["skipped"][:20]]
        if len(s["skipped"]) > 20:
            lines.append(f"    ... and {len(s['skipped']) - 20} more (see --json)")
    return "\n".join(lines)


def _serving_text(state: dict[str, Any]) -> str:
    mcp = f"MCP on port {state['mcp_port']}" if state.get("mcp_port") else "MCP off"
    line = f"  served by pid {state['pid']} (sidecar {state['version']}): JSON-RPC on port {state['rpc_port']}, {mcp}"
    return line + (f"\n  note: {state['mcp_note']}" if state.get("mcp_note") else "")


# ---- search and related -------------------------------------------------------------------
def cmd_search(args: argparse.Namespace) -> int:
    params = _checked("search", query=args.query, limit=args.limit, mode=args.mode, explain=args.explain,
                      max_tokens=args.max_tokens, filters=_filters(args))
    index = open_index(args, built=True)
    result = index.search(**params)
    emit(args, result, lambda: _search_text(result, args.explain))
    return 0


def _checked(method: str, **params: Any) -> dict[str, Any]:
    """The arguments given (None: not given), checked against the protocol's params schema for `method`
    as a JSON-RPC request's are (serve/params.py): one check, the same error, for every adapter."""
    given = {name: value for name, value in params.items() if value is not None}
    check_params(method, given)
    return given


def _field_filter(text: str) -> tuple[str, str]:
    """One --field KEY=VALUE; without a key, a value or the `=` it would match nothing, silently."""
    key, equals, value = text.partition("=")
    if not (equals and key.strip() and value.strip()):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (a frontmatter field and its value), got {text!r}")
    return key, value


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    fields = dict(getattr(args, "field", None) or [])
    return {name: value for name, value in (("folder", args.folder), ("tag", args.tag), ("fields", fields))
            if value is not None}


def _search_text(result: SearchResponse, explain: bool) -> str:
    lines = [f"{len(result['results'])} result(s) for {result['query']!r} ({result['mode']}, "
             f"{result['took_ms']:.1f} ms) confidence: {result['band']}"]
    if result["caveat"]:
        lines.append(f"  note: {result['caveat']}")
    for i, r in enumerate(result["results"], start=1):
        where = f" > {r['heading']}" if r["heading"] else ""
        lines.append(f"{i:2}. {r['path']}{where}  [{r['band']}] score {r['score']:.4f}  (lines {r['start_line']}-{r['end_line']})")
        lines.append(f"    {r['snippet'][:200]}")
        if explain:
            lines.append(f"    why: {r['reason']}; scores {json.dumps(r['scores'])}")
    if explain and "explanation" in result:
        lines.append("explanation: " + json.dumps(result["explanation"], ensure_ascii=False))
    return "\n".join(lines)


def cmd_related(args: argparse.Namespace) -> int:
    limit = _checked("related", limit=args.limit)["limit"]  # the note is found by name below, then confined
    index = open_index(args, built=True)
    path = index.resolve_note(args.note)
    result = index.related(path=path, limit=limit)
    emit(args, result, lambda: _related_text(result))
    return 0


def _related_text(result: RelatedResponse) -> str:
    lines = [f"related to {result['source_path']} ({result['took_ms']:.1f} ms)"]
    for i, r in enumerate(result["results"], start=1):
        badges = ", ".join(x["label"] for x in r["reasons"])
        mark = " (already linked)" if r["already_linked"] else ""
        lines.append(f"{i:2}. {r['path']}{mark}  [{r['band']}] {r['score']:.3f}  {badges}")
    return "\n".join(lines)


def _search_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("query", help="what to look for (any text: quotes make phrases)")
    cmd.add_argument("--limit", type=int, default=SEARCH_LIMIT_DEFAULT)
    cmd.add_argument("--mode", choices=get_args(SearchMode), default="hybrid")
    cmd.add_argument("--explain", action="store_true", help="show every signal and the ranking settings")
    cmd.add_argument("--max-tokens", type=int, help="include chunk text within this budget (4 characters a token)")
    cmd.add_argument("--folder", help="only notes under this folder")
    cmd.add_argument("--tag", help="only notes with this tag (nested tags included)")
    cmd.add_argument("--field", action="append", type=_field_filter, metavar="KEY=VALUE",
                     help="frontmatter field filter (repeatable)")


def _related_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("note", help="a note path, file name or title")
    cmd.add_argument("--limit", type=int, default=RELATED_LIMIT_DEFAULT)


# ---- serve and agent configuration -----------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from sidecar.commands.server import ServeOptions, exited, serve  # noqa: PLC0415  (aiohttp/uvicorn load only here)

    settings = _index_settings(args)  # refused before the index folder is made
    options = ServeOptions(rpc_port=args.rpc_port, mcp_port=None if args.no_mcp else args.mcp_port,
                           watch=not args.no_watch, exit_with_parent=not args.no_parent_watch,
                           **({"reconcile_seconds": args.reconcile_seconds} if args.reconcile_seconds else {}))
    return exited(asyncio.run(serve(settings, options)))


def _serve_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--rpc-port", type=_whole_number(0, 65535), default=0,
                     help="JSON-RPC port on 127.0.0.1 (0: pick a free one)")
    cmd.add_argument("--mcp-port", type=_whole_number(0, 65535), default=0,
                     help="MCP port on 127.0.0.1 (0: pick a free one)")
    cmd.add_argument("--no-mcp", action="store_true", help="serve JSON-RPC only")
    cmd.add_argument("--no-watch", action="store_true", help="no file watcher (the periodic reconcile still runs)")
    cmd.add_argument("--reconcile-seconds", type=float, metavar="S",
                     help="rescan the whole vault every S seconds, for events the OS dropped (default 60)")
    cmd.add_argument("--no-parent-watch", action="store_true", help="keep running when the parent process exits")


def cmd_mcp_config(args: argparse.Namespace) -> int:
    from sidecar.serve.mcp_config import client_config, config_text  # noqa: PLC0415
    from sidecar.serve.tokens import mcp_token  # noqa: PLC0415

    settings = _index_settings(args)  # a configuration for a vault that is not there would fail in the client
    port = _mcp_port_in_use(settings, args.port)
    config = client_config(settings, port, mcp_token() if port else None)
    emit(args, config, lambda: config_text(config))
    return 0


def _mcp_port_in_use(settings: Settings, asked: int | None) -> int | None:
    """The MCP port of this vault's running sidecar (it may have fallen back from the one asked for),
    else the one passed with --port."""
    from sidecar.serve.ports import served_mcp_port  # noqa: PLC0415

    port = served_mcp_port(settings.index_dir)
    if port is None:
        return asked
    if asked is not None and asked != port:
        print(f"sidecar: this vault's sidecar serves MCP on port {port}, not {asked}: printing {port}", file=sys.stderr)
    return port


def _mcp_config_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--port", type=_whole_number(1, 65535), help="the MCP port of `sidecar serve --mcp-port N` (default: the port "
                     "this vault's running sidecar really serves on, from serve.json in its index folder)")


# ---- evaluation ---------------------------------------------------------------------------
def cmd_eval(args: argparse.Namespace) -> int:
    from sidecar.report import evaluate  # noqa: PLC0415

    index = open_index(args)
    index.index()
    out: dict[str, Any] = {}
    if args.queries:
        queries = evaluate.load_queries(Path(args.queries))
        cfgs = evaluate.configs(index.ranking)
        out["search"] = evaluate.evaluate_search(index, queries, cfgs)
        out["full_by_kind"] = evaluate.by_kind(index, queries, next(c for c in cfgs if c.name == "full"))
    out["link_prediction"] = evaluate.link_prediction(index, sample=args.sample)
    emit(args, out, lambda: _eval_text(out))
    return 0


def _eval_text(out: dict[str, Any]) -> str:
    lines = []
    if "search" in out:
        cols = ("ndcg@10", "recall@10", "mrr", "answerable_not_low", "unanswerable_flagged_low")
        lines.append(f"{'ranking':18}" + "".join(f"{c:>26}" for c in cols))
        for name, row in out["search"].items():
            lines.append(f"{name:18}" + "".join(f"{row[c]:>26.3f}" for c in cols))
        lines.append("full ranking nDCG@10 by query kind: " +
                     ", ".join(f"{k} {v:.3f}" for k, v in out["full_by_kind"].items()))
    lp = out["link_prediction"]
    lines.append(f"link prediction (related, own links hidden): recall@10 {lp['recall@10']:.3f} over {int(lp['notes'])} notes")
    return "\n".join(lines)


def _eval_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--queries", help="known-answer set (JSON), e.g. examples/demo-vault.queries.json")
    cmd.add_argument("--sample", type=_whole_number(1), default=200, help="notes used for link prediction")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from sidecar.report import evaluate  # noqa: PLC0415
    from sidecar.report.calibrate import calibrate  # noqa: PLC0415

    queries = evaluate.load_queries(Path(args.report)) if args.report else None  # a bad file fails before any work
    index = open_index(args, built=True)  # measures an index, never builds one at a mistyped --index
    index.index()  # brings it up to date with the vault
    if queries is not None:
        return _band_report(args, index, queries)
    report = calibrate(index, samples=args.samples, save=not args.dry_run)
    emit(args, report, lambda: _calibrate_text(report, args.dry_run))
    return 0


def _band_report(args: argparse.Namespace, index: VaultIndex, queries: list[dict[str, Any]]) -> int:
    """The bands the current thresholds give a labelled query file: high/medium/low per population."""
    from sidecar.report import evaluate  # noqa: PLC0415

    full = next(c for c in evaluate.configs(index.ranking) if c.name == "full")
    bands = evaluate.evaluate_set(index, queries, [full])["full"]["bands"]
    report = {"bands": bands, "checks": evaluate.band_checks(bands), "thresholds": index.thresholds_info()}
    emit(args, report, lambda: _band_report_text(report))
    return 0


def _band_report_text(r: dict[str, Any]) -> str:
    lines = [f"{'':14}{'high':>7}{'medium':>8}{'low':>6}{'none':>6}"]
    for population, counts in r["bands"].items():
        lines.append(f"{population:14}" + "".join(f"{counts.get(b, 0):>{w}}" for b, w in
                                                  (("high", 7), ("medium", 8), ("low", 6), ("none", 6))))
    lines += [f"{'ok ' if ok else 'NO '} {check}" for check, ok in r["checks"].items()]
    t = r["thresholds"]
    lines.append(f"thresholds: high >= {t['high']:.3f}, low < {t['low']:.3f} ({t['source']})")
    return "\n".join(lines)


def _calibrate_text(r: dict[str, Any], dry_run: bool) -> str:
    a, u = r["answerable"], r["unanswerable"]
    lines = [
        f"answerable (sampled from your notes, reworded) n={r['samples']['answerable']}: "
        f"min {a['min']:.3f} p10 {a['p10']:.3f} median {a['median']:.3f} max {a['max']:.3f}",
        f"unanswerable (off-topic questions)             n={r['samples']['unanswerable']}: "
        f"min {u['min']:.3f} median {u['median']:.3f} p90 {u['p90']:.3f} max {u['max']:.3f}",
        f"bands: high >= {r['high']:.3f}, medium {r['low']:.3f}-{r['high']:.3f}, low < {r['low']:.3f}"
        + (" (not saved: --dry-run)" if dry_run else " (saved in the index)"),
        f"confusion: answerable {r['confusion']['answerable']}, unanswerable {r['confusion']['unanswerable']}",
    ]
    return "\n".join(lines)


def _calibrate_options(cmd: argparse.ArgumentParser) -> None:
    from sidecar.report.calibrate import MIN_ANSWERABLE  # noqa: PLC0415

    cmd.add_argument("--samples", type=_whole_number(MIN_ANSWERABLE, why=" (the answerable samples calibration needs)"),
                     default=200, help="answerable pseudo-queries to draw from the vault")
    cmd.add_argument("--dry-run", action="store_true", help="measure and print, keep the current thresholds")
    cmd.add_argument("--report", metavar="QUERIES", help="measure nothing: print the bands the current thresholds give "
                     'a labelled query file, answerable against unanswerable: JSON ({"queries": [...]} or a list) '
                     'or JSON lines, each query {"query": ..., "relevant": {"Note.md": 2}} ({} for no answer; '
                     "`q` and `rel` are read too)")


def cmd_doctor(args: argparse.Namespace) -> int:
    from sidecar.commands.doctor import checks_text, run_checks  # noqa: PLC0415

    settings = settings_from(args)
    checks = run_checks(settings)
    emit(args, [c.to_json() for c in checks], lambda: checks_text(checks))
    return 1 if any(c.state == "fail" for c in checks) else 0


def _no_options(_cmd: argparse.ArgumentParser) -> None:
    return None


def _index_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--full", action="store_true", help="rebuild from scratch instead of updating what changed")


COMMANDS: dict[str, tuple[Handler, str, Callable[[argparse.ArgumentParser], None]]] = {
    "index": (cmd_index, "index the vault (incremental; --full rebuilds)", _index_options),
    "search": (cmd_search, "hybrid search (BM25 + vectors, fused, graph-boosted) with confidence bands", _search_options),
    "related": (cmd_related, "notes related to a note: similar sections, links, shared links and tags", _related_options),
    "serve": (cmd_serve, "serve JSON-RPC (plugin) and MCP (agents) on localhost, keeping the index live", _serve_options),
    "mcp-config": (cmd_mcp_config, "print MCP client configuration for Claude Code, Cursor and Codex", _mcp_config_options),
    "calibrate": (cmd_calibrate, "measure confidence-band thresholds on this vault and save them", _calibrate_options),
    "doctor": (cmd_doctor, "check extension loading, model, index integrity, ports, tokens, watcher", _no_options),
    "eval": (cmd_eval, "search quality (nDCG@10, recall@10, MRR) and related-notes link prediction", _eval_options),
    "status": (cmd_status, "what is indexed, what was skipped and why, which backend and model", _no_options),
}


# ---- health -------------------------------------------------------------------------------
def cmd_health(args: argparse.Namespace) -> int:
    from sidecar.report.health import to_markdown, to_text  # noqa: PLC0415
    from sidecar.report.health_pages import build_health  # noqa: PLC0415  (only this command needs it)

    # --json adds the machine-readable item fields (link target, secret kind...) to the protocol's shape.
    report = build_health(open_index(args, built=True), args.section, details=args.json)
    if args.md:
        print(to_markdown(report, args.max_items))
    else:
        emit(args, report, lambda: to_text(report, args.max_items))
    return 0


def _health_options(cmd: argparse.ArgumentParser) -> None:
    from sidecar.report.health import SECTION_IDS  # noqa: PLC0415

    cmd.add_argument("--md", action="store_true", help="a Markdown report to save as a note (names, never links)")
    cmd.add_argument("--section", action="append", choices=SECTION_IDS, help="only this section (repeatable)")
    cmd.add_argument("--max-items", type=_whole_number(0), default=20,
                     help="items shown per section in text and Markdown (0: the counts only)")


COMMANDS["health"] = (cmd_health, "vault health: broken links, orphans, duplicates, secrets, stale files", _health_options)


# ---- mcp --stdio and context (agents) -----------------------------------------------------------
def cmd_mcp(args: argparse.Namespace) -> int:
    if not args.stdio:
        raise ValueError("only `sidecar mcp --stdio` runs here; the HTTP endpoint is part of `sidecar serve`")
    from sidecar.adapters.mcp.server import run_stdio  # noqa: PLC0415  (the MCP SDK is only needed here)

    with _StdoutToStderr():  # stdout is the MCP wire: nothing printed while loading may reach it
        index = open_index(args)  # over an index not built yet the tools answer how to build it (an agent says so)
    run_stdio(index)  # read-only unless --allow-writes
    return 0


class _StdoutToStderr:
    """Point fd 1 (and sys.stdout) at stderr for a while, so native libraries cannot write to it either."""

    def __enter__(self) -> None:
        sys.stdout.flush()
        self._saved = os.dup(1)
        os.dup2(2, 1)

    def __exit__(self, *exc: object) -> None:
        sys.stdout.flush()
        os.dup2(self._saved, 1)
        os.close(self._saved)


def _mcp_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--stdio", action="store_true", help="serve MCP over stdin/stdout (for agent configurations)")


def cmd_context(args: argparse.Namespace) -> int:
    from sidecar.retrieve.context import context_answer  # noqa: PLC0415

    query = _context_query(args.text)
    params = _checked("search", query=query, limit=args.limit, mode=args.mode, max_tokens=args.max_tokens,
                      filters=_filters(args))
    index = open_index(args, built=True)
    index.require_index()
    result = index.search(**params)
    payload = context_answer(result, args.max_tokens)
    emit(args, payload, lambda: str(payload["markdown"]))
    return 0


def _context_query(text: str) -> str:
    """The text itself, or with `-` stdin: plain text or a hook's JSON event with a `prompt` field."""
    if text != "-":
        return text
    raw = sys.stdin.read()
    try:
        event = json.loads(raw)
    except ValueError:
        return raw
    return str(event.get("prompt") or "") if isinstance(event, dict) else raw


def _context_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("text", help="the question or prompt; `-` reads it from stdin (plain text or a hook's JSON)")
    cmd.add_argument("--max-tokens", type=int, default=1500, help="budget of the whole block (4 characters a token)")
    cmd.add_argument("--limit", type=int, default=6, help="at most this many excerpts")
    cmd.add_argument("--mode", choices=("hybrid", "lexical", "semantic"), default="hybrid")
    cmd.add_argument("--folder", help="only notes under this folder")
    cmd.add_argument("--tag", help="only notes with this tag")


COMMANDS["mcp"] = (cmd_mcp, "serve MCP for agents over stdio (read-only, over the existing index)", _mcp_options)
COMMANDS["context"] = (cmd_context, "a ready-to-paste context block for a question (for agent prompt hooks)",
                       _context_options)


# ---- init (a vault set up without Obsidian) -----------------------------------------------------
def cmd_init(args: argparse.Namespace) -> int:
    from sidecar.commands.doctor import checks_text  # noqa: PLC0415
    from sidecar.commands.init import init_vault, pick_vault  # noqa: PLC0415
    from sidecar.commands.vaults import config_dirs, known_vaults  # noqa: PLC0415
    from sidecar.serve.ports import served_mcp_port  # noqa: PLC0415

    if given_vault(args) is None:
        dirs = [args.obsidian_config] if args.obsidian_config else config_dirs()
        args.vault = pick_vault(known_vaults(dirs), _ask, dirs)  # InitStopped is a ValueError: exit 2
    settings = _index_settings(args)
    print(f"setting up {settings.vault} (index {settings.index_dir})", file=sys.stderr)
    result = init_vault(settings, _progress_printer(lines=True),
                        lambda checks: print(checks_text(checks), file=sys.stderr, flush=True),
                        served_mcp_port(settings.index_dir))
    if result.failed:
        print(f"sidecar: {len(result.failed)} check(s) failed: fix them (see `fix:` above) and run init again",
              file=sys.stderr)
    emit(args, result.to_json(), lambda: _init_text(result.to_json()))
    return 1 if result.failed else 0


def _ask(question: str) -> str:
    print(question, end="", file=sys.stderr, flush=True)  # stdout stays the configuration
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _init_text(r: dict[str, Any]) -> str:
    from sidecar.serve.mcp_config import config_text  # noqa: PLC0415

    if r["status"] is None:
        return ""
    hook = r["hook"]
    return "\n".join([
        _index_text(r["report"], r["status"]), "", config_text(r["mcp"]), "",
        "# Prompt-submit hook (Claude Code, ~/.claude/settings.json or .claude/settings.json): adds vault",
        "# context to every prompt; `sidecar context -` reads the prompt from the hook's JSON on stdin",
        json.dumps(hook["claude_code"], indent=2), "",
        "# The same command works in any tool that runs a command with the prompt on stdin:",
        f"  {hook['command']}",
    ])


def _init_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--obsidian-config", type=Path, metavar="DIR",
                     help=f"Obsidian's config folder holding obsidian.json (default: the system's; env {OBSIDIAN_CONFIG_ENV})")


COMMANDS["init"] = (cmd_init, "set a vault up: pick it from Obsidian's list, check, index, print agent configuration",
                    _init_options)

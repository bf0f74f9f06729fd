"""What the CLI says when its input is wrong: one clear line naming what is wrong, the exit code the
docs promise (2: the command line, settings or an input file; 1: the index), never a traceback,
and nothing built where a mistyped --index points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sidecar.commands.cli import build_parser, main
from sidecar.core import VaultIndex
from sidecar.report.evaluate import load_queries
from tests.test_ports import small_vault


@pytest.fixture()
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SIDECAR_VAULT", raising=False)
    monkeypatch.delenv("SIDECAR_INDEX_DIR", raising=False)
    return small_vault(tmp_path / "vault")


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The argparse error for `argv` (exit 2), as printed."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


# ---- calibrate --report: the query file ---------------------------------------------------------
DEMO_LINES = ['{"id": "a1", "query": "ferry times", "kind": "question", "relevant": {"Harbour.md": 2}}',
              '{"id": "u1", "query": "offside rule", "kind": "unanswerable", "relevant": {}}']
EXPECTED = [{"id": "a1", "query": "ferry times", "relevant": {"Harbour.md": 2}, "kind": "question"},
            {"id": "u1", "query": "offside rule", "relevant": {}, "kind": "unanswerable"}]


@pytest.mark.parametrize(("name", "text"), [
    ("set.json", json.dumps({"version": 1, "queries": [json.loads(line) for line in DEMO_LINES]})),
    ("set.json", json.dumps([json.loads(line) for line in DEMO_LINES])),
    ("set.jsonl", "\n".join(DEMO_LINES) + "\n"),  # the demo set's keys in JSON lines
    ("set.json", "\n".join(DEMO_LINES) + "\n\n"),  # JSON lines told by the content, not the suffix
    ("set.txt", "\n".join(line.replace('"query"', '"q"').replace('"relevant"', '"rel"') for line in DEMO_LINES)),
], ids=["document", "list", "lines-demo-keys", "lines-in-json-file", "lines-shared-keys"])
def test_a_query_file_loads_in_either_format_and_either_spelling(name: str, text: str, tmp_path: Path) -> None:
    """Before, JSON lines were read only from a `.jsonl` file and only with `q`/`rel` (KeyError 'q' for
    the demo set's own keys), and JSON lines in a `.json` file failed with "Extra data"."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert load_queries(path) == EXPECTED


@pytest.mark.parametrize(("text", "message"), [
    ('{"version": 1}', "no `queries` key"),
    ('{"queries": [{"id": "x", "relevant": {}}]}', "entry 1: no `query` (or `q`) text"),
    ('{"queries": [{"query": "a"}, {"query": "b", "relevant": ["B.md"]}]}', "entry 2: `relevant` (or `rel`) must map"),
    (DEMO_LINES[0] + "\n{broken\n", "line 2: not valid JSON"),
    ("not json", "not valid JSON or JSON lines"),
    ('{"queries": []}', "no queries in the file"),
    ("", "no queries in the file"),
    ('["dune"]', "entry 1: expected an object"),
])
def test_a_malformed_query_file_is_a_clear_error(text: str, message: str, vault: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Before, KeyError 'queries' / 'query' tracebacks, and an empty set printed three "ok" checks."""
    path = tmp_path / "queries.json"
    path.write_text(text, encoding="utf-8")
    assert main(["calibrate", "--vault", str(vault), "--index", str(tmp_path / "idx"), "--report", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sidecar: {path}: ") and message in err, err
    assert not (tmp_path / "idx").exists()  # refused before any work


def test_a_folder_as_the_query_file_is_a_clear_error(vault: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Before, an IsADirectoryError traceback."""
    assert main(["calibrate", "--vault", str(vault), "--index", str(tmp_path / "idx"), "--report", str(tmp_path)]) == 2
    assert f"sidecar: {tmp_path}: cannot read the query file: Is a directory" in capsys.readouterr().err


# ---- where the index is ---------------------------------------------------------------------------
def test_an_index_path_that_is_a_file_is_refused(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `index --index some-file` ended in a FileExistsError traceback."""
    some_file = tmp_path / "notes.md"
    some_file.write_text("mine\n")
    assert main(["index", "--vault", str(vault), "--index", str(some_file)]) == 2
    assert f"the index folder {some_file} is a file, not a folder" in capsys.readouterr().err
    assert some_file.read_text() == "mine\n"


@pytest.mark.parametrize("argv", [["status"], ["search", "ferry"], ["calibrate"], ["mcp", "--stdio"]])
def test_an_index_inside_the_vault_is_refused_before_not_built(argv: list[str], vault: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before, the read commands said "index not built yet: run `sidecar index ... --index <inside the
    vault>`", a command that is refused."""
    inside = vault / ".idx"
    assert main([*argv, "--vault", str(vault), "--index", str(inside)]) == 2
    err = capsys.readouterr().err
    assert "is inside the vault" in err and "not built" not in err
    assert not inside.exists()


@pytest.mark.parametrize("argv", [["calibrate"], ["calibrate", "--report", "Q"]],
                         ids=["calibrate", "calibrate-report"])
def test_read_commands_never_build_an_index_at_a_mistyped_path(argv: list[str], vault: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before, calibrate indexed the whole vault into the typo folder (docs/security.md promises it does not;
    `mcp --stdio` opens an empty index on purpose: its tools tell the agent how to build one)."""
    queries = tmp_path / "q.json"
    queries.write_text('[{"query": "ferry"}]', encoding="utf-8")
    typo = tmp_path / "typo"
    argv = [str(queries) if a == "Q" else a for a in argv]
    assert main([*argv, "--vault", str(vault), "--index", str(typo)]) == 1
    assert f"index not built yet: run `sidecar index --vault {vault.resolve()} --index {typo}`" in capsys.readouterr().err
    assert not typo.exists()


# ---- command options --------------------------------------------------------------------------------
@pytest.mark.parametrize(("argv", "message"), [
    (["context", "q", "--limit", "x"], "argument --limit: invalid int value: 'x'"),
    (["health", "--max-items", "-1"], "argument --max-items: must be at least 0, not -1"),
    (["eval", "--sample", "-3"], "argument --sample: must be at least 1, not -3"),
    (["calibrate", "--samples", "-3"], "argument --samples: must be at least 10 (the answerable samples"),
    (["calibrate", "--samples", "5"], "argument --samples: must be at least 10 (the answerable samples"),
    (["mcp-config", "--port", "70000"], "argument --port: must be 1-65535, not 70000"),
    (["mcp-config", "--port", "-5"], "argument --port: must be 1-65535, not -5"),
    (["serve", "--rpc-port", "65536"], "argument --rpc-port: must be 0-65535, not 65536"),
    (["search", "q", "--field", "status"], "argument --field: expected KEY=VALUE"),
    (["search", "q", "--field", "=done"], "argument --field: expected KEY=VALUE"),
    (["search", "q", "--field", "status="], "argument --field: expected KEY=VALUE"),
])
def test_out_of_range_or_malformed_options_are_usage_errors(argv: list[str], message: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `search --limit 0` and `--max-tokens 0` exited 1 (a bad setting exits 2), `health
    --max-items -1` miscounted, `calibrate --samples -3` printed Python's "Sample larger than population
    or is negative" and `--samples 5` "the vault is too small", `mcp-config --port 70000` printed a
    configuration, and `--field status` (or `=done`, `status=`) silently matched everything or nothing."""
    assert message in usage_error(argv, capsys)


@pytest.mark.parametrize(("argv", "message"), [
    (["search", "q", "--limit", "0"], "limit must be at least 1"),
    (["search", "q", "--limit", "101"], "limit must be at most 100"),
    (["search", "q", "--max-tokens", "0"], "max_tokens must be at least 1"),
    (["related", "Home", "--limit", "0"], "limit must be at least 1"),
    (["context", "q", "--max-tokens", "0"], "max_tokens must be at least 1"),
])
def test_a_protocol_param_out_of_range_is_a_usage_error_with_the_ports_message(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `search --limit 0` exited 1 where a bad setting exits 2. The bounds stay checked where a
    JSON-RPC request's are (serve/params.py): the same words from the CLI and the ports."""
    assert main(argv) == 2
    assert f"sidecar: {message}" in capsys.readouterr().err


def test_options_at_their_bounds_are_taken() -> None:
    args = build_parser().parse_args(["search", "q", "--limit", "100", "--max-tokens", "1", "--field", "status=done",
                                      "--field", "due=2024-01-01=x"])
    assert (args.limit, args.max_tokens, args.field) == (100, 1, [("status", "done"), ("due", "2024-01-01=x")])
    assert build_parser().parse_args(["health", "--max-items", "0"]).max_items == 0  # 0: the counts only
    assert build_parser().parse_args(["calibrate", "--samples", "10"]).samples == 10


def test_too_few_samples_asked_of_calibrate_is_said_so(demo_index: VaultIndex) -> None:
    """Before, calibrate(samples=5) blamed the vault: "the vault is too small to calibrate"."""
    from sidecar.report.calibrate import calibrate

    with pytest.raises(ValueError, match="calibration needs at least 10 samples, not 5"):
        calibrate(demo_index, samples=5, save=False)


# ---- mcp-config ------------------------------------------------------------------------------------------
def test_mcp_config_refuses_a_vault_that_is_not_a_folder(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a missing vault, or a file, got a configuration pointing at it."""
    monkeypatch.setenv("SIDECAR_MCP_TOKEN", "t" * 32)  # not the user's persistent token file
    a_file = tmp_path / "note.md"
    a_file.write_text("x")
    assert main(["mcp-config", "--vault", str(tmp_path / "nope"), "--index", str(tmp_path / "idx")]) == 2
    assert f"vault folder not found: {tmp_path / 'nope'}" in capsys.readouterr().err
    assert main(["mcp-config", "--vault", str(a_file), "--index", str(tmp_path / "idx")]) == 2
    assert f"the vault {a_file} is a file, not a folder" in capsys.readouterr().err
    assert main(["mcp-config", "--vault", str(vault), "--index", str(tmp_path / "idx"), "--port", "8765"]) == 0
    assert "127.0.0.1:8765" in capsys.readouterr().out


def test_serve_refuses_a_bad_vault_or_index_before_making_anything(vault: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `serve --index some-file` was a FileExistsError traceback, and `serve` with a missing
    vault made its index folder before saying the vault was not found."""
    some_file = tmp_path / "notes.md"
    some_file.write_text("mine\n")
    assert main(["serve", "--vault", str(vault), "--index", str(some_file)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["serve", "--vault", str(tmp_path / "nope"), "--index", str(tmp_path / "idx")]) == 2
    assert "vault folder not found" in capsys.readouterr().err and not (tmp_path / "idx").exists()


def test_a_setting_of_other_commands_is_refused_by_this_commands_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """Before, `status --history-days 5` printed the top-level usage (`sidecar [-h] [--version] COMMAND`) and
    "unrecognized arguments" alone, not which commands take the setting."""
    with pytest.raises(SystemExit) as stopped:
        main(["status", "--history-days", "5"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith("usage: sidecar status")
    assert "--history-days is a setting of serve and mcp only" in err

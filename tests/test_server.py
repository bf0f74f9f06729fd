"""The real server in a child process: JSON-RPC, events, live index, security rules, lifecycle."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sidecar.serve.httpguard import body_limit, too_large
from tests.conftest import DEMO_VAULT
from tests.serverproc import Sidecar, start_sidecar

JSON = "application/json"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sidecar, Path]]:
    base = tmp_path_factory.mktemp("live")
    vault = base / "vault"
    shutil.copytree(DEMO_VAULT, vault)
    server = start_sidecar(vault, base / "index", "--no-mcp")
    try:
        server.wait_ready()
        yield server, vault
    finally:
        server.stop()


def test_handshake_is_one_json_line(live: tuple[Sidecar, Path]) -> None:
    server, _ = live
    assert {"rpc_port", "mcp_port", "pid", "version", "protocol_version"} <= set(server.handshake)
    assert server.handshake["pid"] == server.proc.pid
    assert server.handshake["mcp_port"] is None


def test_status_search_related_links(live: tuple[Sidecar, Path]) -> None:
    server, _ = live
    status = server.call("status")
    assert status["notes"] > 60 and status["vectors_available"] is True
    res = server.call("search", query="SQLITE_BUSY", limit=5)
    assert res["results"] and res["results"][0]["scores"]["bm25_rank"] is not None
    buffer = "# Draft\n\nI keep losing my sourdough starter; the dough never rises in winter.\n"
    rel = server.call("related", text=buffer, limit=5)
    assert rel["results"] and all(r["path"] for r in rel["results"])
    some = res["results"][0]["path"]
    links = server.call("note.links", path=some)
    assert links["path"] == some and {"outlinks", "backlinks", "unresolved"} <= set(links)


def test_errors_have_stable_codes(live: tuple[Sidecar, Path]) -> None:
    server, _ = live
    assert server.rpc("no.such.method")["error"]["code"] == -32601
    assert server.rpc("search", query="")["error"]["code"] == -32602
    assert server.rpc("search", wrong_param=1)["error"]["code"] == -32602
    not_found = server.rpc("note.links", path="../../etc/passwd")["error"]
    assert not_found["code"] == -32004
    assert server.rpc("note.links", path="Nope/Missing.md")["error"] == not_found  # outside == not found


def test_batches_are_refused_and_parse_errors(live: tuple[Sidecar, Path]) -> None:
    """A batch of 10,000 searches held the read gate for 18 s while every other caller waited."""
    server, _ = live
    batch = [{"jsonrpc": "2.0", "id": i, "method": "search", "params": {"query": "bread"}} for i in range(2000)]
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": JSON}
    for body in (json.dumps(batch).encode(), b"  \n [" + json.dumps(batch[0]).encode() + b"]", b"[]"):
        reply = server.http("POST", "/rpc", body, headers)
        assert reply.status == 200 and reply.body["error"]["code"] == -32600, reply.raw[:200]
        assert reply.body["error"]["data"]["kind"] == "invalid_request" and "batch" in reply.body["error"]["message"]
    bad = server.http("POST", "/rpc", b"{not json", headers)
    assert bad.body["error"]["code"] == -32700
    assert bad.body["error"]["data"]["kind"] == "parse_error" and "line 1" in bad.body["error"]["data"]["detail"]


def test_requests_outside_the_json_rpc_schema_are_invalid(live: tuple[Sidecar, Path]) -> None:
    """The adapter decides the usual request's shape by hand (rpc._validate_request); every other
    shape still meets the library's schema check."""
    server, _ = live
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": JSON}
    request = {"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}
    for bad in ({**request, "jsonrpc": "1.0"}, {**request, "extra": 1}, {**request, "id": True},
                {**request, "id": {"a": 1}}, {**request, "params": "x"}, {**request, "method": 7}, {"id": 1, "method": "status"}):
        reply = server.http("POST", "/rpc", json.dumps(bad).encode(), headers)
        assert reply.body["error"]["code"] == -32600, (bad, reply.raw[:200])
        assert reply.body["error"]["data"]["kind"] == "invalid_request", reply.raw[:200]  # as every error: data.kind
    unknown = server.http("POST", "/rpc", json.dumps({**request, "method": "nope"}).encode(), headers).body["error"]
    assert unknown["code"] == -32601 and unknown["data"] == {"kind": "method_not_found", "detail": "nope"}
    for good in ({**request, "id": 1.5}, {**request, "id": "a"}, {"jsonrpc": "2.0", "id": 2, "method": "status"}):
        reply = server.http("POST", "/rpc", json.dumps(good).encode(), headers)
        assert "result" in reply.body and reply.body["id"] == good["id"], (good, reply.raw[:200])


WRONG_PARAMS = [  # (method, params, the field the message must name): each was an internal error
    ("search", {"query": "x", "filters": {"modified_since": "abc"}}, "filters.modified_since"),
    ("search", {"query": "x", "filters": {"folder": "f" * 100_000}}, "filters.folder"),
    ("search", {"query": "x", "filters": {"fields": {f"k{i}": "v" for i in range(20_000)}}}, "filters.fields"),
    ("search", {"query": "x", "filters": {"exclude_terms": ["w"] * 20_000}}, "filters.exclude_terms"),
    ("search", {"query": "x", "filters": {"fields": {"type": 7}}}, "filters.fields.type"),
    ("search", {"query": "x", "filters": {"nope": 1}}, "filters.nope"),
    ("search", {"query": "x", "limit": True}, "limit"),
    ("search", {"query": "x", "limit": 1.5}, "limit"),
    ("search", {"query": "x", "mode": "fast"}, "mode"),
    ("search", {"query": ["x"]}, "query"),
    ("related", {"path": "a.md", "cursor_heading": 7}, "cursor_heading"),
    ("related", {"path": ["a"]}, "path"),
    ("note.links", {"path": ["a"]}, "path"),
    ("note.links", {}, "path"),
    ("health", {"sections": "orphans"}, "sections"),
    ("health", {"sections": [1]}, "sections[0]"),
    ("reindex", {"full": "yes"}, "full"),
]


@pytest.mark.parametrize(("method", "params", "field"), WRONG_PARAMS, ids=[f"{m}-{f}" for m, _p, f in WRONG_PARAMS])
def test_wrong_types_are_invalid_params_naming_the_field(live: tuple[Sidecar, Path], method: str,
                                                         params: dict[str, object], field: str) -> None:
    server, _ = live
    error = server.rpc(method, **params)["error"]
    assert error["code"] == -32602 and error["data"]["kind"] == "invalid_params", error
    assert field in error["message"], error


def test_raw_bodies_that_python_decodes_oddly_are_invalid_params(live: tuple[Sidecar, Path]) -> None:
    """NaN (Python's json accepts it) and a lone surrogate (UnicodeEncodeError deep in the core)."""
    server, _ = live
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": JSON}
    for body in (b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"query":"x","filters":{"modified_since":NaN}}}',
                 b'{"jsonrpc":"2.0","id":1,"method":"note.links","params":{"path":"a\\ud800.md"}}',
                 b'{"jsonrpc":"2.0","id":1,"method":"search","params":["x"]}'):
        error = server.http("POST", "/rpc", body, headers).body["error"]
        assert error["code"] == -32602, (body, error)


HOSTS = {"loopback": "127.0.0.1:{port}", "localhost": "localhost:{port}", "any": "0.0.0.0:{port}",
         "foreign": "example.com", "evil": "localhost.evil.example:{port}", "absent": None,
         "other_port": "127.0.0.1:1"}
ORIGINS = {"absent": None, "null": "null", "foreign": "https://evil.example", "other_local": "http://localhost:3000",
           "obsidian": "app://obsidian.md"}


def expected_status(host: str, origin: str, token: str, ctype: str) -> int:
    if host == "absent":
        return 400  # HTTP/1.1 requires Host: the HTTP parser refuses before our checks run
    if host not in ("loopback", "localhost"):
        return 421
    if origin not in ("absent", "obsidian"):
        return 403
    if token == "query":
        return 400
    if token != "right":
        return 401
    if ctype != "json":
        return 415
    return 200


def test_security_matrix(live: tuple[Sidecar, Path]) -> None:
    server, _ = live
    tokens = {"none": None, "wrong": "x" * len(server.token), "short": "abc", "right": server.token, "query": server.token}
    ctypes = {"json": JSON, "text": "text/plain", "form": "application/x-www-form-urlencoded"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status"}).encode()
    cells = 0
    for host_name, host in HOSTS.items():
        for origin_name, origin in ORIGINS.items():
            for token_name, token in tokens.items():
                for ctype_name, ctype in ctypes.items():
                    headers = {"Content-Type": ctype}
                    if origin is not None:
                        headers["Origin"] = origin
                    path = "/rpc"
                    if token_name == "query":
                        path += f"?token={token}"
                    elif token is not None:
                        headers["Authorization"] = f"Bearer {token}"
                    reply = server.http("POST", path, body, headers,
                                        host=None if host is None else host.format(port=server.rpc_port))
                    want = expected_status(host_name, origin_name, token_name, ctype_name)
                    assert reply.status == want, (host_name, origin_name, token_name, ctype_name, reply.raw)
                    if want not in (200, 400) or host_name != "absent":
                        assert want == 200 or reply.body["error"]["code"], reply.raw  # JSON errors, with a code
                    cells += 1
    assert cells == len(HOSTS) * len(ORIGINS) * len(tokens) * len(ctypes)


def test_token_is_not_in_argv_or_logs(live: tuple[Sidecar, Path]) -> None:
    server, vault = live
    cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()
    assert server.token.encode() not in cmdline
    assert server.token not in server.stderr_tail()
    for path in vault.rglob("*"):
        if path.is_file():
            assert server.token.encode() not in path.read_bytes()


def test_a_buffer_of_any_indexable_size_is_read_and_a_larger_body_is_a_json_rpc_413(live: tuple[Sidecar, Path]) -> None:
    """Before, the port read 1 MB while the vault indexes notes up to max_file_bytes (2 MB): with a 1.2 MB
    note open, the related pane got a bare 413 ("not a JSON-RPC answer"). Now a buffer of any size the
    index takes is answered, a larger one is invalid params naming `text`, and a body past the port's
    limit is a JSON-RPC error, as on the MCP port."""
    server, _ = live
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": JSON}

    def related(text: str) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "related", "params": {"text": text, "limit": 3}})
        return server.http("POST", "/rpc", body.encode(), headers)

    line = "sourdough starter feeding schedule, day by day\n"
    answered = related(line * (1_500_000 // len(line)))
    assert answered.status == 200 and answered.body["result"]["results"], answered.raw[:300]
    too_big = related(line * (2_100_000 // len(line)))
    assert too_big.body["error"]["data"] == {"kind": "invalid_params", "field": "text", "limit": 2_000_000}
    limit = body_limit(2_000_000)
    over = server.http("POST", "/rpc", b" " * (limit + 1), headers)
    assert over.status == 413 and over.body == too_large(limit)


def test_live_updates(live: tuple[Sidecar, Path]) -> None:
    server, vault = live

    def top_paths(query: str) -> list[str]:
        return [r["path"] for r in server.call("search", query=query, mode="lexical", limit=5)["results"]]

    note = vault / "Inbox" / "Fresh Note.md"
    note.parent.mkdir(exist_ok=True)
    note.write_text("# Fresh\nthe quetzalcoatlus flew over the lab\n")
    server.wait_until(lambda: "Inbox/Fresh Note.md" in top_paths("quetzalcoatlus"), 10, "a new note")
    tmp = note.with_suffix(".tmp")
    tmp.write_text("# Fresh\nnow it mentions archaeopteryx instead\n")
    os.replace(tmp, note)  # an editor's atomic save
    server.wait_until(lambda: "Inbox/Fresh Note.md" in top_paths("archaeopteryx"), 10, "an atomic save")
    assert "Inbox/Fresh Note.md" not in top_paths("quetzalcoatlus")
    note.rename(vault / "Inbox" / "Renamed Note.md")
    server.wait_until(lambda: top_paths("archaeopteryx") == ["Inbox/Renamed Note.md"], 10, "a rename")
    (vault / "Inbox" / "Renamed Note.md").unlink()
    server.wait_until(lambda: top_paths("archaeopteryx") == [], 10, "a delete")
    runs = server.call("status")["indexing"]
    # the first one made a folder too (a scan); the atomic save, the rename and the delete were not scanned
    assert runs["event_runs"] >= 3 and runs["last_event_run"]["changed"] >= 1
    (vault / "Inbox" / "Moved.md").write_text("# Moved\nthe pterodactyl in a folder that moves\n")
    server.wait_until(lambda: top_paths("pterodactyl") == ["Inbox/Moved.md"], 10, "a note in a new folder")
    (vault / "Inbox").rename(vault / "Outbox")  # the folder's events alone cannot say which notes moved
    server.wait_until(lambda: top_paths("pterodactyl") == ["Outbox/Moved.md"], 10, "a folder move")
    (vault / "Outbox").rename(vault / "Books v1.0")  # a dot in a folder's name: taken for a file's before
    server.wait_until(lambda: top_paths("pterodactyl") == ["Books v1.0/Moved.md"], 10, "a dotted folder move")


def test_events_stream_reports_changes(live: tuple[Sidecar, Path]) -> None:
    import http.client

    server, vault = live
    conn = http.client.HTTPConnection("127.0.0.1", server.rpc_port, timeout=20)
    conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{server.rpc_port}",
                                            "Authorization": f"Bearer {server.token}"})
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Type", "").startswith("text/event-stream")
    first = resp.readline().decode()
    assert first.startswith("event: status")
    (vault / "Evented.md").write_text("# Evented\nsomething new\n")
    deadline = time.monotonic() + 15
    seen = set()
    while time.monotonic() < deadline and "index_changed" not in seen:
        line = resp.readline().decode()
        if line.startswith("event: "):
            seen.add(line.split(":", 1)[1].strip())
    conn.close()
    assert "index_changed" in seen


def test_shutdown_call_exits_cleanly(tmp_path: Path) -> None:
    server = start_sidecar(DEMO_VAULT, tmp_path / "idx", "--no-mcp", "--no-watch")
    assert server.call("shutdown") == {"ok": True}
    assert server.proc.wait(timeout=20) == 0


def test_sigterm_exits_cleanly(tmp_path: Path) -> None:
    server = start_sidecar(DEMO_VAULT, tmp_path / "idx", "--no-mcp")
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=20) == 0


def test_a_stop_while_the_model_loads_exits_at_once_with_its_status() -> None:
    """A SIGTERM during start-up left the model's files loading on their daemon thread, which the
    interpreter's exit ended inside the tokenizers' Rust code: SIGABRT ("FATAL: exception not rethrown")
    once in a full run on a busy machine, where 0 was due. Such a thread alive, serve exits at once."""
    script = ("import threading, time\n"
              "from sidecar.commands.server import MODEL_THREAD, exited\n"
              "assert exited(0) == 0\n"  # no such thread: the status is returned
              "threading.Thread(target=time.sleep, args=(60,), name=MODEL_THREAD, daemon=True).start()\n"
              "exited(3)\n"
              "print('not reached', flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout) == (3, "")


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for whoever adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_exits_when_its_parent_dies(tmp_path: Path) -> None:
    """A parent that starts the sidecar and dies: the sidecar must not linger."""
    script = (
        "import subprocess, sys, os\n"
        f"p = subprocess.Popen([sys.executable, '-m', 'sidecar', 'serve', '--vault', {str(DEMO_VAULT)!r},"
        f" '--index', {str(tmp_path / 'idx')!r}, '--no-mcp'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,"
        " env={**os.environ, 'SIDECAR_RPC_TOKEN': 't'})\n"
        "print(p.pid, flush=True); p.stdout.readline(); os._exit(0)\n"
    )
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    child = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if not alive(child):
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the sidecar outlived its parent")


def test_exits_when_its_stdin_lifeline_closes(tmp_path: Path) -> None:
    env = {**os.environ, "SIDECAR_RPC_TOKEN": "t", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "sidecar", "serve", "--vault", str(DEMO_VAULT), "--index",
                             str(tmp_path / "idx"), "--no-mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None and proc.stdin is not None
    assert json.loads(proc.stdout.readline())["pid"] == proc.pid
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0


def test_an_open_event_stream_does_not_hold_up_shutdown(tmp_path: Path) -> None:
    """A stop ends every event stream itself. A stream left open would hold the stop for its 2 s of
    grace (the plugin kills us after 3), then be cut off mid-body: http.client's IncompleteRead."""
    import http.client

    server = start_sidecar(DEMO_VAULT, tmp_path / "idx", "--no-mcp")
    conn = http.client.HTTPConnection("127.0.0.1", server.rpc_port, timeout=20)
    conn.request("GET", "/events", headers={"Host": f"127.0.0.1:{server.rpc_port}",
                                            "Authorization": f"Bearer {server.token}"})
    stream = conn.getresponse()
    assert stream.readline().startswith(b"event: status")
    server.proc.send_signal(signal.SIGTERM)
    stream.read()  # to the end the server wrote
    assert server.proc.wait(timeout=20) == 0
    conn.close()

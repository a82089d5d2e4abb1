"""`llm-wiki serve` under faults: clients that hang up mid-write, the server SIGKILLed while
writers write, and restarted — what was acknowledged is there, nothing is torn, verify is clean."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import threading
import time

from conftest import Cli
from llm_wiki.entries import parse_entry
from llm_wiki.store import parse_log_line
from serve_world import entry_files, rpc, server_thread, start_process, stop_process, walled_wiki


def write_call(summary: str, scope: str = "matter-kestrel") -> dict:
    return {
        "name": "wiki_write",
        "arguments": {"type": "incident", "domain": "ops", "summary": summary, "scope": scope},
    }


def raw_post(port: int, token: str, payload: bytes, send: int, read_reply: bool) -> bytes:
    """POST /mcp by hand: send the first ``send`` bytes of the body, then (maybe) read."""
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {len(payload)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + payload[:send])
        if not read_reply:
            sock.shutdown(socket.SHUT_RDWR)
            return b""
        return sock.recv(65536)


def log_body(path) -> list[str]:
    data = (path / "log.md").read_bytes()
    assert data.endswith(b"\n"), "a torn last line"
    lines = [ln for ln in data.decode().split("\n\n", 2)[-1].splitlines() if ln.strip()]
    for line in lines:
        assert parse_log_line(line) is not None, line
    return lines


def test_a_client_that_hangs_up_mid_write_leaves_the_write_whole_or_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-10T09:00:00Z")
    path = tmp_path / "wiki"
    tokens = walled_wiki(path)
    with server_thread(path) as running:
        # half a body, then gone: nothing was done
        for n in range(5):
            payload = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": write_call(f"Half {n}"),
                }
            ).encode()
            raw_post(running.port, tokens["alice"], payload, len(payload) // 2, read_reply=False)
        # the whole body, then gone before the reply: written and logged, or nothing
        summaries = [f"Whole body then gone {n}" for n in range(8)]
        for summary in summaries:
            payload = json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": write_call(summary)}
            ).encode()
            raw_post(running.port, tokens["alice"], payload, len(payload), read_reply=False)
        time.sleep(1.0)  # let any write still running finish
        ok = rpc(running, tokens["alice"], "tools/call", write_call("After the hang-ups"))
        assert ok.status == 200 and '"created":true' in ok.text.replace(" ", "")
    files = entry_files(path)
    texts = [(path / f).read_text() for f in files]
    assert not any("Half " in t for t in texts)
    logged = log_body(path)
    for text in texts:
        entry = parse_entry(text)
        assert any(entry.id in line for line in logged), entry.id
    assert 1 <= len(files) <= 1 + len(summaries)
    assert Cli(path)("--as", "root", "verify").stdout.strip().endswith("clean.")


def test_sigkill_during_writes_then_restart_keeps_every_acknowledged_write(tmp_path):
    path = tmp_path / "wiki"
    tokens = walled_wiki(path)
    running = start_process(path)
    acked: list[str] = []
    pending: dict[int, str] = {}  # writer -> the summary it sent and got no answer for
    stop = threading.Event()
    lock = threading.Lock()

    def writer(w: int) -> None:
        token = tokens["alice" if w % 2 else "bob"]
        scope = "matter-kestrel" if w % 2 else "matter-osprey"
        n = 0
        while not stop.is_set():
            summary = f"Writer {w} wrote entry {n} before the kill"
            pending[w] = summary
            try:
                got = rpc(running, token, "tools/call", write_call(summary, scope))
            except (OSError, http.client.HTTPException):  # (IncompleteRead: died mid-answer)
                return  # the server died under this request: it stays pending
            result = json.loads(got.text)["result"]
            assert not result.get("isError"), result
            with lock:
                acked.append(result["structuredContent"]["id"])
            del pending[w]
            n += 1

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop_process(running, signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join(30)
    assert running.process.returncode == -signal.SIGKILL
    assert len(acked) >= 12

    restarted = start_process(path)
    try:
        for entry_id in acked:  # every acknowledged write is there, as its writer's reader
            show = {"name": "wiki_show", "arguments": {"id": entry_id}}
            got = rpc(restarted, tokens["root"], "tools/call", show)
            assert '"isError":false' in got.text.replace(" ", ""), entry_id
        # a client retries what it sent and never heard back about (wiki_write is idempotent)
        retried = set()
        for w, summary in sorted(pending.items()):
            token = tokens["alice" if w % 2 else "bob"]
            scope = "matter-kestrel" if w % 2 else "matter-osprey"
            got = rpc(restarted, token, "tools/call", write_call(summary, scope))
            assert '"isError":false' in got.text.replace(" ", ""), got.text
            retried.add(json.loads(got.text)["result"]["structuredContent"]["id"])
    finally:
        stop_process(restarted)
    for f in entry_files(path):
        parse_entry((path / f).read_text())  # no partial entry
    log_body(path)  # no torn line
    result = Cli(path).json("--as", "root", "verify")
    assert result["ok"], result["findings"]
    assert result["checked"] == len(set(acked) | retried) == len(entry_files(path))

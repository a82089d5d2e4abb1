"""Helpers for the tests of ``llm-wiki serve``: a walled wiki with tokens, the server on a
loopback port (in a thread, or as a real subprocess), and its two kinds of client — the MCP SDK's
own (``Client`` over ``streamable_http_client``) and plain HTTP requests, raw where a test must
send what a well-behaved client never would (``..`` in a path, half a body)."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from conftest import Cli, subprocess_env

ACCESS = """\
readers:
  root:
    admin: true
  alice:
    scopes: [matter-kestrel, shared]
  bob:
    scopes: [matter-osprey, shared]
  carol:
    scopes: [hr-plover]
    read_only: [shared]
"""


def walled_wiki(path: Path, access: str = ACCESS) -> dict[str, str]:
    """A new wiki with walls and one token per reader of ``access``: {reader: token}."""
    cli = Cli(None)
    cli("init", str(path))
    (path / "access.yaml").write_text(access)
    tokens = {}
    for reader in re.findall(r"^  ([a-z0-9-]+):$", access, re.M):
        tokens[reader] = Cli(path)("token", "add", reader).stdout.strip()
    return tokens


@dataclass
class Running:
    """A server the test started: its base URL, and what it logged."""

    url: str
    port: int
    log: Any = None
    process: subprocess.Popen | None = None
    app: Any = None

    @property
    def mcp(self) -> str:
        return self.url + "mcp"

    def log_text(self) -> str:
        if self.process is not None:
            self.log.seek(0)
            return self.log.read().decode()
        return self.log.getvalue()


@contextlib.contextmanager
def server_thread(wiki_path: Path, **options: Any) -> Iterator[Running]:
    """The app of ``llm-wiki serve`` under uvicorn, in a thread of this process (fast; the mock
    backend and LLM_WIKI_NOW reach it)."""
    import uvicorn

    from llm_wiki.server import App, bind, uvicorn_config
    from llm_wiki.wiki import Wiki

    log = io.StringIO()
    app = App(Wiki(wiki_path), log=log, **options)
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield Running(url=f"http://127.0.0.1:{port}/", port=port, log=log, app=app)
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_process(wiki_path: Path, port: int | None = None, **env: str) -> Running:
    """``llm-wiki serve`` as a real process (for SIGKILL); returns once it answers."""
    port = port or free_port()
    # the access log goes to a file: a pipe nobody reads would fill and stop the server
    log = open(wiki_path.parent / f"serve-{port}.log", "w+b")  # noqa: SIM115 - the process keeps it
    process = subprocess.Popen(
        [sys.executable, "-m", "llm_wiki", "serve", "--wiki", str(wiki_path), "--port", str(port)],
        env=subprocess_env(**env),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise AssertionError(log.read().decode()) from None
            time.sleep(0.05)
    return Running(url=f"http://127.0.0.1:{port}/", port=port, process=process, log=log)


def stop_process(running: Running, sig: int = signal.SIGTERM) -> str:
    assert running.process is not None
    running.process.send_signal(sig)
    try:
        running.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        running.process.kill()
        running.process.wait()
    running.log.seek(0)
    text = running.log.read().decode()
    running.log.close()
    return text


# --------------------------------------------------------------------------- plain HTTP


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def request(
    running: Running,
    method: str,
    path: str,
    *,
    token: str | None = None,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request, sent as written (``path`` is not normalised: ``..`` reaches the server)."""
    conn = http.client.HTTPConnection("127.0.0.1", running.port, timeout=60)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if body is not None:
        sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
        return Reply(
            status=response.status,
            headers={k.lower(): v for k, v in response.getheaders()},
            body=data,
            cookies=response.headers.get_all("set-cookie") or [],
        )
    finally:
        conn.close()


def rpc(running: Running, token: str | None, method: str, params: dict | None = None) -> Reply:
    """One JSON-RPC POST to /mcp, as the streamable HTTP transport sends it."""
    payload = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return request(
        running,
        "POST",
        "/mcp",
        token=token,
        body=json.dumps(payload).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )


# --------------------------------------------------------------------------- the MCP SDK client


async def _with_client(url: str, token: str, steps):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return await steps(client)


def mcp(running: Running, token: str, steps):
    """Run ``steps(client)`` (async) with the SDK's client over HTTP as ``token``'s reader."""
    return anyio.run(_with_client, running.mcp, token, steps)


async def call(client, name: str, **arguments) -> dict:
    """A tool call's result as the agent reads it: its structured content, or {"error": text}."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return {"error": text}
    return result.structured_content or json.loads(text)


def tool(running: Running, token: str, name: str, **arguments) -> dict:
    async def steps(client):
        return await call(client, name, **arguments)

    return mcp(running, token, steps)


def entry_files(wiki_path: Path) -> list[str]:
    return sorted(str(p.relative_to(wiki_path)) for p in (wiki_path / "entries").rglob("*.md"))


def pids_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True

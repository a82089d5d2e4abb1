"""Load on `llm-wiki serve` (issue 17): a 10,000-entry walled wiki, 50 concurrent readers and 8
writers for 2 minutes, then every acknowledged write checked and `verify` run.

Readers call the MCP tools over HTTP (``wiki_query`` offline, ``wiki_show``, ``wiki_list``: the
JSON-RPC POSTs the SDK's streamable HTTP client sends in stateless JSON mode; one real SDK client
session opens the run) and GET pages of their site; writers call ``wiki_write`` into their own
scope. Three readers (alice, bob, carol) share the 58 clients, so the server keeps three sites.
Reported: requests/s, p50/p99 latency per call type, errors (target 0), the server's peak memory
(VmHWM) and CPU time (user + sys), the warm-up (first site build per reader).

Run: nice -n 10 .venv/bin/pytest tests/bench/test_serve_bench.py -s
Knobs: LLM_WIKI_BENCH_ENTRIES (10000), LLM_WIKI_SERVE_BENCH_SECONDS (120),
LLM_WIKI_SERVE_BENCH_READERS (50), LLM_WIKI_SERVE_BENCH_WRITERS (8).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
from collections import defaultdict

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from wikigen import make_entries, write_wiki  # noqa: E402

from conftest import Cli  # noqa: E402
from serve_world import mcp, start_process, stop_process  # noqa: E402

N = int(os.environ.get("LLM_WIKI_BENCH_ENTRIES", "10000"))
SECONDS = float(os.environ.get("LLM_WIKI_SERVE_BENCH_SECONDS", "120"))
READERS = int(os.environ.get("LLM_WIKI_SERVE_BENCH_READERS", "50"))
WRITERS = int(os.environ.get("LLM_WIKI_SERVE_BENCH_WRITERS", "8"))
PEOPLE = {"alice": "team-a", "bob": "team-b", "carol": "team-c"}
ACCESS = "readers:\n  root:\n    admin: true\n" + "".join(
    f"  {name}:\n    scopes: [{scope}, shared]\n" for name, scope in PEOPLE.items()
)
QUESTIONS = [
    "Why do we use Postgres for the database?",
    "What broke in the payments queue?",
    "Which cache does the search team run?",
    "What did we decide about the ledger pipeline?",
    "incident gateway timeout",
]


def proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds user+sys, peak RSS MB) of a live process."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/status") as fh:
        hwm = next(int(ln.split()[1]) for ln in fh if ln.startswith("VmHWM"))
    return cpu, hwm / 1024


class Client:
    """One keep-alive HTTP connection with a token."""

    def __init__(self, port: int, token: str, timeout: float = 120) -> None:
        self.port = port
        self.token = token
        self.timeout = timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def send(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
            headers["Accept"] = "application/json, text/event-stream"
        for attempt in (0, 1):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()  # a keep-alive connection the server closed: reconnect once
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def tool(self, name: str, arguments: dict) -> tuple[int, dict | None]:
        payload = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        status, data = self.send("POST", "/mcp", json.dumps(payload).encode())
        if status != 200:
            return status, None
        result = json.loads(data)["result"]
        return status, None if result.get("isError") else result["structuredContent"]


def test_serve_under_load(tmp_path):
    root = tmp_path / "wiki"
    entries = make_entries(N)
    write_wiki(root, entries)
    (root / "access.yaml").write_text(ACCESS)
    cli = Cli(root)
    cli("index")
    tokens = {name: cli("token", "add", name).stdout.strip() for name in [*PEOPLE, "root"]}
    ids = [e.id for e in entries]
    domains = sorted({e.domain for e in entries})
    running = start_process(root)
    pid = running.process.pid
    try:
        # one real SDK session first: the bench's raw POSTs are what it sends
        async def steps(client):
            return len((await client.list_tools()).tools)

        assert mcp(running, tokens["alice"], steps) == 5
        warm = time.perf_counter()
        for name in PEOPLE:  # the first page of each reader builds its site
            status, _ = Client(running.port, tokens[name], timeout=1800).send("GET", "/")
            assert status == 200
        warm_seconds = time.perf_counter() - warm
        cpu_before, _ = proc_stats(pid)

        latencies: dict[str, list[float]] = defaultdict(list)
        errors: dict[str, int] = defaultdict(int)
        acked: list[str] = []
        lock = threading.Lock()
        stop = threading.Event()

        def record(kind: str, took: float, ok: bool, detail: str = "") -> None:
            with lock:
                latencies[kind].append(took)
                if not ok:
                    errors[kind] += 1
                    if errors[kind] <= 3:
                        print(f"error {kind}: {detail[:200]}")

        def reader(n: int) -> None:
            name = list(PEOPLE)[n % len(PEOPLE)]
            client = Client(running.port, tokens[name])
            rng = random.Random(n)
            while not stop.is_set():
                kind = rng.choice(["wiki_query", "wiki_show", "wiki_list", "page"])
                start = time.perf_counter()
                try:
                    if kind == "wiki_query":
                        status, got = client.tool("wiki_query", {"question": rng.choice(QUESTIONS)})
                        ok = status == 200 and got is not None
                    elif kind == "wiki_show":
                        status, got = client.tool("wiki_show", {"id": rng.choice(ids)})
                        ok = status == 200 and got is not None
                    elif kind == "wiki_list":
                        args = rng.choice(
                            [{}, {"domain": rng.choice(domains)}, {"type": "incident"}]
                        )
                        status, got = client.tool("wiki_list", {**args, "limit": 20})
                        ok = status == 200 and got is not None
                    else:
                        path = rng.choice(
                            [
                                "/",
                                f"/entries/{rng.choice(ids)}.html",
                                f"/domains/{rng.choice(domains)}.html",
                            ]
                        )
                        status, _ = client.send("GET", path)
                        ok = status == 200
                    detail = f"status {status}"
                except Exception as exc:  # noqa: BLE001 - counted, and the run goes on
                    ok, detail = False, repr(exc)
                record(kind, time.perf_counter() - start, ok, detail)

        def writer(n: int) -> None:
            name = list(PEOPLE)[n % len(PEOPLE)]
            client = Client(running.port, tokens[name])
            k = 0
            while not stop.is_set():
                summary = f"Load writer {n} records decision {k} about the bench queue"
                start = time.perf_counter()
                try:
                    status, got = client.tool(
                        "wiki_write",
                        {
                            "type": "incident",
                            "domain": "bench",
                            "summary": summary,
                            "scope": PEOPLE[name],
                            "body": "Written under load.",
                        },
                    )
                    ok = status == 200 and got is not None
                    detail = f"status {status}"
                    if ok:
                        with lock:
                            acked.append(got["id"])
                except Exception as exc:  # noqa: BLE001
                    ok, detail = False, repr(exc)
                record("wiki_write", time.perf_counter() - start, ok, detail)
                k += 1

        threads = [threading.Thread(target=reader, args=(n,)) for n in range(READERS)]
        threads += [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(SECONDS)
        stop.set()
        for t in threads:
            t.join(300)
        wall = time.perf_counter() - began
        cpu_after, peak = proc_stats(pid)

        # every acknowledged write is there
        admin = Client(running.port, tokens["root"])
        missing = [i for i in acked if admin.tool("wiki_show", {"id": i})[1] is None]
    finally:
        stop_process(running)
    verify = Cli(root).json("--as", "root", "verify")

    total = sum(len(v) for v in latencies.values())
    print(
        f"\nserve under load: {N} entries, {READERS} readers + {WRITERS} writers, {wall:.0f} s "
        f"wall; warm-up (3 site builds) {warm_seconds:.0f} s"
    )
    print(f"  {total} requests, {total / wall:.1f} req/s; errors {dict(errors) or 0}")
    for kind in sorted(latencies):
        times = sorted(latencies[kind])
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(
            f"  {kind:<11} {len(times):>6} calls  p50 {statistics.median(times) * 1000:7.1f} ms"
            f"  p99 {p99 * 1000:7.1f} ms"
        )
    print(
        f"  server: {cpu_after - cpu_before:.0f} s CPU during the run, peak RSS {peak:.0f} MB; "
        f"{len(acked)} writes acknowledged, {len(missing)} missing; verify: "
        f"{'clean' if verify['ok'] else verify['findings'][:3]} ({verify['checked']} entries)"
    )
    assert not missing
    assert verify["ok"]
    assert verify["checked"] == N + len(set(acked))
    assert sum(errors.values()) == 0

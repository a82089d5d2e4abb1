"""`llm-wiki serve`: tokens, MCP over HTTP with the SDK's own client, the site per reader, sign-in,
budgets, and the fail-safe defaults — what a reader, an agent and an attacker each see."""

from __future__ import annotations

import re
import stat
import statistics
import time
from urllib.parse import quote, urlencode

import pytest

from conftest import Cli
from llm_wiki.server import UNAUTHORIZED
from serve_world import (
    call,
    entry_files,
    mcp,
    request,
    rpc,
    server_thread,
    tool,
    walled_wiki,
)

NOW = "2026-05-10T09:00:00Z"


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", NOW)
    path = tmp_path / "wiki"
    tokens = walled_wiki(path)
    return path, tokens


@pytest.fixture
def served(world):
    path, tokens = world
    with server_thread(path, rebuild_seconds=0.0) as running:
        yield path, tokens, running


def write(running, token, summary, scope, **fields):
    fields.setdefault("type", "incident")
    return tool(running, token, "wiki_write", domain="ops", summary=summary, scope=scope, **fields)


# --------------------------------------------------------------------------- tokens


def test_token_add_prints_it_once_and_keeps_only_its_hash_in_a_0600_file(tmp_path):
    path = tmp_path / "wiki"
    Cli(None)("init", str(path))
    cli = Cli(path)
    token = cli("token", "add", "alice").stdout.strip()
    assert re.fullmatch(r"lwk_[A-Za-z0-9_-]{40,}", token)
    stored = path / "access-tokens.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert token not in stored.read_text()
    for place in path.rglob("*"):
        if place.is_file():
            assert token.encode() not in place.read_bytes(), place
    again = cli("token", "add", "alice", code=2)
    assert "already has a token; pass --rotate" in again.stderr
    listed = cli.json("token", "list")["tokens"]
    assert [(t["reader"], t["last_used"]) for t in listed] == [("alice", None)]
    assert set(listed[0]) == {"id", "reader", "created", "last_used"}
    assert token not in cli("token", "list").stdout
    assert cli.json("token", "revoke", "alice")["revoked"][0]["reader"] == "alice"
    assert cli("token", "list").stdout.startswith("No tokens yet")
    assert "no token for 'alice'" in cli("token", "revoke", "alice", code=1).stderr


def test_under_walls_a_token_is_issued_only_to_a_reader_of_access_yaml(world):
    path, _ = world
    cli = Cli(path)
    assert "not in access.yaml" in cli("token", "add", "mallory", code=2).stderr
    refused = cli("--as", "bob", "token", "list", code=1).stderr
    assert "does not run as reader 'bob'" in refused
    assert cli("--as", "root", "token", "list").stdout.count("created") == 4


# --------------------------------------------------------------------------- MCP over HTTP


def test_the_sdk_client_over_http_gets_the_stdio_tools_and_acts_as_its_token(served):
    path, tokens, running = served

    async def steps(client):
        names = sorted(t.name for t in (await client.list_tools()).tools)
        written = await call(
            client,
            "wiki_write",
            type="decision",
            domain="ledger",
            summary="Keep the ledger in Postgres",
            alternatives=[{"id": "dynamodb", "rejected_because": "no multi-row transactions"}],
            scope="matter-kestrel",
        )
        shown = await call(client, "wiki_show", id=written["id"])
        listed = await call(client, "wiki_list")
        answer = await call(client, "wiki_query", question="Which database holds the ledger?")
        brief = await call(client, "wiki_brief")
        return names, written, shown, listed, answer, brief

    names, written, shown, listed, answer, brief = mcp(running, tokens["alice"], steps)
    assert names == ["wiki_brief", "wiki_list", "wiki_query", "wiki_show", "wiki_write"]
    assert written["created"] is True
    assert shown["scope"] == "matter-kestrel" and shown["summary"] == "Keep the ledger in Postgres"
    assert [e["id"] for e in listed["entries"]] == [written["id"]]
    assert written["id"] in answer["answer"]
    assert brief["counts"]
    log = running.log_text()
    assert "alice POST /mcp tools/call wiki_write 200" in log
    assert tokens["alice"] not in log
    used = Cli(path).json("token", "list")["tokens"]
    assert [t["reader"] for t in used if t["last_used"]] == ["alice"]
    # bob, on the same server at the same time, sees none of it
    assert tool(running, tokens["bob"], "wiki_list")["entries"] == []


def test_no_token_a_wrong_token_and_a_revoked_token_get_401_and_nothing_else(served):
    path, tokens, running = served
    write(running, tokens["alice"], "Refunds stalled qzsecretx for three hours", "matter-kestrel")
    wrong = tokens["alice"][:-4] + "AAAA"
    for token in (None, wrong, "", "lwk_", "Basic abc", "x" * 5000):
        for method, route in (("GET", "/"), ("GET", "/entries/"), ("GET", "/ask")):
            got = request(running, method, route, token=token)
            assert got.status == 401, (token, route)
            assert "qzsecretx" not in got.text
        got = rpc(running, token, "tools/call", {"name": "wiki_list", "arguments": {}})
        assert (got.status, got.text) == (401, UNAUTHORIZED)
        assert got.headers["www-authenticate"] == 'Bearer realm="llm-wiki"'
    # revoked: refused at the very next request, no restart
    assert request(running, "GET", "/", token=tokens["alice"]).status == 200
    Cli(path)("token", "revoke", "alice")
    got = rpc(running, tokens["alice"], "tools/call", {"name": "wiki_list", "arguments": {}})
    assert (got.status, got.text) == (401, UNAUTHORIZED)
    assert request(running, "GET", "/", token=tokens["alice"]).status == 401
    assert tokens["alice"] not in running.log_text() and wrong not in running.log_text()


def _same_shape_id(real: str) -> str:
    """An id of the same shape that never existed."""
    return real[:-4] + ("0000" if real[-4:] != "0000" else "1111")


def _same_time(one, other, pairs=30):
    """Whether two calls take the same time within noise: ``pairs`` timings of each, taken in
    alternating order so that a loaded machine slows both alike; the median of the pairwise
    differences must be small next to the calls' own time."""
    diffs, times = [], []
    for n in range(pairs):
        first, second = (one, other) if n % 2 else (other, one)
        took = {}
        for fn in (first, second):
            start = time.perf_counter()
            fn()
            took[fn] = (time.perf_counter() - start) * 1000
        diffs.append(took[one] - took[other])
        times += list(took.values())
    typical = statistics.median(times)
    return abs(statistics.median(diffs)) < max(3.0, 0.5 * typical), (diffs, typical)


def test_bob_asking_for_alices_entry_gets_exactly_the_answer_for_an_id_that_never_existed(served):
    path, tokens, running = served
    real = write(
        running, tokens["alice"], "Partner qzhiddenx settles the Kestrel matter", "matter-kestrel"
    )["id"]
    never = _same_shape_id(real)

    def show(entry_id):
        got = rpc(
            running,
            tokens["bob"],
            "tools/call",
            {"name": "wiki_show", "arguments": {"id": entry_id}},
        )
        return got.status, got.text.replace(entry_id, "ID")

    def page(entry_id):
        got = request(running, "GET", f"/entries/{entry_id}.html", token=tokens["bob"])
        return got.status, got.text

    assert show(real) == show(never)
    assert '"isError":true' in show(real)[1].replace(" ", "")
    assert page(real) == page(never) == (404, "Not found.\n")
    assert request(running, "GET", f"/entries/{real}.html", token=tokens["alice"]).status == 200
    # timing within noise
    same, detail = _same_time(lambda: show(real), lambda: show(never))
    assert same, detail
    same, detail = _same_time(lambda: page(real), lambda: page(never))
    assert same, detail


def test_a_write_as_bob_into_alices_scope_is_refused_and_leaves_nothing(served):
    path, tokens, running = served
    write(running, tokens["alice"], "Kestrel retainer signed", "matter-kestrel")
    before = (entry_files(path), (path / "log.md").read_bytes())
    got = write(running, tokens["bob"], "Bob reaches into Kestrel", "matter-kestrel")
    assert got == {
        "error": "Error executing tool wiki_write: reader 'bob' may not write to scope 'matter-kestrel'; pass scope with one of "
        "your scopes (matter-osprey, shared)."
    }
    # carol only reads shared
    assert (
        "may not write" in write(running, tokens["carol"], "Carol writes shared", "shared")["error"]
    )
    assert (entry_files(path), (path / "log.md").read_bytes()) == before
    assert Cli(path)("--as", "root", "verify").stdout.strip().endswith("clean.")


TRAVERSALS = [
    "/../access.yaml",
    "/../../../../etc/passwd",
    "/%2e%2e/access.yaml",
    "/%2e%2e%2f%2e%2e%2faccess-tokens.json",
    "/entries/..%2f..%2f..%2flog.md",
    "/entries/%2e%2e/%2e%2e/%2e%2e/%2e%2e/settings.yaml",
    "//etc/passwd",
    "/%2fetc%2fpasswd",
    "/..%5c..%5caccess.yaml",
    "/entries/..\\..\\access.yaml",
    "/%252e%252e/access.yaml",
    "/./index.html",
    "/.site-manifest.json",
    "/entries/%00.html",
    "/assets/../../alice/index.html",
    "/../alice/index.html",
    "/" + quote("/etc/passwd", safe=""),
]


def test_path_traversal_on_every_route_reaches_nothing_outside_the_site(served, tmp_path):
    path, tokens, running = served
    write(running, tokens["alice"], "Alice qzalicex only", "matter-kestrel")
    (tmp_path / "outside.txt").write_text("qzoutsidex")
    assert request(running, "GET", "/", token=tokens["alice"]).status == 200  # alice's site exists
    secrets = [
        "qzalicex",
        "qzoutsidex",
        "root:",
        "readers:",
        "sha256",
        "default_scope",
        "manifest",
    ]
    for route in TRAVERSALS + ["/../../" + str(tmp_path / "outside.txt")]:
        for method in ("GET", "HEAD"):
            got = request(running, method, route, token=tokens["bob"])
            assert got.status in (400, 404), (route, got.status)
            assert not any(s in got.text for s in secrets), route
        for where in ("/login", "/ask", "/logout"):
            got = request(running, "GET", where + route, token=tokens["bob"])
            assert not any(s in got.text for s in secrets), where + route


def test_entry_text_with_html_is_escaped_on_every_page(served):
    path, tokens, running = served
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    written = write(
        running,
        tokens["alice"],
        f"Payload {evil} in a summary",
        "matter-kestrel",
        body=f"Body {evil}\n\n<iframe src=//evil></iframe>",
        tags=["xss"],
    )
    seen, todo = set(), ["/"]
    while todo:
        route = todo.pop()
        if route in seen:
            continue
        seen.add(route)
        got = request(running, "GET", route, token=tokens["alice"])
        assert got.status == 200, route
        assert "<script>alert" not in got.text and "<img src=x" not in got.text, route
        assert "<iframe" not in got.text, route
        if "text/html" in got.headers["content-type"]:
            base = route.rsplit("/", 1)[0] + "/"
            for href in re.findall(r'href="([^"#?:]+\.html)"', got.text):
                parts = []
                for part in (base + href).split("/"):
                    if part == "..":
                        parts.pop()
                    elif part != ".":
                        parts.append(part)
                todo.append("/".join(parts))
    assert f"/entries/{written['id']}.html" in seen
    assert len(seen) >= 10


# --------------------------------------------------------------------------- the browser


def _sign_in(running, token, origin=None):
    headers = {"Origin": origin} if origin else {}
    got = request(
        running, "POST", "/login", body=urlencode({"token": token}).encode(), headers=headers
    )
    cookie = got.cookies[0].split(";")[0] if got.cookies else None
    return got, cookie


def test_browser_sign_in_gives_an_httponly_samesite_strict_cookie_and_csrf_guards_posts(served):
    path, tokens, running = served
    write(running, tokens["alice"], "Kestrel qzbrowserx note", "matter-kestrel")
    bad, cookie = _sign_in(running, tokens["alice"][:-2] + "zz")
    assert bad.status == 401 and cookie is None and tokens["alice"][:-2] not in bad.text
    assert _sign_in(running, tokens["alice"], origin="https://evil.example")[0].status == 403
    got, cookie = _sign_in(running, tokens["alice"], origin=f"http://127.0.0.1:{running.port}")
    assert got.status == 303 and got.headers["location"] == "/"
    attributes = [a.strip() for a in got.cookies[0].split(";")]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    assert tokens["alice"] not in got.cookies[0]
    jar = {"Cookie": cookie}
    assert request(running, "GET", "/", headers=jar).status == 200
    home = request(running, "GET", "/login", headers=jar).text
    assert "Signed in as alice" in home
    csrf = re.search(r'name="csrf" value="([^"]+)"', home).group(1)
    # the cookie does not open MCP: an agent must present its token
    got = request(
        running, "POST", "/mcp", headers={**jar, "Content-Type": "application/json"}, body=b"{}"
    )
    assert got.status == 401
    # a state-changing request needs the CSRF token (and a same-origin Origin when sent)
    ask = {"question": "What happened to Kestrel?"}
    assert request(running, "POST", "/ask", headers=jar, body=urlencode(ask).encode()).status == 403
    forged = urlencode({**ask, "csrf": "nope"}).encode()
    assert request(running, "POST", "/ask", headers=jar, body=forged).status == 403
    cross = {**jar, "Origin": "https://evil.example"}
    good = urlencode({**ask, "csrf": csrf}).encode()
    assert request(running, "POST", "/ask", headers=cross, body=good).status == 403
    answered = request(running, "POST", "/ask", headers=jar, body=good)
    assert answered.status == 200 and "qzbrowserx" in answered.text
    assert request(running, "POST", "/logout", headers=jar, body=b"").status == 403
    out = request(running, "POST", "/logout", headers=jar, body=urlencode({"csrf": csrf}).encode())
    assert out.status == 303 and "Max-Age=0" in out.cookies[0]
    assert request(running, "GET", "/", headers=jar).status == 401


def test_revoking_the_token_signs_its_browsers_out_at_the_next_request(served):
    path, tokens, running = served
    _, cookie = _sign_in(running, tokens["bob"])
    assert request(running, "GET", "/", headers={"Cookie": cookie}).status == 200
    Cli(path)("token", "revoke", "bob")
    assert request(running, "GET", "/", headers={"Cookie": cookie}).status == 401
    forged = f"llm_wiki_session={'A' * 43}"
    assert request(running, "GET", "/", headers={"Cookie": forged}).status == 401


# --------------------------------------------------------------------------- access.yaml, live


def test_access_yaml_edits_hold_on_the_next_request_for_tools_and_pages(served):
    path, tokens, running = served
    shared = write(running, tokens["alice"], "Shared qzsharedx holiday calendar", "shared")["id"]
    assert [e["id"] for e in tool(running, tokens["carol"], "wiki_list")["entries"]] == [shared]
    page = f"/entries/{shared}.html"
    assert request(running, "GET", page, token=tokens["carol"]).status == 200
    access = path / "access.yaml"
    access.write_text(access.read_text().replace("    read_only: [shared]\n", ""))
    assert tool(running, tokens["carol"], "wiki_list")["entries"] == []
    assert request(running, "GET", page, token=tokens["carol"]).status == 404
    home = request(running, "GET", "/", token=tokens["carol"])
    assert home.status == 200 and "qzsharedx" not in home.text
    access.write_text(access.read_text().replace("  carol:\n    scopes: [hr-plover]\n", ""))
    got = rpc(running, tokens["carol"], "tools/call", {"name": "wiki_list", "arguments": {}})
    assert got.status == 403 and "qzsharedx" not in got.text
    assert request(running, "GET", "/", token=tokens["carol"]).status == 403


# --------------------------------------------------------------------------- budgets


def test_llm_queries_are_budgeted_per_reader_per_day(world, monkeypatch):
    from llm_wiki.backends import MockBackend

    path, tokens = world
    settings = path / "settings.yaml"
    settings.write_text(
        settings.read_text().replace("backend: offline", "backend: mock")
        + "\nserve:\n  queries_per_day: 2\n"
    )
    MockBackend.enqueue(*(['{"pick": []}', "Nothing recorded."] * 10))
    with server_thread(path) as running:
        write(running, tokens["alice"], "Kestrel budget note", "matter-kestrel")
        for _ in range(2):
            assert "error" not in tool(running, tokens["alice"], "wiki_query", question="Kestrel?")
        refused = tool(running, tokens["alice"], "wiki_query", question="Kestrel?")["error"]
        assert refused == (
            "Error executing tool wiki_query: reader 'alice' has used today's 2 LLM queries (settings.yaml "
            "serve.queries_per_day); the budget resets at 00:00 UTC, in 15 h 0 min."
        )
        assert "error" not in tool(running, tokens["bob"], "wiki_query", question="Osprey?")
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-11T00:00:01Z")
    with server_thread(path) as running:  # a restart keeps the count; a new day resets it
        assert "error" not in tool(running, tokens["alice"], "wiki_query", question="Kestrel?")


def test_offline_answers_cost_no_budget(world):
    path, tokens = world
    settings = path / "settings.yaml"
    settings.write_text(settings.read_text() + "\nserve:\n  queries_per_day: 0\n")
    with server_thread(path) as running:
        got = tool(running, tokens["alice"], "wiki_query", question="anything?")
        assert got["mode"] == "nothing-found"


# --------------------------------------------------------------------------- fail-safe defaults


def test_every_response_says_no_store_and_carries_a_strict_csp(served):
    path, tokens, running = served
    replies = [
        request(running, "GET", "/"),
        request(running, "GET", "/", token=tokens["alice"]),
        request(running, "GET", "/nope.html", token=tokens["alice"]),
        request(running, "GET", "/login"),
        rpc(running, tokens["alice"], "tools/list"),
        rpc(running, None, "tools/list"),
        request(running, "POST", "/mcp", token=tokens["alice"], body=b"x" * 2_000_000),
    ]
    for got in replies:
        assert got.headers["cache-control"] == "no-store"
        csp = got.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert got.headers["x-content-type-options"] == "nosniff"
        assert "server" not in got.headers


def test_the_access_log_names_readers_never_tokens_nor_query_strings(served):
    path, tokens, running = served
    token = tokens["alice"]
    request(running, "GET", f"/?token={token}", token=token)
    request(running, "GET", f"/login?t={token}")
    request(running, "GET", f"/{token}", token=token)  # pasted into the path
    _sign_in(running, token)
    rpc(running, token, "tools/list")
    log = running.log_text()
    assert token not in log and token[4:20] not in log
    assert re.search(r" alice GET / 200 \d+ms", log)
    assert " - GET /login 200" in log


def test_a_non_loopback_address_needs_walls_and_tokens(tmp_path):
    path = tmp_path / "wiki"
    Cli(None)("init", str(path))
    cli = Cli(path)
    refused = cli("serve", "--host", "0.0.0.0", "--port", "0", code=1).stderr
    assert "refusing to serve on 0.0.0.0: this wiki has no walls (access.yaml)" in refused
    (path / "access.yaml").write_text("readers:\n  alice:\n    scopes: [shared]\n")
    refused = cli("serve", "--host", "0.0.0.0", "--port", "0", code=1).stderr
    assert "no reader has a token yet; issue one with `llm-wiki token add READER`" in refused
    assert "does not run as reader 'alice'" in cli("--as", "alice", "serve", code=1).stderr


def test_serve_says_where_it_listens_and_a_taken_port_is_one_line(tmp_path):
    import socket

    path = tmp_path / "wiki"
    Cli(None)("init", str(path))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        got = Cli(path)("serve", "--port", str(port), code=1)
    assert got.stderr.startswith(f"Error: cannot serve on 127.0.0.1:{port}: ")
    assert got.stderr.count("\n") == 1


# --------------------------------------------------------------------------- bodies


def test_malformed_and_oversized_bodies_are_refused_with_a_clear_error(served):
    path, tokens, running = served
    token = tokens["alice"]
    json_headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    got = request(running, "POST", "/mcp", token=token, body=b"{not json", headers=json_headers)
    assert got.status == 400 and "Parse error" in got.text
    got = request(running, "POST", "/mcp", token=token, body=b"x" * 1_000_001, headers=json_headers)
    assert got.status == 413 and "over 1000000 bytes" in got.text
    got = request(running, "POST", "/login", body=b"token=" + b"a" * 20_000)
    assert got.status == 413
    got = request(running, "POST", "/ask", token=token, body=b"\xff\xfe=\x00" * 10)
    assert got.status == 400  # undecodable form: no question
    assert entry_files(path) == []


@pytest.mark.parametrize("who, status", [("alice", b"413"), (None, b"401")])
def test_an_endless_body_is_cut_off_at_the_limit_without_reading_it(served, who, status):
    """An endless body is answered long before its end: at the limit, or — without a token —
    before any of it is read."""
    import socket

    path, tokens, running = served
    auth = b"Authorization: Bearer " + tokens[who].encode() + b"\r\n" if who else b""
    with socket.create_connection(("127.0.0.1", running.port), timeout=20) as sock:
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/json\r\n" + auth + b"\r\n"
        )
        chunk = b"%x\r\n%s\r\n" % (65536, b"x" * 65536)
        sent = 0
        reply = b""
        sock.settimeout(0.05)
        while sent < 200 * 65536:  # 13 MB offered; the server must answer long before the end
            try:
                sock.sendall(chunk)
                sent += 65536
            except OSError:
                break
            try:
                reply = sock.recv(4096)
                if reply:
                    break
            except TimeoutError:
                continue
        sock.settimeout(5)
        if not reply:
            reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 " + status), reply[:100]
    assert sent < 100 * 65536


def test_the_sites_assets_are_the_only_thing_served_before_sign_in(served):
    path, tokens, running = served
    css = request(running, "GET", "/assets/site.css")
    assert css.status == 200 and css.headers["content-type"] == "text/css; charset=utf-8"
    for route in ("/assets/", "/assets/../index.html", "/search/", "/index.html", "/assets/x.css"):
        assert request(running, "GET", route).status == 401, route

"""The walls property of `llm-wiki serve`: random readers and tokens (good, wrong, revoked) drive
MCP over HTTP and the pages; no output holds what its reader may not see.

One walled wiki (four scopes, readers that write some, only read others, or see none, an admin),
its entries carrying marker words (``qz<scope><n>x``) in summary, body, alias and question. Each
example is a few requests by random callers: a tool call (list with random filters, show of any
id — one the caller may not see, one that never existed —, query with random words) or a page
(home, an entry's page, a domain, a tag, the search data). For each reply the oracle (the world,
not the code under test) says which scopes the caller reads; a marker, an entry id or a scope
name of any other scope in the reply is a leak. A wrong or revoked token gets the 401 text and
nothing else.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import Cli, fewer
from llm_wiki.server import UNAUTHORIZED
from serve_world import request, rpc, server_thread

SCOPES = ("matter-kestrel", "matter-osprey", "hr-plover", "shared")
ACCESS = """\
readers:
  root:
    admin: true
  alice:
    scopes: [matter-kestrel, shared]
  bob:
    scopes: [matter-osprey]
    read_only: [shared]
  carol:
    scopes: [hr-plover]
  dave:
    scopes: []
  erin:
    admin: true
"""
READS = {
    "root": set(SCOPES),
    "alice": {"matter-kestrel", "shared"},
    "bob": {"matter-osprey", "shared"},
    "carol": {"hr-plover"},
    "dave": set(),
}
DOMAINS = ("ledger", "hiring")
WORDS = ("postgres", "ledger", "refund", "salary", "merger", "audit")
MARKER = re.compile(r"qz(\d)(\d)[a-z]x")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    import llm_wiki

    path = tmp_path_factory.mktemp("walls") / "wiki"
    Cli(None)("init", str(path))
    (path / "access.yaml").write_text(ACCESS)
    root = llm_wiki.open(path, reader="root")
    ids: dict[str, str] = {}  # id -> scope
    for s, scope in enumerate(SCOPES):
        for n in range(3):
            word = WORDS[(s + n) % len(WORDS)]
            result = root.write(
                type="decision",
                domain=DOMAINS[n % 2],
                summary=f"Keep the {word} decision qz{s}{n}sx for {scope.split('-')[-1]}",
                body=f"The {word} body qz{s}{n}bx.",
                aliases=[f"qz{s}{n}ax"],
                questions=[f"What about {word} qz{s}{n}qx?"],
                alternatives=[f"other-{word}: slower qz{s}{n}rx"],
                tags=[f"t-{scope}", word],
                scope=scope,
                date=f"2026-04-{10 + 3 * s + n:02d}",
            )
            ids[result.id] = scope
    cli = Cli(path)
    tokens = {r: cli("token", "add", r).stdout.strip() for r in READS}
    tokens["revoked"] = cli("token", "add", "erin").stdout.strip()
    cli("token", "revoke", "erin")
    tokens["wrong"] = tokens["root"][:-6] + "AAAAAA"
    with server_thread(path, rebuild_seconds=0.0) as running:
        yield path, ids, tokens, running


def leaks(text: str, reader: str, ids: dict[str, str]) -> list[str]:
    readable = READS[reader]
    found = []
    for match in MARKER.finditer(text):
        scope = SCOPES[int(match.group(1))]
        if scope not in readable:
            found.append(match.group(0))
    found += [i for i, scope in ids.items() if scope not in readable and i in text]
    found += [s for s in SCOPES if s not in readable and s != "shared" and s in text]
    return found


callers = st.sampled_from([*READS, "wrong", "revoked"])
filters = st.fixed_dictionaries(
    {},
    optional={
        "domain": st.sampled_from(DOMAINS),
        "tag": st.sampled_from([*WORDS, *(f"t-{s}" for s in SCOPES)]),
        "status": st.sampled_from(["all", "active"]),
        "limit": st.integers(1, 20),
    },
)


@st.composite
def actions(draw, ids):
    kind = draw(st.sampled_from(["list", "show", "query", "page"]))
    some_id = draw(st.sampled_from(sorted(ids)))
    if kind == "list":
        return ("tool", "wiki_list", draw(filters))
    if kind == "show":
        target = draw(st.sampled_from([some_id, some_id[:-4] + "0000"]))
        return ("tool", "wiki_show", {"id": target})
    if kind == "query":
        words = draw(
            st.lists(
                st.sampled_from([*WORDS, "qz01sx", "qz21bx", "kestrel"]), min_size=1, max_size=3
            )
        )
        return ("tool", "wiki_query", {"question": " ".join(words) + "?"})
    page = draw(
        st.sampled_from(
            [
                "/",
                f"/entries/{some_id}.html",
                *(f"/domains/{d}.html" for d in DOMAINS),
                *(f"/tags/{w}.html" for w in WORDS[:3]),
                "/tags/t-matter-kestrel.html",
                "/search.html",
                "/inspector/index.html",
                "/search/2026-04.js",
            ]
        )
    )
    return ("page", page, None)


def run(running, tokens, caller, action):
    token = tokens[caller]
    if action[0] == "tool":
        got = rpc(running, token, "tools/call", {"name": action[1], "arguments": action[2]})
    else:
        got = request(running, "GET", action[1], token=token)
    return got


@settings(
    max_examples=fewer(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_reply_holds_what_its_reader_may_not_see(world, data):
    path, ids, tokens, running = world
    steps = data.draw(st.lists(st.tuples(callers, actions(ids)), min_size=1, max_size=4))
    for caller, action in steps:
        got = run(running, tokens, caller, action)
        if caller in ("wrong", "revoked"):
            assert got.status == 401, (caller, action)
            assert action[0] == "page" or got.text == UNAUTHORIZED
            assert not MARKER.search(got.text) and not any(i in got.text for i in ids)
            continue
        assert got.status in (200, 404), (caller, action, got.status, got.text[:200])
        text = got.text
        if action[0] == "tool" and action[1] == "wiki_show":  # the error names the id it was given
            text = text.replace(action[2]["id"], "ID")
        if action[0] == "tool" and action[1] == "wiki_query":  # an answer may quote the question
            for word in action[2]["question"].rstrip("?").split():
                text = text.replace(word, "Q")
        assert leaks(text, caller, ids) == [], (caller, action)
        if action[0] == "tool" and action[1] == "wiki_show":
            target = action[2]["id"]
            visible = ids.get(target) in READS[caller]
            payload = json.loads(got.text)["result"]
            assert bool(payload.get("isError")) is (not visible), (caller, target)


def test_each_reader_sees_all_it_may_see_over_mcp_and_pages(world):
    """The other half of the property: the walls hide exactly what they must, no more."""
    path, ids, tokens, running = world
    for reader, readable in READS.items():
        got = rpc(
            running,
            tokens[reader],
            "tools/call",
            {"name": "wiki_list", "arguments": {"limit": 100}},
        )
        listed = {e["id"] for e in json.loads(got.text)["result"]["structuredContent"]["entries"]}
        assert listed == {i for i, s in ids.items() if s in readable}, reader
        for entry_id, scope in ids.items():
            status = request(
                running, "GET", f"/entries/{entry_id}.html", token=tokens[reader]
            ).status
            assert status == (200 if scope in readable else 404), (reader, entry_id)

"""`llm-wiki mcp`: the wiki as MCP tools, in-process with the SDK's client and over real stdio."""

from __future__ import annotations

import json
import sys

import anyio
import pytest

from conftest import run_module, subprocess_env, write_args
from llm_wiki.access import Viewer, resolve_viewer
from llm_wiki.mcp_server import build_server
from llm_wiki.wiki import Wiki

TOOLS = ["wiki_brief", "wiki_list", "wiki_query", "wiki_show", "wiki_write"]
NOW = "2026-05-10T09:00:00Z"


def session(server, steps):
    """Run ``steps(client)`` (an async function) against ``server`` with the SDK's client."""
    from mcp import Client

    async def main():
        async with Client(server) as client:
            return await steps(client)

    return anyio.run(main)


async def call(client, name, **arguments):
    result = await client.call_tool(name, arguments)
    text = result.content[0].text if result.content else ""
    if result.is_error:
        return {"error": text}
    return result.structured_content or json.loads(text)


@pytest.fixture
def server(wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", NOW)
    return build_server(Wiki(wiki_path), Viewer.everyone())


def test_tools_have_schemas_and_descriptions_an_agent_can_act_on(server):
    async def steps(client):
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session(server, steps)}
    assert sorted(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description) > 80, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
    write = tools["wiki_write"].input_schema
    assert write["required"] == ["type", "domain", "summary"]
    assert write["properties"]["type"]["enum"] == [
        "decision",
        "synthesis",
        "incident",
        "reflection",
    ]
    alternative = write["$defs"]["Alternative"]
    assert alternative["required"] == ["id", "rejected_because"]
    assert "supersedes" in tools["wiki_write"].description
    assert tools["wiki_list"].input_schema["properties"]["limit"]["maximum"] == 100
    assert tools["wiki_show"].annotations.read_only_hint is True
    assert tools["wiki_write"].annotations.destructive_hint is False


def test_write_show_list_query_brief(server, cli):
    ledger = {
        "type": "decision",
        "domain": "ledger",
        "summary": "Keep the ledger in Postgres",
        "alternatives": [{"id": "dynamodb", "rejected_because": "no multi-row transactions"}],
        "tags": ["database"],
        "questions": ["Which database holds the ledger?"],
    }

    async def steps(client):
        first = await call(client, "wiki_write", **ledger)
        again = await call(client, "wiki_write", **ledger)  # the very same write, retried
        second = await call(
            client,
            "wiki_write",
            type="decision",
            domain="ledger",
            summary="Partition postings by month",
            supersedes=[first["id"]],
            alternatives=[{"id": "keep-as-is", "rejected_because": "reports took 40 seconds"}],
        )
        shown = await call(client, "wiki_show", id=first["id"])
        answer = await call(client, "wiki_query", question="Which database holds the ledger?")
        briefing = await call(client, "wiki_brief", days=1)
        return first, again, second, shown, answer, briefing

    first, again, second, shown, answer, briefing = session(server, steps)
    assert first["created"] is True and again == {**first, "created": False}
    assert shown["status"] == "superseded" and shown["superseded_by"] == [second["id"]]
    assert shown["alternatives_considered"] == [
        {"id": "dynamodb", "rejected_because": "no multi-row transactions"}
    ]
    assert answer["mode"] == "extractive" and second["id"] in answer["answer"]
    assert briefing["counts"]["new"] == 2 and briefing["markdown"].startswith("# Briefing")
    assert cli.json("show", second["id"])["supersedes"] == [first["id"]]  # on disk, for the CLI


def test_list_pages_with_a_cursor(server, cli):
    for i in range(7):
        cli(*write_args(f"Decision number {i} about queues", domain="queues"))

    async def steps(client):
        pages, cursor = [], None
        while True:
            args = {"limit": 3, "domain": "queues"}
            if cursor:
                args["cursor"] = cursor
            page = await call(client, "wiki_list", **args)
            pages.append(page)
            cursor = page["next_cursor"]
            if cursor is None:
                break
        wrong = await call(client, "wiki_list", limit=3, cursor=pages[0]["next_cursor"])
        junk = await call(client, "wiki_list", cursor="not-a-cursor")
        too_many = await call(client, "wiki_list", limit=1000)
        return pages, wrong, junk, too_many

    pages, wrong, junk, too_many = session(server, steps)
    assert [len(p["entries"]) for p in pages] == [3, 3, 1]
    ids = [e["id"] for p in pages for e in p["entries"]]
    assert len(set(ids)) == 7 and all(p["total"] == 7 for p in pages)
    assert set(pages[0]["entries"][0]) >= {"id", "date", "type", "domain", "status", "summary"}
    assert "other filters" in wrong["error"] and "omit cursor" in wrong["error"]
    assert "without cursor to start over" in junk["error"]
    assert "less than or equal to 100" in too_many["error"]


def test_errors_say_how_to_fix_them_in_the_tools_terms(server):
    async def steps(client):
        return (
            await call(client, "wiki_show", id="2026-01-01-nothing-0000"),
            await call(client, "wiki_write", type="decision", domain="x", summary="Use Redis"),
            await call(client, "wiki_write", type="memo", domain="x", summary="Hello"),
            await call(
                client,
                "wiki_write",
                type="incident",
                domain="ops",
                summary="Disk full",
                supersedes=["2026-01-01-nothing-0000"],
            ),
            await call(client, "wiki_write", type="incident", summary="No domain"),
            await call(client, "wiki_list", since="last week"),
        )

    missing, no_alts, bad_type, bad_ref, no_domain, bad_since = session(server, steps)
    assert (
        "No entry '2026-01-01-nothing-0000'; find ids with wiki_list or wiki_query"
        in missing["error"]
    )
    assert "alternatives: [{id, rejected_because}]" in no_alts["error"]
    assert "memo" in bad_type["error"] and "decision" in bad_type["error"]
    assert "check the id with wiki_list" in bad_ref["error"]
    assert "domain" in no_domain["error"] and "Field required" in no_domain["error"]
    assert "since 'last week' is not an ISO date; use YYYY-MM-DD" in bad_since["error"]
    assert "--since" not in bad_since["error"]


WALLS = "readers:\n  root:\n    admin: true\n  alice:\n    scopes: [acme]\n"


def test_the_reader_is_fixed_at_start_and_walls_hold(wiki_path, cli, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", NOW)
    (wiki_path / "access.yaml").write_text(WALLS)
    beta = cli.json(
        *write_args("Refuse the Beta settlement", domain="contracts", scope="beta"), "--as", "root"
    )["id"]
    wiki = Wiki(wiki_path)
    server = build_server(wiki, resolve_viewer(wiki, "alice"))

    async def steps(client):
        return (
            await call(client, "wiki_show", id=beta),
            await call(client, "wiki_show", id="2026-05-10-refuse-the-beta-0000"),
            await call(client, "wiki_list"),
            await call(client, "wiki_query", question="Beta settlement"),
            await call(
                client, "wiki_write", type="incident", domain="x", summary="Leak", scope="beta"
            ),
            await call(
                client, "wiki_write", type="incident", domain="x", summary="Fine", scope="acme"
            ),
            await call(client, "wiki_brief"),
        )

    hidden, absent, listed, answer, refused, written, briefing = session(server, steps)
    assert hidden["error"].replace(beta, "ID") == absent["error"].replace(
        "2026-05-10-refuse-the-beta-0000", "ID"
    )
    assert listed["total"] == 0
    assert beta not in json.dumps(answer) and "Beta" not in answer["answer"]
    assert "may not write to scope 'beta'" in refused["error"]
    assert written["created"] is True
    assert beta not in briefing["markdown"] and "Beta" not in briefing["markdown"]
    assert briefing["counts"]["entries"] == 1


def test_a_running_server_follows_access_yaml_as_it_changes(wiki_path, cli, monkeypatch):
    """An agent's MCP server runs for days. Taking a scope from alice, or putting walls up on a
    wiki it served single-user, must hold at the next call, not at the next restart."""
    monkeypatch.setenv("LLM_WIKI_NOW", NOW)
    beta = cli.json(*write_args("Refuse the Beta settlement", domain="contracts", scope="beta"))
    single = build_server(Wiki(wiki_path), Viewer.everyone())
    (wiki_path / "access.yaml").write_text(WALLS.replace("[acme]", "[acme, beta]"))
    wiki = Wiki(wiki_path)
    alice = build_server(wiki, resolve_viewer(wiki, "alice"))

    async def show(client):
        return await call(client, "wiki_show", id=beta["id"])

    assert session(alice, show)["summary"] == "Refuse the Beta settlement"
    (wiki_path / "access.yaml").write_text(WALLS)  # beta is withdrawn from alice
    assert f"No entry '{beta['id']}'" in session(alice, show)["error"]
    assert "say who is reading" in session(single, show)["error"]


def test_the_server_refuses_to_start_without_a_reader_under_walls(wiki_path):
    (wiki_path / "access.yaml").write_text(WALLS)
    proc = run_module("mcp", "--wiki", wiki_path)
    assert proc.returncode == 1 and b"say who is reading" in proc.stderr


def test_over_stdio_as_a_subprocess(wiki_path, cli):
    from mcp.client.stdio import StdioServerParameters

    cli(*write_args("Keep the ledger in Postgres", domain="ledger"))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "llm_wiki", "mcp", "--wiki", str(wiki_path)],
        env=subprocess_env(LLM_WIKI_NOW=NOW),
    )

    async def steps(client):
        names = sorted(t.name for t in (await client.list_tools()).tools)
        written = await call(
            client, "wiki_write", type="incident", domain="ops", summary="Disk full on db-1"
        )
        listed = await call(client, "wiki_list", limit=5)
        error = await call(client, "wiki_show", id="nope")
        return names, written, listed, error

    names, written, listed, error = session(params, steps)
    assert names == TOOLS
    assert written["created"] and written["id"].startswith("2026-05-10-disk-full-on-db-1-")
    assert listed["total"] == 2 and listed["next_cursor"] is None
    assert error["error"].endswith("No entry 'nope'; find ids with wiki_list or wiki_query.")
    assert cli.json("show", written["id"])["summary"] == "Disk full on db-1"


def test_a_blank_alternative_is_refused_not_recorded_unreadable(server, cli):
    """Tool arguments skip the flags' parsing: a blank alternative was written, logged and
    listed, but its file could never be read back (show failed; a rebuild dropped it)."""

    async def steps(client):
        return await call(
            client,
            "wiki_write",
            type="decision",
            domain="ledger",
            summary="Use Postgres",
            alternatives=[{"id": " ", "rejected_because": ""}],
        )

    assert "needs both id and rejected_because" in session(server, steps)["error"]
    assert cli.json("list")["total"] == 0
    cli("index", "--check")

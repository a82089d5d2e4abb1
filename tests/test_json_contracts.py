"""The shapes agents parse: the top-level keys of every `--json` output and every MCP tool result.

Skills, scripts and MCP clients read these keys; a key renamed or dropped breaks them silently.
Each case runs the real command (or tool) against one shared wiki and compares the key set with
the one written here, so a change to a shape is a change to this file, made on purpose. Nested
shapes are pinned where they are used (tests/test_query.py, tests/test_mcp.py, ...).
"""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest

from conftest import CORPORA, EVAL, REPO, Cli, write_args

BIN = str(REPO / "_system" / "bin")
ADR = CORPORA / "nationalarchives__tdr-dev-documentation"
NOW = {"LLM_WIKI_NOW": "2026-05-02"}

WRITE = {"id", "path", "sha256", "created"}
ENTRY = {
    "id", "type", "date", "summary", "domain", "status", "written_status", "superseded_by",
    "scope", "origin", "actors", "tags", "supersedes", "alternatives_considered", "aliases",
    "questions", "sources", "resolves", "path", "archive", "sha256",
}  # fmt: skip
INDEX = {"entries", "parsed", "removed", "written", "stale", "problems", "vectors", "unlogged"}
CONSOLIDATE = {
    "backend", "backend_source", "model", "method", "dry_run", "budget", "calls", "tokens",
    "up_to_date", "error", "llm_outcome", "limits", "verify", "domains",
}  # fmt: skip
ARCHIVE = {
    "archive", "archived", "finished", "skipped", "older_than_days", "cutoff", "dry_run",
    "bytes", "entry_bytes",
}  # fmt: skip
LINT = {"ok", "checked", "counts", "llm_calls", "llm_outcome", "backend", "backend_source"} | {
    "findings"
}
BRIEF = {
    "date", "days", "since", "until", "reader", "scopes", "counts", "new", "superseded",
    "superseded_total", "syntheses_replaced", "open_incidents", "open_incidents_total",
    "decisions", "failures", "llm", "narrative", "error", "backend", "backend_source",
    "llm_outcome", "forks",
}  # fmt: skip
IMPORT = {
    "folder", "repository", "domain", "dry_run", "found", "created", "imported", "updated",
    "unchanged", "would_create", "would_update", "skipped", "refused", "dates", "links",
    "alternatives", "records", "warnings",
}  # fmt: skip
INGEST = {
    "source", "status", "raw", "sha256", "bytes", "kind", "scope", "lines", "previous",
    "ingested_at", "calls", "tokens_in", "tokens_out", "parts", "quotes_checked", "written",
    "rejected", "backend", "backend_source", "llm_outcome", "limits",
}  # fmt: skip
SCHEDULE = ["--platform", "systemd", "--bin", BIN, "--python", sys.executable]

# (case, its argv given the world's paths, its top-level keys)
COMMANDS = [
    ("init", lambda w: ["init", w["root"]], {"root", "created", "files"}),
    ("write", lambda w: write_args("Use SQLite for the cache", domain="cache"), WRITE),
    (
        "write --dry-run",
        lambda w: [*write_args("Use Redis for the cache", domain="cache"), "--dry-run"],
        WRITE | {"dry_run", "text"},
    ),
    ("show", lambda w: ["show", w["first"]], ENTRY | {"body", "text"}),
    ("list", lambda w: ["list"], {"total", "offset", "entries"}),
    ("index", lambda w: ["index"], INDEX),
    ("index --check", lambda w: ["index", "--check"], INDEX),
    ("verify", lambda w: ["verify"], {"ok", "checked", "findings"}),
    (
        "stats",
        lambda w: ["stats"],
        {"entries", "first", "latest", "by_type", "by_domain", "by_status", "by_scope"}
        | {"by_origin", "archived", "llm", "ranking"},
    ),
    (
        "query",
        lambda w: ["query", "Which database holds the ledger?"],
        {"answer", "cited", "opened", "mode", "backend", "backend_source", "model"}
        | {"tokens_in", "tokens_out", "picked_by", "llm_answer_rejected", "llm_outcome"}
        | {"budget", "why_nothing"},
    ),
    (
        "eval",
        lambda w: ["eval", str(EVAL / "tdr-dev.jsonl")],
        {"n", "recall@1", "recall@3", "recall@5", "mrr", "current@3", "current_first"}
        | {"shortlist_recall", "none_correct", "false_none", "mean_prompt_tokens", "backend"}
        | {"backend_source", "questions", "k", "ranking", "unmatched", "warnings"}
        | {"llm_pick_fallbacks", "llm_answers_rejected"},
    ),
    ("lint", lambda w: ["lint"], LINT),
    ("lint --with-llm", lambda w: ["lint", "--with-llm", "--backend", "mock"], LINT),
    ("brief", lambda w: ["brief"], BRIEF),
    ("brief --save", lambda w: ["brief", "--save"], {"backend", "backend_source", "saved"}),
    ("consolidate --dry-run", lambda w: ["consolidate", "--dry-run"], CONSOLIDATE),
    ("consolidate", lambda w: ["consolidate"], CONSOLIDATE),
    ("archive --dry-run", lambda w: ["archive", "--dry-run"], ARCHIVE),
    ("archive", lambda w: ["archive"], ARCHIVE),
    ("import-adr --dry-run", lambda w: ["import-adr", str(ADR), "--dry-run"], IMPORT),
    ("import-adr", lambda w: ["import-adr", str(ADR)], IMPORT),
    ("ingest", lambda w: ["ingest", w["note"], "--backend", "mock"], INGEST),
    (
        "ingest --inbox",
        lambda w: ["ingest", "--inbox", w["inbox"], "--quiet-minutes", "0", "--backend", "mock"],
        {"folder", "quiet_minutes", "ok", "backend", "backend_source", "llm_outcome", "items"},
    ),
    (
        "site",
        lambda w: ["site", "--out", w["site"]],
        {"out", "reader", "pages", "written", "removed", "entries", "graph_notes"},
    ),
    ("sync", lambda w: ["sync"], {"committed", "commit", "pulled", "pushed", "remote", "entries"}),
    ("schedule render", lambda w: ["schedule", "render", *SCHEDULE], {"files", "layout"}),
    (
        "schedule render --out",
        lambda w: ["schedule", "render", *SCHEDULE, "--out", w["units"]],
        {"files", "layout"},
    ),
    (
        "schedule install",
        lambda w: ["schedule", "install", *SCHEDULE, "--dest", w["units"]],
        {
            "platform",
            "dest",
            "files",
            "jobs",
            "replaced",
            "env_file",
            "env_created",
            "commands",
            "notes",
            "layout",
        },  # fmt: skip
    ),
    (
        "schedule status",
        lambda w: ["schedule", "status", *SCHEDULE, "--dest", w["units"]],
        {"ok", "platform", "name", "dest", "env_file", "env_ok", "lingering", "jobs", "notes"},
    ),
    (
        "schedule uninstall",
        lambda w: ["schedule", "uninstall", "--platform", "systemd", "--dest", w["units"]],
        {"platform", "dest", "removed", "commands"},
    ),
    (
        "token add",
        lambda w: ["token", "add", "alice"],
        {"token", "id", "reader", "created", "last_used"},
    ),
    ("token list", lambda w: ["token", "list"], {"tokens"}),
    ("token revoke", lambda w: ["token", "revoke", "alice"], {"revoked"}),
    (
        "skills install",
        lambda w: ["skills", "install", "--dest", w["skills"]],
        {"dest", "skills", "files"},
    ),
    (
        "agents install",
        lambda w: ["agents", "install", "--dest", w["plugin"]],
        {"dest", "files", "wiki", "reader", "python", "notes"},
    ),
    (
        "agents context",
        lambda w: ["agents", "context", "--cwd", w["root"]],
        {
            "wiki",
            "reader",
            "cwd",
            "domains",
            "mapped",
            "decisions",
            "decisions_shown",
            "incidents",
            "incidents_shown",
            "tokens",
            "text",
        },  # fmt: skip
    ),
]


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One wiki for every case (a git repository, so sync runs), and the files cases name."""
    from llm_wiki.create import init_wiki

    tmp = tmp_path_factory.mktemp("contracts")
    root = tmp / "wiki"
    init_wiki(root)
    first = json.loads(
        Cli(root)(*write_args("Use Postgres for the ledger"), "--json", env=NOW).stdout
    )["id"]
    git(root, "init", "--quiet", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "Start")
    (tmp / "note.md").write_text("We decided to keep the ledger in Postgres.\n")
    (tmp / "inbox").mkdir()
    (tmp / "inbox" / "chat.txt").write_text("alice: shall we page on-call for disk alerts?\n")
    fakes = tmp / "fakebin"
    fakes.mkdir()
    (fakes / "systemctl").write_text("#!/bin/sh\nexit 0\n")
    (fakes / "systemctl").chmod(0o755)
    return {
        "root": str(root),
        "first": first,
        "note": str(tmp / "note.md"),
        "inbox": str(tmp / "inbox"),
        "site": str(tmp / "site"),
        "units": str(tmp / "units"),
        "skills": str(tmp / "skills"),
        "plugin": str(tmp / "plugin"),
        "fakes": str(fakes),
    }


@pytest.mark.parametrize("argv, keys", [c[1:] for c in COMMANDS], ids=[c[0] for c in COMMANDS])
def test_every_json_output_has_its_pinned_top_level_keys(world, argv, keys, monkeypatch):
    from llm_wiki.backends import MockBackend

    MockBackend.enqueue(*['{"entries": [], "contradictions": []}'] * 3)
    monkeypatch.setenv("PATH", f"{world['fakes']}:/usr/bin:/bin")  # systemctl is the fake
    for name, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}.items():
        monkeypatch.setenv(name, value)
        monkeypatch.setenv(name.replace("AUTHOR", "COMMITTER"), value)
    result = Cli(world["root"])(*argv(world), "--json", env=NOW, code=None)
    assert result.exit_code in (0, 1), result.stderr  # status exits 1 for jobs not loaded
    assert result.stdout, result.stderr
    assert set(json.loads(result.stdout)) == keys


def test_every_command_with_json_is_pinned():
    """A new command with --json (or a new subcommand) needs its row above."""
    import click

    from test_architecture import all_commands

    pinned = {case.split(" --")[0] for case, *_ in COMMANDS}
    with_json = {
        name.removeprefix("llm-wiki ")
        for name, command in all_commands()
        if any(p.name == "as_json" for p in command.params) and not isinstance(command, click.Group)
    }
    assert with_json == pinned


# --------------------------------------------------------------------------- MCP tools

TOOLS = [
    ("wiki_write", {"type": "incident", "domain": "ops", "summary": "The disk filled up"}, WRITE),
    (
        "wiki_write dry_run",
        {"type": "incident", "domain": "ops", "summary": "The queue stalled", "dry_run": True},
        WRITE | {"dry_run", "text"},
    ),
    (
        "wiki_query",
        {"question": "Which database holds the ledger?"},
        {"answer", "cited", "opened", "mode", "backend", "backend_source", "model"}
        | {"tokens_in", "tokens_out", "picked_by", "llm_answer_rejected", "llm_outcome"}
        | {"budget", "why_nothing"},
    ),
    ("wiki_show", {"id": "FIRST"}, ENTRY | {"body", "body_truncated"}),
    ("wiki_list", {}, {"total", "offset", "entries", "next_cursor"}),
    (
        "wiki_brief",
        {"days": 7},
        {"date", "since", "until", "counts", "narrative", "markdown"},
    ),
]


@pytest.mark.parametrize("tool, arguments, keys", TOOLS, ids=[t[0] for t in TOOLS])
def test_every_mcp_tool_result_has_its_pinned_top_level_keys(world, tool, arguments, keys):
    from mcp import Client

    from llm_wiki.access import Viewer
    from llm_wiki.mcp_server import build_server
    from llm_wiki.wiki import Wiki

    server = build_server(Wiki(world["root"]), Viewer.everyone())
    arguments = {k: world["first"] if v == "FIRST" else v for k, v in arguments.items()}

    async def main():
        async with Client(server) as client:
            return await client.call_tool(tool.split()[0], arguments)

    result = anyio.run(main)
    assert not result.is_error, result.content
    data = result.structured_content or json.loads(result.content[0].text)
    assert set(data) == keys


def test_every_mcp_tool_is_pinned(world):
    from mcp import Client

    from llm_wiki.access import Viewer
    from llm_wiki.mcp_server import build_server
    from llm_wiki.wiki import Wiki

    async def main():
        async with Client(build_server(Wiki(world["root"]), Viewer.everyone())) as client:
            return (await client.list_tools()).tools

    assert sorted(t.name for t in anyio.run(main)) == sorted({t[0].split()[0] for t in TOOLS})

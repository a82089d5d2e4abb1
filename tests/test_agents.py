"""The Claude Code plugin (`llm-wiki agents install`): its files against the documented schemas,
and each hook run as Claude Code runs it — the generated hook.sh with a recorded hook JSON on
stdin — checking what it prints, its exit code and what lands in the inbox."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, subprocess_env, write_args

DATA = REPO / "tests" / "data" / "claude-code"
SAMPLES = DATA / "samples"
CWD = "/home/dana/src/billing-service"  # the samples' working directory
SESSION = "5f0c3a9e-2b7d-4c1e-9a46-8d2f71e0b3c4"


def schema_errors(name, doc):
    schema = json.loads((DATA / "schemas" / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    check = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())
    return [e.message for e in check.iter_errors(doc)]


def add_settings(wiki_path, text):
    """Merge ``text``'s top-level blocks into settings.yaml (a second `agents:` block would be
    refused: a key given twice is an error, not the last one winning)."""
    import yaml

    settings = wiki_path / "settings.yaml"
    data = yaml.safe_load(settings.read_text())
    for key, value in yaml.safe_load(text).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    settings.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def billing(cli, wiki_path, monkeypatch):
    """A wiki whose billing and payments domains hold current, superseded and other entries."""
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-08-20")
    ids = {}

    def write(key, summary, **kw):
        ids[key] = cli.json(*write_args(summary, **kw))["id"]

    write("redis", "Keep idempotency keys in Redis with a TTL", domain="billing", date="2026-08-01")
    write(
        "postgres",
        "Keep idempotency keys in the payments table in Postgres",
        domain="billing",
        date="2026-08-10",
        supersedes=ids["redis"],
    )
    write("gateway", "Charge through one gateway adapter", domain="payments", date="2026-08-05")
    write("ledger", "Keep the ledger in Postgres", domain="ledger", date="2026-08-12")
    write("slow", "The nightly billing report timed out", type="incident", domain="billing",
          alt=False, date="2026-08-15")  # fmt: skip
    write("double", "A retried charge was taken twice", type="incident", domain="billing",
          alt=False, date="2026-08-02")  # fmt: skip
    write(
        "fix",
        "Retries reuse the stored idempotency key",
        domain="billing",
        date="2026-08-11",
        source=ids["double"],
        resolves=ids["double"],
    )
    add_settings(wiki_path, f"agents:\n  folders:\n    {CWD}: [billing, payments]\n")
    return ids


@pytest.fixture
def plugin(cli, tmp_path):
    dest = tmp_path / "plugin"
    cli("agents", "install", "--dest", dest)
    return dest


def sample(name, transcript=None, **changes):
    doc = json.loads((SAMPLES / f"{name}.json").read_text())
    if transcript is not None:
        doc["transcript_path"] = str(transcript)
    doc.update(changes)
    return json.dumps(doc)


def hook(plugin, event, stdin, **env):
    """Run the plugin's hook as Claude Code does: `sh ${CLAUDE_PLUGIN_ROOT}/scripts/hook.sh EVENT`."""
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    event_name = {"session-start": "SessionStart", "pre-compact": "PreCompact",
                  "session-end": "SessionEnd"}[event]  # fmt: skip
    (handler,) = hooks[event_name][0]["hooks"]
    argv = [handler["command"]] + [
        a.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin)) for a in handler["args"]
    ]
    assert argv[-1] == event
    proc = subprocess.run(
        argv,
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        env=subprocess_env(CLAUDE_PLUGIN_ROOT=str(plugin), **env),
        capture_output=True,
        timeout=60,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


# --------------------------------------------------------------------------- the plugin's files


def test_the_plugin_matches_the_documented_schemas(cli, wiki_path, plugin):
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())
    assert schema_errors("plugin.schema.json", manifest) == []
    assert manifest["name"] == "llm-wiki"
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())
    assert schema_errors("hooks.schema.json", hooks) == []
    assert sorted(hooks["hooks"]) == ["PreCompact", "SessionEnd", "SessionStart"]
    assert hooks["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] <= 1.5  # a shared 1.5 s
    assert sorted(os.listdir(plugin)) == [
        ".claude-plugin",
        ".mcp.json",
        "hooks",
        "scripts",
        "skills",
    ]
    assert os.listdir(plugin / ".claude-plugin") == ["plugin.json"]  # only the manifest there
    server = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["llm-wiki"]
    assert server == {
        "command": sys.executable,
        "args": ["-m", "llm_wiki", "mcp", "--wiki", str(wiki_path)],
    }
    from llm_wiki.skills import check_skill

    skills = sorted(p.parent.name for p in (plugin / "skills").glob("*/SKILL.md"))
    assert skills == ["wiki-query", "wiki-write"]
    assert all(check_skill(plugin / "skills" / s) == [] for s in skills)
    script = plugin / "scripts" / "hook.sh"
    assert subprocess.run(["sh", "-n", str(script)]).returncode == 0
    assert f"PYTHON={sys.executable}\n" in script.read_text()


def test_the_schemas_catch_mistakes():
    good = {"name": "llm-wiki", "version": "1", "description": "d", "author": {"name": "a"}}
    assert schema_errors("plugin.schema.json", good) == []
    assert schema_errors("plugin.schema.json", {**good, "name": "llm wiki"})
    assert schema_errors("plugin.schema.json", {**good, "hook": "./h.json"})
    ok = {"type": "command", "command": "sh", "args": ["x"], "timeout": 5}
    assert schema_errors("hooks.schema.json", {"hooks": {"sessionStart": [{"hooks": [ok]}]}})
    assert schema_errors(
        "hooks.schema.json", {"hooks": {"Stop": [{"hooks": [{**ok, "timout": 1}]}]}}
    )


def test_install_reinstall_and_uninstall(cli, wiki_path, monkeypatch):
    home = Path(os.environ["HOME"])
    out = cli("agents", "install", "--as", "alice").stdout
    dest = home / ".claude" / "skills" / "llm-wiki"  # a skills-directory plugin: loaded in place
    assert f"Installed the llm-wiki plugin in {dest}" in out
    assert f"use {wiki_path} as alice, run by {sys.executable}" in out
    assert (dest / ".claude-plugin" / "plugin.json").is_file()
    args = json.loads((dest / ".mcp.json").read_text())["mcpServers"]["llm-wiki"]["args"]
    assert args[-2:] == ["--as", "alice"]
    assert "--as alice\n" in (dest / "scripts" / "hook.sh").read_text()
    (dest / "stray.txt").write_text("from an older version")
    cli("skills", "install")  # the plain skills too: said once, not refused
    again = cli.json("agents", "install")
    assert not (dest / "stray.txt").exists() and again["reader"] == ""
    assert any("wiki-write, wiki-query also installed as plain skills" in n for n in again["notes"])
    other = home / "mine"
    other.mkdir()
    (other / "notes.md").write_text("not a plugin")
    refused = cli("agents", "install", "--dest", other, code=2)
    assert "holds something other than the llm-wiki plugin" in refused.stderr
    assert (other / "notes.md").read_text() == "not a plugin"
    assert cli("agents", "uninstall").stdout == f"Removed {dest}\n" and not dest.exists()
    assert cli("agents", "uninstall").stdout.startswith("No plugin in")


# --------------------------------------------------------------------------- session start


def test_session_start_gives_the_folders_current_decisions_and_open_incidents(
    billing, plugin, wiki_path
):
    code, out, err = hook(plugin, "session-start", sample("session-start"))
    assert code == 0, err
    assert out.startswith(f"llm-wiki, the decision archive at {wiki_path} for {CWD}:\n")
    assert "Current decisions in billing, payments (newest first):" in out
    lines = out.splitlines()
    decisions = [ln for ln in lines if ln.startswith("- [")]
    assert (
        f"- [{billing['postgres']}] Keep idempotency keys in the payments table in Postgres (billing)"
        in lines
    )
    assert f"- [{billing['gateway']}] Charge through one gateway adapter (payments)" in lines
    assert billing["redis"] not in out  # superseded
    assert billing["ledger"] not in out  # another domain
    assert decisions.index(next(ln for ln in decisions if billing["fix"] in ln)) < decisions.index(
        next(ln for ln in decisions if billing["postgres"] in ln)
    )  # newest first
    assert "Open incidents in billing, payments (all):" in out
    assert f"- [{billing['slow']}] The nightly billing report timed out (billing)" in lines
    assert billing["double"] not in out  # closed: a later entry says it resolves it
    assert "wiki-write skill" in out and "compacted" not in out
    compact = hook(plugin, "session-start", sample("session-start-compact"))[1]
    assert compact.startswith(out.rstrip("\n")) and "decisions listed in its summary" in compact


def test_the_context_stays_within_its_token_budget(cli, wiki_path, plugin, monkeypatch):
    from llm_wiki.backends import estimate_tokens

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-08-20")
    for n in range(60):
        cli(
            *write_args(f"Billing decision number {n} about invoices and dunning", domain="billing")
        )
    for n in range(20):
        cli(*write_args(f"Billing incident {n}", type="incident", domain="billing", alt=False))
    add_settings(wiki_path, f"agents:\n  context_tokens: 300\n  folders:\n    {CWD}: billing\n")
    out = hook(plugin, "session-start", sample("session-start"))[1]
    assert estimate_tokens(out) <= 300
    assert "Current decisions in billing (" in out and " of 60, newest first):" in out
    assert "Open incidents in billing (" in out and " of 20):" in out
    context = cli.json("agents", "context", "--cwd", CWD)
    assert context["text"] == out and context["tokens"] <= 300
    assert context["domains"] == ["billing"] and context["mapped"] == "settings"
    assert context["decisions"] == 60 and 0 < context["decisions_shown"] < 60


def test_a_folder_not_mapped_shows_the_domain_named_like_it_or_says_none_is(billing, cli, tmp_path):
    repo = tmp_path / "src" / "payments"
    (repo / ".git").mkdir(parents=True)
    (repo / "api").mkdir()
    named = cli.json("agents", "context", "--cwd", repo / "api")  # the git work tree's name
    assert named["domains"] == ["payments"] and named["mapped"] == "name"
    none = cli("agents", "context", "--cwd", tmp_path).stdout
    assert "none is mapped to this folder (agents.folders in the wiki's settings.yaml)" in none
    assert "Open incidents (all):" in none and billing["slow"] in none
    assert "Current decisions" not in none


def test_an_empty_wiki_says_it_holds_no_entries(cli, tmp_path):
    text = cli("agents", "context", "--cwd", tmp_path).stdout
    assert "It holds no entries yet." in text
    assert "0 entries in 0 domains" not in text and "Open incidents" not in text


# --------------------------------------------------------------------------- the inbox copy


def test_pre_compact_and_session_end_copy_the_transcript_into_the_inbox(
    billing, plugin, wiki_path, tmp_path
):
    lines = (SAMPLES / "transcript.jsonl").read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "projects" / f"{SESSION}.jsonl"
    transcript.parent.mkdir()
    transcript.write_bytes(b"".join(lines[:3]) + lines[3][:50])  # a last line being written
    code, out, _ = hook(plugin, "pre-compact", sample("pre-compact", transcript))
    assert code == 0
    assert out.startswith("Decisions not yet recorded in llm-wiki: keep, under a heading")
    copy = wiki_path / "inbox" / f"claude-code-{SESSION}.txt"
    first = copy.read_text()
    assert first == (
        "[2026-08-24 09:12] user: Make payment retries idempotent. Should the keys live in "
        "Redis or in Postgres?\n"
        "[2026-08-24 09:12] claude: Let me look at how retries are issued today.\n"
    )  # no tool call, no tool result, not the line still being written
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    transcript.write_bytes(b"".join(lines))  # the session went on, then was compacted
    code, out, _ = hook(plugin, "session-end", sample("session-end", transcript))
    assert (code, out) == (0, "")
    grown = copy.read_text()
    assert grown.startswith(first)  # it grew: ingest --inbox reads only the new lines
    assert "claude: Decision: store the idempotency key in the payments table" in grown
    assert "Rejected: Redis with a TTL, because an evicted or expired key" in grown
    assert "This session is being continued" not in grown  # the compaction summary
    assert grown.count("\n") == 5
    assert hook(plugin, "session-end", sample("session-end", transcript))[1] == ""
    assert copy.read_text() == grown  # nothing new, nothing rewritten
    assert [p.name for p in copy.parent.iterdir()] == [copy.name]  # no temp files left


def respond_to_the_transcript(prompt, purpose):
    """A careful model's reply for the sample session: the one decision, cited verbatim."""
    import mock_ingest

    lines = mock_ingest.shown_lines(prompt)
    at = mock_ingest.line_of(lines, "Decision: store the idempotency key")
    if at is None:
        return json.dumps({"entries": []})
    entry = {
        "type": "decision",
        "domain": "billing",
        "date": "2026-08-24",
        "summary": "Idempotency keys live in the payments table in Postgres, written with the charge.",
        "alternatives_considered": [
            {
                "id": "redis-ttl",
                "rejected_because": "An evicted or expired key would allow a double charge.",
            },
            {"id": "gateway-dedup", "rejected_because": "The gateway keeps keys for a day only."},
        ],
        "questions": ["Where do payment idempotency keys live?"],
        "cites": [
            {
                "lines": f"L{at}-L{at}",
                "quote": "store the idempotency key in the payments table in Postgres",
            }
        ],
    }
    return json.dumps({"entries": [entry]})


def test_the_inbox_copy_is_ingested_and_only_its_new_lines_read_again(
    billing, cli, plugin, wiki_path, tmp_path, monkeypatch
):
    from llm_wiki.backends import MockBackend

    lines = (SAMPLES / "transcript.jsonl").read_bytes().splitlines(keepends=True)
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_bytes(b"".join(lines[:4]))
    inbox = tmp_path / "inbox"
    end = sample("session-end", transcript)
    hook(plugin, "session-end", end, LLM_WIKI_INBOX=str(inbox))
    monkeypatch.setenv("LLM_WIKI_NOW", "2099-01-01")  # long quiet
    MockBackend.enqueue(respond_to_the_transcript)
    first = cli.json("ingest", "--inbox", inbox, "--backend", "mock")["items"]
    assert [(i["name"], i["status"]) for i in first] == [(f"claude-code-{SESSION}.txt", "ingested")]
    (written,) = first[0]["result"]["written"]
    entry = cli.json("show", written["id"])
    assert entry["origin"] == "ingested" and entry["domain"] == "billing"
    assert [a["id"] for a in entry["alternatives_considered"]] == ["redis-ttl", "gateway-dedup"]
    transcript.write_bytes(b"".join(lines))
    hook(plugin, "session-end", end, LLM_WIKI_INBOX=str(inbox))
    MockBackend.enqueue(respond_to_the_transcript)
    grown = cli.json("ingest", "--inbox", inbox, "--backend", "mock")["items"][0]["result"]
    assert grown["lines"][0] == 4 and grown["written"] == []  # only the new lines were read
    (_, prompt) = MockBackend.history[-1]
    assert "Decision: store the idempotency key" not in prompt


# --------------------------------------------------------------------------- walls


@pytest.fixture
def walled(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-08-20")
    a = cli.json(*write_args("Acme invoices are net 30", domain="billing", scope="team-a"))["id"]
    b = cli.json(*write_args("Beta invoices are net 60", domain="billing", scope="team-b"))["id"]
    (wiki_path / "access.yaml").write_text(
        "readers:\n  alice:\n    scopes: [team-a]\n  bob:\n    scopes: [team-b]\n"
        "  root:\n    admin: true\n"
    )
    return a, b


def test_the_hooks_respect_walls(walled, wiki_path, plugin, tmp_path):
    a, b = walled
    add_settings(
        wiki_path, f"agents:\n  folders:\n    {CWD}: {{domains: [billing], scope: team-a}}\n"
    )
    out = hook(plugin, "session-start", sample("session-start"), LLM_WIKI_READER="alice")[1]
    assert a in out and b not in out and "read as alice" in out
    out = hook(plugin, "session-start", sample("session-start"), LLM_WIKI_READER="bob")[1]
    assert b in out and a not in out
    code, out, err = hook(plugin, "session-start", sample("session-start"))  # no reader
    assert (code, out) == (0, "") and "say who is reading" in err
    transcript = tmp_path / "t.jsonl"
    shutil.copy(SAMPLES / "transcript.jsonl", transcript)
    end = sample("session-end", transcript)
    hook(plugin, "session-end", end, LLM_WIKI_READER="bob")  # may not write team-a
    assert not (wiki_path / "inbox").exists()
    hook(plugin, "session-end", end, LLM_WIKI_READER="alice")
    assert (wiki_path / "inbox" / "team-a" / f"claude-code-{SESSION}.txt").is_file()


def test_under_walls_a_folder_without_a_scope_copies_nothing(walled, wiki_path, plugin, tmp_path):
    add_settings(wiki_path, f"agents:\n  folders:\n    {CWD}: [billing]\n")
    transcript = tmp_path / "t.jsonl"
    shutil.copy(SAMPLES / "transcript.jsonl", transcript)
    code, out, _ = hook(
        plugin, "pre-compact", sample("pre-compact", transcript), LLM_WIKI_READER="alice"
    )
    assert code == 0 and "Decisions not yet recorded" in out
    assert not (wiki_path / "inbox").exists()  # a matter's talk never lands in a shared scope


# --------------------------------------------------------------------------- failing open


@pytest.mark.parametrize("event", ["session-start", "pre-compact", "session-end"])
def test_a_broken_wiki_or_input_never_blocks_the_agent(billing, plugin, wiki_path, tmp_path, event):
    name = {"session-start": "session-start", "pre-compact": "pre-compact",
            "session-end": "session-end"}[event]  # fmt: skip
    good = sample(name, tmp_path / "missing.jsonl")
    for stdin in ("", "not json", "[1, 2]", b"\xff\xfe"):
        assert hook(plugin, event, stdin)[:2] == (0, ""), stdin
    code, out, _ = hook(plugin, event, good)  # a transcript not there (yet)
    assert code == 0 and (out == "" or event != "session-end")
    settings = wiki_path / "settings.yaml"
    kept = settings.read_text()
    settings.write_text("agents: [unclosed\n")
    assert hook(plugin, event, good)[:2] == (0, "")
    settings.write_text(kept)
    (wiki_path / ".llm-wiki" / "catalog.sqlite3").write_bytes(b"garbage" * 100)
    if event == "session-start":
        assert hook(plugin, event, good)[:2] == (0, "")  # no catalog: no context, no rebuild
    (wiki_path / "schema.md").unlink()
    code, out, err = hook(plugin, event, good)
    assert (code, out) == (0, "") and "schema.md" in err
    shutil.rmtree(wiki_path)
    assert hook(plugin, event, good)[:2] == (0, "")


def test_a_missing_python_fails_open(plugin):
    script = plugin / "scripts" / "hook.sh"
    script.write_text(
        script.read_text().replace(f"PYTHON={sys.executable}", "PYTHON=/nonexistent/python")
    )
    assert hook(plugin, "session-start", sample("session-start")) == (0, "", "")


def test_the_hooks_import_no_click_and_no_llm_sdk(billing, plugin, wiki_path):
    hook(plugin, "session-start", sample("session-start"))  # settings.yaml parsed once, cached
    probe = (
        "import sys, runpy; sys.argv = ['hooks', 'session-start', '--wiki', sys.argv[1]]\n"
        "try:\n    runpy.run_module('llm_wiki.hooks', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('click', 'llm_wiki.cli', 'anthropic', 'mcp', 'yaml', 'jinja2') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(wiki_path)],
        input=sample("session-start").encode(),
        env=subprocess_env(),
        capture_output=True,
        timeout=60,
    )
    assert "Current decisions in billing" in proc.stdout.decode()
    assert "HEAVY []" in proc.stderr.decode()

"""The front door: `llm_wiki.open()` and the Session every adapter shares (which wiki, which
reader, which backend, the disk-command policy), as a Python program uses them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import llm_wiki
from conftest import Cli, subprocess_env, write_args

ACCESS = "readers:\n  root:\n    admin: true\n  alice:\n    scopes: [matter-acme]\n"


def test_the_package_exports_the_front_door_and_loads_it_only_when_used():
    assert sorted(llm_wiki.__all__) == sorted(
        ["open", "init", "Session", "Entry", "Viewer", "__version__"]
        + ["WikiError", "InvalidInput", "NotFound", "BackendUnavailable", "BackendFailed"]
    )
    from llm_wiki.access import Viewer
    from llm_wiki.entries import Entry
    from llm_wiki.errors import NotFound, WikiError
    from llm_wiki.session import Session

    assert (llm_wiki.Session, llm_wiki.Entry, llm_wiki.Viewer) == (Session, Entry, Viewer)
    assert (llm_wiki.NotFound, llm_wiki.WikiError) == (NotFound, WikiError)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        llm_wiki.nope  # noqa: B018 - the attribute lookup is the test
    probe = (
        "import sys, llm_wiki; print(sorted(m for m in sys.modules if m.startswith('llm_wiki')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=subprocess_env(), capture_output=True, text=True
    )
    assert proc.stdout.strip() == "['llm_wiki']", proc.stderr


def test_write_show_list_query_from_python(wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    wiki = llm_wiki.open(wiki_path)
    first = wiki.write(
        type="decision",
        domain="ledger",
        summary="Keep the ledger in Postgres",
        alternatives=["dynamodb: no multi-row transactions"],
        questions=["Which database holds the ledger?"],
    )
    assert first.created and first.path.startswith("entries/2026/05/")
    again = wiki.write(  # the same entry given as a mapping, its alternative as a mapping
        {"type": "decision", "domain": "ledger", "summary": "Keep the ledger in Postgres"},
        alternatives=[{"id": "dynamodb", "rejected_because": "no multi-row transactions"}],
        questions=["Which database holds the ledger?"],
    )
    assert (again.id, again.created) == (first.id, False)
    second = wiki.write(
        wiki.show(first.id).entry,  # an Entry, its fields overridden
        summary="Move the ledger to one postings table",
        supersedes=[first.id],
        alternatives=[_alternative()],
    )
    shown = wiki.show(first.id)
    assert shown.row.superseded_by == (second.id,)
    page = wiki.list(domain="ledger", status="active")
    assert [r.id for r in page.rows] == [second.id] and page.total == 1
    answer = wiki.query("Which database holds the ledger?")
    assert answer.mode == "extractive" and second.id in {c.id for c in answer.cited}
    assert (answer.backend, answer.backend_source) == ("offline", "settings")
    assert answer.to_dict() == Cli(wiki_path).json("query", "Which database holds the ledger?")
    with pytest.raises(llm_wiki.NotFound, match="No entry 'nope'"):
        wiki.show("nope")
    with pytest.raises(llm_wiki.InvalidInput):
        wiki.write(type="decision", domain="ledger", summary="No alternatives given")


def _alternative():
    from llm_wiki.entries import Alternative

    return Alternative("table-per-account", "reports join twelve tables")


def test_open_finds_the_wiki_as_the_cli_does(wiki_path, tmp_path, monkeypatch):
    monkeypatch.chdir(wiki_path / "entries")
    assert llm_wiki.open().root == wiki_path.resolve()  # the nearest wiki upward
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LLM_WIKI_DIR", str(wiki_path))
    assert llm_wiki.open().root == wiki_path.resolve()
    with pytest.raises(llm_wiki.WikiError, match="is not a wiki"):
        llm_wiki.open(tmp_path)
    monkeypatch.delenv("LLM_WIKI_DIR")
    with pytest.raises(llm_wiki.WikiError, match="No wiki found here"):
        llm_wiki.open()


def test_init_creates_a_wiki_and_opens_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_DIR", str(tmp_path / "team"))
    wiki = llm_wiki.init()
    assert wiki.root == (tmp_path / "team").resolve() and (wiki.root / "schema.md").is_file()
    assert wiki.list().total == 0
    assert llm_wiki.init(tmp_path / "team").root == wiki.root  # an existing wiki: left as it is


def test_the_reader_is_checked_at_the_first_read_and_disk_commands_follow_the_policy(
    cli, wiki_path
):
    cli(*write_args(scope="matter-acme"))
    (wiki_path / "access.yaml").write_text(ACCESS)
    nobody = llm_wiki.open(wiki_path)  # no reader: fine until something is read
    assert nobody.index().entries == 1  # a disk command runs without a reader
    with pytest.raises(llm_wiki.WikiError, match="has walls"):
        nobody.list()
    alice = llm_wiki.open(wiki_path, reader="alice")
    assert alice.list().total == 1 and alice.viewer.read == frozenset({"matter-acme"})
    with pytest.raises(llm_wiki.WikiError, match="acts on every scope on disk"):
        alice.index()
    assert llm_wiki.open(wiki_path, reader="root").archive(older_than="90d", dry_run=True).dry_run
    with pytest.raises(llm_wiki.InvalidInput, match="may not write to scope 'shared'"):
        alice.write(type="incident", domain="ops", summary="Disk full", scope="shared")


def test_a_backend_says_where_its_name_came_from(wiki, monkeypatch):
    from llm_wiki.backends import resolve

    (wiki.root / "settings.yaml").write_text("backend: claude-cli\nmodel: sonnet\n")
    fresh = type(wiki)(wiki.root)  # settings are read once per Wiki
    chosen, source = resolve(fresh)
    assert (chosen.name, chosen.model, source) == ("claude-cli", "sonnet", "settings")
    chosen, source = resolve(fresh, "anthropic")
    assert (chosen.name, chosen.model, source) == ("anthropic", "claude-haiku-5-5", "flag")
    monkeypatch.setenv("LLM_WIKI_BACKEND", "offline")
    assert resolve(fresh)[0].name == "offline" and resolve(fresh)[1] == "env"
    assert resolve(fresh, "anthropic", "claude-opus-5")[0].model == "claude-opus-5"
    monkeypatch.delenv("LLM_WIKI_BACKEND")
    (wiki.root / "settings.yaml").write_text("default_scope: shared\n")
    assert resolve(type(wiki)(wiki.root))[1] == "default"
    assert resolve(None)[0].name == "offline"


def test_json_of_llm_commands_names_the_backend_and_its_source(cli, monkeypatch):
    from llm_wiki.backends import MockBackend

    cli(*write_args())
    MockBackend.enqueue('{"statements": []}')
    out = cli.json("brief", "--backend", "mock")
    assert (out["backend"], out["backend_source"]) == ("mock", "flag")
    monkeypatch.setenv("LLM_WIKI_BACKEND", "offline")
    out = cli.json("consolidate", "--dry-run")
    assert (out["backend"], out["backend_source"]) == ("offline", "env")
    out = cli.json("lint")
    assert (out["backend"], out["backend_source"]) == (None, None)  # no LLM asked


def test_the_test_double_works_but_is_never_offered(cli):
    from llm_wiki.backends import backend_names
    from test_architecture import all_commands

    assert "mock" not in backend_names() and "offline" in backend_names()
    assert backend_names(llm_only=True) == ["anthropic", "claude-cli", "openai"]
    for name, command in all_commands():
        if any(p.name == "backend" for p in command.params):
            text = Cli(None)(*name.split()[1:], "--help").stdout
            assert "claude-cli" in text and "mock" not in text, name
    error = cli("query", "ledger?", "--backend", "nope", code=2).stderr
    assert (
        error
        == "Error: unknown backend 'nope'; choose one of anthropic, claude-cli, offline, openai.\n"
    )
    assert json.loads(cli("query", "ledger?", "--backend", "mock", "--json").stdout)["backend"]

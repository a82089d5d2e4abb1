"""Walls: scopes and readers. No entry, index line, synthesis, prompt or briefing crosses one.

The property test plays random walled wikis (tests/walls_world.py says what one case does and
what counts as a leak): 200 cases here (``LLM_WIKI_WALLS_EXAMPLES`` to change), 5,000 in
tests/bench/test_walls_bench.py. The tests after it pin each rule down with one example.
"""

from __future__ import annotations

import json
import os

import pytest

import walls_world
from conftest import CORPORA, write_args
from llm_wiki.wiki import Wiki

EXAMPLES = int(os.environ.get("LLM_WIKI_WALLS_EXAMPLES", "200"))


def run_property(examples: int, monkeypatch) -> walls_world.Tally:
    return walls_world.run_property(walls_world, examples, monkeypatch, "walls-")


@pytest.mark.slow
def test_property_nothing_crosses_a_wall(monkeypatch):
    tally = run_property(EXAMPLES, monkeypatch)
    print(tally.line())
    assert tally.cases == EXAMPLES and not tally.leaks


# --------------------------------------------------------------------------- the rules, one by one

ACCESS = """readers:
  root:
    admin: true
  alice:
    scopes: [matter-acme]
    read_only: [shared]
  bob:
    scopes: [matter-beta, shared]
  carol:
    scopes: [matter-acme, matter-beta]
"""


@pytest.fixture
def walled(cli, wiki_path, monkeypatch):
    """Three scopes, one entry each, written before the walls went up."""
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T10:00:00Z")
    ids = {
        scope: cli.json(
            *write_args(f"{word} decision for the ledger", scope=scope, actor=["ann"], tag=["db"])
        )["id"]
        for scope, word in (
            ("matter-acme", "Acme"),
            ("matter-beta", "Beta"),
            ("shared", "Shared"),
        )
    }
    (wiki_path / "access.yaml").write_text(ACCESS)
    return ids


def test_no_reader_under_walls_is_refused_by_every_command(cli, walled, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "ledger?", "relevant": []}\n')
    for args in (
        ["list"],
        ["show", walled["shared"]],
        ["query", "ledger"],
        ["stats"],
        ["lint"],
        ["verify"],
        ["eval", str(questions)],
        ["consolidate", "--dry-run"],
        ["import-adr", str(CORPORA / "ministryofjustice__cloud-platform")],
        ["ingest", str(questions), "--backend", "mock"],
        ["brief"],
        ["mcp"],
        write_args("Anything"),
    ):
        result = cli(*args, code=1)
        assert "say who is reading with --as READER" in result.stderr, args
        assert "Error:" in result.stderr and result.stdout == ""
    assert "Reader 'mallory' is not in access.yaml" in cli("--as", "mallory", "list", code=1).stderr


def test_access_yaml_that_cannot_be_read_fails_closed(cli, walled, wiki_path):
    (wiki_path / "access.yaml").unlink()
    (wiki_path / "access.yaml").mkdir()  # exists, unreadable as a file
    result = cli("--as", "alice", "list", code=1)
    assert "cannot read" in result.stderr and "access.yaml" in result.stderr


def test_a_reader_written_without_its_mapping_is_named_as_such(cli, walled, wiki_path):
    """`alice: [shared]` or a bare `alice:` is a mistake in access.yaml, not an unknown reader."""
    for spec in ("[shared]", ""):
        (wiki_path / "access.yaml").write_text(f"readers:\n  alice: {spec}\n")
        result = cli("--as", "alice", "list", code=2)
        assert "access.yaml: reader 'alice' must be a mapping" in result.stderr
        assert "not in access.yaml" not in result.stderr


def test_access_yaml_whose_link_is_broken_fails_closed(cli, walled, wiki_path, tmp_path):
    """access.yaml kept elsewhere (a config mount that is not there tonight): a dangling link
    read as "no walls" showed alice every scope and rewrote the index files as one map."""
    cli("--as", "alice", "list")  # the walls went up: per-scope index files, no INDEX.md
    assert not (wiki_path / "INDEX.md").exists()
    shared = tmp_path / "config" / "access.yaml"
    (wiki_path / "access.yaml").unlink()
    (wiki_path / "access.yaml").symlink_to(shared)
    result = cli("--as", "alice", "list", code=1)
    assert "cannot read" in result.stderr and "access.yaml" in result.stderr
    assert not (wiki_path / "INDEX.md").exists()


def test_a_hidden_entry_reads_exactly_like_an_absent_one(cli, walled):
    beta = walled["matter-beta"]
    absent = beta[:-4] + "ffff"
    hidden = cli("--as", "alice", "show", beta, code=1)
    never = cli("--as", "alice", "show", absent, code=1)
    assert hidden.stderr.replace(beta, "ID") == never.stderr.replace(absent, "ID")
    assert "Beta" not in cli("--as", "alice", "list").stdout
    assert cli.json("--as", "alice", "list", "--scope", "matter-beta") == cli.json(
        "--as", "alice", "list", "--scope", "matter-nowhere"
    )
    # writing: superseding, citing or taking the id of a hidden entry reads like an absent one
    for flag in ("--supersedes", "--source"):
        a = cli(
            "--as", "alice", *write_args("Probe", scope="matter-acme", **{flag[2:]: beta}), code=2
        )
        b = cli(
            "--as", "alice", *write_args("Probe", scope="matter-acme", **{flag[2:]: absent}), code=2
        )
        assert a.stderr.replace(beta, "ID") == b.stderr.replace(absent, "ID")
    # an id is unique across every scope: a walled reader may not choose one, so that neither
    # "already taken" nor a write tells whether a hidden entry holds it (hidden, hers, absent)
    mine = walled["matter-acme"]
    got = [
        cli("--as", "alice", *write_args("Probe", scope="matter-acme", id=i), code=2).stderr
        for i in (beta, mine, absent)
    ]
    assert got[0] == got[1] == got[2] and "--id is only for a reader who may read every" in got[0]
    assert not any(e["summary"] == "Probe" for e in cli.json("--as", "root", "list")["entries"])


def test_list_actor_shows_a_persons_entries_from_the_viewers_scopes_only(cli, walled):
    seen = {e["id"] for e in cli.json("--as", "alice", "list", "--actor", "ann")["entries"]}
    assert seen == {walled["matter-acme"], walled["shared"]}
    seen = {e["id"] for e in cli.json("--as", "root", "list", "--actor", "ann")["entries"]}
    assert seen == set(walled.values())


def test_stats_count_only_what_the_reader_sees(cli, walled):
    alice = cli.json("--as", "alice", "stats")
    assert alice["entries"] == 2
    assert alice["by_scope"] == {"matter-acme": 1, "shared": 1}
    assert "matter-beta" not in cli("--as", "alice", "stats").stdout
    assert cli.json("--as", "root", "stats")["entries"] == 3


def test_a_reader_writes_only_into_scopes_it_may_write(cli, walled, wiki_path):
    log = (wiki_path / "log.md").read_bytes()
    for scope in ("shared", "matter-beta", "matter-nowhere"):  # read-only, hidden, unknown
        result = cli("--as", "alice", *write_args("Probe", scope=scope), code=2)
        assert result.stderr == (
            f"Error: reader 'alice' may not write to scope '{scope}'; pass --scope with one "
            "of your scopes (matter-acme).\n"
        )
    assert (wiki_path / "log.md").read_bytes() == log
    assert not list((wiki_path / ".llm-wiki" / "tmp").glob("*"))
    assert cli.json("--as", "root", "stats")["entries"] == 3


def test_disk_commands_run_without_a_reader_or_as_an_admin_never_as_a_walled_reader(cli, walled):
    for args in (["index"], ["index", "--check"], ["archive", "--dry-run"], ["sync"]):
        result = cli("--as", "alice", *args, code=1)
        assert "acts on every scope on disk" in result.stderr
        assert "matter-beta" not in result.output
    assert "Indexed 3 entries" in cli("index").stdout
    assert "Indexed 3 entries" in cli("--as", "root", "index").stdout
    assert "Would archive 0 entries" in cli("archive", "--dry-run").stdout


def test_index_files_follow_the_walls_as_they_go_up_and_come_down(cli, walled, wiki_path):
    """The entries were written without walls: the whole-wiki INDEX.md names every scope. Once
    access.yaml exists, the next command replaces it with one set per scope."""
    assert (wiki_path / "INDEX.md").exists() and (wiki_path / "index" / "platform.md").exists()
    cli("--as", "alice", "list")
    assert not (wiki_path / "INDEX.md").exists() and not (wiki_path / "index").exists()
    for scope, entry_id in walled.items():
        lines = (wiki_path / "indexes" / scope / "index" / "platform.md").read_text()
        assert entry_id in lines
        assert all(other not in lines for other in walled.values() if other != entry_id)
    assert cli("index", "--check").stdout.startswith("Index is up to date")
    (wiki_path / "access.yaml").unlink()
    cli("list")
    assert (wiki_path / "INDEX.md").exists() and not (wiki_path / "indexes").exists()
    assert cli("index", "--check").stdout.startswith("Index is up to date")


def test_llm_calls_are_logged_and_counted_per_scope(cli, walled, wiki_path):
    from llm_wiki.backends import MockBackend, read_calls

    MockBackend.enqueue(*[walls_world.respond] * 4)
    cli("--as", "carol", "query", "ledger decision", "--backend", "mock")  # acme and beta
    cli("--as", "bob", "query", "ledger decision", "--backend", "mock")  # beta and shared
    assert [c["scope"] for c in read_calls(Wiki(wiki_path))] == [
        "matter-acme,matter-beta",
        "matter-acme,matter-beta",
        "matter-beta,shared",
        "matter-beta,shared",
    ]
    by_scope = {
        reader: cli.json("--as", reader, "stats")["llm"]["by_scope"]
        for reader in ("alice", "bob", "carol", "root")
    }
    assert by_scope["alice"] == {}  # reads acme and shared, but each call also held beta
    assert list(by_scope["bob"]) == ["matter-beta,shared"]
    assert list(by_scope["carol"]) == ["matter-acme,matter-beta"]
    assert by_scope["root"]["matter-beta,shared"]["calls"] == 2
    assert "by scope: matter-acme,matter-beta 2 calls/" in cli("--as", "carol", "stats").stdout


def test_a_query_call_is_logged_under_the_readers_whole_view(cli, walled, wiki_path):
    """bob's question is his: a call that opened only the shared entry is still not shown to a
    reader of shared without matter-beta (alice), who would see when he asked, and how much."""
    from llm_wiki.backends import MockBackend, read_calls

    shared = walled["shared"]
    MockBackend.enqueue(json.dumps({"ids": [shared]}), f"It is recorded [{shared}].")
    cli("--as", "bob", "query", "Shared decision for the ledger", "--backend", "mock")
    assert [c["purpose"] for c in read_calls(Wiki(wiki_path))] == ["query.pick", "query.answer"]
    assert [c["scope"] for c in read_calls(Wiki(wiki_path))] == ["matter-beta,shared"] * 2
    assert cli.json("--as", "alice", "stats")["llm"]["by_scope"] == {}
    # an admin's question is under every scope access.yaml grants: no reader of fewer sees it
    MockBackend.enqueue(json.dumps({"ids": [shared]}), f"It is recorded [{shared}].")
    cli("--as", "root", "query", "Shared decision for the ledger", "--backend", "mock")
    assert [c["scope"] for c in read_calls(Wiki(wiki_path))][2:] == [
        "matter-acme,matter-beta,shared"
    ] * 2
    for reader in ("alice", "bob", "carol"):
        assert (
            "matter-acme,matter-beta,shared"
            not in cli.json("--as", reader, "stats")["llm"]["by_scope"]
        )


def test_every_llm_call_must_name_its_scope(wiki):
    from llm_wiki.backends import MockBackend, call

    with pytest.raises(ValueError, match="scope"):
        call(wiki, MockBackend(), "prompt", purpose="query.pick", scope="")


def test_a_read_only_scope_is_read_but_never_written_or_consolidated(cli, walled):
    from llm_wiki.backends import MockBackend

    shared = walled["shared"]
    MockBackend.enqueue(json.dumps({"ids": [shared]}), f"It is recorded [{shared}].")
    result = cli("--as", "alice", "query", "Shared decision", "--backend", "mock", "--file-back")
    assert shared in result.stdout
    assert "Not filed back: reader 'alice' may not write to scope 'shared'" in result.stderr
    out = cli.json("--as", "alice", "consolidate")
    assert [(d["scope"], d["status"]) for d in out["domains"]] == [("matter-acme", "written")]


def test_import_adr_goes_into_one_scope_the_reader_may_write(cli, walled, wiki_path):
    folder = CORPORA / "ministryofjustice__cloud-platform"
    before = sorted(p.relative_to(wiki_path).as_posix() for p in wiki_path.rglob("*"))
    result = cli("--as", "alice", "import-adr", str(folder), code=2)  # default scope: shared
    assert "may not write to scope 'shared'" in result.stderr
    assert sorted(p.relative_to(wiki_path).as_posix() for p in wiki_path.rglob("*")) == before
    out = cli.json("--as", "alice", "import-adr", str(folder), "--scope", "matter-acme")
    assert out["created"] > 5
    scopes = {e["scope"] for e in cli.json("--as", "root", "list", "--limit", "200")["entries"]}
    assert scopes == {"matter-acme", "matter-beta", "shared"}
    assert cli.json("--as", "bob", "list")["total"] == 2  # none of the imports


def test_lint_logs_one_line_scoped_to_the_runs_view(cli, walled, wiki_path):
    """Its counts rest on every entry the run read, so the line needs the reader's whole view."""
    cli("--as", "alice", "lint")
    (line,) = (wiki_path / "log.md").read_text().splitlines()[-1:]
    assert line.split()[1:3] == ["lint", "scope=matter-acme,shared"]
    assert "lint scope=" not in (wiki_path / "log.md").read_text().splitlines()[-2]


def test_eval_reads_a_hidden_id_like_an_absent_one(cli, walled, tmp_path):
    beta = walled["matter-beta"]
    hidden, absent = tmp_path / "hidden.jsonl", tmp_path / "absent.jsonl"
    hidden.write_text(json.dumps({"question": "Beta ledger decision", "relevant": [beta]}) + "\n")
    absent.write_text(json.dumps({"question": "Beta ledger decision", "relevant": ["gone"]}) + "\n")
    a = cli.json("--as", "alice", "eval", str(hidden))
    b = cli.json("--as", "alice", "eval", str(absent))
    assert (a["unmatched"], b["unmatched"]) == ([beta], ["gone"])  # each its own input, alike
    a["questions"][0]["relevant"] = b["questions"][0]["relevant"] = []
    a["unmatched"] = b["unmatched"] = []
    assert a == b and a["recall@5"] == 0.0

"""Forked decisions (issue 13, item 4): two writers supersede the same entry and both successors
stay current. lint reports the fork as an error, the briefing lists it, `show` of the old entry
names both successors, and `query` shows both."""

from __future__ import annotations

import pytest

from conftest import write_args


@pytest.fixture
def fork(cli, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-01T09:00:00Z")
    old = cli.json(*write_args("Keep the ledger in Postgres 14", domain="ledger"))["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T09:00:00Z")
    one = cli.json(*write_args("Move the ledger to Postgres 16", domain="ledger", supersedes=old))[
        "id"
    ]
    two = cli.json(*write_args("Move the ledger to CockroachDB", domain="ledger", supersedes=old))[
        "id"
    ]
    return old, one, two


def test_lint_reports_a_fork_as_an_error(cli, fork):
    old, one, two = fork
    found = [f for f in cli.json("lint", code=1)["findings"] if f["check"] == "forked"]
    assert len(found) == 1 and found[0]["level"] == "error"
    assert set(found[0]["ids"]) == {old, one, two}
    assert "superseded by both" in found[0]["message"]


def test_the_briefing_lists_the_fork(cli, fork):
    old, one, two = fork
    text = cli("brief", "--days", "7").stdout
    assert "## Forked decisions" in text
    section = text.split("## Forked decisions", 1)[1].split("\n## ", 1)[0]
    assert old in section and one in section and two in section
    data = cli.json("brief", "--days", "7")
    assert data["forks"][0]["id"] == old
    assert {h["id"] for h in data["forks"][0]["heads"]} == {one, two}


def test_show_of_the_old_entry_names_both_successors(cli, fork):
    old, one, two = fork
    text = cli("show", old).stdout
    assert one in text and two in text
    assert set(cli.json("show", old)["superseded_by"]) == {one, two}


def test_query_shows_both_sides(cli, fork):
    old, one, two = fork
    answer = cli.json("query", "Why CockroachDB?", "--backend", "offline")
    shown = {s["id"] for s in answer["opened"]}
    assert {one, two} <= shown, answer
    assert one in answer["answer"] and two in answer["answer"]


def test_a_fork_joined_again_is_no_fork(cli, fork, monkeypatch):
    old, one, two = fork
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-03T09:00:00Z")
    cli(
        *write_args(
            "Ledger: Postgres 16, CockroachDB dropped", domain="ledger", supersedes=[one, two]
        )
    )
    assert not [f for f in cli.json("lint", code=None)["findings"] if f["check"] == "forked"]
    assert "## Forked decisions" not in cli("brief", "--days", "7").stdout

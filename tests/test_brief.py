"""`llm-wiki brief`: the daily briefing, for one reader, deterministic offline, cited with an LLM."""

from __future__ import annotations

import json

import pytest
import yaml

import mock_llm
from conftest import REPO, write_args
from llm_wiki.backends import MockBackend
from test_scripts import STAMP, run_script

DAY = "2026-05-10T08:00:00Z"


def use_backend(wiki_path, name):
    path = wiki_path / "settings.yaml"
    data = yaml.safe_load(path.read_text())
    data["backend"] = name
    data["consolidate"]["retry_wait_seconds"] = 0
    path.write_text(yaml.safe_dump(data))


def add(cli, summary, **kw):
    kw.setdefault("tag", ["db"])
    return cli.json(*write_args(summary, **kw))["id"]


@pytest.fixture
def week(cli, monkeypatch):
    """A week of entries: an old one (outside the period), decisions, a supersession, incidents."""
    ids = {}
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-20T09:00:00Z")
    ids["old"] = add(cli, "Keep the ledger in Postgres", domain="ledger")
    ids["old_incident"] = add(
        cli, "Backups failed on db-2", type="incident", domain="ops", alt=False
    )
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-06T09:00:00Z")
    ids["partition"] = cli.json(
        *write_args(
            "Partition postings by month after reports took 40 seconds",
            domain="ledger",
            tag=["db"],
            supersedes=[ids["old"]],
            alt=False,
        ),
        "--alt",
        "keep-as-is: reports too slow",
        "--alt",
        "read-replica: still a full scan",
    )["id"]
    ids["disk"] = add(cli, "Disk full on db-1", type="incident", domain="ops", alt=False)
    ids["refund"] = add(cli, "Refunds stuck for 3 hours", type="incident", domain="ops", alt=False)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-08T09:00:00Z")
    ids["fix"] = add(
        cli,
        "Alert on disk usage above 80 percent",
        type="reflection",
        domain="ops",
        alt=False,
        source=[ids["disk"]],
        resolves=[ids["disk"]],
    )
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    return ids


def test_offline_briefing_shows_what_changed_and_what_is_open(cli, week):
    out = cli("brief").stdout
    assert out.startswith("# Briefing for 2026-05-10\n\n7 days, 2026-05-04 to 2026-05-10.\n")
    assert "- 6 entries in 2 domains: 5 active, 1 superseded." in out
    assert "- 4 new in the period: 1 decision, 2 incidents, 1 reflection." in out
    assert "_No narrative: the offline backend writes none._" in out
    ledger = out.split("### ledger\n", 1)[1].split("###", 1)[0]
    assert f"[{week['partition']}] Partition postings by month" in ledger
    assert week["old"] not in ledger  # written before the period
    superseded = out.split("## Superseded\n", 1)[1].split("##", 1)[0]
    assert f"- [{week['old']}] Keep the ledger in Postgres\n" in superseded
    assert f"  - replaced by [{week['partition']}] (2026-05-06)" in superseded
    incidents = out.split("## Open incidents\n", 1)[1].split("##", 1)[0]
    assert week["refund"] in incidents and week["old_incident"] in incidents
    assert week["disk"] not in incidents  # the reflection says it resolves it: closed
    decisions = out.split("## Decisions and the alternatives they rejected\n", 1)[1]
    assert "  - rejected keep-as-is: reports too slow\n" in decisions
    assert "  - rejected read-replica: still a full scan\n" in decisions
    assert "None recorded in the period." in out and "No LLM calls in the period." in out
    assert cli("brief").stdout == out  # deterministic


def test_days_and_json(cli, week):
    data = cli.json("brief", "--days", "3")
    assert (data["since"], data["until"], data["days"]) == ("2026-05-08", "2026-05-10", 3)
    assert data["counts"]["new"] == 1 and data["counts"]["new_by_type"] == {"reflection": 1}
    assert [g["domain"] for g in data["new"]] == ["ops"]
    assert data["superseded"] == [] and data["narrative"]["status"] == "none"
    assert data["open_incidents_total"] == 2
    data = cli.json("brief")
    [replacement] = data["superseded"]
    assert replacement["old"]["id"] == week["old"]
    assert [b["id"] for b in replacement["by"]] == [week["partition"]]
    [decision] = data["decisions"]
    assert [a["id"] for a in decision["alternatives"]] == ["keep-as-is", "read-replica"]
    assert "--days" in cli("brief", "--days", "0", code=2).stderr


def test_an_incident_closes_when_an_entry_resolves_it_not_when_one_cites_it(cli, week):
    """A reflection that only lists an incident in its sources closed it; only `resolves` (or
    superseding it) does now."""
    note = add(cli, "Refund delays recur on Mondays", type="reflection", domain="ops", alt=False,
               source=[week["refund"]])  # fmt: skip
    data = cli.json("brief")
    assert week["refund"] in [i["id"] for i in data["open_incidents"]]
    assert "resolves" not in cli.json("show", note)["text"]
    fix = add(cli, "Retry refunds from a dead-letter queue", domain="ops",
              resolves=[week["refund"]])  # fmt: skip
    data = cli.json("brief")
    assert week["refund"] not in [i["id"] for i in data["open_incidents"]]
    assert data["open_incidents_total"] == 1  # the old backup incident
    shown = cli.json("show", fix)
    assert shown["resolves"] == [week["refund"]]
    assert f"resolves: [{week['refund']}]" in shown["text"]
    later = add(cli, "Backups fail again on db-2", type="incident", domain="ops", alt=False,
                supersedes=[week["old_incident"]])  # fmt: skip
    open_ids = [i["id"] for i in cli.json("brief")["open_incidents"]]
    assert open_ids == [later]  # superseding closes the old one
    refused = cli(*write_args("Close it", domain="ops", resolves=[week["partition"]]), code=2)
    assert refused.stderr.startswith(f"Error: resolves {week['partition']!r}: it is a decision")
    missing = cli(*write_args("Close it", domain="ops", resolves=["2026-01-01-nope-0000"]), code=2)
    assert "resolves '2026-01-01-nope-0000': no such entry" in missing.stderr


def test_a_generated_synthesis_closes_no_incident_and_rewrites_are_not_news(cli, week):
    cli("consolidate")
    cli("write", "--type", "incident", "--domain", "ops", "--summary", "Queue backlog at noon")
    cli("consolidate")  # rewrites ops: its synthesis supersedes the first one
    data = cli.json("brief")
    open_ids = [i["id"] for i in data["open_incidents"]]
    assert week["refund"] in open_ids  # every synthesis cites it; it is still open
    assert all(r["old"]["type"] != "synthesis" for r in data["superseded"])
    assert data["syntheses_replaced"] == 1
    assert "The consolidator replaced 1 synthesis with newer ones." in cli("brief").stdout


def test_failures_and_llm_calls_of_the_period(cli, wiki_path, week):
    use_backend(wiki_path, "mock")
    bad = json.dumps(
        {
            "title": "x",
            "summary": "x",
            "statements": [{"text": "Made up.", "cites": ["2026-01-01-nope-0000"]}],
        }
    )
    MockBackend.enqueue(bad, bad)
    cli("consolidate", "--domain", "ledger", code=1)  # its one domain failed
    MockBackend.enqueue(mock_llm.respond)
    data = cli.json("brief")
    [failure] = data["failures"]
    assert failure["scope"] == "shared" and failure["domain"] == "ledger"
    assert failure["reasons"][0].startswith("unknown-id")
    assert data["llm"]["calls"] == 3  # two consolidate attempts, the narrative
    assert set(data["llm"]["by_purpose"]) == {"consolidate", "consolidate-repair", "brief"}
    assert data["narrative"]["status"] == "written"
    assert data["llm_outcome"] == {"ok": 1, "failed": 0}
    old = cli.json(
        "brief", "--days", "1", env={"LLM_WIKI_NOW": "2026-06-01", "LLM_WIKI_BACKEND": "offline"}
    )
    assert old["failures"] == [] and old["llm"]["calls"] == 0


def test_narrative_cites_the_new_entries(cli, wiki_path, week):
    use_backend(wiki_path, "mock")
    MockBackend.enqueue(mock_llm.respond)
    out = cli("brief").stdout
    [(purpose, prompt)] = MockBackend.history
    assert purpose == "brief" and week["partition"] in prompt and week["old"] in prompt
    assert week["old_incident"] not in prompt  # not recorded in the period
    what = out.split("## What changed\n\n", 1)[1].split("\n## ", 1)[0]
    assert week["partition"] in what and "passed the citation checks" in what
    data = cli.json("brief", env={"LLM_WIKI_BACKEND": "offline"})
    assert data["narrative"]["status"] == "none"


def test_a_narrative_that_fails_its_checks_is_dropped_and_said(cli, wiki_path, week):
    use_backend(wiki_path, "mock")
    invented = json.dumps(
        {"statements": [{"text": "We moved to MySQL.", "cites": ["2026-05-01-mysql-0000"]}]}
    )
    MockBackend.enqueue(invented)
    result = cli("brief", code=1)  # the narrative, its one LLM call, could not be used
    out = result.stdout
    assert "We moved to MySQL" not in out
    assert "_Narrative dropped: it failed the citation checks (unknown-id:" in out
    assert result.stderr.startswith("Error: narrative dropped: it failed the citation checks")
    wrong_number = json.dumps(
        {"statements": [{"text": "Reports took 90 seconds.", "cites": [week["partition"]]}]}
    )
    MockBackend.enqueue(wrong_number)
    data = cli.json("brief", code=1)
    assert data["narrative"]["status"] == "dropped" and data["narrative"]["statements"] == []
    assert data["llm_outcome"] == {"ok": 0, "failed": 1}
    assert data["narrative"]["problems"][0]["kind"] == "unsupported-number"
    MockBackend.enqueue("Sure! Here is what changed.")
    assert cli.json("brief", code=1)["narrative"]["note"].startswith(
        "narrative dropped: the reply holds no JSON"
    )


def test_backend_failures_are_loud(cli, wiki_path, week):
    use_backend(wiki_path, "anthropic")  # no key
    result = cli("brief", code=1)
    assert result.stdout == "" and "ANTHROPIC_API_KEY" in result.stderr
    use_backend(wiki_path, "mock")
    from llm_wiki.errors import BackendFailed

    def down(prompt, purpose):
        raise BackendFailed("HTTP 529 overloaded")

    MockBackend.enqueue(down)
    result = cli("brief", code=1)
    assert "_No narrative: the mock backend failed: HTTP 529 overloaded._" in result.stdout
    assert result.stderr.startswith("Error: the mock backend failed: HTTP 529 overloaded")


def test_out_writes_a_file(cli, tmp_path, week):
    target = tmp_path / "b.md"
    result = cli("brief", "--out", target)
    assert result.stdout == "" and target.read_text().startswith("# Briefing for 2026-05-10")
    cli("brief", "--json", "--out", target)
    assert json.loads(target.read_text())["date"] == "2026-05-10"
    assert "give --save or --out" in cli("brief", "--save", "--out", target, code=2).stderr


def test_save_writes_a_dated_file(cli, wiki_path, week):
    assert cli("brief", "--save").stdout == "Wrote briefings/2026-05-10.md\n"
    text = (wiki_path / "briefings/2026-05-10.md").read_text()
    assert text == cli("brief").stdout


WALLS = "readers:\n  root:\n    admin: true\n  alice:\n    scopes: [acme]\n"


def test_walls_each_reader_sees_only_their_scopes_and_saved_briefings_never_mix(
    cli, wiki_path, monkeypatch
):
    (wiki_path / "access.yaml").write_text(WALLS)
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    acme = add(
        cli, "Sign the Acme supply contract", domain="contracts", scope="acme", **{"as": "root"}
    )
    beta = add(
        cli, "Refuse the Beta settlement offer", domain="contracts", scope="beta", **{"as": "root"}
    )
    add(
        cli,
        "Beta court date missed",
        type="incident",
        domain="court",
        scope="beta",
        alt=False,
        **{"as": "root"},
    )
    assert "say who is reading" in cli("brief", code=1).stderr
    mine = cli("brief", "--as", "alice").stdout
    assert acme in mine and beta not in mine and "Beta" not in mine and "court" not in mine
    assert "- 1 entry in 1 domain: 1 active, 0 superseded." in mine
    assert cli("brief", "--as", "alice", "--save").stdout == "Wrote briefings/acme/2026-05-10.md\n"
    saved = cli.json("brief", "--as", "root", "--save")["saved"]
    assert [s["path"] for s in saved] == [
        "briefings/acme/2026-05-10.md",
        "briefings/beta/2026-05-10.md",
    ]
    acme_file = (wiki_path / "briefings/acme/2026-05-10.md").read_text()
    beta_file = (wiki_path / "briefings/beta/2026-05-10.md").read_text()
    assert "beta" not in acme_file.lower() and acme not in beta_file and "Acme" not in beta_file
    assert "1 open incident" in beta_file and "0 open incidents" in acme_file
    assert acme_file.startswith(
        "# Briefing for 2026-05-10\n\n7 days, 2026-05-04 to 2026-05-10; scope acme."
    )
    assert not (wiki_path / "briefings/2026-05-10.md").exists()


def test_wiki_brief_job(cli, wiki_path, week):
    env = {"LLM_WIKI_DIR": wiki_path, "LLM_WIKI_NOW": DAY}
    proc = run_script("wiki-brief", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Wrote briefings/2026-05-10.md\n"
    assert len(STAMP.findall(proc.stderr)) >= 2 and "done (exit 0)" in proc.stderr
    assert (wiki_path / "briefings/2026-05-10.md").read_text() == cli("brief").stdout
    use_backend(wiki_path, "claude-cli")  # `claude` is not on PATH under env -i
    (wiki_path / "briefings/2026-05-10.md").unlink()
    proc = run_script("wiki-brief", env={**env, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1
    errors = [ln for ln in proc.stderr.splitlines() if " ERROR: " in ln]
    assert errors and STAMP.match(errors[0]) and "claude" in errors[0]
    assert not (wiki_path / "briefings/2026-05-10.md").exists()  # nothing, not an offline one
    mock = {**env, "LLM_WIKI_MOCK_FILE": REPO / "tests" / "mock_llm.py"}
    use_backend(wiki_path, "mock")
    proc = run_script("wiki-brief", env=mock)
    assert proc.returncode == 0, proc.stderr
    text = (wiki_path / "briefings/2026-05-10.md").read_text()
    assert "passed the citation checks" in text


def test_the_readme_briefing_commands_run(tmp_path, monkeypatch):
    import re
    import shlex
    import shutil

    from conftest import Cli

    text = (REPO / "README.md").read_text()
    section = text.split("## The daily briefing", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    wiki = tmp_path / "wiki"
    shutil.copytree(REPO / "llm-wiki", wiki, ignore=shutil.ignore_patterns(".llm-wiki"))
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-09-10")
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        assert argv[0] == "llm-wiki"
        Cli(wiki)(*argv[1:])
    assert (wiki / "briefings" / "2026-09-10.md").is_file()


def test_at_a_glance_counts_every_status(cli, week):
    """The counts add up: a proposal was left out ("6 entries: 5 active, 1 superseded" of 7)."""
    cli(*write_args("Deploy with canaries", domain="ops", status="proposed"))
    out = cli("brief").stdout
    assert "- 7 entries in 2 domains: 5 active, 1 superseded, 1 proposed." in out
    assert cli.json("brief")["counts"]["by_status"] == {"active": 5, "proposed": 1, "superseded": 1}

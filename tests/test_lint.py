"""`llm-wiki lint`: each kind of rot is found at its level; errors exit 1; a summary is logged."""

from __future__ import annotations

import json
import os

import pytest

from conftest import plant, write_args
from llm_wiki.backends import MockBackend
from llm_wiki.errors import BackendFailed


def test_clean_wiki_lints_clean(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    cli(*write_args(tag=["database"]))
    cli(*write_args("Rotate keys every 90 days", domain="security", tag=["database"]))
    result = cli.json("lint")
    assert result["ok"] and result["counts"]["error"] == 0 and result["counts"]["warning"] == 0
    assert "Linted 2 entries: 0 errors" in cli("lint").stdout
    last = (wiki_path / "log.md").read_text().splitlines()[-1]
    assert " lint scope=shared errors=0 warnings=0 info=" in last  # one line, the run's view


def test_every_planted_problem_is_found(cli, wiki_path, monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02")
    base = cli.json(*write_args("Keep the ledger in Postgres", tag=["database"]))["id"]
    cli(*write_args("Adopt Kubernetes for services", tag=["database"]))
    # near-duplicate summaries in one domain
    dup_a = cli.json(*write_args("Cache invoices in Redis for thirty days", tag=["cache"]))["id"]
    dup_b = cli.json(
        *write_args("Cache invoices in Redis for thirty days!", tag=["cache"], body="other")
    )["id"]
    # a synthesis resting on an entry that is then superseded
    synth = cli.json(
        "write",
        "--type",
        "synthesis",
        "--domain",
        "platform",
        "--summary",
        "Platform state",
        "--origin",
        "consolidated",
        "--source",
        base,
    )["id"]
    cli(*write_args("Move the ledger to CockroachDB", supersedes=base))
    # an authored decision without alternatives, and a broken supersedes, past the writer
    plant(
        wiki_path,
        "2026-04-01-no-alts-aaaa",
        "2026-04-01",
        {
            "type": "decision",
            "summary": "Chose a vendor",
            "domain": "platform",
            "origin": "authored",
        },
    )
    plant(
        wiki_path,
        "2026-04-02-broken-bbbb",
        "2026-04-02",
        {
            "type": "incident",
            "summary": "Points nowhere",
            "domain": "platform",
            "supersedes": "[2020-01-01-never-existed-cccc]",
        },
    )
    # a supersession cycle
    plant(
        wiki_path,
        "2026-04-03-cycle-a-dddd",
        "2026-04-03",
        {
            "type": "incident",
            "summary": "Cycle A",
            "domain": "ops",
            "supersedes": "[2026-04-03-cycle-b-eeee]",
        },
    )
    plant(
        wiki_path,
        "2026-04-03-cycle-b-eeee",
        "2026-04-03",
        {
            "type": "incident",
            "summary": "Cycle B",
            "domain": "ops",
            "supersedes": "[2026-04-03-cycle-a-dddd]",
        },
    )
    # an entry the schema no longer accepts (its type was removed)
    plant(
        wiki_path,
        "2026-04-04-memo-ffff",
        "2026-04-04",
        {"type": "memo", "summary": "A memo", "domain": "platform"},
    )
    # a tampered entry
    tampered = cli.json(*write_args("Use SQS for payment events", domain="ops", tag=["queue"]))[
        "id"
    ]
    path = next((wiki_path / "entries").rglob(f"{tampered}.md"))
    os.chmod(path, 0o644)
    path.write_text(path.read_text().replace("SQS", "Kafka"))
    # a raw source nobody cites
    (wiki_path / "raw").mkdir()
    (wiki_path / "raw" / f"{'0' * 64}.md").write_text("a transcript\n")
    # a typo'd domain and a lone tag
    cli(*write_args("Rotate keys", domain="platfrom", tag=["rotation"]))
    # an old active entry, past the review window
    monkeypatch.setenv("LLM_WIKI_NOW", "2028-01-01")
    cli("index")
    result = cli.json("lint", code=1)
    by_check = {}
    for f in result["findings"]:
        by_check.setdefault(f["check"], []).append(f)
    assert by_check["schema"][0]["ids"] == ["2026-04-04-memo-ffff"]
    assert by_check["broken-supersedes"][0]["ids"] == ["2026-04-02-broken-bbbb"]
    assert by_check["supersedes-cycle"][0]["ids"] == [
        "2026-04-03-cycle-a-dddd",
        "2026-04-03-cycle-b-eeee",
    ]
    assert by_check["tamper-edited"][0]["ids"] == [tampered]
    assert by_check["near-duplicate"][0]["ids"] == sorted([dup_a, dup_b])
    assert by_check["no-alternatives"][0]["ids"] == ["2026-04-01-no-alts-aaaa"]
    assert by_check["no-alternatives"][0]["level"] == "warning"
    assert (
        by_check["stale-synthesis"][0]["ids"][0] == synth
        and "out of date" in by_check["stale-synthesis"][0]["message"]
    )
    assert by_check["raw-uncited"][0]["message"].startswith(f"raw/{'0' * 64}.md")
    typo = [f for f in by_check["rare-domain"] if f["level"] == "warning"]
    assert typo and "platfrom" in typo[0]["message"] and "'platform'" in typo[0]["message"]
    assert any("rotation" in f["message"] for f in by_check["rare-tag"])
    assert by_check["review-due"] and all(f["level"] == "info" for f in by_check["review-due"])
    levels = {f["check"]: f["level"] for f in result["findings"]}
    for check in ("schema", "broken-supersedes", "supersedes-cycle", "tamper-edited"):
        assert levels[check] == "error"
    text = cli("lint", code=1).stdout
    assert text.splitlines()[0].startswith("error")
    assert "errors," in text.splitlines()[-1]


def test_imported_decision_without_alternatives_is_info(cli, wiki_path):
    cli(
        "write",
        "--type",
        "decision",
        "--domain",
        "platform",
        "--summary",
        "From an ADR",
        "--origin",
        "imported",
        "--source",
        "adr:001-x.md",
    )
    result = cli.json("lint")
    (finding,) = [f for f in result["findings"] if f["check"] == "no-alternatives"]
    assert finding["level"] == "info"


def test_contradictions_with_llm(cli, wiki_path):
    (wiki_path / "settings.yaml").write_text("backend: mock\n")
    a = cli.json(
        *write_args(
            "Retain logs for 30 days",
            domain="ops",
            tag=["logging"],
            body="Application logs are retained for 30 days.",
        )
    )["id"]
    b = cli.json(
        *write_args(
            "Keep logs one year",
            domain="ops",
            tag=["logging"],
            body="Application logs are retained for 365 days.",
        )
    )["id"]

    def respond(prompt, purpose):
        assert purpose == "lint" and a in prompt and b in prompt
        return json.dumps(
            {
                "contradictions": [
                    {
                        "a": a,
                        "a_says": "retained for 30 days",
                        "b": b,
                        "b_says": "retained for 365 days",
                    },
                    {
                        "a": a,
                        "a_says": "retained for 30 days",
                        "b": "2020-01-01-invented-0000",
                        "b_says": "x",
                    },
                    {
                        "a": a,
                        "a_says": "retained forever",
                        "b": b,
                        "b_says": "retained for 365 days",
                    },
                ]
            }
        )

    MockBackend.enqueue(respond)
    result = cli.json("lint", "--with-llm", "--max-calls", "3")
    found = [f for f in result["findings"] if f["check"] == "contradiction"]
    assert len(found) == 1 and found[0]["ids"] == sorted([a, b])
    assert "30 days" in found[0]["message"] and "365 days" in found[0]["message"]
    assert result["llm_calls"] == 1


@pytest.mark.parametrize(
    "reply, why",
    [
        ("```python\nprint('no contradictions')\n```", "the reply could not be read"),
        ('{"ok": true}', 'it has no "contradictions" list'),
        (BackendFailed("the server answered HTTP 500; try again."), "HTTP 500"),
    ],
    ids=["not-json", "no-list", "call-failed"],
)
def test_an_unusable_llm_reply_is_a_failure_never_no_contradictions(cli, wiki_path, reply, why):
    (wiki_path / "settings.yaml").write_text("backend: mock\n")
    a = cli.json(*write_args("Retain logs for 30 days", domain="ops", tag=["logging"]))["id"]
    b = cli.json(*write_args("Keep logs one year", domain="ops", tag=["logging"]))["id"]
    MockBackend.enqueue(reply)
    result = cli.json("lint", "--with-llm", code=1)
    assert result["ok"] is False and result["llm_outcome"] == {"ok": 0, "failed": 1}
    (finding,) = [f for f in result["findings"] if f["check"] == "llm-unusable"]
    assert finding["level"] == "error" and sorted(finding["ids"]) == sorted([a, b])
    assert why in finding["message"] and "not checked for contradictions" in finding["message"]
    MockBackend.enqueue('{"contradictions": []}')
    result = cli.json("lint", "--with-llm")  # a reply that can be read and finds none
    assert result["ok"] is True and result["llm_outcome"] == {"ok": 1, "failed": 0}


def test_with_llm_refuses_offline(cli):
    result = cli("lint", "--with-llm", code=1)
    assert "needs an LLM backend" in result.stderr


def test_max_calls_bounds_the_llm(cli, wiki_path):
    (wiki_path / "settings.yaml").write_text("backend: mock\n")
    for tag in ("a", "b", "c"):
        cli(*write_args(f"First about {tag}", domain="ops", tag=[tag]))
        cli(*write_args(f"Second about {tag}", domain="ops", tag=[tag]))
    MockBackend.enqueue(*['{"contradictions": []}'] * 5)
    result = cli.json("lint", "--with-llm", "--max-calls", "2")
    assert result["llm_calls"] == 2 and len(MockBackend.history) == 2


def test_raw_source_ingested_without_entries_is_info(cli, wiki_path):
    raw = wiki_path / "raw"
    raw.mkdir()
    (raw / f"{'1' * 64}.txt").write_text("just chatter\n")
    (raw / f"{'2' * 64}.txt").write_text("never read\n")
    with open(wiki_path / "log.md", "a") as fh:
        fh.write(f'2026-05-02T10:00:00Z ingest raw/{"1" * 64}.txt sha256={"1" * 64} entries=""\n')
    found = {
        f["message"].split()[0]: f["level"]
        for f in cli.json("lint")["findings"]
        if f["check"] == "raw-uncited"
    }
    assert found == {f"raw/{'1' * 64}.txt": "info", f"raw/{'2' * 64}.txt": "warning"}

"""`llm-wiki consolidate`: derived dirtiness, cited syntheses, fail-closed checks, budgets."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml

import mock_llm
from conftest import write_args
from llm_wiki.backends import Backend, MockBackend, read_calls, register
from llm_wiki.errors import BackendFailed

DAY = "2026-05-02T03:00:00Z"


def configure(wiki_path, **consolidate):
    """Point settings.yaml at the mock backend (no retry waits) with these consolidate settings.
    The LLM verification (on by default) is turned off unless asked for, so that the tests of
    budgets, chunks and repairs count only the calls they are about."""
    path = wiki_path / "settings.yaml"
    data = yaml.safe_load(path.read_text())
    data["backend"] = consolidate.pop("backend", "mock")
    data["consolidate"].update({"retry_wait_seconds": 0, "verify_with_llm": False, **consolidate})
    path.write_text(yaml.safe_dump(data))


def add(cli, summary, domain="ledger", tag="database", **kw):
    kw.setdefault("date", "2026-04-01")
    return cli.json(*write_args(summary, domain=domain, tag=[tag], **kw))["id"]


@pytest.fixture
def ledger(cli, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    return [
        add(cli, "Keep the ledger in Postgres", date="2026-04-02"),
        add(cli, "Partition postings by month after reports took 40 seconds", date="2026-04-10"),
        add(cli, "Refund events were stuck for 3 hours", tag="queues", date="2026-04-11"),
    ]


def synthesis_ids(cli, domain="ledger", status="active"):
    listed = cli.json("list", "--type", "synthesis", "--domain", domain, "--status", status)
    return [e["id"] for e in listed["entries"] if e["origin"] == "consolidated"]


def good(prompt, purpose):
    return mock_llm.respond(prompt, purpose)


def purposes():
    return [p for p, _ in MockBackend.history]


# --------------------------------------------------------------------------- offline


def test_offline_writes_an_extractive_synthesis_once(cli, wiki_path, ledger):
    out = cli.json("consolidate")
    assert out["method"] == "extractive" and out["calls"] == 0
    [done] = out["domains"]
    assert done["status"] == "written" and done["entries"] == 3
    shown = cli.json("show", done["id"])
    assert shown["type"] == "synthesis" and shown["origin"] == "consolidated"
    assert sorted(shown["sources"]) == sorted(ledger)
    text = shown["text"]
    assert "Extractive synthesis (no LLM)" in text and "input_fingerprint: " in text
    assert "## database" in text and "## queues" in text
    assert f"- Keep the ledger in Postgres [{ledger[0]}]" in text
    again = cli("consolidate")
    assert "nothing to do; 1 up to date" in again.stdout
    assert len(synthesis_ids(cli)) == 1


def test_an_extractive_synthesis_ranks_nowhere_and_stays_out_of_the_briefing(cli, ledger):
    """Offline consolidation wrote one boilerplate synthesis per domain (every summary of the
    domain again), which then ranked first in queries and filled the briefing."""
    [done] = cli.json("consolidate")["domains"]
    answer = cli.json("query", "Why do we partition postings by month?")
    opened = [o["id"] for o in answer["opened"]]
    assert done["id"] not in opened and opened[0] == ledger[1]
    assert all(c["id"] != done["id"] for c in answer["cited"])
    brief = cli.json("brief")
    listed = [i["id"] for g in brief["new"] for i in g["entries"]]
    assert done["id"] not in listed and set(ledger) <= set(listed)
    assert "synthesis" not in brief["counts"]["new_by_type"]
    assert brief["counts"]["extractive_syntheses"] == 1
    text = cli("brief").stdout
    assert "1 extractive synthesis written offline is left out" in text
    # asked for, it is there
    assert synthesis_ids(cli) == [done["id"]]
    assert cli.json("show", done["id"])["id"] == done["id"]


def test_a_new_entry_makes_the_domain_out_of_date_and_the_next_synthesis_supersedes(cli, ledger):
    first = cli.json("consolidate")["domains"][0]["id"]
    new = add(cli, "Archive postings older than 7 years", date="2026-04-20")
    plan = cli.json("consolidate", "--dry-run")["domains"][0]
    assert plan["status"] == "planned" and "changed since " + first in plan["reason"]
    second = cli.json("consolidate")["domains"][0]
    assert second["supersedes"] == [first]
    assert new in cli.json("show", second["id"])["sources"]
    assert synthesis_ids(cli) == [second["id"]]
    assert cli.json("show", first)["status"] == "superseded"


def test_dirtiness_is_derived_from_the_files_alone(cli, wiki_path, ledger):
    cli("consolidate")
    shutil.rmtree(wiki_path / ".llm-wiki")  # a fresh clone: no cache, no catalog
    assert cli.json("consolidate", "--dry-run")["domains"] == []
    add(cli, "Archive postings older than 7 years")
    shutil.rmtree(wiki_path / ".llm-wiki")
    assert [d["domain"] for d in cli.json("consolidate", "--dry-run")["domains"]] == ["ledger"]


def test_generated_entries_are_never_evidence(cli, ledger):
    cli("consolidate")
    answer = cli.json(
        "write",
        "--type",
        "synthesis",
        "--domain",
        "ledger",
        "--summary",
        "An answer filed back",
        "--origin",
        "answer",
        "--source",
        ledger[0],
    )["id"]
    assert cli.json("consolidate", "--dry-run")["domains"] == []  # still up to date
    assert answer not in cli.json("show", synthesis_ids(cli)[0])["sources"]


def test_dry_run_writes_nothing(cli, wiki_path, ledger):
    configure(wiki_path)
    before = sorted(p.name for p in wiki_path.rglob("*.md"))
    log = (wiki_path / "log.md").read_bytes()
    out = cli.json("consolidate", "--dry-run")
    assert out["dry_run"] and out["domains"][0]["status"] == "planned"
    assert out["domains"][0]["calls"] == 1 and out["calls"] == 1 and out["tokens"] > 0
    assert MockBackend.history == [] and read_calls_count(wiki_path) == 0
    assert sorted(p.name for p in wiki_path.rglob("*.md")) == before
    assert (wiki_path / "log.md").read_bytes() == log


def test_a_dry_run_needs_no_api_key(cli, wiki_path, ledger, monkeypatch):
    """It calls nothing, so a user sees the cost before setting a key; the real run needs one."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = cli.json("consolidate", "--backend", "anthropic", "--dry-run")
    assert out["dry_run"] and out["domains"][0]["status"] == "planned" and out["calls"] >= 1
    assert "ANTHROPIC_API_KEY" in cli("consolidate", "--backend", "anthropic", code=1).stderr


def read_calls_count(wiki_path):
    from llm_wiki.wiki import Wiki

    return len(read_calls(Wiki(wiki_path)))


# --------------------------------------------------------------------------- with an LLM


def test_llm_synthesis_cites_its_sources_and_unchanged_inputs_cost_nothing(cli, wiki_path, ledger):
    configure(wiki_path)
    MockBackend.enqueue(good)
    out = cli.json("consolidate")
    assert out["method"] == "llm" and out["calls"] == 1
    done = out["domains"][0]
    shown = cli.json("show", done["id"])
    assert shown["origin"] == "consolidated" and sorted(shown["sources"]) == sorted(ledger)
    assert "method: llm" in shown["text"] and "model: mock/mock-1" in shown["text"]
    assert "## queues" in shown["text"] and ledger[2] in shown["text"]
    assert purposes() == ["consolidate"]
    assert "[" + ledger[0] + "]" in MockBackend.history[0][1]  # the entries were shown
    assert cli.json("consolidate")["calls"] == 0 and len(MockBackend.history) == 1
    cli("verify")  # written like any entry: logged, hashed, indexed
    cli("index", "--check")
    calls = read_calls(__import__("llm_wiki.wiki").wiki.Wiki(wiki_path))
    assert [(c["purpose"], c["scope"], c["ok"]) for c in calls] == [("consolidate", "shared", True)]


def test_an_extractive_synthesis_is_upgraded_once_an_llm_is_configured(cli, wiki_path, ledger):
    old = cli.json("consolidate")["domains"][0]["id"]
    configure(wiki_path)
    plan = cli.json("consolidate", "--dry-run")["domains"][0]
    assert "extractive" in plan["reason"]
    MockBackend.enqueue(good)
    assert cli.json("consolidate")["domains"][0]["supersedes"] == [old]


def test_a_skip_after_an_extractive_synthesis_is_remembered(cli, wiki_path, ledger):
    """After an offline synthesis, a domain the LLM answered SKIP for was asked again every
    night with the same input."""
    cli.json("consolidate")  # offline: extractive
    configure(wiki_path)
    MockBackend.enqueue("SKIP: nothing to add to these notes")
    assert cli.json("consolidate")["domains"][0]["status"] == "skipped"
    again = cli.json("consolidate")
    assert again["calls"] == 0 and again["domains"] == []
    assert len(MockBackend.history) == 1
    add(cli, "Keep two replicas of the ledger")  # new input: asked again
    MockBackend.enqueue(good)
    assert cli.json("consolidate")["domains"][0]["status"] == "written"


def test_skip_writes_no_entry_logs_a_line_and_is_remembered(cli, wiki_path, ledger):
    configure(wiki_path)
    MockBackend.enqueue("SKIP: three unrelated one-off notes")
    out = cli.json("consolidate")["domains"][0]
    assert out["status"] == "skipped" and out["reason"] == "three unrelated one-off notes"
    assert synthesis_ids(cli) == []
    line = (wiki_path / "log.md").read_text().splitlines()[-1]
    assert line.startswith(DAY + " consolidate-skip ledger scope=shared fingerprint=")
    assert 'reason="three unrelated one-off notes"' in line
    assert cli.json("consolidate")["calls"] == 0  # nothing changed: no call
    shutil.rmtree(wiki_path / ".llm-wiki")
    assert cli.json("consolidate", "--dry-run")["domains"] == []
    add(cli, "Keep two replicas of the ledger")
    MockBackend.enqueue('{"skip": "still nothing"}')
    assert cli.json("consolidate")["domains"][0]["status"] == "skipped"


# --------------------------------------------------------------------------- LLM faults


def reply(statements, title="Ledger", summary="Where the ledger stands."):
    return json.dumps({"title": title, "summary": summary, "statements": statements})


def bad_replies(ids, synthesis):
    return {
        "malformed-json": '{"title": "Ledger", "statements": [{"text": "Postgres", ',
        "invented-id": reply([{"text": "Use Postgres.", "cites": ["2026-04-02-invented-9999"]}]),
        "cited-synthesis": reply([{"text": "Keep the ledger in Postgres.", "cites": [synthesis]}]),
        "uncited-statement": reply(
            [
                {"text": "Keep the ledger in Postgres.", "cites": [ids[0]]},
                {"text": "Postgres is the right choice.", "cites": []},
            ]
        ),
        "invented-number": reply(
            [{"text": "Reports took 45 seconds before partitioning.", "cites": [ids[1]]}]
        ),
        "invented-date": reply([{"text": "Postgres was chosen on 2026-04-09.", "cites": [ids[0]]}]),
        "invented-date-in-summary": reply(
            [{"text": "Keep the ledger in Postgres.", "cites": [ids[0]]}],
            summary="Since 1 March 2026 the ledger is in Postgres.",
        ),
    }


EXPECTED_KIND = {
    "malformed-json": "malformed",
    "invented-id": "unknown-id",
    "cited-synthesis": "generated",
    "uncited-statement": "uncited",
    "invented-number": "unsupported-number",
    "invented-date": "unsupported-date",
    "invented-date-in-summary": "unsupported-date",
}


@pytest.fixture
def previous(cli, wiki_path, ledger):
    """The domain has an LLM synthesis; then a new entry makes it out of date."""
    configure(wiki_path)
    MockBackend.enqueue(good)
    first = cli.json("consolidate")["domains"][0]["id"]
    ledger.append(add(cli, "Keep two replicas of the ledger", date="2026-04-21"))
    MockBackend.reset()
    return first


@pytest.mark.parametrize("fault", sorted(EXPECTED_KIND))
def test_a_bad_reply_is_repaired_with_the_reasons(cli, wiki_path, ledger, previous, fault):
    MockBackend.enqueue(bad_replies(ledger, previous)[fault], good)
    out = cli.json("consolidate")["domains"][0]
    assert out["status"] == "written" and out["calls"] == 2
    assert purposes() == ["consolidate", "consolidate-repair"]
    repair_prompt = MockBackend.history[1][1]
    assert f"- {EXPECTED_KIND[fault]}: " in repair_prompt
    assert "Your previous reply was:" in repair_prompt
    assert synthesis_ids(cli) == [out["id"]] and out["supersedes"] == [previous]
    assert not (wiki_path / "synthesis-failures.md").exists()


@pytest.mark.parametrize("fault", sorted(EXPECTED_KIND))
def test_a_reply_still_bad_after_repair_is_recorded_never_published(
    cli, wiki_path, ledger, previous, fault
):
    bad = bad_replies(ledger, previous)[fault]
    MockBackend.enqueue(bad, bad)
    result = cli("consolidate", code=1)  # every domain it planned failed: not a success
    assert "failed    shared/ledger  " + EXPECTED_KIND[fault] in result.stdout
    assert "recorded in synthesis-failures.md" in result.stdout
    assert result.stderr == (
        "Error: every domain the LLM worked on failed (1 domain, 2 of 2 LLM replies unusable; "
        "recorded in synthesis-failures.md); try a larger model, or --backend offline.\n"
    )
    assert synthesis_ids(cli) == [previous]  # the previous synthesis stays current
    record = (wiki_path / "synthesis-failures.md").read_text()
    assert record.startswith("# Synthesis failures")
    assert f"## {DAY} shared/ledger" in record and "- scope: shared" in record
    assert "- domain: ledger" in record and f"- reason: {EXPECTED_KIND[fault]}: " in record
    if fault == "invented-number":
        assert 'statement: "Reports took 45 seconds before partitioning."' in record
    plan = cli.json("consolidate", "--dry-run")["domains"]
    assert [d["domain"] for d in plan] == ["ledger"]  # still out of date for the next night
    MockBackend.enqueue(bad, bad)
    out = cli.json("consolidate", code=1)
    assert out["llm_outcome"] == {"ok": 0, "failed": 2}
    assert (wiki_path / "synthesis-failures.md").read_text().startswith(record)  # append-only
    assert record.count("## ") == 1
    assert (wiki_path / "synthesis-failures.md").read_text().count("## ") == 2


@pytest.mark.parametrize("fault", ["timeout", "429", "500"])
def test_transport_faults_are_retried(cli, wiki_path, ledger, fault):
    configure(wiki_path)
    message = {
        "timeout": "the anthropic API timed out after 60 s",
        "429": "rate limited (429)",
        "500": "server error (500)",
    }[fault]

    def failing(prompt, purpose):
        raise BackendFailed(message)

    MockBackend.enqueue(failing, good)
    out = cli.json("consolidate")
    assert out["domains"][0]["status"] == "written" and out["calls"] == 2 and out["error"] is None
    calls = read_calls(__import__("llm_wiki.wiki").wiki.Wiki(wiki_path))
    assert [c["ok"] for c in calls] == [False, True] and message in calls[0]["error"]


def test_a_backend_that_keeps_failing_stops_the_run_loudly(cli, wiki_path, ledger):
    configure(wiki_path)
    add(cli, "Rotate keys every 90 days", domain="security", tag="keys")

    def failing(prompt, purpose):
        raise BackendFailed("server error (500)")

    MockBackend.enqueue(failing, failing, failing)
    result = cli("consolidate", code=1)
    assert "Error: the mock backend failed: server error (500) (after 2 attempts)" in result.stderr
    assert "failed    shared/ledger" in result.stdout
    assert "waiting   shared/security  the backend failed earlier" in result.stdout
    assert len(MockBackend.history) == 2
    record = (wiki_path / "synthesis-failures.md").read_text()
    assert "- reason: backend-failed: server error (500) (after 2 attempts)" in record
    assert synthesis_ids(cli) == [] and synthesis_ids(cli, "security") == []


def test_with_an_llm_each_statement_is_checked_against_its_citations_by_default(
    cli, wiki_path, ledger
):
    """The lexical check passes 'The ledger moved to MySQL because the team dislikes Postgres
    [K]' when K exists; with an LLM backend a second call now judges it, unless settings say
    not to, and the run reports what that added."""
    path = wiki_path / "settings.yaml"
    path.write_text(path.read_text().replace("backend: offline", "backend: mock", 1))
    claim = "The ledger moved to MySQL because the team dislikes Postgres."
    wrong = json.dumps({"title": "Ledger", "summary": "The ledger's store.",
                        "statements": [{"text": claim, "cites": [ledger[0]]}]})  # fmt: skip
    verdict = json.dumps({"unsupported": [{"statement": 1, "reason": "it says Postgres"}]})
    MockBackend.enqueue(wrong, verdict, wrong, verdict)
    result = cli("consolidate", code=1)  # its one domain failed: the claim is not published
    assert "failed    shared/ledger  unsupported" in result.stdout
    assert "checking statements against their citations took 2 calls" in result.stdout
    assert purposes() == ["consolidate", "consolidate-verify", "consolidate-repair",
                          "consolidate-verify"]  # fmt: skip
    assert synthesis_ids(cli) == []
    MockBackend.reset()
    MockBackend.enqueue(wrong, verdict, wrong, verdict)
    out = cli.json("consolidate", code=1)
    assert out["verify"]["with_llm"] and out["verify"]["calls"] == 2
    assert out["verify"]["tokens"] > 0 and out["verify"]["tokens"] < out["tokens"]
    assert out["domains"][0]["verify_calls"] == 2
    # A setting turns it off; the flag turns it on for one run.
    path.write_text(path.read_text().replace("verify_with_llm: true", "verify_with_llm: false"))
    MockBackend.reset()
    MockBackend.enqueue(wrong)
    out = cli.json("consolidate")
    assert out["domains"][0]["status"] == "written" and out["verify"] == {
        "with_llm": False, "calls": 0, "tokens": 0}  # fmt: skip
    offline = cli.json("consolidate", "--all", "--backend", "offline")
    assert offline["verify"]["with_llm"] is False


def test_verify_with_llm_flags_an_unsupported_statement(cli, wiki_path, ledger, previous):
    MockBackend.enqueue(
        good,
        json.dumps({"unsupported": [{"statement": 1, "reason": "the entries do not say so"}]}),
        good,
        json.dumps({"unsupported": []}),
    )
    out = cli.json("consolidate", "--verify-with-llm")["domains"][0]
    assert out["status"] == "written"
    assert purposes() == [
        "consolidate",
        "consolidate-verify",
        "consolidate-repair",
        "consolidate-verify",
    ]
    assert (
        "- unsupported: the verifying call found statement 1 unsupported"
        in (MockBackend.history[2][1])
    )


# --------------------------------------------------------------------------- the backend


class KeyedBackend(Backend):
    name = "needs-key-test"
    needs_key = True
    key_env_var = "LLM_WIKI_TEST_KEY"


def test_an_unusable_backend_fails_loudly_and_never_falls_back(cli, wiki_path, ledger):
    register("needs-key-test", KeyedBackend, listed=False)  # a test double, like mock
    configure(wiki_path, backend="needs-key-test")
    result = cli("consolidate", code=1)
    assert "No API key for the needs-key-test backend: set LLM_WIKI_TEST_KEY" in result.stderr
    assert synthesis_ids(cli) == []  # no extractive fallback
    configure(wiki_path, backend="no-such-backend")
    result = cli("consolidate", code=2)
    assert "unknown backend 'no-such-backend'" in result.stderr
    assert synthesis_ids(cli) == []


def test_backend_and_model_flags_choose_for_one_run(cli, wiki_path, ledger):
    """Like query, brief, lint and ingest: --backend wins over settings.yaml, and the error's
    advice (`--backend offline`) is a flag consolidate takes."""
    register("needs-key-test", KeyedBackend, listed=False)  # a test double, like mock
    configure(wiki_path)  # mock in settings.yaml
    result = cli("consolidate", "--backend", "needs-key-test", code=1)
    assert "No API key for the needs-key-test backend" in result.stderr
    assert "choose another --backend (offline needs no key)" in result.stderr
    plan = cli.json("consolidate", "--backend", "offline", "--model", "m", "--dry-run")
    assert (plan["backend"], plan["model"]) == ("offline", "m")
    assert synthesis_ids(cli) == []


# --------------------------------------------------------------------------- budgets


def test_budgets_serve_scopes_round_robin_and_the_rest_waits(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    configure(wiki_path)
    for domain in ("alpha", "beta", "gamma"):
        add(cli, f"Decide the {domain} plan", domain=domain, tag=domain, scope="busy")
    add(cli, "Decide the quiet plan", domain="quiet", tag="quiet", scope="calm")
    MockBackend.enqueue(good, good)
    out = cli.json("consolidate", "--max-calls", "2")
    served = [(d["scope"], d["domain"], d["status"]) for d in out["domains"]]
    assert served == [
        ("busy", "alpha", "written"),
        ("calm", "quiet", "written"),
        ("busy", "beta", "waiting"),
        ("busy", "gamma", "waiting"),
    ]
    assert out["calls"] == 2
    for prompt in (p for _, p in MockBackend.history if "quiet" in p):
        assert "alpha" not in prompt  # a prompt holds one (scope, domain) only
    MockBackend.enqueue(good, good)
    out = cli.json("consolidate", "--max-tokens", "1")
    assert {d["status"] for d in out["domains"]} == {"waiting"} and out["calls"] == 0
    out = cli.json("consolidate")
    assert [d["status"] for d in out["domains"]] == ["written", "written"]


def test_a_domain_can_be_chosen_and_all_forces_a_rewrite(cli, wiki_path, ledger):
    configure(wiki_path)
    add(cli, "Rotate keys every 90 days", domain="security", tag="keys")
    MockBackend.enqueue(good)
    out = cli.json("consolidate", "--domain", "security")
    assert [d["domain"] for d in out["domains"]] == ["security"]
    MockBackend.enqueue(good, good)
    assert cli.json("consolidate")["calls"] == 1  # only ledger was left
    MockBackend.enqueue(good)
    forced = cli.json("consolidate", "--domain", "ledger", "--all")["domains"][0]
    assert forced["status"] == "written" and "--all" in forced["reason"]
    result = cli("consolidate", "--domain", "nope", code=2)
    assert "no domain 'nope'" in result.stderr


# --------------------------------------------------------------------------- chunking


@pytest.fixture
def big_domain(cli, wiki_path, monkeypatch):
    """40 entries in one domain, chunked at 600 tokens."""
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    configure(wiki_path, chunk_tokens=600)
    ids = []
    for n in range(40):
        ids.append(
            add(
                cli,
                f"Ledger change {n}: adopt practice number {n} for postings",
                tag=["database", "reports", "queues"][n % 3],
                date=f"2026-03-{1 + n % 28:02d}",
                body=f"Context for change {n}. " * 6,
            )
        )
    return ids


def test_a_large_domain_is_chunked_and_one_new_entry_costs_at_most_two_calls(
    cli, wiki_path, big_domain
):
    MockBackend.enqueue(*[good] * 100)
    first = cli.json("consolidate")["domains"][0]
    assert first["chunks"] > 3 and first["calls"] == first["chunks"] + 1
    assert purposes().count("consolidate-combine") == 1
    assert sorted(cli.json("show", first["id"])["sources"]) == sorted(big_domain)
    assert cli.json("consolidate")["calls"] == 0

    for n, extra in enumerate(
        [
            {"date": "2026-04-30"},  # the newest entry
            {"date": "2026-03-15"},  # back-dated: lands in the middle
            {"supersedes": big_domain[5], "date": "2026-04-30"},  # replaces an old one
            {"supersedes": big_domain[20], "date": "2026-03-16"},
        ]
    ):
        MockBackend.reset()
        MockBackend.enqueue(*[good] * 10)
        add(cli, f"Follow-up decision {n} on postings", **extra)
        out = cli.json("consolidate")["domains"][0]
        assert out["status"] == "written"
        assert out["calls"] <= 2, (extra, purposes())
        assert out["cached_chunks"] >= out["chunks"] - 1
    sources = cli.json("show", out["id"])["sources"]
    assert big_domain[5] not in sources and big_domain[20] not in sources


def test_a_large_domain_resumes_from_its_cached_chunks(cli, wiki_path, big_domain):
    MockBackend.enqueue(*[good] * 3)
    out = cli.json("consolidate", "--max-calls", "3")["domains"][0]
    assert out["status"] == "waiting" and out["calls"] == 3 and "budget" in out["reason"]
    assert synthesis_ids(cli) == []
    MockBackend.reset()
    bad = json.dumps({"statements": [{"text": "Adopt practice 99.", "cites": [big_domain[0]]}]})
    MockBackend.enqueue(good, bad, bad)  # the next chunk invents a number, twice
    out = cli.json("consolidate", code=1)["domains"][0]  # its one domain failed
    assert out["status"] == "failed" and out["cached_chunks"] == 3
    assert out["problems"][0]["kind"] in ("unsupported-number", "unknown-id")
    assert purposes() == ["consolidate-chunk", "consolidate-chunk", "consolidate-repair"]
    assert "Adopt practice 99." in (wiki_path / "synthesis-failures.md").read_text()
    MockBackend.reset()
    MockBackend.enqueue(*[good] * 100)
    out = cli.json("consolidate")["domains"][0]
    assert out["status"] == "written" and out["cached_chunks"] == 4
    assert out["calls"] == out["chunks"] - 4 + 1


def test_verifying_a_large_synthesis_is_batched_within_the_chunk_budget(cli, big_domain):
    from llm_wiki.backends import estimate_tokens

    MockBackend.enqueue(*[good] * 100)
    out = cli.json("consolidate", "--verify-with-llm")["domains"][0]
    assert out["status"] == "written"
    verify = [p for purpose, p in MockBackend.history if purpose == "consolidate-verify"]
    assert len(verify) >= 2 and all(estimate_tokens(p) < 1200 for p in verify)
    asked = [n for p in verify for n in re.findall(r"^(\d+)\. ", p, re.M)]
    assert sorted(map(int, asked)) == list(range(1, out["statements"] + 1))


def test_chunk_boundaries_stay_in_step_when_an_entry_comes_or_goes():
    import random

    from llm_wiki.chunking import make_chunks

    def greedy(ids, blocks, limit):  # the baseline: fill each chunk in order
        out, size = [[]], 0
        for i in ids:
            if out[-1] and size + len(blocks[i]) // 3 > limit:
                out, size = [*out, []], 0
            out[-1].append(i)
            size += len(blocks[i]) // 3
        return out

    rng = random.Random(5)
    ids = [f"2026-03-{d:02d}-entry-{n}" for d in range(1, 29) for n in range(12)]
    blocks = {i: "x" * rng.randint(240, 600) for i in ids}
    changed: dict[str, list[int]] = {"content-defined": [], "fixed-size": []}
    for name, chunker in (("content-defined", make_chunks), ("fixed-size", greedy)):
        before = chunker(ids, blocks, 1500)
        assert all(sum(len(blocks[i]) // 3 for i in c) <= 1500 for c in before)
        for k in range(3, len(ids), 11):
            blocks["2026-03-09-new"] = "y" * 400
            for edited in (ids[:k] + ids[k + 1 :], [*ids[:k], "2026-03-09-new", *ids[k:]]):
                after = chunker(edited, blocks, 1500)
                changed[name].append(len([c for c in after if c not in before]))
    mean = {name: sum(v) / len(v) for name, v in changed.items()}
    assert mean["content-defined"] <= 2 and mean["content-defined"] * 2 < mean["fixed-size"]


# --------------------------------------------------------------------------- stats


def test_stats_show_llm_calls_and_tokens_by_purpose_and_day(cli, wiki_path, ledger, previous):
    MockBackend.enqueue(bad_replies(ledger, previous)["invented-id"], good)
    cli("consolidate")
    stats = cli.json("stats")
    llm = stats["llm"]
    assert llm["calls"] == 3 and llm["tokens_in"] > 0 and llm["tokens_out"] > 0
    assert llm["by_purpose"]["consolidate"]["calls"] == 2
    assert llm["by_purpose"]["consolidate-repair"]["calls"] == 1
    assert llm["by_day"]["2026-05-02"]["calls"] == 3
    assert stats["entries"] >= 4  # the foundation's keys are still there
    text = cli("stats").stdout
    assert "LLM: 3 calls" in text and "by purpose: consolidate 2 calls/" in text
    assert "by day: 2026-05-02 3 calls/" in text


# --------------------------------------------------------------------------- walls


def test_under_walls_each_scope_is_consolidated_apart(cli, wiki_path, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", DAY)
    (wiki_path / "access.yaml").write_text(
        "readers:\n  root:\n    admin: true\n  alice:\n    scopes: [matter-acme]\n"
    )
    configure(wiki_path)
    acme = add(cli, "Sign the Acme supply contract", domain="contracts", scope="matter-acme",
               **{"as": "root"})  # fmt: skip
    beta = add(cli, "Refuse the Beta settlement offer", domain="contracts", scope="matter-beta",
               **{"as": "root"})  # fmt: skip
    assert "say who is reading" in cli("consolidate", code=1).stderr
    MockBackend.enqueue(reply([{"text": "Sign it.", "cites": [beta]}]), good)
    out = cli.json("consolidate", "--as", "alice")
    assert [(d["scope"], d["status"]) for d in out["domains"]] == [("matter-acme", "written")]
    first = MockBackend.history[0][1]
    assert acme in first and beta not in first and "Beta" not in first
    repair = MockBackend.history[1][1].split("It was rejected")[1]
    assert "which was not among the entries given" in repair  # hidden reads as unknown
    assert "matter-beta" not in repair and "Beta" not in repair
    shown = cli.json("show", out["domains"][0]["id"], "--as", "alice")
    assert shown["scope"] == "matter-acme" and shown["sources"] == [acme]
    MockBackend.reset()
    bad = reply([{"text": "Refuse it.", "cites": ["2026-01-01-made-up-0000"]}])
    MockBackend.enqueue(bad, bad)
    cli.json("consolidate", "--as", "root", code=1)
    assert not (wiki_path / "synthesis-failures.md").exists()
    record = (wiki_path / "synthesis-failures" / "matter-beta.md").read_text()
    assert "matter-beta/contracts" in record and "acme" not in record.lower()


def test_chunks_shrink_to_fit_a_small_context_window(cli, wiki_path, big_domain):
    """chunk_tokens 6000 is the setting; a 4,096-token model gets chunks that fit it, and every
    prompt plus its reply fits the window. At 2,048 tokens the notes of 40 entries no longer fit
    one combining prompt: that domain fails, recorded, and nothing is sent that cannot fit."""
    from llm_wiki.backends import estimate_tokens, read_calls
    from llm_wiki.wiki import Wiki

    path = wiki_path / "settings.yaml"
    data = yaml.safe_load(path.read_text())
    data["consolidate"]["chunk_tokens"] = 6000
    data["models"] = {"mock-1": {"context_window": 4096, "max_output": 512}}
    path.write_text(yaml.safe_dump(data))
    MockBackend.enqueue(*[good] * 100)
    out = cli.json("consolidate")
    limits = out["limits"]
    assert (limits["context_window"], limits["max_output"], limits["source"]) == (
        4096, 512, "settings",
    )  # fmt: skip
    assert limits["chunk_tokens"] < 3000 and limits["reply_tokens"]["final"] == 512
    (domain,) = out["domains"]
    assert domain["status"] == "written" and domain["chunks"] > 1, domain["reason"]
    assert out["llm_outcome"] == {"ok": domain["calls"], "failed": 0}
    calls = read_calls(Wiki(wiki_path))
    assert calls and all(c["max_tokens"] <= 512 and c["context_window"] == 4096 for c in calls)
    for purpose, prompt in MockBackend.history:
        assert estimate_tokens(prompt) + 512 <= 4096, purpose

    data["models"]["mock-1"]["context_window"] = 2048
    path.write_text(yaml.safe_dump(data))
    MockBackend.reset()
    MockBackend.enqueue(*[good] * 100)
    out = cli.json("consolidate", "--all", code=1)
    (domain,) = out["domains"]
    assert domain["status"] == "failed" and domain["reason"].startswith(
        "too-long: the consolidate-combine prompt"
    )
    assert "2048-token context window of mock-1" in domain["reason"]
    assert "too-long" in (wiki_path / "synthesis-failures.md").read_text()
    for purpose, prompt in MockBackend.history:
        assert estimate_tokens(prompt) + 512 <= 2048, purpose


def test_a_dry_runs_estimate_counts_the_verifying_calls_and_suffices(cli, big_domain):
    planned = cli.json("consolidate", "--dry-run", "--verify-with-llm")
    assert planned["verify"]["calls"] >= 2 and planned["domains"][0]["status"] == "planned"
    MockBackend.enqueue(*[good] * 100)
    out = cli.json("consolidate", "--verify-with-llm", "--max-calls", str(planned["calls"]))
    assert out["domains"][0]["status"] == "written", out["domains"][0]
    assert out["calls"] <= planned["calls"] and out["verify"]["calls"] >= 2

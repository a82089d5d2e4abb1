"""`llm-wiki query`: lines within the budget, picks, supersession, capped entries, checked
citations, nothing found, file-back, walls. LLM steps run on the scripted mock backend."""

from __future__ import annotations

import json
import re

import pytest

from conftest import fewer, write_args

JSON_KEYS = {
    "answer",
    "cited",
    "opened",
    "mode",
    "backend",
    "backend_source",
    "model",
    "tokens_in",
    "tokens_out",
    "picked_by",
    "llm_answer_rejected",
    "llm_outcome",
    "budget",
    "why_nothing",
}


def tokens(text: str) -> int:
    from llm_wiki.backends import estimate_tokens

    return estimate_tokens(text)


@pytest.fixture
def mock():
    from llm_wiki.backends import MockBackend

    return MockBackend


def ledger(cli, monkeypatch):
    """An old ledger decision, the one that replaced it, and two unrelated entries."""
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-02")
    old = cli.json(
        *write_args(
            "Keep the ledger in Postgres with one table per account type",
            domain="ledger",
            question=["Which database holds the ledger, and why?"],
            body="Postings commit atomically across accounts with serializable transactions.",
        )
    )["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-06-15")
    new = cli.json(
        *write_args(
            "Move the ledger to a single postings table partitioned by month",
            domain="ledger",
            supersedes=old,
            body="Still Postgres; one postings table, range-partitioned by month.",
        )
    )["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-07-01")
    sqs = cli.json(*write_args("Use Amazon SQS for the payment events queue", domain="platform"))
    keys = cli.json(
        *write_args("Rotate service API keys every 90 days", domain="security", tag=["secrets"])
    )
    return {"old": old, "new": new, "sqs": sqs["id"], "keys": keys["id"]}


# --------------------------------------------------------------------------- offline


def test_offline_answer_quotes_summaries_and_lists_sources(cli, monkeypatch):
    ids = ledger(cli, monkeypatch)
    out = cli("query", "How often do we rotate API keys?").stdout
    assert out.startswith("Extractive answer (offline backend")
    assert f"[{ids['keys']}]" in out and "Rotate service API keys every 90 days" in out
    assert "Sources:" in out and f"entries/2026/07/{ids['keys']}.md" in out
    assert ids["sqs"] not in out  # far below the best match: not quoted


def test_json_has_exactly_the_documented_keys(cli, monkeypatch):
    ids = ledger(cli, monkeypatch)
    out = cli.json("query", "How often do we rotate API keys?")
    assert set(out) == JSON_KEYS
    assert out["mode"] == "extractive" and out["backend"] == "offline"
    assert out["backend_source"] == "settings"
    assert (out["tokens_in"], out["tokens_out"]) == (0, 0)
    assert [c["id"] for c in out["cited"]] == [ids["keys"]]
    assert out["cited"][0]["opened"] is True
    assert set(out["opened"][0]) >= {"id", "date", "summary", "path"}


def test_a_question_about_now_opens_the_replacement_first(cli, monkeypatch):
    ids = ledger(cli, monkeypatch)
    question = "Which database holds the ledger now, with one table per account type?"
    out = cli.json("query", question)
    assert [o["id"] for o in out["opened"]][:2] == [ids["new"], ids["old"]]
    assert out["opened"][1]["status"] == "superseded"
    assert out["opened"][0]["note"] == f"replaces {ids['old']}"
    text = cli("query", question).stdout
    assert f"Superseded by {ids['new']}." in text and f"It replaced {ids['old']}." in text


def test_a_question_about_the_old_design_opens_the_replaced_decision_first(cli, monkeypatch):
    """Only a question about now puts the replacement first; one about the original design gets
    the record it asks about first, and its replacement is still opened, so the answer can say
    it was superseded."""
    ids = ledger(cli, monkeypatch)
    for question in [
        "Why did we originally keep one table per account type for the ledger?",
        "Why one table per account type in the ledger?",
    ]:
        out = cli.json("query", question)
        assert [o["id"] for o in out["opened"]][:2] == [ids["old"], ids["new"]], question
        assert out["opened"][0]["status"] == "superseded"
        assert f"Superseded by {ids['new']}." in cli("query", question).stdout


def test_supersession_orders_a_chain_as_the_question_asks(cli, wiki, monkeypatch):
    """About now: newest first, whatever the words match. About the old design: oldest first.
    Neither: the record the words describe first."""
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.ranking import Ranker, parse_question

    monkeypatch.setenv("LLM_WIKI_NOW", "2025-01-01")
    first = cli.json(
        *write_args(
            "Run nightly exports with cron on the export host",
            question=["How do nightly exports run?"],
            alias=["export cron", "nightly export job"],
        )
    )["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2025-06-01")
    second = cli.json(*write_args("Move exports to Airflow", supersedes=first))["id"]
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-01-01")
    third = cli.json(*write_args("Step Functions replace Airflow", supersedes=second))["id"]
    for n in range(6):
        cli(*write_args(f"Exports of report {n} go to the nightly bucket", domain=f"d{n}"))
    now = [
        "How do nightly exports run with cron on the export host these days?",
        "Is the export cron job still in use?",
        "Do Airflow exports still run?",
        "What runs the nightly export job now?",
    ]
    then = [
        "How did nightly exports originally run?",
        "What did the export cron job do back when we first set it up?",
    ]
    with read_catalog(wiki) as catalog:
        ranker = Ranker(catalog, Viewer.everyone())

        def ranked(question: str) -> list[str]:
            return [r.row.id for r in ranker.rank(parse_question(question), 20).items]

        for question in now:
            got = ranked(question)
            chain = [i for i in (third, second, first) if i in got]
            assert chain == sorted(chain, key=got.index), (question, got)
            if first in got:
                assert got.index(third) < got.index(second) < got.index(first), (question, got)
        for question in then:
            got = ranked(question)
            # lexically the newest ("Step Functions replace Airflow") shares no word with these
            # questions and may be absent; whatever of the chain is ranked runs oldest first
            chain = [i for i in (first, second, third) if i in got]
            assert chain[:2] == [first, second] and chain == sorted(chain, key=got.index), (
                question,
                got,
            )
        got = ranked("How do nightly exports run with cron on the export host?")
        assert got[0] == first, got


def test_nothing_found_offline_says_so(cli, monkeypatch):
    ledger(cli, monkeypatch)
    out = cli.json("query", "What is our parental leave policy for contractors?")
    assert out["mode"] == "nothing-found" and out["cited"] == [] and out["opened"] == []
    assert out["answer"].startswith("Nothing found")


def test_bad_flags_exit_2(cli, monkeypatch):
    ledger(cli, monkeypatch)
    assert "--k 0 is out of range" in cli("query", "ledger", "--k", "0", code=2).stderr
    assert "--budget 10 is too small" in cli("query", "ledger", "--budget", "10", code=2).stderr
    assert "needs an LLM backend" in cli("query", "ledger", "--file-back", code=2).stderr
    assert "question is empty" in cli("query", "  ", code=2).stderr


# --------------------------------------------------------------------------- LLM picks and answers


def pick(*ids: str) -> str:
    return json.dumps({"ids": list(ids)})


def test_llm_reads_all_lines_picks_and_answers_with_checked_citations(cli, wiki, mock, monkeypatch):
    from llm_wiki.backends import read_calls

    ids = ledger(cli, monkeypatch)
    mock.enqueue(
        pick("no-such-entry", ids["keys"]),
        f"Service keys rotate every 90 days [{ids['keys']}].",
    )
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock")
    assert out["mode"] == "llm" and out["model"] == "mock-1"
    assert [o["id"] for o in out["opened"]] == [ids["keys"]]  # the unknown name was dropped
    assert [(c["id"], c["opened"]) for c in out["cited"]] == [(ids["keys"], True)]
    (pick_purpose, pick_prompt), (answer_purpose, answer_prompt) = mock.history
    assert (pick_purpose, answer_purpose) == ("query.pick", "query.answer")
    for entry_id in ids.values():  # everything fits: the LLM reads every line
        assert f"[{entry_id}](entries/" in pick_prompt
    assert "narrowed" not in pick_prompt
    assert "Rotate service API keys every 90 days" in answer_prompt
    assert ids["sqs"] not in answer_prompt
    calls = read_calls(wiki)
    assert [c["purpose"] for c in calls] == ["query.pick", "query.answer"]
    assert all(c["backend"] == "mock" and c["scope"] == "shared" and c["ok"] for c in calls)
    assert out["tokens_in"] == sum(c["tokens_in"] for c in calls)


def test_unknown_picks_fall_back_to_the_ranker(cli, mock, monkeypatch):
    ids = ledger(cli, monkeypatch)
    mock.enqueue("I would open 2099-01-01-made-up-0000.", f"Keys rotate [{ids['keys']}].")
    out = cli.json("query", "How often do we rotate API keys?", "--backend", "mock")
    assert out["opened"][0]["id"] == ids["keys"]


def test_explicit_none_from_the_llm_means_nothing_found(cli, mock, monkeypatch):
    ledger(cli, monkeypatch)
    mock.enqueue(pick())
    out = cli.json("query", "What is our parental leave policy?", "--backend", "mock")
    assert out["mode"] == "nothing-found" and out["cited"] == []
    assert len(mock.history) == 1  # no answer call


def test_llm_saying_nothing_found_is_passed_on(cli, mock, monkeypatch):
    ids = ledger(cli, monkeypatch)
    mock.enqueue(pick(ids["sqs"]), "NOTHING FOUND")
    out = cli.json("query", "Why SQS and not Kafka?", "--backend", "mock")
    assert out["mode"] == "nothing-found" and out["answer"].startswith("Nothing found")


def test_an_answer_citing_unopened_entries_is_not_the_llms(cli, mock, monkeypatch):
    """An answer that cites an entry it was not given is not counted as the LLM's: the output
    says why and gives the extractive answer from the opened entries instead."""
    ids = ledger(cli, monkeypatch)
    answer = f"Keys rotate every 90 days [{ids['keys']}], on SQS [{ids['sqs']}]."
    mock.enqueue(pick(ids["keys"]), answer)
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock")
    assert out["mode"] == "extractive" and out["picked_by"] == "llm"
    assert out["llm_answer_rejected"] == {
        "reason": f"it cites entries that were not opened: {ids['sqs']}",
        "text": answer,
    }
    assert out["llm_outcome"] == {"ok": 1, "failed": 1}
    assert out["answer"].startswith("Extractive answer (the LLM's answer was not usable (it cites")
    assert [(c["id"], c["opened"]) for c in out["cited"]] == [(ids["keys"], True)]
    mock.enqueue(pick(ids["keys"]), answer)
    result = cli("query", "How often do keys rotate?", "--backend", "mock")
    assert "Picked by: the LLM." in result.stdout
    assert (
        f"The LLM's answer was not used: it cites entries that were not opened: {ids['sqs']}."
        in result.stdout
    )
    sources = result.stdout.split("Sources:")[1]
    assert ids["keys"] in sources and ids["sqs"] not in sources


def test_mock_responses_from_a_file_work_from_the_cli(cli, monkeypatch, tmp_path):
    ids = ledger(cli, monkeypatch)
    rules = tmp_path / "mock.json"
    rules.write_text(
        json.dumps(
            [
                {"purpose": "query.pick", "response": pick(ids["new"])},
                {"purpose": "query.answer", "response": f"A postings table [{ids['new']}]."},
            ]
        )
    )
    monkeypatch.setenv("LLM_WIKI_MOCK_FILE", str(rules))
    monkeypatch.setenv("LLM_WIKI_BACKEND", "mock")
    out = cli("query", "How is the ledger stored?").stdout
    assert out.startswith("A postings table") and "Sources:" in out


# --------------------------------------------------------------------------- the budget


def test_prompts_respect_the_budget_even_with_1_mib_bodies(cli, mock, monkeypatch):
    big = []
    for n, topic in enumerate(["ledger", "billing", "refunds"]):
        paragraphs = [f"Paragraph {i} about {topic} postings and partitions." for i in range(23000)]
        paragraphs[17000] = f"The {topic} retention rule: keep postings for seven years."
        body = "\n\n".join(paragraphs)[: 1024 * 1024 - 64]
        big.append(
            cli.json(*write_args(f"Store {topic} postings in monthly partitions {n}", body=body))[
                "id"
            ]
        )
    for budget in (3000, 8000):
        mock.reset()
        mock.enqueue(pick(*big), f"Seven years [{big[0]}].")
        out = cli.json(
            "query",
            "How long is the retention of postings?",
            "--backend",
            "mock",
            "--budget",
            str(budget),
        )
        assert [c["id"] for c in out["cited"]] == [big[0]]
        (_, pick_prompt), (_, answer_prompt) = mock.history
        assert tokens(pick_prompt) <= budget and tokens(answer_prompt) <= budget
        assert answer_prompt.count("[… body excerpted") == 3
        for entry_id in big:
            assert f"id: {entry_id}" in answer_prompt  # frontmatter whole
    assert "retention rule: keep postings for seven years" in answer_prompt  # matching paragraph


def test_lines_over_the_budget_are_prefiltered(cli, mock, monkeypatch):
    for n in range(80):
        cli(*write_args(f"Decision number {n} about service {n} deployment windows", domain="ops"))
    target = cli.json(
        *write_args("Encrypt database backups with KMS keys", domain="security", tag=["backups"])
    )["id"]
    mock.enqueue(pick(target), f"With KMS [{target}].")
    out = cli.json(
        "query", "How are database backups encrypted?", "--backend", "mock", "--budget", "1500"
    )
    assert out["cited"][0]["id"] == target
    (_, prompt), _ = mock.history
    assert tokens(prompt) <= 1500
    assert "A lexical search narrowed the archive's 81 entries to these" in prompt
    assert f"[{target}]" in prompt
    assert prompt.count("](entries/") < 81


# --------------------------------------------------------------------------- who did the work


def test_picked_by_says_whether_the_llm_or_the_ranker_picked(cli, mock, monkeypatch):
    ids = ledger(cli, monkeypatch)
    mock.enqueue(pick(ids["keys"]), f"Every 90 days [{ids['keys']}].")
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock")
    assert (out["picked_by"], out["mode"], out["llm_answer_rejected"]) == ("llm", "llm", None)
    assert out["llm_outcome"] == {"ok": 2, "failed": 0}
    # a pick that names nothing it was shown: the ranker stands in, and says so
    mock.enqueue("def pick(): return 'keys'", f"Every 90 days [{ids['keys']}].")
    result = cli("query", "How often do keys rotate?", "--backend", "mock")
    assert "Picked by: the ranker (the LLM's pick was not usable)." in result.stdout
    mock.enqueue("```python\nprint(1)\n```", f"Every 90 days [{ids['keys']}].")
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock")
    assert (out["picked_by"], out["mode"]) == ("ranker", "llm")
    assert out["llm_outcome"] == {"ok": 1, "failed": 1}
    assert cli.json("query", "How often do keys rotate?")["picked_by"] == "ranker"  # offline
    assert cli.json("query", "Globex acquisition terms")["picked_by"] == "none"


def test_query_exits_1_when_no_reply_of_the_llm_was_usable(cli, mock, monkeypatch):
    """The unanswerable question a small model answers anyway: no valid pick, no citation."""
    ledger(cli, monkeypatch)
    mock.enqueue("I think the answer is yes.", "The capital of France is Paris.")
    result = cli("query", "How often do keys rotate?", "--backend", "mock", code=1)
    assert "Picked by: the ranker (the LLM's pick was not usable)." in result.stdout
    assert "The LLM's answer was not used: it cites no entry." in result.stdout
    assert "Extractive answer (the LLM's answer was not usable (it cites no entry)" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    assert result.stderr == (
        "Error: no reply of the LLM's was usable (its pick named no entry it was shown; its "
        "answer was not used: it cites no entry); the answer is extractive. Try a larger model, "
        "or --backend offline.\n"
    )
    mock.enqueue("nope", "")
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock", code=1)
    assert out["mode"] == "extractive" and out["llm_outcome"] == {"ok": 0, "failed": 2}
    assert out["llm_answer_rejected"]["reason"] == "the reply is empty"


def test_the_budget_shrinks_to_a_small_models_context_window(cli, mock, wiki_path, monkeypatch):
    import yaml

    ids = ledger(cli, monkeypatch)
    settings = wiki_path / "settings.yaml"
    data = yaml.safe_load(settings.read_text())
    data["models"] = {"mock-1": {"context_window": 2048, "max_output": 512}}
    settings.write_text(yaml.safe_dump(data))
    mock.enqueue(pick(ids["keys"]), f"Every 90 days [{ids['keys']}].")
    out = cli.json("query", "How often do keys rotate?", "--backend", "mock")
    budget = out["budget"]
    assert budget["prompt_tokens"] == 2048 - 512 - 32  # the context window less the answer's reply
    assert (budget["context_window"], budget["max_output"], budget["limits_from"]) == (
        2048, 512, "settings",
    )  # fmt: skip
    assert budget["reply_tokens"] == {"pick": 300, "answer": 512}
    assert 0 < budget["pick_prompt_tokens"] <= budget["prompt_tokens"]
    assert 0 < budget["answer_prompt_tokens"] <= budget["prompt_tokens"]
    from llm_wiki.backends import read_calls
    from llm_wiki.wiki import Wiki

    calls = read_calls(Wiki(wiki_path))[-2:]
    assert [(c["purpose"], c["max_tokens"], c["context_window"]) for c in calls] == [
        ("query.pick", 300, 2048),
        ("query.answer", 512, 2048),
    ]
    data["models"]["mock-1"]["context_window"] = 1200
    settings.write_text(yaml.safe_dump(data))
    result = cli("query", "How often do keys rotate?", "--backend", "mock", code=2)
    assert "the 1200-token context window of mock-1 leaves" in result.stderr


# --------------------------------------------------------------------------- file back


def test_file_back_records_a_synthesis_from_a_passing_answer(cli, mock, monkeypatch):
    ids = ledger(cli, monkeypatch)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-08-01")
    mock.enqueue(
        pick(ids["old"]),
        f"The ledger is one postings table partitioned by month [{ids['new']}], which replaced "
        f"a table per account type [{ids['old']}].",
    )
    result = cli("query", "How is the ledger stored?", "--backend", "mock", "--file-back", "--json")
    assert set(json.loads(result.stdout)) == JSON_KEYS
    filed = re.search(r"Filed back as (\S+)", result.stderr).group(1)
    shown = cli.json("show", filed)
    assert shown["type"] == "synthesis" and shown["origin"] == "answer"
    assert shown["sources"] == [ids["new"], ids["old"]]
    assert shown["questions"] == ["How is the ledger stored?"]
    assert shown["domain"] == "ledger" and shown["scope"] == "shared"
    assert shown["summary"].startswith("The ledger is one postings table partitioned by month")


def test_file_back_refuses_unchecked_citations(cli, mock, monkeypatch):
    ids = ledger(cli, monkeypatch)
    before = cli.json("list")["total"]
    mock.enqueue(pick(ids["keys"]), f"Every 90 days [{ids['keys']}] via SQS [{ids['sqs']}].")
    result = cli("query", "How often do keys rotate?", "--backend", "mock", "--file-back")
    assert "Not filed back: the LLM's answer was not usable" in result.stderr
    assert "it cites entries that were not opened" in result.stderr
    mock.enqueue(pick(ids["keys"]), "Every 90 days.")
    result = cli("query", "How often do keys rotate?", "--backend", "mock", "--file-back")
    assert "Not filed back: the LLM's answer was not usable (it cites no entry)" in result.stderr
    mock.enqueue(pick(ids["keys"]), f"Every 45 days [{ids['keys']}].")  # invented number
    result = cli("query", "How often do keys rotate?", "--backend", "mock", "--file-back")
    assert "Not filed back: the LLM's answer was not usable" in result.stderr
    assert "the number 45 occurs in none of the cited entries" in result.stderr
    assert cli.json("list")["total"] == before


def test_file_back_refuses_answers_drawn_from_two_scopes(cli, mock, monkeypatch):
    a = cli.json(*write_args("Use Postgres for the ledger", scope="team-a"))["id"]
    b = cli.json(*write_args("Use Postgres for billing", scope="team-b"))["id"]
    mock.enqueue(pick(a, b), f"Postgres [{a}] [{b}].")
    result = cli("query", "Which database?", "--backend", "mock", "--file-back")
    assert "Not filed back: it draws on entries from more than one scope" in result.stderr
    assert cli.json("list")["total"] == 2


# --------------------------------------------------------------------------- walls


def test_hidden_entries_never_reach_a_prompt_or_an_answer(cli, wiki_path, mock):
    (wiki_path / "access.yaml").write_text(
        "readers:\n  alice: {scopes: [team-a]}\n  bob: {scopes: [team-b]}\n"
    )
    mine = cli.json(*write_args("Use Postgres for the ledger", scope="team-a"), "--as", "alice")
    secret = cli.json(
        *write_args("Acquire Initech to get its billing database", scope="team-b"), "--as", "bob"
    )
    mock.enqueue(pick(secret["id"], mine["id"]), f"Postgres [{mine['id']}] [{secret['id']}].")
    out = cli.json("--as", "alice", "query", "Which billing database?", "--backend", "mock")
    (_, pick_prompt), (_, answer_prompt) = mock.history
    assert secret["id"] not in pick_prompt + answer_prompt and "Initech" not in pick_prompt
    assert [o["id"] for o in out["opened"]] == [mine["id"]]  # a hidden name is just unknown
    assert out["mode"] == "extractive"  # it cites an entry it was not given: not the LLM's
    assert [c["id"] for c in out["cited"]] == [mine["id"]]
    offline = cli.json("--as", "alice", "query", "Initech acquisition")
    absent = cli.json("--as", "alice", "query", "Globex acquisition")
    assert offline["mode"] == absent["mode"] == "nothing-found"
    assert offline["answer"] == absent["answer"]


WORDS = ["ledger", "postgres", "queue", "kafka", "billing", "refund", "keys", "deploy", "cache"]


def test_property_replaced_decisions_never_rank_above_replacements(tmp_path_factory, request):
    """Any archive with supersession chains, any question about now: every entry that replaced
    a ranked entry is ranked before it; any question about the old design: every entry that a
    ranked entry replaced is ranked before it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.create import init_wiki
    from llm_wiki.entries import draft
    from llm_wiki.ranking import Ranker, parse_question
    from llm_wiki.wiki import Wiki
    from llm_wiki.write import write_entry

    entry_spec = st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.integers(0, 10)
    )

    @settings(
        max_examples=fewer(20),  # a tenth in the fast loop (conftest)
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        st.lists(entry_spec, min_size=2, max_size=8),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    )
    def check(specs, question_words):
        root = tmp_path_factory.mktemp("prop") / "wiki"
        init_wiki(root)
        wiki, everyone = Wiki(root), Viewer.everyone()
        ids: list[str] = []
        for n, (words, link) in enumerate(specs):
            supersedes = [ids[link % len(ids)]] if ids and link < 6 else []
            entry = draft(
                type="reflection",
                domain="d",
                summary=f"Entry {n}: " + " ".join(words),
                supersedes=supersedes,
                date=f"2026-01-{n + 1:02d}",
            )
            ids.append(write_entry(wiki, entry, viewer=everyone).id)
        with read_catalog(wiki) as catalog:
            ranker = Ranker(catalog, everyone)
            question = " ".join(question_words)
            ranked = ranker.rank(parse_question(f"{question}, now?"), 20).items
            position = {r.row.id: n for n, r in enumerate(ranked)}
            for item in ranked:
                for newer in ranker.replacements(item.row):
                    assert position[newer.id] < position[item.row.id]
            ranked = ranker.rank(parse_question(f"{question}, originally?"), 20).items
            position = {r.row.id: n for n, r in enumerate(ranked)}
            for item in ranked:
                for older in ranker.predecessors(item.row):
                    assert position[older.id] < position[item.row.id]

    check()


def test_hidden_entries_do_not_move_visible_ones(cli, wiki_path):
    """Under walls the ranking uses only the reader's own entries' statistics: whatever another
    scope holds, the reader's answer is the same."""
    (wiki_path / "access.yaml").write_text(
        "readers:\n  alice: {scopes: [team-a]}\n  bob: {scopes: [team-b]}\n"
    )
    for summary in [
        "Use Postgres for the ledger database",
        "Back up the ledger nightly to S3",
        "Encrypt database backups with KMS",
        "Keep invoices for seven years",
    ]:
        cli(*write_args(summary, scope="team-a"), "--as", "alice")
    question = ["--as", "alice", "query", "ledger database backups", "--k", "4"]
    before = cli.json(*question)
    for n in range(25):
        cli(*write_args(f"Database backups database {n} ledger", scope="team-b"), "--as", "bob")
    after = cli.json(*question)
    assert after == before
    assert len(before["opened"]) >= 2

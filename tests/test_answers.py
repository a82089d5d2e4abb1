"""Offline answers on real records: the reason quoted, the rejected option's reason, the current
decision and what it replaced, the alternatives with their reasons, the date; verbatim, each
sentence with its id, within the cap; and eval's answer_hit on the dev set with gold sentences."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import CORPORA, EVAL, REPO, Cli

MOJ = CORPORA / "ministryofjustice__cloud-platform"
TDR = CORPORA / "nationalarchives__tdr-dev-documentation"
L4B = CORPORA / "thomvaill__log4brains"
MADR = CORPORA / "adr__madr"


@pytest.fixture
def records(built_wiki):
    def build(cli):
        cli("import-adr", str(MOJ), "--domain", "cloud-platform")
        cli("import-adr", str(TDR), "--domain", "tdr")
        cli("import-adr", str(L4B), "--domain", "log4brains", "--recursive")
        cli("import-adr", str(MADR), "--domain", "madr")

    return built_wiki("answers-records", build)


def ask(cli, question: str) -> tuple[str, dict]:
    out = cli.json("query", question)
    return out["answer"].split("\n\nEntries opened:\n", 1)[0], out


def quoted(answer: str) -> list[tuple[str, str]]:
    """(sentence, id) of each answer line."""
    return re.findall(r"^- (.*) \[([a-z0-9-]+)\]$", answer, re.M)


def test_why_quotes_the_reason_from_the_record(records, wiki_path):
    answer, out = ask(records, "Why did we go with rspec for the cluster tests?")
    lines = quoted(answer)
    rspec = out["opened"][0]["id"]
    assert "rspec" in rspec
    assert ("There is limited go expertise in the team", rspec) in lines
    # verbatim: every quoted sentence is in the entry it cites (markdown marks aside)
    for sentence, entry_id in lines:
        text = records.json("show", entry_id)["text"]
        plain = re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", r"\1", text)
        head = sentence.split(" (20")[0]
        assert head.split(": ")[-1][:40] in " ".join(plain.split()), sentence


def test_why_not_quotes_the_named_alternatives_reason(records):
    answer, out = ask(records, "Why didn't we pick Fuse.js for search?")
    lunr = out["opened"][0]["id"]
    assert (
        "Not chosen: fuse js, <https://fusejs.io/>; Fast indexing; Slow searching; Only fuzzy "
        "search, no stemming",
        lunr,
    ) in quoted(answer) or "Only fuzzy search, no stemming" in answer
    answer, out = ask(
        records, "Why didn't we build a centralised egress VPC for traffic inspection?"
    )
    lines = quoted(answer)
    firewall = out["opened"][0]["id"]
    assert (
        "However, this ran into problems: test clusters use overlapping CIDRs, which prevents "
        "reliable connectivity to a shared egress VPC.",
        firewall,
    ) in lines


def test_current_puts_the_current_decision_first_with_what_it_replaced(records):
    answer, out = ask(records, "Do we still restrict user access to S3 objects with Cognito?")
    first, first_id = quoted(answer)[0]
    assert first.startswith("Current decision: Proxy S3 uploads through CloudFront")
    assert "cloudfront" in first_id
    assert (
        "It replaced, on 2021-09-17, the decision of 2020-04-01: Restricting User Access" in answer
    )


def test_alternatives_lists_each_option_with_its_reason(records):
    answer, out = ask(
        records, "Which alternatives did we consider for the Excel generation library?"
    )
    assert "Considered and not chosen: apache poi, " in answer
    assert "Convoluted code" in answer


def test_when_gives_the_date_and_where_it_came_from(records):
    answer, out = ask(records, "When did we decide to use Lunr for search?")
    (first, entry_id) = quoted(answer)[0]
    assert first.startswith("2020-11-03: Use Lunr for search") and "lunr" in entry_id


def test_answers_stay_within_the_cap(records):
    from llm_wiki.answers import ANSWER_TOKENS
    from llm_wiki.backends import estimate_tokens

    for question in (
        "Why EKS?",
        "What options did we consider for EKS?",
        "Why not kOps?",
        "When did we move to EKS?",
        "Are we still on kOps?",
    ):
        answer, _ = ask(records, question)
        body = answer.split("\n\n", 1)[1]
        assert estimate_tokens(body) <= ANSWER_TOKENS + 10, question


def test_question_kinds_come_from_the_wording():
    from llm_wiki.answers import question_kind

    assert question_kind("Why is MADR dual-licensed?") == "why"
    assert question_kind("Why didn't we use kubelogin?") == "why-not"
    assert question_kind("Why rspec instead of a Go framework?") == "why-not"
    assert question_kind("What options did we weigh for search?") == "alternatives"
    assert question_kind("Do we still build with Jenkins?") == "current"
    assert question_kind("When was Functions-as-a-Service rejected?") == "when"


@pytest.mark.slow
def test_eval_reports_answer_hit_on_the_dev_set(records, tmp_path):
    subset = tmp_path / "answers.jsonl"
    rows = [json.loads(line) for line in (EVAL / "answers-dev.jsonl").read_text().splitlines()]
    subset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = records.json("eval", str(subset))
    assert out["n"] == 65
    assert set(out["answer_hit_by_kind"]) == {"why", "alternatives", "current", "when"}
    # measured offline on this build (see the issue-14 report); a floor, not a target
    assert out["answer_hit"] >= 0.75
    q = next(q for q in out["questions"] if q["qid"] == "ans-13")
    assert q["answer_hit"] is True and q["gold_found"] == [True]


IDENTUS = CORPORA / "hyperledger__identus-cloud-agent"
KUMA = CORPORA / "kumahq__kuma"
ARACHNE = CORPORA / "arachne-framework__architecture"


@pytest.fixture
def more_records(built_wiki):
    def build(cli):
        cli("import-adr", str(IDENTUS), "--domain", "identus")
        cli("import-adr", str(KUMA), "--domain", "kuma", "--recursive")
        cli("import-adr", str(ARACHNE), "--domain", "arachne")

    return built_wiki("answers-more-records", build)


def test_why_states_the_chosen_option_with_its_because_clause(more_records):
    # the summary stops at "Chosen option: MongoDB"; the reason follows "because" in the record
    answer, out = ask(more_records, "Why do mediator messages get stored in MongoDB?")
    mongo = out["opened"][0]["id"]
    assert "mediator" in mongo
    assert (
        "Chosen option: MongoDB because of storing unstructured json data and json queries that "
        "requires minimal changes to the existing code and provides the benefits for the current "
        "use cases.",
        mongo,
    ) in quoted(answer)


def test_why_not_quotes_the_named_options_cons(more_records):
    answer, out = ask(more_records, "Why not use opaque Keycloak tokens instead of JWTs?")
    lines = quoted(answer)
    keycloak = out["opened"][0]["id"]
    assert lines[0] == (
        "Not chosen: Keycloak with opaque tokens (without digital signatures)",
        keycloak,
    )
    assert (
        "Bad, because it requires a round trip to Keycloak to validate each token and perform "
        "authorisation checks, increasing latency.",
        keycloak,
    ) in lines
    # the cons of the option the question names, not those of the chosen one
    assert "Bad, because it introduces complexity around JWT management" not in answer


def test_why_quotes_nygard_consequences_not_only_the_context(more_records):
    answer, out = ask(more_records, "Why is the asset pipeline built on Boot?")
    boot = out["opened"][0]["id"]
    assert "asset-pipeline" in boot
    assert "Boot has built-in support for immutable Filesets" in answer


def test_past_answers_with_the_replaced_decision_then_what_replaced_it(more_records):
    answer, out = ask(more_records, "What was the old naming convention for internal listeners?")
    lines = quoted(answer)
    assert lines[0][0].startswith("Internal listeners naming convention: We will add prefix _")
    assert "superseded" in lines[0][0]
    assert lines[1][0].startswith("Replaced on ") and "Standardized Naming" in lines[1][0]


def test_question_kinds_past_and_what():
    from llm_wiki.answers import question_kind

    assert question_kind("What did we use for search before Lunr?") == "past"
    assert question_kind("What was the original naming convention for listeners?") == "past"
    assert question_kind("How are agent admin roles defined in Keycloak?") == "what"
    assert question_kind("What was the downside of adding Open Policy Agent?") == "why-not"


@pytest.mark.slow
def test_eval_reports_answer_hit_on_the_second_dev_set(more_records, tmp_path):
    out = more_records.json("eval", str(EVAL / "answers-dev2.jsonl"))
    assert out["n"] == 44
    assert set(out["answer_hit_by_kind"]) == {
        "why", "alternatives", "current", "past", "what-decided", "when"
    }  # fmt: skip
    # measured offline on this build: 0.73 here (three folders in one wiki), 0.75 with one wiki
    # per folder; a floor, not a target
    assert out["answer_hit"] >= 0.6


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The example wiki (a reflection, an incident, a proposal among its decisions)."""
    root = tmp_path_factory.mktemp("example") / "wiki"
    shutil.copytree(REPO / "llm-wiki", root, ignore=shutil.ignore_patterns(".llm-wiki", "graph"))
    return Cli(root)


@pytest.mark.parametrize(
    "question, lead",
    [
        # a reflection ranked first is not what we do now: the decision in force leads
        ("What queue do we use for payment events now?", "Current decision: Use Amazon SQS"),
        # "these days" shares "days" with the newer API-key rotation, and nothing else
        ("What do we use for payment events these days?", "Current decision: Use Amazon SQS"),
        # a question about an incident is told the incident, not a decision
        ("Are refund events still stuck?", "Incident: Refund events stuck"),
        # a proposal is told as one, never as the current decision
        ("How do we deploy services now?", "Proposed, not yet decided: Deploy services"),
    ],
)
def test_an_answer_about_now_calls_an_entry_only_what_it_is(example, question, lead):
    answer, _ = ask(example, question)
    assert quoted(answer)[0][0].startswith(lead), answer


def test_an_entry_sharing_one_word_of_several_is_not_quoted(example):
    """One word of the question is a mention, not an answer: the rotation entry's "90 days"
    is not quoted for a question about payment events these days."""
    answer, out = ask(example, "What do we use for payment events these days?")
    assert [o["id"] for o in out["opened"]] == ["2026-03-04-queue-sqs"], answer
    assert "Rotate service API keys" not in answer, answer


@pytest.mark.parametrize(
    "question, line",
    [
        ("Why not DynamoDB?", "Not chosen: dynamodb, no multi-row transactions"),
        ("Why did we pick SQS over Kafka?", "Not chosen: kafka msk, ordering and replay"),
        # no option named: the alternative whose reason says what the question asks about
        ("Why don't we run our own message broker?", "Not chosen: rabbitmq, we would run"),
    ],
)
def test_an_alternative_written_with_the_entry_is_found_and_quoted(example, question, line):
    """An entry's alternatives are searched (an option only its --alt names: 'Kafka' was a
    name no entry mentions) and their reasons quoted."""
    answer, out = ask(example, question)
    assert out["mode"] != "nothing-found", answer
    assert any(t.startswith(line) for t, _ in quoted(answer)), answer


def test_question_kinds_what_replaced_what():
    from llm_wiki.answers import question_kind

    assert question_kind("What did the CloudFront proxy replace?") == "past"
    assert question_kind("What was our first approach to logging?") == "past"
    assert question_kind("What replaced kOps?") == "current"


def test_current_is_never_a_rejected_record(records):
    answer, _ = ask(records, "Does each namespace still get its own dedicated ingress controller?")
    lines = quoted(answer)
    # which proposed record the ranker puts first is retrieval's business (issue 15); the rule
    # here is that the rejected record is never presented as the current decision
    # (a proposed record leads as what it is: "Proposed, not yet decided")
    assert lines[0][0].startswith(("Current decision: ", "Proposed, not yet decided: "))
    assert not any(
        t.startswith("Current decision: Dedicated Ingress Controllers") for t, _ in lines
    )
    assert any(
        t.startswith("Rejected (2020-09-02): Dedicated Ingress Controllers") for t, _ in lines
    )


def test_why_not_quotes_what_is_listed_under_the_named_option(records):
    # "- kubelogin" with its reasons as sub-items; "The alternative considered was Calico
    # networking. …:" opening the list of what is against it
    answer, _ = ask(records, "Why didn't we use kubelogin to issue kubeconfig credentials on EKS?")
    assert "CP team would have to distribute the client secret to all users" in answer
    answer, _ = ask(records, "Why not full Calico networking on the EKS cluster?")
    assert "We wouldn't have any support from the cloud provider" in answer


GSP = CORPORA / "alphagov__gsp"
JABREF = CORPORA / "JabRef__jabref"


@pytest.fixture
def other_records(built_wiki):
    def build(cli):
        cli("import-adr", str(GSP), "--domain", "gsp")
        cli("import-adr", str(JABREF), "--domain", "jabref")
        cli("import-adr", str(KUMA), "--domain", "kuma", "--recursive")

    return built_wiki("answers-other-records", build)


def test_why_quotes_a_list_of_reasons_the_context_opens_not_the_decisions_what(records):
    # "… we've encountered a few downsides to the messages file:" then the downsides; the
    # sub-item under the first one goes on about it and is not a point of its own
    answer, out = ask(
        records, "Why did the user-facing text come out of the frontend's messages file?"
    )
    tdr = out["opened"][0]["id"]
    assert "messages-file" in tdr
    lines = quoted(answer)
    assert (
        "It makes it harder to update the HTML templates, because content is referred to indirectly.",
        tdr,
    ) in lines
    assert not any(t == "This is particularly difficult in content-heavy pages." for t, _ in lines)


def test_why_quotes_where_the_context_turns_to_the_problem(other_records):
    # MADR's "Context and Problem Statement": "However, … which requires …", no "because"
    answer, out = ask(other_records, "Why were multiple meshes per namespace allowed again?")
    kuma = out["opened"][0]["id"]
    assert "multiple-meshes" in kuma
    assert any(
        t.startswith("However, MADR 094 introduces mesh-scoped zone proxies, which requires")
        for t, i in quoted(answer)
        if i == kuma
    )


def test_why_quotes_a_nygard_options_list_of_reasons(other_records):
    answer, out = ask(
        other_records, "Why did we write our own postgres operator for tenant databases?"
    )
    postgres = out["opened"][0]["id"]
    assert "postgres" in postgres
    # Option 3's own list: "We choose a Postgres CRD, rather than an RDS CRD, because:"
    assert (
        'it\'s closer to the user\'s language ("I want a postgres" not "I want an RDS")',
        postgres,
    ) in quoted(answer)


def test_why_not_reads_a_cons_sub_list(other_records):
    # "* Bad, because:" and then a numbered list of what is wrong with the option
    answer, out = ask(
        other_records,
        "What problems ruled out java.nio WatchService for watching the LaTeX directory?",
    )
    lines = quoted(answer)
    assert lines[0][0] == "Not chosen: java.nio.file.WatchService"
    assert any(
        t.startswith("Does not detect files coming together with a new folder") for t, _ in lines
    )


def test_why_not_in_prose_looks_for_the_named_thing_not_the_records_topic(other_records):
    # "Docker Swarm" is the named option; "orchestrating containers" is what the record is about
    answer, out = ask(other_records, "Why not Docker Swarm for orchestrating containers?")
    orchestration = out["opened"][0]["id"]
    assert "container-orchestration" in orchestration
    assert (
        "We were unsure that a system based on Swarm would provide the flexibility we want to "
        "respond to the evolving needs of service teams.",
        orchestration,
    ) in quoted(answer)


def test_why_quotes_the_trouble_the_context_reports(cli, tmp_path):
    folder = tmp_path / "adr"
    folder.mkdir()
    (folder / "0001-drop-the-queue.md").write_text(
        "# 1. Drop the message queue\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nThe queue was added in 2019 in order to buffer uploads for the indexer.\n"
        "It runs on two hosts in each region and is configured by hand.\n"
        "We have experienced repeated outages of the queue during peak hours.\n\n"
        "## Decision\n\nWe will drop the message queue.\n\n"
        "- Allow the indexer to read the upload bucket.\n"
        "- Grant the indexer list access so that it can find new uploads.\n"
        "- Only allow polling from the indexer hosts.\n\n"
        "## Consequences\n\nTwo hosts per region are freed.\n",
        encoding="utf-8",
    )
    cli("import-adr", str(folder), "--domain", "ops")
    answer, out = ask(cli, "Why did we drop the message queue?")
    queue = out["opened"][0]["id"]
    assert (
        "We have experienced repeated outages of the queue during peak hours.",
        queue,
    ) in quoted(answer)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "folder", "floor"),
    [
        ("answers-jabref", JABREF, 0.85),  # 1.0 measured on this build (0.917 before)
        ("answers-gsp", GSP, 0.75),  # 0.875 (0.625 before)
        ("answers-govuk", CORPORA / "alphagov__govuk-aws", 0.65),  # 0.750 (0.583 before)
    ],
)
def test_eval_answer_hit_on_folders_no_answer_rule_was_written_for(cli, name, folder, floor):
    # sets written before the answer rules they measure (one wiki per folder); floors, not targets
    cli("import-adr", str(folder), "--domain", "held-out", "--recursive")
    out = cli.json("eval", str(EVAL / f"{name}.jsonl"))
    assert out["answer_hit"] >= floor, out["answer_hit_by_kind"]


def test_why_not_names_the_option_by_its_own_words_not_the_records_topic(other_records):
    # "default … directory" is the record's topic (its title); "AppDirs" names the option
    answer, out = ask(other_records, "Why not use AppDirs to pick the default file directory?")
    jna = out["opened"][0]["id"]
    assert "default-directory" in jna
    lines = quoted(answer)
    assert lines[0] == ("Not chosen: AppDirs", jna)
    assert any("does not use Documents on Windows" in t for t, _ in lines)

"""The shared statement/citation checks: each rule fails closed and names the statement."""

from __future__ import annotations

from llm_wiki.citations import (
    Evidence,
    Statement,
    check_facts,
    check_quote,
    check_statements,
    cited_ids,
    evidence_from_entry,
    extract_facts,
    find_quote,
    normalise_number,
    parse_line_ref,
)
from llm_wiki.entries import draft

LEDGER = Evidence(
    "2026-04-02-ledger-postgres",
    "shared",
    "authored",
    "2026-04-02 Keep the ledger in Postgres. Reports ran 10000 queries at p99 of 250 ms on S3 "
    'backups; the auditor said "no more nightly dumps" in March 2026.',
)
QUEUE = Evidence("2026-03-04-queue-sqs", "shared", "imported", "Use SQS with a 14-day retention.")
SYNTH = Evidence("2026-05-01-ledger-synthesis-aaaa", "shared", "consolidated", "Ledger: Postgres.")
ANSWER = Evidence("2026-05-01-an-answer-bbbb", "shared", "answer", "Postgres, per 10000 queries.")
OTHER = Evidence("2026-04-09-hr-salaries-cccc", "hr", "authored", "Salaries are reviewed in May.")
EVIDENCE = {e.id: e for e in (LEDGER, QUEUE, SYNTH, ANSWER, OTHER)}


def kinds(statements, scope="shared"):
    return [p.kind for p in check_statements(statements, EVIDENCE, scope=scope)]


def test_a_supported_statement_passes():
    ok = Statement(
        "On 2026-04-02 the team kept the ledger in Postgres: 10,000 queries at p99 of 250ms, "
        'backups on S3, and "No more nightly dumps" (March 2026).',
        (LEDGER.id,),
    )
    both = Statement(
        "SQS keeps messages 14 days; the ledger stays in Postgres.", (QUEUE.id, LEDGER.id)
    )
    assert check_statements([ok, both], EVIDENCE, scope="shared") == []


def test_citation_rules():
    assert kinds([Statement("The ledger is in Postgres.", ())]) == ["uncited"]
    assert kinds([Statement("The ledger is in Postgres.", ("2026-01-01-invented-0000",))]) == [
        "unknown-id"
    ]
    assert kinds([Statement("The ledger is in Postgres.", (SYNTH.id,))]) == ["generated"]
    assert kinds([Statement("The ledger is in Postgres.", (ANSWER.id,))]) == ["generated"]
    assert kinds([Statement("Salaries are reviewed.", (OTHER.id,))]) == ["other-scope"]
    assert kinds([Statement("  ", (LEDGER.id,))]) == ["empty"]
    problem = check_statements([Statement("x", ("nope",))], EVIDENCE, scope="shared")[0]
    assert problem.statement == "x" and "'nope'" in problem.detail
    assert "hr" not in problem.detail  # another scope's name is never revealed


def test_numbers_dates_and_quotes_must_occur_in_a_cited_entry():
    def facts(text, cites=(LEDGER.id,)):
        return kinds([Statement(text, cites)])

    assert facts("The ledger ran 12,000 queries.") == ["unsupported-number"]
    assert facts("The ledger ran 10000 queries at p95.") == ["unsupported-number"]  # token p95
    assert facts("Backups moved to S4.") == ["unsupported-number"]
    assert facts("Decided on 2026-04-03.") == ["unsupported-date"]
    assert facts("Decided on 3 April 2026.") == ["unsupported-date"]
    assert facts("Decided on 2 April 2026.") == []
    assert facts("Decided in April 2026.") == []
    assert facts("Decided in May 2026.") == ["unsupported-date"]
    assert facts("Decided in 2026.") == []
    assert facts("Decided in 2025.") == ["unsupported-date"]
    assert facts('The auditor said "stop all dumps".') == ["unsupported-quote"]
    assert facts("The auditor said “no more  nightly dumps”.") == []
    # the number is in an entry, but not in the one cited
    assert facts("Messages are kept 14 days.") == ["unsupported-number"]
    assert facts("Messages are kept 14 days.", (QUEUE.id,)) == []
    # an id written into the text is not a date
    assert facts(f"See {LEDGER.id}: Postgres.") == []


def test_a_bad_citation_does_not_lend_its_facts():
    statement = Statement("Salaries are reviewed in May 2026.", (LEDGER.id, OTHER.id))
    assert sorted(kinds([statement])) == ["other-scope", "unsupported-date"]


def test_fact_extraction_normalises():
    facts = extract_facts("10,000 rows, 5.50 GB, 007, v2.1, 90d, 04/03/2026, 4th of March 2026")
    assert {"10000", "5.5", "7", "90"} <= facts.numbers
    assert "v2.1" in facts.tokens
    assert facts.dates["04/03/2026"] == ((2026, 3, 4), (2026, 4, 3))
    assert facts.dates["4th of March 2026"] == ((2026, 3, 4),)
    assert normalise_number("1.2.3") == "1.2.3"
    ev = Evidence("a", "s", "authored", "released 4/3/2026")
    assert check_facts("released on 2026-03-04", [ev]) == []  # either reading of d/m


def test_evidence_from_an_entry_covers_its_fields():
    entry = draft(
        type="decision",
        domain="ledger",
        summary="Keep the ledger in Postgres",
        alt=["dynamo-db: no multi-row transactions below 25 items"],
        date="2026-04-02",
        body="Costs 120 EUR a month.",
    )
    ev = evidence_from_entry(entry)
    assert (
        check_facts("Dynamo was rejected (25 items); it costs 120 EUR; 2 April 2026.", [ev]) == []
    )


def test_cited_ids_keeps_first_cited_order():
    assert cited_ids([Statement("a", ("x", "y")), Statement("b", ("y", "z"))]) == ["x", "y", "z"]


def test_verbatim_quotes_in_raw_line_ranges():
    raw = "line one\nWe will keep the ledger\n  in Postgres for now.\nline four\n"
    assert parse_line_ref("raw/ab.md#L2-L3") == ("raw/ab.md", 2, 3)
    assert parse_line_ref("raw/ab.md#L4") == ("raw/ab.md", 4, 4)
    assert parse_line_ref("raw/ab.md") == ("raw/ab.md", None, None)
    assert find_quote("keep the ledger in Postgres", raw, 2, 3)
    assert not find_quote("keep the ledger in Postgres", raw, 3, 4)
    assert not find_quote("line four", raw, 1, 3)
    assert find_quote("line four", raw)
    assert check_quote("keep the ledger in Postgres", "raw/ab.md#L2-L3", raw) is None
    problem = check_quote("keep the ledger in MySQL", "raw/ab.md#L2-L3", raw)
    assert problem is not None and problem.kind == "quote-not-found"
    assert "lines 2-3 of raw/ab.md" in problem.detail

"""Ingest figures: the sample conversation through the mock backend, and what finding the related
index lines costs on big archives.

Run: /work/venv/bin/pytest tests/bench/test_ingest_bench.py -s
"""

from __future__ import annotations

import json
import shutil
import sys
import time

import pytest

from conftest import REPO, Cli

sys.path.insert(0, str(REPO / "tests"))
import mock_ingest  # noqa: E402 - tests/ is not a package

DATA = REPO / "tests" / "data" / "ingest"
CHAT = DATA / "team-chat.txt"
DAY2 = DATA / "team-chat-day2.txt"


def test_sample_conversation_figures(wiki_path, tmp_path, monkeypatch):
    """Entries written and quotes checked; the invented quote rejected; the same file again:
    nothing new; the grown file: only its new part read, the old decision superseded."""
    from llm_wiki.backends import MockBackend

    cli = Cli(wiki_path)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-14T15:00:00Z")
    MockBackend.enqueue(mock_ingest.respond_inventing)
    first = cli.json("ingest", CHAT, "--backend", "mock")
    raw_before = sorted((wiki_path / "raw").iterdir())
    log_before = (wiki_path / "log.md").read_bytes()
    calls_before = len(MockBackend.history)
    again = cli.json("ingest", CHAT, "--backend", "mock")
    calls_again = len(MockBackend.history) - calls_before
    new_raw = len(sorted((wiki_path / "raw").iterdir())) - len(raw_before)
    log_lines = (wiki_path / "log.md").read_bytes().count(b"\n") - log_before.count(b"\n")

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-04-21T15:00:00Z")
    grown = tmp_path / "team-chat.txt"
    grown.write_bytes(CHAT.read_bytes() + DAY2.read_bytes())
    MockBackend.enqueue(mock_ingest.respond)
    update = cli.json("ingest", grown, "--backend", "mock")
    (_, grown_prompt) = MockBackend.history[-1]
    sent = [int(n) for n, _ in mock_ingest.LINE_RE.findall(grown_prompt)]

    print()
    print(
        f"sample conversation: {len(CHAT.read_text().splitlines())} lines, {len(CHAT.read_bytes())} bytes, kind {first['kind']}"
    )
    print(f"  first ingest: {first['calls']} LLM call, prompt ~{first['tokens_in']} tokens")
    print(
        f"  proposals: {len(first['written']) + len(first['rejected'])}; written {len(first['written'])} "
        f"({', '.join(w['type'] for w in first['written'])}); quotes checked {first['quotes_checked']}"
    )
    for r in first["rejected"]:
        print(
            f"  rejected: {r['summary']!r}: "
            + "; ".join(f"{p['kind']}: {p['detail']}" for p in r["problems"])
        )
    for w in first["written"]:
        shown = cli.json("show", w["id"])
        print(
            f"  {w['id']}: {len(shown['alternatives_considered'])} alternatives, "
            f"{len(shown['aliases'])} aliases, {len(shown['questions'])} questions, sources {shown['sources']}"
        )
    print(
        f"  same file again: status {again['status']}, new raw files {new_raw}, entries written "
        f"{len(again['written'])}, LLM calls {calls_again}, "
        f"new log.md lines {log_lines}"
    )
    print(
        f"  grown file (+{len(DAY2.read_text().splitlines())} lines): lines sent {min(sent)}-{max(sent)}, "
        f"written {len(update['written'])}, supersedes {update['written'][0]['supersedes']}"
    )
    print(json.dumps({"first": {k: first[k] for k in ("calls", "quotes_checked")},
                      "written": len(first["written"]), "rejected": len(first["rejected"]),
                      "again": {"status": again["status"], "calls": again["calls"], "new_raw": new_raw}}))  # fmt: skip

    assert len(first["written"]) == 2 and first["quotes_checked"] == 2
    assert [p["kind"] for r in first["rejected"] for p in r["problems"]] == ["quote-not-found"]
    assert again["status"] == "unchanged" and again["calls"] == 0 and new_raw == 0
    assert log_lines == 0 and calls_again == 0
    assert min(sent) == len(CHAT.read_text().splitlines()) + 1


@pytest.mark.parametrize("size", [10_000, 100_000])
def test_related_lines_cost_at_scale(size, tmp_path_factory):
    """Finding the related index lines for one part, against a query's ranking on the same
    archive (the baseline), with the two payments entries the chat is about planted in it."""
    from filler import build_wiki

    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.entries import draft
    from llm_wiki.ingest import related_rows
    from llm_wiki.ranking import Ranker, parse_question
    from llm_wiki.wiki import Wiki
    from llm_wiki.write import write_entry

    root = tmp_path_factory.mktemp("ingest") / "wiki"
    shutil.copytree(build_wiki(size), root, ignore=shutil.ignore_patterns(".built"))
    wiki, everyone = Wiki(root), Viewer.everyone()
    planted = []
    for summary in (
        "Payout events go through SQS FIFO, one message group per merchant.",
        "A payouts-worker deploy left payouts stuck: its IAM role lacked sqs:ReceiveMessage.",
    ):
        entry = draft(type="decision", domain="payments", summary=summary, alt=["kafka: ops"])
        planted.append(write_entry(wiki, entry, viewer=everyone).id)
    question = parse_question("Why do payout events go through SQS?")
    with read_catalog(wiki) as catalog:
        results = {}
        for path in (CHAT, DAY2):
            text = path.read_text()
            related_rows(catalog, everyone, text, 2000)  # warm
            start = time.perf_counter()
            rows, _, total = related_rows(catalog, everyone, text, 2000)
            took = time.perf_counter() - start
            results[path.name] = (took, [r.id for r in rows], sum(len(r.line) for r in rows) // 3)
        Ranker(catalog, everyone).rank(question, 20)  # warm
        start = time.perf_counter()
        Ranker(catalog, everyone).rank(question, 20)  # a query's own ranker: its IDFs uncounted
        baseline = time.perf_counter() - start
    print()
    for name, (took, ids, tokens) in results.items():
        where = [ids.index(p) if p in ids else None for p in planted]
        print(f"{size} entries, {name}: related lines {took * 1000:.0f} ms "
              f"({took / baseline:.1f}x a query's ranking, {baseline * 1000:.0f} ms); "
              f"{len(ids)} lines (~{tokens} tokens) of {total}; planted entries at {where}")  # fmt: skip
        assert planted[0] in ids

"""Consolidation cost at 10,000 entries over 20 domains (mock backend; prints its figures).

Run: /work/venv/bin/pytest tests/bench/test_consolidate_bench.py -s

The wiki is built in-process (entry files and log lines written directly, then `index`), with
realistic entries: decisions with alternatives, incidents and reflections carrying numbers and
dates, spread over two years, about 5% superseding an earlier entry of their domain. The mock
model reads the entries or notes it is shown and cites only those (tests/mock_llm.py).

Figures: calls and tokens of a first run, against the entries' own size (the baseline); a re-run
with nothing changed (0 calls); one new entry, one back-dated entry and one superseding entry
(each at most 2 calls); time in the citation checks per synthesis, against the run's time.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import shutil
import time
from collections import Counter

import pytest

import mock_llm
from llm_wiki import backends, store
from llm_wiki.access import Viewer
from llm_wiki.backends import MockBackend
from llm_wiki.catalog import rebuild_index
from llm_wiki.chunking import make_chunks
from llm_wiki.consolidate import consolidate
from llm_wiki.create import init_wiki
from llm_wiki.entries import Alternative, Entry, candidate_ids, dump_entry
from llm_wiki.prompts import entry_block
from llm_wiki.wiki import Wiki
from llm_wiki.write import write_entry

N_ENTRIES = 10_000
DOMAINS = [
    "ledger", "payments", "identity", "search", "billing", "platform", "security", "data",
    "mobile", "web", "infra", "observability", "support", "growth", "ml", "docs", "hr",
    "legal", "sales", "ops",
]  # fmt: skip
THINGS = ["timeout", "retry budget", "cache TTL", "pool size", "batch size", "page size", "quota"]
TOOLS = ["Postgres", "Kafka", "SQS", "Redis", "Terraform", "Grafana", "OpenSearch", "Temporal"]
SERVICES = ["api-gateway", "ledger-writer", "auth", "indexer", "notifier", "exporter"]
NOW = "2026-05-02T03:00:00Z"


def make_entry(rng: random.Random, domain: str, day: str, n: int) -> Entry:
    tags = [f"{domain}-{t}" for t in ("core", "perf", "reliability", "cost")]
    tag = rng.choice(tags)
    kind = rng.random()
    if kind < 0.6:
        thing, tool = rng.choice(THINGS), rng.choice(TOOLS)
        value = rng.choice([5, 10, 15, 30, 60, 90, 120, 250, 500, 1000])
        summary = f"Set the {domain} {thing} to {value} and move job {n} to {tool}"
        body = (
            f"Context: after load tests on {day}, the {thing} of {value} kept p99 under "
            f"{rng.randint(80, 900)} ms. {tool} was chosen for job {n} because the team already "
            f"runs it.\n\nConsequences: a {rng.randint(2, 40)}% cost change; revisit in "
            f"{rng.choice(['Q3', 'Q4'])}."
        )
        return Entry(
            "", "decision", day, summary, domain, tags=(tag,),
            alternatives_considered=(
                Alternative(f"keep-{thing.replace(' ', '-')}", f"p99 above {value * 3} ms"),
                Alternative(rng.choice(TOOLS).lower(), "nobody on call knows it"),
            ),
            actors=(rng.choice(["ana", "ben", "chen", "dara"]),), body=body,
        )  # fmt: skip
    if kind < 0.85:
        service, minutes = rng.choice(SERVICES), rng.randint(3, 180)
        summary = f"{service} returned errors for {minutes} minutes in {domain} (incident {n})"
        body = (
            f"On {day} {service} failed {rng.randint(20, 5000)} requests. Cause: an expired "
            f'certificate; the runbook said "rotate before expiry". Fixed by a rollback.'
        )
        return Entry("", "incident", day, summary, domain, tags=(tag,), body=body)
    summary = f"Reflection {n}: {domain} changes ship safer behind flags and small batches"
    body = (
        f"Across the last {rng.randint(3, 12)} incidents, the ones behind flags recovered faster."
    )
    return Entry("", "reflection", day, summary, domain, tags=(tag,), body=body)


def build_wiki(root, n: int = N_ENTRIES, seed: int = 7) -> tuple[Wiki, dict[str, list[str]]]:
    """Write ``n`` entries as files plus their log lines, then index once."""
    init_wiki(root)
    wiki = Wiki(root)
    rng = random.Random(seed)
    by_domain: dict[str, list[str]] = {d: [] for d in DOMAINS}
    lines = []
    for i in range(n):  # oldest first, 2024-05-01 to 2026-04-20
        domain = DOMAINS[i % len(DOMAINS)]
        day = (dt.date(2024, 5, 1) + dt.timedelta(days=i * 720 // n)).isoformat()
        entry = make_entry(rng, domain, day, i)
        earlier = by_domain[domain]
        if earlier and rng.random() < 0.05:
            entry = dataclasses.replace(entry, supersedes=(rng.choice(earlier[-50:]),))
        entry = dataclasses.replace(entry, id=next(candidate_ids(entry)))
        data = dump_entry(entry).encode()
        path = root / entry.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o444)
        lines.append(
            store.format_log_line(
                "write", entry.id, sha256=store.sha256_bytes(data), scope="shared",
                path=entry.relpath,
            )
        )  # fmt: skip
        earlier.append(entry.id)
    with open(wiki.log_path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    rebuild_index(wiki)
    return wiki, by_domain


def run(wiki: Wiki, **kw):
    MockBackend.reset()
    MockBackend.enqueue(*[mock_llm.respond] * 5000)
    start = time.perf_counter()
    result = consolidate(wiki, Viewer.everyone(), max_calls=1_000_000, max_tokens=10**10, **kw)
    seconds = time.perf_counter() - start
    assert result.error is None
    failed = [d for d in result.domains if d.status == "failed"]
    assert not failed, failed[0]
    return result, seconds, Counter(p for p, _ in MockBackend.history)


def add_entry(wiki: Wiki, domain: str, **kw) -> str:
    entry = Entry(
        "", "incident", kw.pop("date", "2026-05-02"), f"New {domain} incident: queue lag of 42 "
        "minutes", domain, tags=(f"{domain}-reliability",), body="Lag peaked at 42 minutes.", **kw,
    )  # fmt: skip
    return write_entry(wiki, entry, viewer=Viewer.everyone()).id


def domain_blocks(wiki: Wiki, domain: str) -> tuple[list[str], dict[str, str]]:
    """The domain's active evidence as consolidate orders and shows it."""
    from llm_wiki.reads import list_entries, read_entry

    rows = list_entries(wiki, Viewer.everyone(), limit=None, status="active", domain=domain).rows
    rows = sorted((r for r in rows if not r.is_generated), key=lambda r: (r.date, r.id))
    return [r.id for r in rows], {r.id: entry_block(read_entry(wiki, r)[0]) for r in rows}


def greedy_chunks(ids, blocks, limit):
    """The baseline: fill each chunk to the limit, in order."""
    chunks, current, size = [], [], 0
    for i in ids:
        tokens = backends.estimate_tokens(blocks[i])
        if current and size + tokens > limit:
            chunks.append(current)
            current, size = [], 0
        current.append(i)
        size += tokens
    return chunks + ([current] if current else [])


def changed(chunker, before, after, limit) -> str:
    old = {tuple(c) for c in chunker(*before, limit)}
    new = [tuple(c) for c in chunker(*after, limit)]
    return f"{sum(1 for c in new if c not in old)} of {len(new)}"


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    os.environ["LLM_WIKI_NOW"] = NOW
    root = tmp_path_factory.mktemp("bench") / "wiki"
    start = time.perf_counter()
    wiki, by_domain = build_wiki(root)
    built = time.perf_counter() - start
    settings = wiki.settings_path.read_text().replace("backend: offline", "backend: mock")
    wiki.settings_path.write_text(
        settings.replace("retry_wait_seconds: 2", "retry_wait_seconds: 0")
    )
    print(f"\nbuilt {N_ENTRIES:,} entries over {len(DOMAINS)} domains in {built:.1f} s")
    yield Wiki(root), by_domain
    os.environ.pop("LLM_WIKI_NOW", None)


def test_consolidation_costs(big, monkeypatch):
    monkeypatch.setenv("LLM_WIKI_NOW", NOW)  # the autouse fixture cleared it
    wiki, by_domain = big
    from llm_wiki.reads import list_entries

    active = list_entries(wiki, Viewer.everyone(), limit=None, status="active").rows
    entry_tokens = 0
    for row in active:
        from llm_wiki.reads import read_entry

        entry_tokens += backends.estimate_tokens(entry_block(read_entry(wiki, row)[0]))
    chunk_tokens = int(wiki.settings.get("consolidate.chunk_tokens"))

    first, seconds, purposes = run(wiki)
    written = [d for d in first.domains if d.status == "written"]
    assert len(written) == len(DOMAINS)
    chunks = sum(d.chunks for d in written)
    statements = sum(d.statements for d in written)
    check_ms = [d.check_ms for d in written]
    print(
        f"\nfirst run: {first.calls:,} calls ({dict(purposes)}), {first.tokens:,} tokens, "
        f"{seconds:.1f} s\n"
        f"  baseline: the {len(active):,} active entries as shown in prompts = "
        f"{entry_tokens:,} tokens; ideal packing at chunk_tokens={chunk_tokens} = "
        f"{-(-entry_tokens // chunk_tokens) + len(DOMAINS)} calls\n"
        f"  ratio: tokens {first.tokens / entry_tokens:.2f}x the entries; calls "
        f"{first.calls / (-(-entry_tokens // chunk_tokens) + len(DOMAINS)):.2f}x ideal packing; "
        f"{chunks} chunks ({chunks / len(written):.0f} per domain)"
    )
    print(
        f"  citation checks: {sum(check_ms) / len(written):.1f} ms per synthesis (max "
        f"{max(check_ms):.1f} ms; its chunk notes and {statements / len(written):.0f} final "
        f"statements, facts of ~{len(active) // len(DOMAINS)} entries extracted once); "
        f"{sum(check_ms) / 1000 / seconds:.1%} of the run's {seconds:.1f} s"
    )

    again, seconds, _ = run(wiki)
    print(f"re-run, nothing changed: {again.calls} calls, {seconds * 1000:.0f} ms")
    assert again.calls == 0 and again.up_to_date == len(DOMAINS)

    cases = [
        ("one new entry (today)", "payments", {}),
        ("one back-dated entry", "search", {"date": "2025-06-15"}),
        ("one entry superseding an old one", "billing", {"supersedes": by_domain["billing"][40]}),
    ]
    for label, domain, kw in cases:
        if "supersedes" in kw:
            kw["supersedes"] = (kw["supersedes"],)
        before = domain_blocks(wiki, domain)
        add_entry(wiki, domain, **kw)
        after = domain_blocks(wiki, domain)
        result, seconds, purposes = run(wiki)
        [done] = [d for d in result.domains if d.status == "written"]
        print(
            f"after {label} in {domain} ({done.entries} active entries, {done.chunks} chunks, "
            f"{done.cached_chunks} from cache): {result.calls} calls ({dict(purposes)}), "
            f"{result.tokens:,} tokens, {seconds:.2f} s; checks {done.check_ms:.1f} ms\n"
            f"  baseline: chunks whose members changed: content-defined "
            f"{changed(make_chunks, before, after, chunk_tokens)}, fixed-size packing "
            f"{changed(greedy_chunks, before, after, chunk_tokens)}"
        )
        assert result.calls <= 2

    shutil.rmtree(wiki.state_dir)
    start = time.perf_counter()
    plan = consolidate(wiki, Viewer.everyone(), dry_run=True)
    print(
        f"fresh clone (.llm-wiki/ deleted): {len(plan.domains)} domains out of date, "
        f"{plan.up_to_date} up to date ({time.perf_counter() - start:.1f} s incl. catalog rebuild)"
    )
    assert plan.domains == () and plan.up_to_date == len(DOMAINS)

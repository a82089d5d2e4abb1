"""Readers never wait for a writer: while another process holds the write lock (a write in
flight), `show`, `list` and `query` answer at once from the catalog as it stands, with every
acknowledged entry and without the one still being written; once the lock is free, the next
read catches up. (On a team server, readers queued behind 8 writers for seconds.)"""

from __future__ import annotations

import json
import time

from conftest import plant, run_module, write_args
from llm_wiki import store
from llm_wiki.wiki import Wiki


def read(wiki_path, *args: str) -> tuple[dict, float]:
    start = time.monotonic()
    proc = run_module("--wiki", wiki_path, *args, "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout), time.monotonic() - start


def test_a_reader_does_not_wait_for_a_write_in_flight(cli, wiki_path):
    acknowledged = cli.json(*write_args("Use Postgres for the ledger"))["id"]
    with store.locked(Wiki(wiki_path)):  # a writer mid-way: its file and log line, no row yet
        in_flight = plant(
            wiki_path, "2026-05-02-use-kafka-for-events-beef", "2026-05-02",
            {"type": "decision", "summary": "Use Kafka for events", "domain": "general"},
        )  # fmt: skip
        shown, took = read(wiki_path, "show", acknowledged)
        assert shown["id"] == acknowledged and took < 30
        listed, _ = read(wiki_path, "list")
        ids = [e["id"] for e in listed["entries"]]
        assert acknowledged in ids and in_flight not in ids
        answer, _ = read(wiki_path, "query", "Which database holds the ledger?")
        assert acknowledged in [o["id"] for o in answer["opened"]]
    listed, _ = read(wiki_path, "list")
    assert in_flight in [e["id"] for e in listed["entries"]]  # caught up once the lock is free

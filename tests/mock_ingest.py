"""A mock LLM that reads ingest prompts the way a careful model would, for tests/data/ingest/.

It looks at the numbered source lines it was shown ("L12: text") and proposes an entry for each
thing worth keeping that it finds there — the queue decision, the deploy incident, the later
switch to standard queues (superseding the listed FIFO decision) — citing the lines with a
verbatim quote, and nothing for the chatter or the plan still in progress. Usable in-process
(``MockBackend.enqueue(respond)``) and from the CLI (``LLM_WIKI_MOCK_FILE`` = this file: it
defines ``respond(prompt, purpose)`` and imports only the standard library).
"""

from __future__ import annotations

import json
import re

LINE_RE = re.compile(r"^L(\d+): (.*)$", re.M)
INDEX_RE = re.compile(r"^- \d{4}-\d\d-\d\d \w+ (?:\(\w+\) )?\[(?P<id>[a-z0-9-]+)\]\(.*$", re.M)

FIFO = {
    "from": "on the table: SQS, Kafka",
    "to": "Decision: payout events go through SQS FIFO",
    "quote": "payout events go through SQS FIFO, one message group per merchant",
    "entry": {
        "type": "decision",
        "domain": "payments",
        "date": "2026-04-14",
        "summary": "Payout events go through SQS FIFO, one message group per merchant.",
        "actors": ["maria", "dev", "lucas"],
        "tags": ["queue", "payouts"],
        "alternatives_considered": [
            {
                "id": "kafka",
                "rejected_because": "Overkill for ~200 events/s; nobody wants to run a cluster.",
            },
            {
                "id": "postgres-polling",
                "rejected_because": "The payouts table hit lock contention at 40 workers.",
            },
        ],
        "aliases": ["payout event queue", "Auszahlungs-Warteschlange"],
        "questions": [
            "Why do payout events use SQS and not Kafka?",
            "Which queue carries payouts?",
        ],
        "body": "The worker rewrite needed a queue for payout events. FIFO gives ordering per merchant through message group ids, and SQS is already in the AWS account.",
    },
}
INCIDENT = {
    "from": "the payouts-worker deploy failed",
    "to": "root cause: the new IAM role",
    "quote": "the new IAM role was missing sqs:ReceiveMessage, so the worker crash-looped",
    "entry": {
        "type": "incident",
        "domain": "payments",
        "date": "2026-04-14",
        "summary": 'A payouts-worker deploy left 12 payouts stuck in "pending" for 25 minutes: its IAM role lacked sqs:ReceiveMessage.',
        "actors": ["dev", "lucas"],
        "tags": ["deploy", "iam", "payouts"],
        "aliases": ["payouts worker crash loop", "Auszahlungs-Worker-Absturz"],
        "questions": ["Why were payouts stuck after the worker deploy?"],
        "body": "Rolled back at 11:48; all 12 payouts went out. Follow-up: an IAM policy check in the deploy pipeline.",
    },
}
STANDARD = {
    "from": "load test says SQS FIFO caps",
    "to": "FIFO is dropped because",
    "quote": "then we switch to SQS standard queues with an idempotency key per payout",
    "supersedes": "SQS FIFO",
    "entry": {
        "type": "decision",
        "domain": "payments",
        "date": "2026-04-21",
        "summary": "Payout events move to SQS standard queues with an idempotency key per payout; the worker enforces ordering per merchant.",
        "actors": ["maria", "dev", "lucas"],
        "tags": ["queue", "payouts"],
        "alternatives_considered": [
            {
                "id": "sqs-fifo",
                "rejected_because": "Caps at 300 messages/s per queue without batching; the month-end peak is 450 events/s.",
            },
            {
                "id": "high-throughput-mode",
                "rejected_because": "Still per message group, and big merchants are one group each.",
            },
        ],
        "aliases": ["payout event queue", "SQS standard"],
        "questions": ["Why did payouts leave SQS FIFO?"],
        "body": "A load test showed FIFO could not carry the month-end peak.",
    },
}
FINDINGS = (FIFO, INCIDENT, STANDARD)


def shown_lines(prompt: str) -> list[tuple[int, str]]:
    return [(int(n), text) for n, text in LINE_RE.findall(prompt)]


def line_of(lines: list[tuple[int, str]], needle: str) -> int | None:
    return next((n for n, text in lines if needle in text), None)


def proposals(prompt: str) -> list[dict]:
    prompt = prompt.split("\nYour previous reply was:", 1)[0]
    lines = shown_lines(prompt)
    index = {m.group("id"): m.group(0) for m in INDEX_RE.finditer(prompt)}
    out = []
    for finding in FINDINGS:
        start, end = line_of(lines, finding["from"]), line_of(lines, finding["to"])
        if start is None or end is None:
            continue
        entry = dict(finding["entry"])
        if "supersedes" in finding:
            entry["supersedes"] = [
                i for i, line in index.items()
                if finding["supersedes"] in line and "superseded by" not in line
            ]  # fmt: skip
        entry["cites"] = [{"lines": f"L{start}-L{end}", "quote": finding["quote"]}]
        out.append(entry)
    return out


def invented(prompt: str) -> dict:
    """A proposal whose quote the source never says (it must be rejected)."""
    lines = shown_lines(prompt)
    first, last = lines[0][0], lines[-1][0]
    return {
        "type": "decision",
        "domain": "payments",
        "summary": "Payments move to Kafka next quarter.",
        "aliases": ["Kafka migration"],
        "questions": ["When do payments move to Kafka?"],
        "cites": [
            {
                "lines": f"L{first}-L{last}",
                "quote": "we will migrate everything to Kafka next quarter",
            }
        ],
    }


def respond(prompt: str, purpose: str) -> str:
    return json.dumps({"entries": proposals(prompt)})


def respond_inventing(prompt: str, purpose: str) -> str:
    return json.dumps({"entries": [*proposals(prompt), invented(prompt)]})

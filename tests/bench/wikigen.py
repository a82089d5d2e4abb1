"""A realistic synthetic wiki for benchmarks: entries written straight to disk with their log lines.

Entries look like a real team's: twenty domains, decisions with alternatives, incidents,
reflections, a tenth of decisions superseding an earlier one of their domain, bodies of a few
hundred to a few thousand characters. Writing files directly (then ``llm-wiki index``) builds 100k
entries in seconds instead of 100k CLI calls; the result verifies clean.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
from pathlib import Path

from llm_wiki.create import init_wiki
from llm_wiki.entries import Alternative, Entry, candidate_ids, dump_entry

DOMAINS = [
    "platform",
    "ledger",
    "payments",
    "security",
    "identity",
    "search",
    "billing",
    "mobile",
    "web",
    "data",
    "ml",
    "infra",
    "observability",
    "support",
    "compliance",
    "growth",
    "messaging",
    "storage",
    "networking",
    "release",
]
NOUNS = [
    "cache",
    "queue",
    "database",
    "cluster",
    "pipeline",
    "gateway",
    "scheduler",
    "index",
    "replica",
    "bucket",
    "broker",
    "token",
    "session",
    "webhook",
    "dashboard",
    "alert",
    "runbook",
    "migration",
    "schema",
    "endpoint",
    "worker",
    "cron job",
    "feature flag",
    "load balancer",
    "certificate",
    "secret",
    "backup",
    "snapshot",
    "partition",
    "shard",
]
TECH = [
    "Postgres",
    "Redis",
    "Kafka",
    "SQS",
    "Kubernetes",
    "Terraform",
    "Grafana",
    "Prometheus",
    "Elasticsearch",
    "S3",
    "CloudFront",
    "Lambda",
    "GraphQL",
    "gRPC",
    "OpenTelemetry",
    "Vault",
    "Keycloak",
    "Jenkins",
    "GitHub Actions",
    "Datadog",
    "Sentry",
    "ClickHouse",
]
VERBS = [
    "Adopt",
    "Replace",
    "Retire",
    "Introduce",
    "Standardise on",
    "Move",
    "Split",
    "Merge",
    "Limit",
    "Cache",
    "Encrypt",
    "Partition",
    "Throttle",
    "Monitor",
    "Automate",
]
INCIDENTS = [
    "{tech} {noun} ran out of disk during the nightly batch",
    "Latency spike on the {noun} after a {tech} upgrade",
    "Expired {noun} broke logins for two hours",
    "{tech} {noun} dropped messages under load",
    "A misconfigured {noun} exposed staging data to a test account",
]
FILLER = (
    "The team compared the options against cost, operational load and the risk of lock-in. "
    "We measured throughput on a staging copy and read the incident history of each option. "
    "The main constraint is that on-call stays small, so anything we run ourselves must be boring. "
    "Consequences: runbooks are updated, dashboards gain one panel, and the old path is removed "
    "after two release cycles. Open questions are tracked in the follow-up list. "
)
ACTORS = ["maria", "tomas", "priya", "lucas", "amara", "kenji", "dev-agent", "ops-agent"]


def make_entries(n: int, seed: int = 7, start: dt.date = dt.date(2023, 1, 1)) -> list[Entry]:
    rng = random.Random(seed)
    entries: list[Entry] = []
    by_domain: dict[str, list[str]] = {d: [] for d in DOMAINS}
    days = 365 * 3
    for i in range(n):
        day = start + dt.timedelta(days=int(days * i / max(n, 1)))
        domain = rng.choice(DOMAINS)
        tech, noun = rng.choice(TECH), rng.choice(NOUNS)
        kind = rng.choices(["decision", "incident", "reflection"], weights=[6, 3, 1])[0]
        if kind == "decision":
            summary = f"{rng.choice(VERBS)} {tech} for the {domain} {noun} ({i})"
            alts = tuple(
                Alternative(
                    f"{rng.choice(TECH).lower().replace(' ', '-')}-{k}",
                    f"{rng.choice(['too costly', 'more on-call load', 'weaker guarantees', 'vendor lock-in'])} for the {noun}",
                )
                for k in range(rng.randint(1, 3))
            )
        elif kind == "incident":
            summary = rng.choice(INCIDENTS).format(tech=tech, noun=noun) + f" ({i})"
            alts = ()
        else:
            summary = f"Pattern: {noun} problems in {domain} trace back to {tech} defaults ({i})"
            alts = ()
        supersedes: tuple[str, ...] = ()
        if kind == "decision" and by_domain[domain] and rng.random() < 0.1:
            supersedes = (rng.choice(by_domain[domain][-50:]),)
        body = FILLER * rng.randint(1, 6)
        entry = Entry(
            id="",
            type=kind,
            date=day.isoformat(),
            summary=summary,
            domain=domain,
            actors=tuple(rng.sample(ACTORS, rng.randint(1, 3))),
            tags=tuple(sorted({noun.replace(" ", "-"), tech.lower().replace(" ", "-"), domain})),
            alternatives_considered=alts,
            supersedes=supersedes,
            questions=(f"Why do we use {tech} for the {noun}?",) if kind == "decision" else (),
            body=f"## Context\n\n{body}\n\n## Decision\n\n{summary}.",
        )
        entry = Entry(**{**entry.__dict__, "id": next(candidate_ids(entry))})
        entries.append(entry)
        by_domain[domain].append(entry.id)
    return entries


def write_wiki(root: Path, entries: list[Entry]) -> Path:
    """Create a wiki at ``root`` holding ``entries`` (files + log lines, no index yet)."""
    init_wiki(root)
    lines = []
    for entry in entries:
        rel = entry.relpath
        data = dump_entry(entry).encode()
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o444)
        sha = hashlib.sha256(data).hexdigest()
        lines.append(
            f"{entry.date}T09:00:00Z write {entry.id} sha256={sha} scope={entry.scope} path={rel}\n"
        )
    with open(root / "log.md", "a") as fh:
        fh.writelines(lines)
    return root

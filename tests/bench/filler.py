"""Realistic synthetic filler for retrieval benchmarks, and fast builders for big wikis.

The filler reads like a busy engineering organisation's decision log: decisions (with rejected
alternatives), incidents, syntheses and reflections across many teams and domains, written
from the same technology vocabulary real ADRs use (AWS services, Terraform, Kubernetes,
Keycloak, queues, Lambdas, CI, metadata, uploads, ...), so it competes with real records
lexically rather than being noise a ranker can ignore. About 5% of decisions supersede an
earlier decision on the same topic; some entries carry aliases and questions.

Big wikis are built fast: entry files and log.md lines are written directly (the same bytes
``write.write_entry`` would write), then ``rebuild_index`` builds the catalog once. Built
wikis are cached under ``$LLM_WIKI_BENCH_CACHE`` (default ``/tmp/llm-wiki-bench-wt3``), keyed by
everything that shapes them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "_system"))

from llm_wiki import store  # noqa: E402
from llm_wiki.access import Viewer  # noqa: E402
from llm_wiki.create import init_wiki  # noqa: E402
from llm_wiki.entries import Alternative, Entry, candidate_ids, dump_entry  # noqa: E402
from llm_wiki.wiki import Wiki  # noqa: E402

CACHE = Path(os.environ.get("LLM_WIKI_BENCH_CACHE", "/tmp/llm-wiki-bench-wt3"))
TDR = REPO / "tests" / "data" / "corpora" / "nationalarchives__tdr-dev-documentation"

TEAMS = [
    "payments", "ledger", "identity", "platform", "data", "search", "mobile", "web", "billing",
    "notifications", "catalogue", "ingest", "export", "reporting", "security", "observability",
    "developer-experience", "networking", "storage", "ml", "support-tools", "partner-api",
    "archive", "transfer", "preservation", "metadata", "compliance", "finance", "hr-systems",
    "content",
]  # fmt: skip
SYSTEMS = [
    "consignment service", "upload pipeline", "export job", "checkout API", "user directory",
    "billing engine", "notification service", "search index", "reporting warehouse",
    "metadata store", "file check workers", "admin console", "partner gateway", "mobile app",
    "web frontend", "auth server", "audit log", "document store", "event bus", "batch scheduler",
    "transfer portal", "preservation system", "catalogue API", "review workflow",
    "CSV importer", "spreadsheet exporter", "thumbnail service", "virus scanner",
    "rate limiter", "feature flag service", "identity broker", "ledger service",
]  # fmt: skip
TECH = [
    "Postgres", "MySQL", "Aurora", "DynamoDB", "Redis", "Memcached", "Kafka", "SQS", "SNS",
    "EventBridge", "Step Functions", "Lambda", "ECS Fargate", "EKS", "Kubernetes", "Nomad",
    "Terraform", "CloudFormation", "Pulumi", "Jenkins", "GitHub Actions", "CircleCI",
    "GitLab CI", "Concourse", "Keycloak", "Cognito", "Auth0", "Okta", "Grafana", "Prometheus",
    "Datadog", "New Relic", "CloudWatch", "X-Ray", "OpenTelemetry", "Sentry", "Elasticsearch",
    "OpenSearch", "Solr", "S3", "CloudFront", "API Gateway", "nginx", "Envoy", "GraphQL",
    "REST", "gRPC", "Scala", "Play", "Akka", "Node.js", "Express", "React", "Vue", "Svelte",
    "Storybook", "Puppeteer", "Playwright", "Cypress", "Python", "Go", "Rust", "Java",
    "Spring Boot", "Django", "Flask", "FastAPI", "Rails", "Airflow", "dbt", "Snowflake",
    "BigQuery", "Redshift", "Athena", "Glue", "Vault", "Secrets Manager", "KMS", "Mergify",
    "Dependabot", "Renovate", "Scala Steward", "Slack", "PagerDuty", "Opsgenie", "GOV.UK Notify",
    "SendGrid", "SES", "Mailgun", "Twilio", "Stripe", "Adyen", "Apache POI", "FastExcel",
    "DROID", "Siegfried", "ClamAV", "Route 53", "WAF", "Shield", "Network Firewall", "VPC",
    "Transit Gateway", "Karpenter", "Argo CD", "Flux", "Helm", "Docker", "Podman",
]  # fmt: skip
# What each kind of work is usually done with: keeps "Use X for Y" plausible.
PURPOSES = {
    "background jobs": ["SQS", "Lambda", "Step Functions", "Airflow", "ECS Fargate", "Kafka"],
    "file checks": ["Lambda", "Step Functions", "SQS", "ECS Fargate", "ClamAV", "DROID"],
    "metadata validation": ["Scala", "Python", "Lambda", "FastAPI", "Play"],
    "user authentication": ["Keycloak", "Cognito", "Auth0", "Okta"],
    "session storage": ["Redis", "Memcached", "DynamoDB", "Postgres"],
    "rate limiting": ["Envoy", "nginx", "API Gateway", "Redis", "WAF"],
    "audit logging": ["CloudWatch", "OpenSearch", "S3", "Athena", "Kafka"],
    "feature flags": ["Redis", "Postgres", "DynamoDB", "Go"],
    "search": ["Elasticsearch", "OpenSearch", "Solr", "Postgres"],
    "reporting": ["Snowflake", "BigQuery", "Redshift", "Athena", "dbt", "Airflow"],
    "alerting": ["PagerDuty", "Opsgenie", "Grafana", "Prometheus", "CloudWatch", "Slack"],
    "tracing": ["X-Ray", "OpenTelemetry", "Datadog", "New Relic", "Sentry"],
    "deployments": ["GitHub Actions", "Jenkins", "Argo CD", "Flux", "Helm", "Concourse"],
    "infrastructure as code": ["Terraform", "CloudFormation", "Pulumi"],
    "dependency updates": ["Dependabot", "Renovate", "Scala Steward", "Mergify"],
    "email delivery": ["GOV.UK Notify", "SES", "SendGrid", "Mailgun"],
    "SMS delivery": ["GOV.UK Notify", "Twilio", "SNS"],
    "payments": ["Stripe", "Adyen", "Postgres"],
    "invoicing": ["Stripe", "Postgres", "Python"],
    "data exports": ["S3", "Glue", "Athena", "Step Functions", "Lambda"],
    "spreadsheet generation": ["Apache POI", "FastExcel", "Python"],
    "virus scanning": ["ClamAV", "Lambda", "ECS Fargate"],
    "checksum calculation": ["Lambda", "Go", "Rust", "ECS Fargate"],
    "format identification": ["DROID", "Siegfried", "Lambda"],
    "thumbnail generation": ["Lambda", "ECS Fargate", "Rust"],
    "caching": ["Redis", "Memcached", "CloudFront", "nginx"],
    "queueing": ["SQS", "SNS", "Kafka", "EventBridge", "Redis"],
    "service discovery": ["Envoy", "Kubernetes", "Route 53", "Nomad"],
    "secrets storage": ["Vault", "Secrets Manager", "KMS"],
    "encryption at rest": ["KMS", "Vault", "S3", "Aurora"],
    "access reviews": ["Okta", "Keycloak", "Python", "Slack"],
    "load testing": ["Go", "Python", "Playwright"],
    "UI component tests": ["Storybook", "Puppeteer", "Playwright", "Cypress", "React"],
    "end-to-end tests": ["Cypress", "Playwright", "Puppeteer", "Selenium"],
    "schema migrations": ["Postgres", "MySQL", "Aurora", "Flyway"],
    "backups": ["S3", "Aurora", "Postgres", "DynamoDB"],
    "disaster recovery": ["Route 53", "Aurora", "S3", "Terraform"],
    "log retention": ["CloudWatch", "OpenSearch", "S3", "Glue"],
    "cost reporting": ["Athena", "Snowflake", "BigQuery", "Grafana"],
    "egress control": ["Network Firewall", "Transit Gateway", "VPC", "nginx"],
    "upload authorisation": ["CloudFront", "Cognito", "API Gateway", "S3"],
    "consignment references": ["Postgres", "Scala", "Python"],
    "release versioning": ["Jenkins", "GitHub Actions", "Git"],
    "container hosting": ["EKS", "ECS Fargate", "Kubernetes", "Karpenter", "Docker"],
    "web frontends": ["Play", "React", "Vue", "Svelte", "Django", "Rails"],
    "APIs": ["GraphQL", "REST", "gRPC", "Akka", "Spring Boot", "FastAPI"],
}
REASONS = [
    "too expensive at our volume", "no support for multi-row transactions",
    "the team had no experience with it", "it would need a second store for reporting",
    "vendor lock-in we could not justify", "too slow to start for short jobs",
    "its licence changed", "the managed offering lacks the features we need",
    "it doubles the maintenance burden", "it does not integrate with our SSO",
    "the community is small and documentation thin", "it cannot run inside our VPC",
    "cold starts add seconds to every request", "it would block small jobs behind big ones",
    "latency above our budget in the spike", "it needs a cluster we would have to run",
    "pricing per GB ingested makes costs unpredictable", "no audit trail for changes",
    "security review found too broad permissions", "it duplicates what the platform provides",
]  # fmt: skip
SYMPTOMS = [
    "returned 500s", "dropped messages", "timed out", "double-charged customers",
    "stopped sending emails", "served stale data", "ran out of disk", "leaked memory",
    "rejected valid uploads", "lost its lock", "exhausted database connections",
    "failed every deploy", "throttled by the cloud provider", "filled the dead-letter queue",
]  # fmt: skip
CAUSES = [
    "a certificate expired", "a config change skipped review", "a migration locked a table",
    "the queue visibility timeout was shorter than the job", "a dependency update broke parsing",
    "an IAM policy was too narrow", "the retry storm overloaded the API", "a cron ran twice",
    "the cache TTL was set to a week", "a region outage", "a schema change was not backward "
    "compatible", "credentials were rotated without a restart", "disk alarms were muted",
]  # fmt: skip
PEOPLE = [
    "amira", "ben", "chen", "dara", "eli", "fatima", "gus", "hana", "ivan", "jo", "kofi",
    "lena", "mo", "nina", "oscar", "priya", "quinn", "rosa", "sam", "tariq", "uma", "vik",
    "wen", "xavi", "yara", "zoe", "dev-agent", "ops-agent",
]  # fmt: skip
CONTEXT = [
    "The {system} handles {purpose} for the {team} team and has grown beyond its first design.",
    "Incidents over the last quarter traced back to how the {system} does {purpose}.",
    "We need {purpose} for the {system} before the next release, and the current set-up "
    "does not scale.",
    "Costs for {purpose} doubled this year while usage of the {system} only grew a little.",
    "Auditors asked how the {system} controls access, and {purpose} was the weak point.",
    "Developers spend hours each week on {purpose} for the {system} by hand.",
    "The {team} team is moving the {system} to the shared platform and must choose how to do "
    "{purpose}.",
]  # fmt: skip
DECISION = [
    "We will use {tech} for {purpose} in the {system}.",
    "Move {purpose} in the {system} from {old} to {tech}.",
    "Keep {old} for {purpose}, and add {tech} in front of the {system}.",
    "Adopt {tech} for {purpose} across the {team} services, starting with the {system}.",
    "Retire {old} in the {system}; {tech} takes over {purpose}.",
    "Run {purpose} for the {system} on {tech}, managed by the platform team.",
]  # fmt: skip
CONSEQUENCE = [
    "Teams must migrate by the end of the quarter; the old path stays read-only until then.",
    "On-call gets a new runbook and an alarm on the age of the oldest message.",
    "We accept higher running costs in exchange for less maintenance.",
    "The {system} needs new IAM roles, reviewed by security.",
    "Terraform modules are updated and every environment is redeployed.",
    "Dashboards move to the shared observability stack.",
    "Documentation for {purpose} is rewritten and linked from the service catalogue.",
    "A spike showed a {n}x improvement in throughput on production-like data.",
]  # fmt: skip


def _pick(rng: random.Random, items: list[str]) -> str:
    return items[rng.randrange(len(items))]


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())[:40]


def _date(rng: random.Random) -> str:
    year = rng.choice([2018, 2019, 2020, 2021, 2022, 2023, 2024, 2025, 2026])
    month = rng.randint(1, 12 if year < 2026 else 10)
    return f"{year}-{month:02d}-{rng.randint(1, 28):02d}"


def filler_entries(count: int, seed: int = 7) -> list[Entry]:
    """``count`` realistic entries (ids minted as the writer would), oldest first."""
    rng = random.Random(seed)
    drafts: list[Entry] = []
    by_topic: dict[tuple[str, str], list[int]] = {}
    for _ in range(count):
        team = _pick(rng, TEAMS)
        system = _pick(rng, SYSTEMS)
        purpose = _pick(rng, list(PURPOSES))
        choices = PURPOSES[purpose]
        tech = _pick(rng, choices)
        old = _pick(rng, [t for t in choices if t != tech] or TECH)
        fill = {"team": team, "system": system, "purpose": purpose, "tech": tech, "old": old}
        roll = rng.random()
        context = _pick(rng, CONTEXT).format(**fill)
        consequences = " ".join(
            _pick(rng, CONSEQUENCE).format(n=rng.randint(2, 9), **fill)
            for _ in range(rng.randint(1, 3))
        )
        alternatives: tuple[Alternative, ...] = ()
        aliases: tuple[str, ...] = ()
        questions: tuple[str, ...] = ()
        if roll < 0.70:
            kind = "decision"
            summary = _pick(rng, DECISION).format(**fill)
            alts = rng.sample(choices, min(len(choices), rng.randint(1, 3)))
            alternatives = tuple(
                Alternative(_slug(a), _pick(rng, REASONS)) for a in alts if a not in (tech, old)
            ) or (Alternative(_slug(old), _pick(rng, REASONS)),)
            body = (
                f"## Context\n\n{context}\n\n## Decision\n\n{summary}\n\n"
                "## Options considered\n\n"
                + "\n".join(f"- {a.id}: {a.rejected_because}" for a in alternatives)
                + f"\n\n## Consequences\n\n{consequences}"
            )
            if rng.random() < 0.3:
                questions = (f"What do we use for {purpose} in the {system}?",)
            if rng.random() < 0.2:
                aliases = (f"{tech} {purpose}",)
        elif roll < 0.82:
            kind = "incident"
            symptom, cause = _pick(rng, SYMPTOMS), _pick(rng, CAUSES)
            hours = rng.randint(1, 9)
            summary = f"The {system} {symptom} for {hours} hours: {cause}"
            body = (
                f"## What happened\n\nDuring {purpose}, the {system} {symptom}. {context}\n\n"
                f"## Cause\n\n{cause.capitalize()}.\n\n## Follow-up\n\n{consequences}"
            )
        elif roll < 0.92:
            kind = "reflection"
            summary = (
                f"{purpose.capitalize()} keeps surprising the {team} team: {_pick(rng, REASONS)}"
            )
            body = f"{context} {consequences}"
        else:
            kind = "synthesis"
            summary = f"How the {team} team runs {purpose} today: {tech} for the {system}"
            body = f"{context}\n\nFindings: {consequences}"
        entry = Entry(
            id="",
            type=kind,
            date=_date(rng),
            summary=summary,
            domain=team,
            actors=tuple(rng.sample(PEOPLE, rng.randint(1, 3))),
            tags=tuple(dict.fromkeys(_slug(t) for t in (purpose, tech)))[: rng.randint(1, 2)],
            alternatives_considered=alternatives,
            aliases=aliases,
            questions=questions,
            body=body,
        )
        drafts.append(entry)
        if kind == "decision":
            by_topic.setdefault((team, purpose), []).append(len(drafts) - 1)
    drafts.sort(key=lambda e: e.date)
    # Mint ids in date order; a later decision on a topic supersedes an earlier one (~5%).
    out: list[Entry] = []
    latest: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    for entry in drafts:
        topic = (entry.domain, entry.tags[0] if entry.tags else "")
        if entry.type == "decision" and topic in latest and rng.random() < 0.06:
            entry = dataclasses.replace(entry, supersedes=(latest[topic],))
        entry_id = next(c for c in candidate_ids(entry) if c not in used)
        used.add(entry_id)
        entry = dataclasses.replace(entry, id=entry_id)
        if entry.type == "decision":
            latest[topic] = entry_id
        out.append(entry)
    return out


def write_fast(wiki: Wiki, entries: list[Entry]) -> None:
    """Write entry files and their log.md lines directly (the bytes write_entry would write)."""
    lines = []
    for entry in entries:
        data = dump_entry(entry).encode()
        path = wiki.root / entry.relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.chmod(path, 0o444)
        sha = store.sha256_bytes(data)
        lines.append(
            f"{entry.date}T09:00:00Z write {entry.id} sha256={sha} scope={entry.scope} "
            f"path={entry.relpath}"
        )
    with open(wiki.log_path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _key(*parts: object) -> str:
    digest = hashlib.sha256()
    package = REPO / "_system" / "llm_wiki"
    shaping = ("entries.py", "store.py", "wiki.py", "catalog/*.py", "adr/*.py")
    for path in [*(p for name in shaping for p in sorted(package.glob(name))), Path(__file__)]:
        digest.update(path.read_bytes())
    for part in parts:
        digest.update(str(part).encode())
    return digest.hexdigest()[:12]


def build_wiki(filler: int, *, with_dev: bool = True, seed: int = 7) -> Path:
    """A wiki holding ``filler`` synthetic entries plus (``with_dev``) the imported TDR records,
    built once and cached."""
    from llm_wiki.adr import import_adr
    from llm_wiki.catalog import rebuild_index

    root = CACHE / f"wiki-{filler}-{int(with_dev)}-{seed}-{_key(filler, with_dev, seed)}"
    if (root / ".built").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    init_wiki(root)
    wiki = Wiki(root)
    if filler:
        write_fast(wiki, filler_entries(filler, seed))
    rebuild_index(wiki)
    if with_dev:
        import_adr(wiki, TDR, viewer=Viewer.everyone(), domain="tdr")
    (root / ".built").write_text("ok\n")
    return root


if __name__ == "__main__":  # python tests/bench/filler.py 5  -> print a few entries
    for item in filler_entries(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(dump_entry(item))

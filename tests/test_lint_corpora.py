"""Lint on real records: both ADR folders imported, then one planted problem of each kind.

The untouched records must give at most 3 warnings and errors, each explained; every planted
problem must be found. Run with -s to see the figures.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import CORPORA, plant, write_args
from llm_wiki.backends import MockBackend

# What lint says about the untouched records, and why each is right.
EXPLAINED = {
    # cloud-platform's 030-AWS-root-user-security.md is headed "# 29 Kubernetes security config
    # auditing": the real repository copied 029's title into 030. The import keeps the record's
    # own words, so two active decisions say the same thing.
    ("warning", "near-duplicate"): 1,
}


@pytest.fixture(scope="module")
def corpora_wiki(tmp_path_factory):
    from conftest import Cli
    from llm_wiki.create import init_wiki

    path = tmp_path_factory.mktemp("corpora") / "wiki"
    init_wiki(path)
    cli = Cli(path)
    os.environ["LLM_WIKI_NOW"] = "2026-11-30"
    try:
        cli("import-adr", CORPORA / "nationalarchives__tdr-dev-documentation", "--domain", "tdr")
        cli(
            "import-adr",
            CORPORA / "ministryofjustice__cloud-platform",
            "--domain",
            "cloud-platform",
        )
    finally:
        del os.environ["LLM_WIKI_NOW"]
    return path


def serious(result):
    counts = {}
    for f in result["findings"]:
        if f["level"] != "info":
            counts[(f["level"], f["check"])] = counts.get((f["level"], f["check"]), 0) + 1
    return counts


def test_untouched_records(corpora_wiki, monkeypatch):
    from conftest import Cli

    monkeypatch.setenv("LLM_WIKI_NOW", "2026-11-30")
    result = Cli(corpora_wiki).json("lint")
    counts = serious(result)
    print(
        f"\nlint on {result['checked']} imported records: {result['counts']}; warnings and errors: {counts}"
    )
    assert counts == EXPLAINED
    assert sum(counts.values()) <= 3
    assert result["ok"]


def test_every_planted_problem_is_found(corpora_wiki, tmp_path, monkeypatch):
    import shutil

    from conftest import Cli

    wiki = tmp_path / "planted"
    shutil.copytree(corpora_wiki, wiki, ignore=shutil.ignore_patterns(".llm-wiki"))
    cli = Cli(wiki)
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-11-30")
    listed = cli.json("list", "--domain", "tdr", "--status", "active", "--limit", "200")["entries"]
    some = listed[0]["id"]
    planted = {}
    # schema: a type the schema does not have
    planted["schema"] = [
        plant(
            wiki,
            "2026-11-01-memo-aaaa",
            "2026-11-01",
            {"type": "memo", "summary": "A memo", "domain": "tdr"},
        )
    ]
    # broken supersedes
    planted["broken-supersedes"] = [
        plant(
            wiki,
            "2026-11-02-broken-bbbb",
            "2026-11-02",
            {
                "type": "incident",
                "summary": "Points nowhere",
                "domain": "tdr",
                "supersedes": "[2019-01-01-gone-cccc]",
            },
        )
    ]
    # a supersession cycle
    planted["supersedes-cycle"] = [
        plant(
            wiki,
            "2026-11-03-loop-a-dddd",
            "2026-11-03",
            {
                "type": "incident",
                "summary": "Loop A",
                "domain": "tdr",
                "supersedes": "[2026-11-03-loop-b-eeee]",
            },
        ),
        plant(
            wiki,
            "2026-11-03-loop-b-eeee",
            "2026-11-03",
            {
                "type": "incident",
                "summary": "Loop B",
                "domain": "tdr",
                "supersedes": "[2026-11-03-loop-a-dddd]",
            },
        ),
    ]
    # a tampered record and an unlogged one
    path = next((wiki / "entries").rglob(f"{some}.md"))
    os.chmod(path, 0o644)
    path.write_text(path.read_text().replace("Decision", "Decision (quietly edited)", 1))
    planted["tamper-edited"] = [some]
    stray = wiki / "entries/2026/11/2026-11-04-unlogged-ffff.md"
    stray.write_text(
        "---\nid: 2026-11-04-unlogged-ffff\ntype: incident\ndate: 2026-11-04\nsummary: Nobody logged me\ndomain: tdr\n---\n"
    )
    planted["tamper-unlogged"] = ["2026-11-04-unlogged-ffff"]
    # near-duplicate summaries in one domain
    a = cli.json(
        *write_args("Store uploaded files in S3 with KMS encryption", domain="tdr", tag=["s3"])
    )["id"]
    b = cli.json(
        *write_args(
            "Store uploaded files in S3 with KMS encryption.",
            domain="tdr",
            tag=["s3"],
            body="again",
        )
    )["id"]
    planted["near-duplicate"] = sorted([a, b])
    # an authored decision without alternatives
    planted["no-alternatives"] = [
        plant(
            wiki,
            "2026-11-05-no-alts-1111",
            "2026-11-05",
            {
                "type": "decision",
                "summary": "Chose a vendor without saying what else",
                "domain": "tdr",
                "origin": "authored",
            },
        )
    ]
    # an active authored entry past the review window
    planted["review-due"] = [
        cli.json(*write_args("Use Scala for backend checks", domain="tdr", date="2020-01-01"))["id"]
    ]
    # a synthesis resting on an entry that is then superseded
    basis = cli.json(*write_args("Run file checks in Lambda", domain="tdr", tag=["checks"]))["id"]
    synth = cli.json(
        "write",
        "--type",
        "synthesis",
        "--domain",
        "tdr",
        "--summary",
        "TDR today",
        "--origin",
        "consolidated",
        "--source",
        basis,
    )["id"]
    cli(
        *write_args(
            "Run file checks in Step Functions", domain="tdr", tag=["checks"], supersedes=basis
        )
    )
    planted["stale-synthesis"] = [synth]
    # a raw source nobody cites
    (wiki / "raw").mkdir()
    (wiki / "raw" / f"{'a' * 64}.md").write_text("a transcript nobody compiled\n")
    planted["raw-uncited"] = []
    # a domain used once that looks like a typo, and a lone tag
    planted["rare-domain"] = [
        cli.json(*write_args("Adopt Karpenter", domain="cloud-platfrom", tag=["karpenterr"]))["id"]
    ]
    # two entries that contradict each other (found with --with-llm)
    x = cli.json(
        *write_args(
            "Keep audit logs for 30 days",
            domain="tdr",
            tag=["audit"],
            body="Audit logs are kept for 30 days.",
        )
    )["id"]
    y = cli.json(
        *write_args(
            "Keep audit logs for seven years",
            domain="tdr",
            tag=["audit"],
            body="Audit logs are kept for 7 years.",
        )
    )["id"]
    planted["contradiction"] = sorted([x, y])
    (wiki / "settings.yaml").write_text("backend: mock\n")

    def respond(prompt, purpose):
        if x in prompt and y in prompt:
            return json.dumps(
                {
                    "contradictions": [
                        {"a": x, "a_says": "kept for 30 days", "b": y, "b_says": "kept for 7 years"}
                    ]
                }
            )
        return '{"contradictions": []}'

    MockBackend.enqueue(*[respond] * 50)
    result = cli.json("lint", "--with-llm", "--max-calls", "50", code=1)
    found: dict[str, list] = {}
    for f in result["findings"]:
        found.setdefault(f["check"], []).append(f)
    missed = []
    for check, ids in planted.items():
        hits = found.get(check, [])
        if not hits or (ids and not any(set(ids) <= set(f["ids"]) for f in hits)):
            missed.append(check)
    assert any(
        "cloud-platfrom" in f["message"] and f["level"] == "warning" for f in found["rare-domain"]
    )
    assert any("karpenterr" in f["message"] for f in found.get("rare-tag", []))
    print(
        f"\nplanted {len(planted) + 1} kinds of problem (rare tag included); found all but {missed}; "
        f"lint made {result['llm_calls']} LLM calls"
    )
    assert missed == []

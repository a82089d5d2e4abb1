"""How many synthetic filler entries answer the same question as a tdr-dev record does.

``test_retrieval.py::test_dev_records_mixed_into_filler`` counts a hit only when a TDR record is
in the first three. The filler (:mod:`filler`) draws every decision from 48 purposes, each
with two to six tools, several of them TDR's own choices (spreadsheet generation with Apache POI
or FastExcel, user authentication with Keycloak, Cognito or Auth0, tracing with X-Ray or
Datadog), so a question about one of those choices also meets many filler decisions making it.
This prints, for the tdr-dev questions about such a choice, how many filler entries name both
tools and how many are decisions for the question's tool with the rejected one named (each an
answer to the question in another team's words; a lower bound for tdr-19, which names only
Datadog, so any tracing decision away from it answers), beside how many of the real ADR records
in ``tests/data/corpora`` name both. With ``--recall`` it also runs the benchmark's eval on
:func:`filler.build_wiki` (lexical) and reports R@3 as the benchmark counts it and with those
answering decisions counted too. It changes nothing. Run:
``python tests/bench/filler_overlap.py [--recall] [10000 100000]``.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import filler  # noqa: E402

CORPORA = HERE.parent / "data" / "corpora"
# qid -> (the tool the TDR record chose, the tools the question names as rejected)
CHOICES = {
    "tdr-05": ("FastExcel", ("Apache POI",)),
    "tdr-16": ("Keycloak", ("Cognito", "Auth0")),
    "tdr-19": ("X-Ray", ("Datadog",)),
}


def _text(entry: filler.Entry) -> str:
    alternatives = " ".join(a.id.replace("-", " ") for a in entry.alternatives_considered)
    return f"{entry.summary} {entry.body} {alternatives}".lower()


def _decides_for(summary: str, tool: str) -> bool:
    """Whether a filler decision's summary (one of filler.DECISION's forms) chooses ``tool``
    ("keep X, and add Y" keeps both, so it does not count)."""
    s, t = summary.lower(), tool.lower()
    return (
        s.startswith((f"we will use {t} ", f"adopt {t} "))
        or s.endswith((f" to {t}.", f"on {t}, managed by the platform team."))
        or f"; {t} takes over" in s
    )


def _real_counts() -> tuple[int, dict[str, int]]:
    files = [p.read_text(encoding="utf-8", errors="replace").lower() for p in CORPORA.rglob("*.md")]
    counts = {
        qid: sum(1 for t in files if tool.lower() in t and any(r.lower() in t for r in rejected))
        for qid, (tool, rejected) in CHOICES.items()
    }
    return len(files), counts


def _named(row: Any) -> str:
    """A catalog row's summary and rejected alternatives, as words."""
    alternatives = " ".join(a.id.replace("-", " ") for a in row.alternatives)
    return f"{row.summary} {alternatives}".lower()


def recall(size: int) -> tuple[float, float]:
    """tdr-dev R@3 among ``size`` filler entries (lexical): as the benchmark counts it, and with a
    filler decision for the question's tool, the rejected one named, counted as an answer too."""
    import devsets

    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.evaluation import evaluate, source_stem
    from llm_wiki.wiki import Wiki

    root = filler.build_wiki(size)
    devsets.set_embeddings(root, False)
    wiki = Wiki(root)
    questions = {q["qid"]: q for q in devsets.questions("tdr-dev")}
    result = evaluate(wiki, Viewer.everyone(), str(devsets.EVAL / "tdr-dev.jsonl"), k=3)
    with read_catalog(wiki) as catalog:
        stem = {i: source_stem(s[0]) if s else i for i, s in catalog.sources(Viewer.everyone())}
        rows = {r.id: r for r in catalog.rows(Viewer.everyone())}
    strict = lenient = answerable = 0
    for got in result.results:
        relevant = questions[got.qid]["relevant"]
        if not relevant:
            continue
        answerable += 1
        top = got.ranked[:3]
        hit = any(stem.get(i, i) in relevant for i in top)
        tool, rejected = CHOICES.get(got.qid, ("", ()))
        answers = tool and any(
            i in rows
            and rows[i].domain != "tdr"
            and _decides_for(rows[i].summary, tool)
            and any(r.lower() in _named(rows[i]) for r in rejected)
            for i in top
        )
        strict += hit
        lenient += hit or bool(answers)
    return strict / answerable, lenient / answerable


def main() -> None:
    with_recall = "--recall" in sys.argv
    sizes = [int(a) for a in sys.argv[1:] if a != "--recall"] or [10_000, 100_000]
    records, real = _real_counts()
    tdr = [len(re.findall(r"\w+", p.read_text(encoding="utf-8"))) for p in filler.TDR.glob("*.md")]
    print(f"real ADR records in tests/data/corpora: {records}; TDR records average "
          f"{sum(tdr) / len(tdr):.0f} words")  # fmt: skip
    print("| filler | question | name both tools | decide for the question's tool, rejected one "
          "named | real records naming both |")  # fmt: skip
    print("|---|---|---|---|---|")
    for size in sizes:
        entries = filler.filler_entries(size)
        for qid, (tool, rejected) in CHOICES.items():
            both = [
                e for e in entries
                if tool.lower() in _text(e) and any(r.lower() in _text(e) for r in rejected)
            ]  # fmt: skip
            answering = [e for e in both if e.type == "decision" and _decides_for(e.summary, tool)]
            print(f"| {size:,} | {qid} | {len(both)} | {len(answering)} | {real[qid]} |")
        words = [len(re.findall(r"\w+", f"{e.summary} {e.body}")) for e in entries]
        per_purpose = Counter(e.tags[0] for e in entries if e.type == "decision" and e.tags)
        print(f"| {size:,} | (all) | filler entries average {sum(words) / len(words):.0f} words; "
              f"decisions per purpose tag {min(per_purpose.values())}-"
              f"{max(per_purpose.values())} | | |")  # fmt: skip
    if with_recall:
        clean = recall(0)[0]
        for size in sizes:
            strict, lenient = recall(size)
            print(f"tdr-dev R@3 among {size:,} filler entries: {strict:.3f} as the benchmark "
                  f"counts it, {lenient:.3f} with the answering decisions (clean {clean:.3f})")  # fmt: skip


if __name__ == "__main__":
    main()

"""Measuring retrieval: run a file of questions through steps 1-3 of the query flow (no answer
is generated) and score where the relevant entries land.

One question a line (JSON): ``{"qid", "question", "relevant": [names], "kind"}``. A name matches
an entry when it equals the entry's id, or the file-name stem of one of its sources (after any
``kind:`` prefix, before any ``#``): ``0007-s3-user-access`` matches
``sources: ["adr:0007-s3-user-access.md"]``. For ``kind: current`` the first name is the newest
decision and the rest are the records it replaced; ``kind: none`` has no relevant entry.

Metrics (answerable = every kind but ``none``):

- ``recall@1/3/5``: share of answerable questions with a relevant entry in the first 1/3/5;
- ``mrr``: mean reciprocal rank of the first relevant entry (0 when none is ranked);
- ``current@3``: share of ``current`` questions whose newest record is in the first 3;
- ``current_first``: share whose newest record ranks above every older relevant record;
- ``shortlist_recall``: share of answerable questions with a relevant entry among the lines the
  LLM is shown (the whole index, or what the prefilter kept);
- ``none_correct``: share of ``none`` questions answered "nothing found";
- ``false_none``: share of answerable questions wrongly answered "nothing found";
- ``mean_prompt_tokens``: mean size of the pick prompt (the lines and the question);
- with an LLM backend, ``llm_pick_fallbacks``: questions whose pick reply was unusable, so the
  ranker's order stood (each question's ``picked_by`` says which), and
  ``llm_answers_rejected``: answered questions whose LLM answer was not used (the extractive one
  was): how much of the figures is the offline machinery's rather than the model's.

A ``relevant`` name that no entry the reader may read matches is scored as a miss and listed in
``unmatched`` (the CLI warns); a ``kind`` outside :data:`KINDS` is warned about.

Answers, on questions that name ``"gold"`` sentences (a reason, an alternative, a date that a
right answer quotes): each such question is answered too (offline: the extractive answer), and

- ``answer_hit``: share of them whose answer contains at least one gold sentence (case,
  spacing and markdown marks aside), also ``answer_hit_by_kind``;
- ``answer_gold_share``: mean share of a question's gold sentences its answer contains.

The ranking scored is the picks (with the entries that replaced them) followed by the ranker's
order; offline the ranker alone. Recall counts the ranking even where the answer would say
"nothing found"; ``false_none`` reports those separately.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_wiki.access import Viewer
from llm_wiki.backends import Backend, get_backend
from llm_wiki.catalog import read_catalog
from llm_wiki.entries import decode_text
from llm_wiki.errors import InvalidInput
from llm_wiki.retrieve import answer_retrieved, budget_and_k, retrieve
from llm_wiki.wiki import Wiki

# What a question asks about (the dev sets' kinds): "current" is scored for order
# (current_first), "none" is one nothing answers; the others are reported as they are.
KINDS = ("why", "what-decided", "alternatives", "current", "past", "when", "none", "other")


@dataclass(frozen=True)
class EvalQuestion:
    qid: str
    question: str
    relevant: tuple[str, ...]
    kind: str
    gold: tuple[str, ...] = ()  # sentences (or alternatives, dates) a right answer contains


def load_questions(path: str | Path, warnings: list[str] | None = None) -> list[EvalQuestion]:
    """The questions of ``path``; what is odd but scorable (a kind none of :data:`KINDS`) goes
    to ``warnings``."""
    warnings = [] if warnings is None else warnings
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror}; check the path.") from None
    lines = decode_text(raw, str(path)).splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{path}:{n}: malformed JSON ({exc.msg}); fix the line.") from None
        if not isinstance(data, dict) or not isinstance(data.get("question"), str):
            raise InvalidInput(
                f'{path}:{n}: expected {{"qid", "question", "relevant": [...], "kind"}}.'
            )
        relevant = data.get("relevant") or []
        if not isinstance(relevant, list) or not all(isinstance(r, str) for r in relevant):
            raise InvalidInput(f"{path}:{n}: relevant must be a list of names.")
        kind = str(data.get("kind") or ("none" if not relevant else "other")).strip().lower()
        if kind not in KINDS:
            warnings.append(
                f"{path}:{n}: kind {kind!r} is none of {', '.join(KINDS)}: reported as it is, "
                "scored for neither order nor nothing found"
            )
        gold = data.get("gold") or []
        if isinstance(gold, str):
            gold = [gold]
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise InvalidInput(f"{path}:{n}: gold must be a list of sentences.")
        out.append(
            EvalQuestion(
                str(data.get("qid") or n), data["question"], tuple(relevant), kind, tuple(gold)
            )
        )
    if not out:
        raise InvalidInput(f"{path} holds no questions; one JSON object a line.")
    return out


def _plain(text: str) -> str:
    text = re.sub(r"[*_`]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", text)
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return " ".join(text.lower().split())


def contains(answer: str, gold: str) -> bool:
    """Whether ``answer`` holds the gold sentence (case, spacing and markdown marks aside)."""
    return _plain(gold) in _plain(answer)


def source_stem(source: str) -> str:
    """``adr:0007-x.md#L3`` -> ``0007-x``; ``raw/<sha>.txt#L1-L4`` -> ``<sha>``."""
    name = source.split("#", 1)[0]
    if ":" in name:
        name = name.split(":", 1)[1]
    name = name.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def resolve_names(wiki: Wiki, viewer: Viewer, names: set[str]) -> dict[str, set[str]]:
    """name -> ids of the visible entries it matches (by id or source stem)."""
    found: dict[str, set[str]] = {n: set() for n in names}
    with read_catalog(wiki) as catalog:
        for entry_id, sources in catalog.sources(viewer):
            if entry_id in found:
                found[entry_id].add(entry_id)
            for source in sources:
                stem = source_stem(source)
                if stem in found:
                    found[stem].add(entry_id)
    return found


@dataclass(frozen=True)
class QuestionResult:
    qid: str
    kind: str
    question: str
    relevant: tuple[str, ...]
    ranked: tuple[str, ...]
    rank: int | None  # 1-based rank of the first relevant entry
    newest_rank: int | None
    current_first: bool | None
    shortlist_hit: bool | None
    nothing_found: bool
    prompt_tokens: int
    gold_found: tuple[bool, ...] = ()  # per gold sentence: does the answer contain it
    answer: str = ""
    picked_by: str = "none"  # "llm" | "ranker" (offline, or the LLM's pick was unusable) | "none"
    answer_rejected: str = ""  # why the LLM's answer was not used (the extractive one was)

    @property
    def answer_hit(self) -> bool | None:
        return any(self.gold_found) if self.gold_found else None

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.gold_found:
            extra = {"answer_hit": self.answer_hit, "gold_found": list(self.gold_found)}
            extra["answer"] = self.answer
            extra["llm_answer_rejected"] = self.answer_rejected or None
        return extra | {
            "qid": self.qid,
            "kind": self.kind,
            "question": self.question,
            "relevant": list(self.relevant),
            "top": list(self.ranked[:5]),
            "picked_by": self.picked_by,
            "rank": self.rank,
            "newest_rank": self.newest_rank,
            "current_first": self.current_first,
            "shortlist_hit": self.shortlist_hit,
            "nothing_found": self.nothing_found,
            "prompt_tokens": self.prompt_tokens,
        }


@dataclass(frozen=True)
class EvalResult:
    k: int
    backend: str
    results: tuple[QuestionResult, ...]
    backend_source: str = ""  # where the backend's name came from (set by the Session)
    unmatched: tuple[str, ...] = ()  # relevant names no entry the reader may read matches
    warnings: tuple[str, ...] = ()  # from the questions file (see load_questions)
    backend_is_llm: bool = False
    ranking: str = ""  # "lexical only" or "lexical + semantic"

    def metrics(self) -> dict[str, Any]:
        answerable = [r for r in self.results if r.kind != "none"]
        nones = [r for r in self.results if r.kind == "none"]
        current = [r for r in self.results if r.kind == "current"]

        def share(items: list[QuestionResult], test: Any) -> float | None:
            return round(sum(1 for r in items if test(r)) / len(items), 4) if items else None

        def recall(at: int) -> float | None:
            return share(answerable, lambda r: r.rank is not None and r.rank <= at)

        mrr = (
            round(sum(1 / r.rank for r in answerable if r.rank) / len(answerable), 4)
            if answerable
            else None
        )
        answered = [r for r in self.results if r.gold_found]
        answers: dict[str, Any] = {}
        if answered:
            kinds = sorted({r.kind for r in answered})
            answers = {
                "answer_hit": share(answered, lambda r: bool(r.answer_hit)),
                "answer_gold_share": round(
                    sum(sum(r.gold_found) / len(r.gold_found) for r in answered) / len(answered),
                    4,
                ),
                "answer_hit_by_kind": {
                    kind: share(
                        [r for r in answered if r.kind == kind], lambda r: bool(r.answer_hit)
                    )
                    for kind in kinds
                },
            }
        return answers | {
            "n": len(self.results),
            "recall@1": recall(1),
            "recall@3": recall(3),
            "recall@5": recall(5),
            "mrr": mrr,
            "current@3": share(current, lambda r: r.newest_rank is not None and r.newest_rank <= 3),
            "current_first": share(current, lambda r: bool(r.current_first)),
            "shortlist_recall": share(answerable, lambda r: bool(r.shortlist_hit)),
            "none_correct": share(nones, lambda r: r.nothing_found),
            "false_none": share(answerable, lambda r: r.nothing_found),
            # with an LLM backend: questions whose pick fell back to the ranker (an unusable
            # reply), and answered ones whose LLM answer was not used (so the figures above are
            # partly the offline ranker's and the extractive answer's)
            "llm_pick_fallbacks": sum(1 for r in self.results if r.picked_by == "ranker")
            if self.backend_is_llm
            else None,
            "llm_answers_rejected": sum(1 for r in answered if r.answer_rejected)
            if self.backend_is_llm
            else None,
            "mean_prompt_tokens": round(
                sum(r.prompt_tokens for r in self.results) / len(self.results), 1
            )
            if self.results
            else 0,
        }

    def to_dict(self) -> dict[str, Any]:
        data = self.metrics()
        data["k"] = self.k
        data["ranking"] = self.ranking
        data["unmatched"] = list(self.unmatched)
        data["warnings"] = list(self.warnings)
        data["backend"] = self.backend
        data["backend_source"] = self.backend_source or None
        data["questions"] = [r.to_dict() for r in self.results]
        return data


def evaluate(
    wiki: Wiki,
    viewer: Viewer,
    path: str | Path,
    *,
    k: int | None = None,
    budget: int | None = None,
    backend: Backend | None = None,
) -> EvalResult:
    """Run every question of ``path`` through retrieval and score it (see the module doc);
    ``backend``: the wiki's own when None."""

    chosen = backend or get_backend(wiki)
    k, budget = budget_and_k(wiki, k, budget, chosen)  # fitted to the model's context window
    warned: list[str] = []
    questions = load_questions(path, warned)
    chosen.check()
    names = resolve_names(wiki, viewer, {n for q in questions for n in q.relevant})
    from llm_wiki.ranking.vectors import status  # deferred: settings read once, nothing heavy

    ranking_used = "lexical + semantic" if status(wiki).on else "lexical only"
    results = []
    with read_catalog(wiki) as catalog:
        for q in questions:
            got = retrieve(
                wiki,
                viewer,
                q.question,
                backend=chosen,
                k=k,
                budget=budget,
                shortlist=True,
                catalog=catalog,
            )
            ranked = got.ranked_ids
            relevant = set().union(*(names[n] for n in q.relevant)) if q.relevant else set()
            rank = next((i + 1 for i, e in enumerate(ranked) if e in relevant), None)
            newest_rank = current_first = None
            if q.relevant:
                newest = names[q.relevant[0]]
                newest_rank = next((i + 1 for i, e in enumerate(ranked) if e in newest), None)
                older = relevant - newest
                older_ranks = [i + 1 for i, e in enumerate(ranked) if e in older]
                current_first = newest_rank is not None and all(
                    newest_rank < o for o in older_ranks
                )
            shown = {r.id for r in got.shortlist}
            gold_found: tuple[bool, ...] = ()
            answer, rejected = "", ""
            if q.gold:
                answered = answer_retrieved(wiki, viewer, got, chosen, budget)
                answer, rejected = answered.answer, answered.rejected
                gold_found = tuple(contains(answer, g) for g in q.gold)
            results.append(
                QuestionResult(
                    qid=q.qid,
                    kind=q.kind,
                    question=q.question,
                    relevant=q.relevant,
                    ranked=tuple(ranked),
                    rank=rank,
                    newest_rank=newest_rank,
                    current_first=current_first if q.kind == "current" else None,
                    shortlist_hit=bool(relevant & shown) if q.relevant else None,
                    nothing_found=got.nothing_found,
                    prompt_tokens=got.tokens_in or got.pick_prompt_tokens,
                    gold_found=gold_found,
                    answer=answer,
                    picked_by=got.picked_by,
                    answer_rejected=rejected,
                )
            )
    return EvalResult(
        k=k,
        backend=chosen.name,
        results=tuple(results),
        unmatched=tuple(sorted(n for n, ids in names.items() if not ids)),
        ranking=ranking_used,
        warnings=tuple(warned),
        backend_is_llm=chosen.is_llm,
    )

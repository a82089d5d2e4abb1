"""Answering "what did we decide about X, and why?": an LLM reads index lines, opens a few entries,
and answers with checked citations. Every step has a bounded cost.

The flow (:func:`query`):

1. **Lines.** The viewer's index lines (the frontmatter *is* the index). If they all fit the
   token budget, the LLM reads them all; otherwise the ranker's order (BM25F over the fields
   and body, fused by rank with the semantic signal when the embeddings extra is on; see
   :mod:`llm_wiki.ranking`) keeps the best lines that fit. The pick prompt never exceeds the
   budget, whatever the archive's size.
2. **Pick.** The LLM names at most k entries. Names that were not among the lines it was shown
   are dropped; if none remain, the ranker's top k stand in, and the answer says so
   (``picked_by``: ``llm``, ``ranker``, or ``none`` when nothing was picked). An explicit empty
   list means the LLM found nothing relevant.
3. **Current state.** A picked entry that was superseded brings the entries that replaced it
   (following the chain to the newest): opened before it when the question asks about now,
   after it otherwise (so the answer can say it was superseded); a question about the old
   design also opens what a pick replaced, before it.
4. **Open.** Each opened entry goes into the answer prompt up to a per-entry cap: frontmatter and
   summary whole, the body excerpted (paragraphs that share the question's words first), so the
   whole prompt respects the budget even with 1 MiB bodies.
5. **Answer.** The LLM answers from the opened entries, citing ids. It counts as the LLM's
   answer (``mode: llm``) only when it cites opened entries, cites nothing else, and its
   numbers, dates and quotes occur in what it cites (:mod:`llm_wiki.citations`); otherwise the
   answer says the LLM's was not usable, and why, and gives the extractive answer instead.
   "NOTHING FOUND" from the LLM, or offline the ranker's :attr:`ranking.Ranking.nothing_found`, makes the
   answer say so.
6. **File back** (optional, LLM backends only): a passing answer drawn from one scope becomes a
   ``type: synthesis, origin: answer`` entry whose sources are the cited entries.

Offline (no key, no network) the ranker picks — its top k, leaving out any that would not
answer the question on its own (:meth:`ranking.Ranker.on_topic`) — and the answer quotes the
picked entries' summaries, saying it is extractive.

**Budgets.** The prompt budget (``--budget``, settings ``query.budget_tokens``) shrinks to
what the model's context window leaves after the answer's reply (:func:`budget_and_k`,
:func:`llm_wiki.backends.limits`), so a 4k-context local model gets prompts that fit it. The
answer reports the budgets it used (``budget``).

The ranker (lexical ranking, the shortlist of lines, the stop words) is :mod:`llm_wiki.ranking`.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from llm_wiki.access import Viewer, declared_scopes, scope_field
from llm_wiki.answers import Opened, compose
from llm_wiki.backends import Backend, call, estimate_tokens, get_backend, limits
from llm_wiki.catalog import Catalog, Row, read_catalog
from llm_wiki.entries import Entry, dump_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.prompts import json_object, render_prompt
from llm_wiki.ranking import (
    COSINE_FLOOR,
    HELD_FLOOR,
    MIN_LINE_TOKENS,
    Question,
    Ranker,
    Ranking,
    parse_question,
    shortlist_lines,
)
from llm_wiki.reads import read_entry
from llm_wiki.records import record
from llm_wiki.wiki import Wiki

MIN_BUDGET = 1000
DEFAULT_K = 3
DEFAULT_BUDGET = 8000
MAX_K = 20
RANKED_FOR_METRICS = 20
PICK_MAX_TOKENS = 300
ANSWER_MAX_TOKENS = 1024
NOTHING_FOUND = "NOTHING FOUND"


# --------------------------------------------------------------------------- retrieval


@record
class Source:
    """An entry shown to the user as opened or cited."""

    row: Row
    note: str = ""  # e.g. "replaces <id>" for a current entry opened because of a pick

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.row.id,
            "date": self.row.date,
            "type": self.row.type,
            "status": self.row.effective_status,
            "summary": self.row.summary,
            "path": self.row.path,
        }
        if self.row.superseded_by:
            data["superseded_by"] = list(self.row.superseded_by)
        if self.note:
            data["note"] = self.note
        return data


@record
class Retrieval:
    """Steps 1-3 of the flow for one question: what was shown, ranked, picked and opened."""

    question: Question
    ranking: Ranking
    shortlist: tuple[Row, ...]  # the lines the LLM is (or would be) shown
    prefiltered: bool
    total: int  # entries this reader can see
    picked: tuple[str, ...]
    opened: tuple[Source, ...]
    nothing_found: bool
    pick_prompt_tokens: int
    tokens_in: int = 0
    tokens_out: int = 0
    picked_by: str = "none"  # "llm" | "ranker" (offline, or the LLM's pick was unusable) | "none"
    llm_ok: int = 0  # LLM calls whose reply was used
    llm_failed: int = 0  # LLM calls whose reply was not usable

    @property
    def ranked_ids(self) -> list[str]:
        """Picks (with their current entries) first, then the ranker's order."""
        ids = [s.row.id for s in self.opened]
        ids += [r.row.id for r in self.ranking.items if r.row.id not in ids]
        return ids


def budget_and_k(
    wiki: Wiki, k: int | None, budget: int | None, backend: Backend | None = None
) -> tuple[int, int]:
    """k and the prompt budget: the flag, else settings, else the defaults; with an LLM
    ``backend``, the budget shrinks to what its model's context window leaves after the
    answer's reply."""
    k = int(k if k is not None else wiki.settings.get("query.k", DEFAULT_K))
    budget = int(
        budget if budget is not None else wiki.settings.get("query.budget_tokens", DEFAULT_BUDGET)
    )
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"--k {k} is out of range; use 1 to {MAX_K}.")
    if budget < MIN_BUDGET:
        raise InvalidInput(f"--budget {budget} is too small; use at least {MIN_BUDGET} tokens.")
    if backend is not None and backend.is_llm:
        fit = limits(wiki, backend)
        budget = fit.prompt_room(ANSWER_MAX_TOKENS, budget)
        if budget < MIN_BUDGET:
            raise InvalidInput(
                f"the {fit.context_window}-token context window of {backend.model} leaves "
                f"{budget} tokens for a query prompt; use a model with at least "
                f"{MIN_BUDGET + fit.reply_tokens(ANSWER_MAX_TOKENS) + 64} tokens of context."
            )
    return k, budget


def retrieve(
    wiki: Wiki,
    viewer: Viewer,
    question: str,
    *,
    backend: Backend,
    k: int = DEFAULT_K,
    budget: int = DEFAULT_BUDGET,
    shortlist: bool | None = None,
    catalog: Catalog | None = None,
) -> Retrieval:
    """Steps 1-3: lines, pick, current state. With an LLM backend the LLM picks from the lines;
    offline the ranker picks and the lines are built only when ``shortlist`` asks for them."""
    parsed = parse_question(question)
    if not parsed.text:
        raise InvalidInput('the question is empty; ask something, e.g. "Why Postgres?".')
    if catalog is None:
        with read_catalog(wiki) as opened_catalog:
            return retrieve(
                wiki,
                viewer,
                question,
                backend=backend,
                k=k,
                budget=budget,
                shortlist=shortlist,
                catalog=opened_catalog,
            )
    ranker = Ranker(catalog, viewer)
    want_lines = backend.is_llm or bool(shortlist)
    system = render_prompt("query_system.j2") if want_lines else ""
    allowance = 0
    if want_lines:
        empty = render_prompt(
            "query_pick.j2", question=parsed.text, lines=[], k=k, total=0, prefiltered=True
        )
        allowance = budget - estimate_tokens(system + "\n\n" + empty) - 8
        if allowance < MIN_LINE_TOKENS:
            raise InvalidInput(
                f"the question leaves no room for index lines in --budget {budget}; shorten it "
                "or raise --budget."
            )
    depth = max(RANKED_FOR_METRICS, k, allowance // MIN_LINE_TOKENS if want_lines else 0)
    ranking = ranker.rank(parsed, limit=min(depth, 2000))
    rows: tuple[Row, ...] = ()
    prefiltered = False
    total = ranker.visible()
    prompt_tokens = 0
    if want_lines:
        rows, prefiltered = shortlist_lines(catalog, viewer, ranking, allowance, total)
        prompt = render_prompt(
            "query_pick.j2",
            question=parsed.text,
            lines=[r.index_line("") for r in rows],
            k=k,
            total=total,
            prefiltered=prefiltered,
        )
        prompt_tokens = estimate_tokens(system + "\n\n" + prompt)
        assert prompt_tokens <= budget, (prompt_tokens, budget)

    tokens_in = tokens_out = 0
    picked_by = "none"
    if backend.is_llm and not rows:
        return Retrieval(parsed, ranking, rows, prefiltered, total, (), (), True, prompt_tokens)
    if backend.is_llm:
        shown = {r.id: r for r in rows}
        completion = call(
            wiki,
            backend,
            prompt,
            purpose="query.pick",
            scope=_call_scope(wiki, viewer, rows),
            system=system,
            max_tokens=PICK_MAX_TOKENS,
        )
        tokens_in, tokens_out = completion.tokens_in, completion.tokens_out
        ids, said_none = parse_pick(completion.text, shown, k)
        if said_none:
            return Retrieval(
                parsed, ranking, rows, prefiltered, total, (), (), True, prompt_tokens,
                tokens_in, tokens_out, "llm", 1, 0,
            )  # fmt: skip
        picks = [shown[i] for i in ids] or [r.row for r in ranking.items[:k]]
        nothing = not picks
        picked_by = "none" if nothing else "llm" if ids else "ranker"
    else:
        nothing = ranking.nothing_found
        leading = [r.row for r in ranking.items if not r.via][:k]
        # each quoted entry must answer the question on its own, as the best does
        picks = [r for r, ok in zip(leading, ranker.on_topic(ranking, leading), strict=True) if ok]
        picks = picks or leading[:1]
        picked_by = "ranker" if picks and not nothing else "none"
    opened = () if nothing else tuple(_with_replacements(ranker, picks, parsed.intent))
    return Retrieval(
        parsed,
        ranking,
        rows,
        prefiltered,
        total,
        tuple(r.id for r in picks),
        opened,
        nothing,
        prompt_tokens,
        tokens_in,
        tokens_out,
        picked_by,
        int(picked_by == "llm"),
        int(backend.is_llm and picked_by != "llm"),
    )


def parse_pick(text: str, shown: dict[str, Row], k: int) -> tuple[list[str], bool]:
    """The ids the LLM named (only those it was shown, at most k), and whether it explicitly
    named none."""
    named: list[str] = []
    explicit_none = False
    try:
        data: Any = json_object(text)
    except ValueError:
        data = None
    if data is not None and isinstance(data.get("ids"), list):
        named = [str(i).strip().strip("[]") for i in data["ids"]]
        explicit_none = not named
    if not named and not explicit_none:
        named = re.findall(r"[a-z0-9][a-z0-9-]*[a-z0-9]", text)
    kept = [i for i in dict.fromkeys(named) if i in shown][:k]
    return kept, explicit_none and not kept


def _with_replacements(ranker: Ranker, picks: Sequence[Row], intent: str = "") -> list[Source]:
    """The picks with the entries that replaced them, and notes on who replaced whom among
    them. A question about now opens each pick's replacements before it; a question about the
    old design opens what a pick replaced before it; any other opens the replacements right
    after the pick, so the answer can say it was superseded."""
    rows: list[Row] = []
    rivals: dict[str, set[str]] = {}  # a fork's current entries: each with the others

    def add(row: Row) -> None:
        if all(row.id != r.id for r in rows):
            rows.append(row)

    for row in picks:
        if intent == "present":
            group = [*ranker.replacements(row), row]
        elif intent == "past":
            group = [*ranker.predecessors(row), row, *ranker.replacements(row)]
        else:
            group = [row, *ranker.replacements(row)]
        for member in group:
            add(member)
        for old_id in row.supersedes:  # a pick that is one side of a fork: show the other
            old = ranker.catalog.get(old_id, ranker.viewer)
            if old is None or len(old.superseded_by) < 2:
                continue
            heads = [r for r in ranker.replacements(old) if not r.superseded_by]
            if len(heads) < 2:
                continue
            for head in heads:
                rivals.setdefault(head.id, set()).update(h.id for h in heads if h.id != head.id)
                add(head)
    opened = {r.id for r in rows}
    out = []
    for row in rows:
        notes = []
        replaced = [old for old in row.supersedes if old in opened]
        if replaced:
            notes.append("replaces " + ", ".join(replaced))
        if row.id in rivals:
            notes.append("forked: " + ", ".join(sorted(rivals[row.id])) + " also holds now")
        if row.superseded_by:
            notes.append("superseded by " + ", ".join(row.superseded_by))
        out.append(Source(row, "; ".join(notes)))
    return out


def _call_scope(wiki: Wiki, viewer: Viewer, rows: Iterable[Row]) -> str:
    """The scopes a query's LLM call is logged under: the entries its prompt holds and, behind
    walls, the reader's whole view (an admin's: every scope access.yaml grants). The question
    is the reader's, and its words and size are in the prompt: logged under the opened entries'
    scope alone, a reader of that scope saw when a reader of more scopes asked, and how much."""
    view = viewer.read if viewer.read is not None else declared_scopes(wiki) if viewer.walls else ()
    return scope_field([*view, *(r.scope for r in rows)])


# --------------------------------------------------------------------------- the answer


@record
class Citation:
    id: str
    source: Source | None  # None: not among the opened entries (flagged)

    def to_dict(self) -> dict[str, Any]:
        if self.source is None:
            return {"id": self.id, "opened": False, "problem": "not among the opened entries"}
        return {**self.source.to_dict(), "opened": True}


@record
class Answer:
    question: str
    answer: str
    cited: tuple[Citation, ...]
    opened: tuple[Source, ...]
    mode: str  # "llm" | "extractive" | "nothing-found"
    backend: str
    model: str
    tokens_in: int
    tokens_out: int
    filed: str | None = None  # id of the synthesis entry written by --file-back
    filed_note: str = ""  # why an answer was not filed back
    backend_source: str = ""  # where the backend's name came from (set by the Session)
    picked_by: str = "none"  # who picked the opened entries: "llm" | "ranker" | "none"
    rejected: str = ""  # why the LLM's answer was not used (then the answer is extractive)
    rejected_text: str = ""  # the LLM's answer that was not used
    llm_ok: int = 0  # LLM calls whose reply was used
    llm_failed: int = 0  # LLM calls whose reply was not usable
    budget: dict[str, Any] = dataclasses.field(default_factory=dict)  # the budgets it used
    # offline "nothing found": what it was decided on (Evidence.to_dict), else None
    why_nothing: dict[str, Any] | None = None

    @property
    def flagged(self) -> list[str]:
        return [c.id for c in self.cited if c.source is None]

    @property
    def llm_all_failed(self) -> bool:
        """The LLM was asked and none of its replies could be used (the command exits 1)."""
        return self.llm_failed > 0 and self.llm_ok == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "cited": [c.to_dict() for c in self.cited],
            "opened": [s.to_dict() for s in self.opened],
            "mode": self.mode,
            "picked_by": self.picked_by,
            "llm_answer_rejected": (
                {"reason": self.rejected, "text": self.rejected_text} if self.rejected else None
            ),
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "model": self.model,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "llm_outcome": {"ok": self.llm_ok, "failed": self.llm_failed},
            "budget": self.budget,
            "why_nothing": self.why_nothing,
        }


def query(
    wiki: Wiki,
    viewer: Viewer,
    question: str,
    *,
    k: int | None = None,
    budget: int | None = None,
    backend: Backend | None = None,
    file_back: bool = False,
) -> Answer:
    """The whole flow for one question (see the module doc); ``backend``: the wiki's own
    (:func:`llm_wiki.backends.get_backend`) when None."""
    chosen = backend or get_backend(wiki)
    k, budget = budget_and_k(wiki, k, budget, chosen)
    if file_back and not chosen.is_llm:
        raise InvalidInput(
            "--file-back needs an LLM backend (an extractive answer adds nothing); use "
            "--backend anthropic, claude-cli or openai."
        )
    chosen.check()
    got = retrieve(wiki, viewer, question, backend=chosen, k=k, budget=budget)
    return answer_retrieved(wiki, viewer, got, chosen, budget, file_back=file_back)


def answer_retrieved(
    wiki: Wiki,
    viewer: Viewer,
    got: Retrieval,
    chosen: Backend,
    budget: int,
    *,
    file_back: bool = False,
) -> Answer:
    """Step 5 for a question already retrieved: nothing found, the extractive answer offline, or
    the LLM's (``eval`` scores it against gold sentences)."""
    answer = _answer(wiki, viewer, got, chosen, budget, file_back)
    used: dict[str, Any] = {"prompt_tokens": budget, "pick_prompt_tokens": got.pick_prompt_tokens}
    if chosen.is_llm:
        fit = limits(wiki, chosen)
        used = {
            **used,
            "context_window": fit.context_window,
            "max_output": fit.max_output,
            "limits_from": fit.source,
            "reply_tokens": {
                "pick": fit.reply_tokens(PICK_MAX_TOKENS),
                "answer": fit.reply_tokens(ANSWER_MAX_TOKENS),
            },
            **answer.budget,
        }
    return dataclasses.replace(
        answer,
        picked_by=got.picked_by,
        llm_ok=got.llm_ok + answer.llm_ok,
        llm_failed=got.llm_failed + answer.llm_failed,
        budget=used,
    )


def _answer(
    wiki: Wiki,
    viewer: Viewer,
    got: Retrieval,
    chosen: Backend,
    budget: int,
    file_back: bool,
) -> Answer:
    if got.nothing_found:
        return Answer(
            question=got.question.text,
            answer=_nothing_text(got, chosen),
            cited=(),
            opened=got.opened,
            mode="nothing-found",
            backend=chosen.name,
            model=chosen.model,
            tokens_in=got.tokens_in,
            tokens_out=got.tokens_out,
            why_nothing=None if chosen.is_llm else _why_nothing(got),
        )
    if not chosen.is_llm:
        return _extractive(wiki, got, chosen)
    return _generated(wiki, viewer, got, chosen, budget, file_back)


def _why_nothing(got: Retrieval) -> dict[str, Any]:
    """For agents: the question as the ranker read it and the evidence "nothing found" rests on
    (names no entry mentions, the lexical share or the cosine, each with its floor)."""
    q = got.question
    return {
        "terms": list(q.terms),
        "intent": q.intent,
        "period": q.period,
        **got.ranking.evidence.to_dict(),
    }


def _nothing_text(got: Retrieval, backend: Backend) -> str:
    if backend.is_llm:
        return "Nothing found: no entry in the archive answers this question."
    if got.question.only_period and not got.ranking.items:
        return f"Nothing found: no entry is dated in {got.question.period}."
    if not got.question.terms:
        return "Nothing found: the question has no words to search for; ask about a topic."
    if not got.ranking.items:
        return "Nothing found: no entry shares a key word with the question."
    ev = got.ranking.evidence
    if ev.unseen:
        return (
            f"Nothing found: no entry mentions {_either(ev.unseen)}, which the question names. "
            "Try other words, or an LLM backend."
        )
    if ev.cosine is not None:
        return (
            "Nothing found: no entry's meaning comes close to the question (every cosine is "
            f"below {COSINE_FLOOR:.2f}). Try other words, or an LLM backend."
        )
    return (
        "Nothing found: no entry matches enough of the question's words (the best scores "
        f"{ev.held:.0%} of an entry holding each of them; {HELD_FLOOR:.0%} is needed). "
        "Try other words, or an LLM backend."
    )


def _either(things: Sequence[str], most: int = 5) -> str:
    """'a', 'b' or 'c' (past ``most`` of them: the first ones, then how many more)."""
    quoted = [f"'{t[:60]}'" for t in things[:most]]
    if len(things) > most:
        return ", ".join(quoted) + f" or {len(things) - most} more"
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _extractive(wiki: Wiki, got: Retrieval, backend: Backend, rejected: str = "") -> Answer:
    """Offline, or when the LLM's answer was not usable (``rejected`` says why): sentences
    quoted from the opened entries, chosen by what the question asks (:mod:`llm_wiki.answers`),
    each with its id; nothing generated."""
    opened = [
        Opened(read_entry(wiki, s.row)[0], s.row.effective_status, s.row.superseded_by)
        for s in got.opened
    ]
    composed = compose(got.question.text, got.question.terms, opened)
    why = (
        f"the LLM's answer was not usable ({rejected}), so sentences quoted from the entries"
        if rejected
        else "offline backend: sentences quoted from the entries"
    )
    lines = [
        f"Extractive answer ({why}, each with its id; no text was generated):",
        "",
        composed.text,
    ]
    by_id = {s.row.id: s for s in got.opened}
    lines += ["", "Entries opened:"]
    for source in got.opened:
        row = source.row
        status = "" if row.effective_status == "active" else f", {row.effective_status}"
        lines.append(f"- [{row.id}] ({row.date}, {row.type}{status}) {row.summary}")
        if row.superseded_by:
            lines.append(f"  Superseded by {', '.join(row.superseded_by)}.")
        if "forked: " in source.note:
            rivals = source.note.split("forked: ", 1)[1].split(" also holds now")[0]
            lines.append(f"  Forked: {rivals} supersedes the same entry and also holds now.")
        replaced = [old for old in row.supersedes if old in by_id]
        if replaced:
            lines.append(f"  It replaced {', '.join(replaced)}.")
    cited = [by_id[c] for c in composed.cited if c in by_id]
    cited += [s for s in got.opened if s.row.id not in composed.cited]
    return Answer(
        question=got.question.text,
        answer="\n".join(lines),
        cited=tuple(Citation(s.row.id, s) for s in cited),
        opened=got.opened,
        mode="extractive",
        backend=backend.name,
        model=backend.model,
        tokens_in=0,
        tokens_out=0,
    )


def _generated(
    wiki: Wiki,
    viewer: Viewer,
    got: Retrieval,
    backend: Backend,
    budget: int,
    file_back: bool,
) -> Answer:

    from llm_wiki.citations import extract_cited  # deferred: start-up (LLM answers only)

    entries = [(s, read_entry(wiki, s.row)[0]) for s in got.opened]
    system = render_prompt("query_system.j2")
    prompt = _answer_prompt(got.question, entries, budget - estimate_tokens(system + "\n\n"))
    completion = call(
        wiki,
        backend,
        prompt,
        purpose="query.answer",
        scope=_call_scope(wiki, viewer, [s.row for s in got.opened]),
        system=system,
        max_tokens=ANSWER_MAX_TOKENS,
    )
    tokens_in = got.tokens_in + completion.tokens_in
    tokens_out = got.tokens_out + completion.tokens_out
    text = completion.text.strip()
    if text.upper().startswith(NOTHING_FOUND):
        return Answer(
            got.question.text,
            "Nothing found: the opened entries do not answer this question.",
            (),
            got.opened,
            "nothing-found",
            backend.name,
            completion.model or backend.model,
            tokens_in,
            tokens_out,
            llm_ok=1,
            budget={"answer_prompt_tokens": estimate_tokens(system + "\n\n" + prompt)},
        )
    by_id = {s.row.id: s for s in got.opened}
    cited = tuple(Citation(c, by_id.get(c)) for c in extract_cited(text))
    used = {"answer_prompt_tokens": estimate_tokens(system + "\n\n" + prompt)}
    problem = _answer_problem(text, cited, dict(entries_by_id(entries)))
    if problem:
        fallback = _extractive(wiki, got, backend, rejected=problem)
        return dataclasses.replace(
            fallback,
            model=completion.model or backend.model,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            rejected=problem,
            rejected_text=text,
            llm_failed=1,
            budget=used,
            filed_note=f"Not filed back: the LLM's answer was not usable ({problem})."
            if file_back
            else "",
        )
    answer = Answer(
        got.question.text,
        text,
        cited,
        got.opened,
        "llm",
        backend.name,
        completion.model or backend.model,
        tokens_in,
        tokens_out,
        llm_ok=1,
        budget=used,
    )
    if file_back:
        answer = _file_back(wiki, viewer, answer, [e for _, e in entries])
    return answer


def entries_by_id(entries: Sequence[tuple[Source, Any]]) -> Iterable[tuple[str, Any]]:
    return ((s.row.id, e) for s, e in entries)


def _answer_problem(text: str, cited: Sequence[Citation], opened: dict[str, Entry]) -> str:
    """Why a generated answer cannot stand as the LLM's (empty: it can): it must cite opened
    entries, cite nothing else, and hold no number, date or quote its citations lack."""
    from llm_wiki.citations import check_facts, evidence_from_entry  # deferred: start-up

    if not text:
        return "the reply is empty"
    if not cited:
        return "it cites no entry"
    outside = [c.id for c in cited if c.source is None]
    if outside:
        return "it cites entries that were not opened: " + ", ".join(outside[:3])
    evidence = [evidence_from_entry(opened[c.id]) for c in cited if c.id in opened]
    problems = check_facts(text, evidence, strip=set(opened) | {c.id for c in cited})
    if problems:
        return "; ".join(p.detail for p in problems[:2])
    return ""


def _answer_prompt(question: Question, entries: Sequence[tuple[Source, Any]], budget: int) -> str:
    """The answer prompt with every entry capped so the whole stays within ``budget`` tokens."""

    def build(cap: int | None) -> str:
        items = [
            {"id": s.row.id, "note": s.note, "text": entry_text(e, cap, question.terms)}
            for s, e in entries
        ]
        return render_prompt("query_answer.j2", question=question.text, entries=items)

    full = build(None)
    if estimate_tokens(full) <= budget:
        return full
    overhead = estimate_tokens(render_prompt("query_answer.j2", question=question.text, entries=[
        {"id": s.row.id, "note": s.note, "text": ""} for s, _ in entries
    ]))  # fmt: skip
    cap = max(0, (budget - overhead) // max(1, len(entries)))
    while True:
        prompt = build(cap)
        if estimate_tokens(prompt) <= budget:
            return prompt
        if cap == 0:
            raise InvalidInput(
                f"the question is too long for --budget {budget}; shorten it or raise --budget."
            )
        cap = cap * 9 // 10


def entry_text(entry: Any, cap: int | None, terms: Sequence[str] = ()) -> str:
    """An entry as shown to the LLM: its frontmatter whole, its body excerpted to fit ``cap``
    tokens (paragraphs sharing the question's terms first, kept in their original order)."""

    head = dump_entry(dataclasses.replace(entry, body=""))
    if cap is None or estimate_tokens(head + entry.body) <= cap:
        return head + entry.body
    room = (cap - estimate_tokens(head) - 20) * 3  # bytes
    if room <= 0:
        return _cut(head, max(0, cap * 3 - 40)) + "\n[… frontmatter cut to fit the budget]"
    return head + excerpt(entry.body, room, terms)


def excerpt(body: str, room: int, terms: Sequence[str] = ()) -> str:
    """At most ``room`` UTF-8 bytes of ``body``: its opening, then the paragraphs that share the
    most terms, in their original order, with a note saying it was cut."""
    size = len(body.encode())
    note = f"\n[… body excerpted: about {room // 1024 or 1} KiB of {max(1, size // 1024)} KiB]"
    room -= len(note.encode())
    paras = body.split("\n\n")
    stems = [t[:5] for t in terms]

    def hits(p: str) -> int:
        low = p.lower()
        return sum(1 for s in stems if s in low)

    order = [0] + sorted(range(1, len(paras)), key=lambda i: (-hits(paras[i]), i))
    keep: set[int] = set()
    used = 0
    for i in order:
        cost = len(paras[i].encode()) + 2
        if used + cost <= room:
            keep.add(i)
            used += cost
        elif i == 0:
            paras[0] = _cut(paras[0], room)
            keep.add(0)
            used = room
            break
    text = "\n\n".join(paras[i] for i in sorted(keep))
    return text + note


def _cut(text: str, limit: int) -> str:
    data = text.encode()[: max(0, limit)]
    return data.decode("utf-8", "ignore")


# --------------------------------------------------------------------------- filing back


def _file_back(wiki: Wiki, viewer: Viewer, answer: Answer, opened: Sequence[Any]) -> Answer:
    """File a generated answer back as an entry, only if it passes the checks every LLM writer
    passes (:mod:`llm_wiki.citations`): it cites, cites only opened evidence of its one scope,
    and its numbers, dates and quotes occur in what it cites."""
    from llm_wiki.citations import (  # deferred: start-up (LLM answers only)
        Statement,
        check_statements,
        evidence_from_entry,
    )
    from llm_wiki.write import write_entry  # deferred: start-up (filing back only)

    cited = [c.source.row for c in answer.cited if c.source is not None]
    scopes = {s.row.scope for s in answer.opened}
    reason = ""
    if len(scopes) != 1:
        reason = "it draws on entries from more than one scope"
    else:
        statement = Statement(answer.answer, tuple(c.id for c in answer.cited))
        evidence = {e.id: evidence_from_entry(e) for e in opened}
        problems = check_statements([statement], evidence, scope=next(iter(scopes)))
        if problems:
            reason = "its citations do not pass: " + "; ".join(p.detail for p in problems[:3])
    if reason:
        return dataclasses.replace(answer, filed_note=f"Not filed back: {reason}.")
    scope = answer.opened[0].row.scope
    domain = Counter(r.domain for r in cited).most_common(1)[0][0]
    entry = Entry(
        id="",
        type="synthesis",
        date="",
        summary=_summary_of(answer.answer) or answer.question,
        domain=domain,
        scope=scope,
        origin="answer",
        questions=(answer.question,),
        sources=tuple(r.id for r in cited),
        body=answer.answer,
    )
    try:
        written = write_entry(wiki, entry, viewer=viewer)
    except WikiError as exc:  # e.g. this reader may only read that scope
        return dataclasses.replace(answer, filed_note=f"Not filed back: {exc.message}")
    return dataclasses.replace(answer, filed=written.id)


def _summary_of(text: str, limit: int = 300) -> str:
    text = " ".join(re.sub(r"\s*\[[a-z0-9-]+\]", "", text).split())
    match = re.search(r"(?<=[.!?])\s", text)
    if match:
        text = text[: match.start()]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0] + "…"
    return text.strip()

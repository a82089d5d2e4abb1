"""The nightly consolidation: each out-of-date (scope, domain) becomes one current synthesis.

A write never calls an LLM; it only changes the inputs of its (scope, domain). Whether a domain
is out of date is **derived**, never stored: the fingerprint of its active evidence entries (ids
and file hashes; generated entries are never evidence) is compared with the fingerprint recorded
on its current synthesis (``input_fingerprint``) and with the last SKIP logged in log.md for it.
A fresh clone, another machine or a deleted ``.llm-wiki/`` computes the same answer.

For each out-of-date domain, in an order that serves scopes round-robin within the run's
budget (``--max-calls``, ``--max-tokens``):

- a domain whose entries fit ``consolidate.chunk_tokens`` costs one call; a larger one is cut into
  chunks, each chunk's notes are cached under ``.llm-wiki/consolidate/`` by the chunk's
  fingerprint, and one combining call turns the notes into the synthesis;
- the reply is either SKIP (a line in log.md, no entry) or a synthesis whose statements each
  cite entries. :mod:`llm_wiki.citations` checks it, failing closed; one repair attempt gets the
  reasons; a second failure is recorded in ``synthesis-failures.md`` and the domain stays out of
  date (the previous synthesis stays current);
- a passing synthesis is written through :func:`write.write_entry` as ``type: synthesis``,
  ``origin: consolidated``, citing its sources and superseding the previous synthesis.

The chunk size and the previous synthesis shown as context shrink to fit the model's context
window after its reply (:func:`llm_wiki.backends.limits`); a prompt that still does not fit (a
repair quoting a long reply) fails that domain, recorded, without stopping the run. The result
counts the calls whose reply passed the checks (``llm_outcome``).

How a large domain is cut into chunks, and how their notes are cached: :mod:`llm_wiki.chunking`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import llm_wiki.backends as backends
import llm_wiki.clock as clock
import llm_wiki.progress as progress
import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.chunking import FORMAT, ChunkCache, make_chunks
from llm_wiki.citations import (
    CitationProblem,
    Evidence,
    Statement,
    check_facts,
    check_statements,
    cited_ids,
    evidence_from_entry,
)
from llm_wiki.domain_state import (  # re-exported: callers import them from here
    FINGERPRINT_FIELD,
    SKIP_OP,
    DomainState,
    domain_states,
)
from llm_wiki.entries import Entry
from llm_wiki.errors import BackendFailed, BackendUnavailable, InvalidInput, WikiError
from llm_wiki.failures import record_failure
from llm_wiki.prompts import entry_block, json_object, render_prompt
from llm_wiki.reads import read_entry
from llm_wiki.schema import check_entry
from llm_wiki.slugs import slugify
from llm_wiki.wiki import Wiki
from llm_wiki.write import write_entry

PREVIOUS_CHARS = 4000  # of the previous synthesis shown as context
MAX_NOTES = 12  # statements per chunk
TEMPLATE_TOKENS = 300  # the prompt templates' own words, around the entries
OUT_TOKENS = {"final": 4096, "chunk": 2048, "verify": 1024}
DEFAULTS = {
    "max_calls": 40,
    "max_tokens": 400_000,
    "chunk_tokens": 6000,
    "retries": 1,
    "retry_wait_seconds": 2,
    "verify_with_llm": True,  # with an LLM backend: the lexical check cannot see a wrong claim
}


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DomainResult:
    scope: str
    domain: str
    status: str  # written | skipped | failed | waiting (budget, backend) | planned (dry run)
    reason: str = ""
    entries: int = 0
    chunks: int = 0
    cached_chunks: int = 0
    calls: int = 0
    tokens: int = 0
    id: str | None = None
    path: str | None = None
    supersedes: tuple[str, ...] = ()
    statements: int = 0
    check_ms: float = 0.0
    problems: tuple[CitationProblem, ...] = ()  # why it failed, statement by statement
    verify_calls: int = 0  # of calls and tokens, those the LLM verification added
    verify_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["supersedes"] = list(self.supersedes)
        data["problems"] = [p.to_dict() for p in self.problems]
        data["check_ms"] = round(self.check_ms, 3)
        return data


@dataclass(frozen=True)
class ConsolidateResult:
    backend: str
    model: str
    method: str  # llm | extractive
    dry_run: bool
    max_calls: int
    max_tokens: int
    calls: int
    tokens: int
    domains: tuple[DomainResult, ...]
    up_to_date: int
    error: str | None = None  # the backend failed: the run stopped
    backend_source: str = ""  # where the backend's name came from (set by the Session)
    llm_ok: int = 0  # LLM calls whose reply passed the checks
    llm_failed: int = 0  # LLM calls that failed or whose reply did not pass
    limits: dict[str, Any] = field(default_factory=dict)  # the model's limits and chunk size used
    verify_with_llm: bool = False  # a second call checked each statement against its citations

    @property
    def verify_calls(self) -> int:
        return sum(d.verify_calls for d in self.domains)

    @property
    def verify_tokens(self) -> int:
        return sum(d.verify_tokens for d in self.domains)

    def count(self, status: str) -> int:
        return sum(1 for d in self.domains if d.status == status)

    @property
    def llm_all_failed(self) -> bool:
        """The LLM was asked and every domain it worked on failed (the command exits 1)."""
        done = self.count("written") + self.count("skipped")
        return self.method == "llm" and self.count("failed") > 0 and done == 0

    @property
    def all_failed(self) -> bool:
        """Every domain worked on failed its checks: the run did nothing, and must say so."""
        return bool(self.domains) and self.count("failed") == len(self.domains)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "model": self.model,
            "method": self.method,
            "dry_run": self.dry_run,
            "budget": {"max_calls": self.max_calls, "max_tokens": self.max_tokens},
            "calls": self.calls,
            "tokens": self.tokens,
            "up_to_date": self.up_to_date,
            "error": self.error,
            "llm_outcome": {"ok": self.llm_ok, "failed": self.llm_failed},
            "limits": self.limits,
            "verify": {
                "with_llm": self.verify_with_llm,
                "calls": self.verify_calls,
                "tokens": self.verify_tokens,
            },
            "domains": [d.to_dict() for d in self.domains],
        }


# --------------------------------------------------------------------------- the run


def consolidate(
    wiki: Wiki,
    viewer: Viewer,
    *,
    domain: str | None = None,
    all_domains: bool = False,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    dry_run: bool = False,
    verify_with_llm: bool | None = None,
    backend: backends.Backend | None = None,
) -> ConsolidateResult:
    """Bring out-of-date domains up to date (``all_domains``: every domain, from scratch).

    Uses the backend configured for the wiki; an unusable one raises BackendUnavailable before
    anything is done (it never falls back to offline). An offline backend writes extractive
    syntheses.
    """
    backend = backend or backends.get_backend(wiki)
    if not dry_run:  # a dry run calls nothing: its estimate needs no key
        backend.check()
    settings = _settings(wiki)
    budget = _Budget(
        int(max_calls if max_calls is not None else settings["max_calls"]),
        int(max_tokens if max_tokens is not None else settings["max_tokens"]),
    )
    if budget.max_calls < 0 or budget.max_tokens < 0:
        raise InvalidInput("--max-calls and --max-tokens must be 0 or more.")
    verify = bool(settings["verify_with_llm"] if verify_with_llm is None else verify_with_llm)
    run = _Run(
        wiki, viewer, backend, budget, settings, verify=verify, dry_run=dry_run, force=all_domains
    )
    if dry_run:
        return run.execute(_select(wiki, viewer, domain, all_domains, backend.is_llm))
    with store.locked(wiki, "consolidate", blocking=False) as got:
        if not got:
            raise WikiError(
                "another `llm-wiki consolidate` is running on this wiki; let it finish, or run "
                "again later."
            )
        return run.execute(_select(wiki, viewer, domain, all_domains, backend.is_llm))


def _settings(wiki: Wiki) -> dict[str, Any]:
    return {key: wiki.settings.get(f"consolidate.{key}", value) for key, value in DEFAULTS.items()}


@dataclass(frozen=True)
class _Selection:
    work: tuple[tuple[DomainState, str], ...]  # in serving order, with why each needs work
    up_to_date: tuple[DomainState, ...]


def _select(wiki: Wiki, viewer: Viewer, domain: str | None, force: bool, llm: bool) -> _Selection:
    states = domain_states(wiki, viewer)
    if domain is not None:
        states = [s for s in states if s.domain == domain]
        if not states:
            raise InvalidInput(
                f"no domain {domain!r} with entries you may consolidate; see the domains with "
                "`llm-wiki stats`."
            )
    work: dict[str, list[tuple[DomainState, str]]] = {}
    fresh = []
    for state in sorted(states, key=lambda s: (s.last_attempt, s.domain)):
        reason = "all domains requested (--all)" if force else state.out_of_date(llm=llm)
        if reason is None:
            fresh.append(state)
        else:
            work.setdefault(state.scope, []).append((state, reason))
    return _Selection(tuple(round_robin(work)), tuple(fresh))


def round_robin(queues: dict[str, list[Any]]) -> list[Any]:
    """One item of each scope in turn (scopes in name order), so no scope starves the rest."""
    out: list[Any] = []
    lists = [list(queues[k]) for k in sorted(queues)]
    depth = max((len(q) for q in lists), default=0)
    for i in range(depth):
        out.extend(q[i] for q in lists if i < len(q))
    return out


class _OutOfBudget(Exception):
    pass


class _BackendDown(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Failed(Exception):
    def __init__(self, problems: Sequence[CitationProblem], attempts: int) -> None:
        super().__init__(problems[0].detail if problems else "failed")
        self.problems = tuple(problems)
        self.attempts = attempts


@dataclass
class _Budget:
    max_calls: int
    max_tokens: int
    calls: int = 0
    tokens: int = 0

    def fits(self, tokens: int) -> bool:
        return self.calls < self.max_calls and self.tokens + tokens <= self.max_tokens

    def left(self) -> str:
        return f"{self.max_calls - self.calls} calls, {self.max_tokens - self.tokens} tokens left"


@dataclass
class _Tally:
    """What one domain cost."""

    calls: int = 0
    tokens: int = 0
    check_s: float = 0.0
    chunks: int = 0
    cached: int = 0
    verify_calls: int = 0  # of the calls and tokens above, those the LLM verification added
    verify_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """A parsed LLM reply: SKIP with a reason, or statements (with topics) and a title."""

    skip: str | None = None
    title: str = ""
    summary: str = ""
    statements: tuple[Statement, ...] = ()
    topics: tuple[str, ...] = ()


@dataclass
class _Domain:
    """One domain being consolidated: its entries as evidence, its previous synthesis."""

    state: DomainState
    entries: list[Entry]
    evidence: dict[str, Evidence]
    blocks: dict[str, str]
    previous: Entry | None
    tally: _Tally = field(default_factory=_Tally)
    cache: ChunkCache | None = None

    @functools.cached_property
    def sha(self) -> dict[str, str]:
        return {r.id: r.sha256 for r in self.state.evidence}


def _work_name(work: tuple[DomainState, str]) -> str:
    state = work[0]
    return state.domain if state.scope == "shared" else f"{state.scope}/{state.domain}"


class _Run:
    def __init__(
        self,
        wiki: Wiki,
        viewer: Viewer,
        backend: backends.Backend,
        budget: _Budget,
        settings: dict[str, Any],
        *,
        verify: bool,
        dry_run: bool,
        force: bool,
    ) -> None:
        self.wiki = wiki
        self.viewer = viewer
        self.backend = backend
        self.budget = budget
        self.settings = settings
        self.verify = verify
        self.dry_run = dry_run
        self.force = force
        self.chunk_tokens = max(200, int(settings["chunk_tokens"]))
        self.previous_chars = PREVIOUS_CHARS
        self.system = render_prompt("consolidate_system.j2") if backend.is_llm else ""
        self.error: str | None = None  # set when the backend fails: the run stops
        self.ok = self.failed = 0  # LLM calls whose reply passed / did not
        self.limits: dict[str, Any] = {}
        if backend.is_llm:
            self._fit_to(backends.limits(wiki, backend))

    def _fit_to(self, fit: backends.Limits) -> None:
        """Shrink the chunk size and the previous synthesis's excerpt so that the largest prompt
        (the final call: system, template, previous synthesis, entries) leaves room for its
        reply in the model's context window."""
        room = fit.prompt_room(OUT_TOKENS["final"]) - backends.estimate_tokens(self.system)
        room -= TEMPLATE_TOKENS
        self.previous_chars = min(PREVIOUS_CHARS, max(0, room // 4) * 3)  # a quarter at most
        self.chunk_tokens = max(200, min(self.chunk_tokens, room - self.previous_chars // 3))
        self.limits = {
            **fit.to_dict(),
            "chunk_tokens": self.chunk_tokens,
            "previous_chars": self.previous_chars,
            "reply_tokens": {k: fit.reply_tokens(v) for k, v in OUT_TOKENS.items()},
        }

    # -- the whole run
    def execute(self, selection: _Selection) -> ConsolidateResult:
        results: list[DomainResult] = []
        shown = progress.current()
        shown.task("consolidate", total=len(selection.work))
        for state, reason in shown.each(selection.work, _work_name):
            if self.error is not None:
                results.append(self._result(state, "waiting", "the backend failed earlier"))
            elif self.backend.is_llm and self.budget.calls >= self.budget.max_calls:
                results.append(self._result(state, "waiting", f"budget ({self.budget.left()})"))
            else:
                results.append(self.domain(state, reason))
        return ConsolidateResult(
            backend=self.backend.name,
            model=self.backend.model,
            method="llm" if self.backend.is_llm else "extractive",
            dry_run=self.dry_run,
            max_calls=self.budget.max_calls,
            max_tokens=self.budget.max_tokens,
            calls=self.budget.calls,
            tokens=self.budget.tokens,
            domains=tuple(results),
            up_to_date=len(selection.up_to_date),
            error=self.error,
            llm_ok=self.ok,
            llm_failed=self.failed,
            limits=self.limits,
            verify_with_llm=self.verify and self.backend.is_llm,
        )

    def _result(
        self, state: DomainState, status: str, reason: str, tally: _Tally | None = None, **kw: Any
    ) -> DomainResult:
        """A domain's result; with ``tally``, what the domain cost (chunks, calls, tokens)."""
        if tally is not None:
            kw.update(
                chunks=tally.chunks,
                cached_chunks=tally.cached,
                calls=tally.calls,
                tokens=tally.tokens,
                verify_calls=tally.verify_calls,
                verify_tokens=tally.verify_tokens,
            )
        return DomainResult(state.scope, state.domain, status, reason, len(state.evidence), **kw)

    # -- one domain
    def domain(self, state: DomainState, why: str) -> DomainResult:
        if not state.evidence:
            return self._skip(state, "no active evidence entries", _Tally(), why)
        work = self._load(state)
        tally = work.tally
        try:
            reply = self._synthesise(work) if self.backend.is_llm else self._extractive(work)
        except _OutOfBudget:
            return self._result(state, "waiting", f"budget ({self.budget.left()})", tally)
        except _Failed as exc:
            return self._failed(state, exc.problems, tally=tally, attempts=exc.attempts)
        except _BackendDown as exc:
            self.error = f"the {self.backend.name} backend failed: {exc.message}"
            problem = CitationProblem("backend-failed", "", exc.message)
            return self._failed(state, (problem,), tally=tally)
        if reply is None or self.dry_run:  # dry run: every call this domain needs was counted
            return self._result(state, "planned", why, tally)
        if reply.skip is not None:
            return self._skip(state, reply.skip, tally, why)
        entry = self._entry(work, reply)
        try:
            result = write_entry(self.wiki, entry, viewer=self.viewer)
        except WikiError as exc:  # e.g. its previous synthesis vanished meanwhile
            problem = CitationProblem("invalid-entry", "", exc.message)
            return self._failed(state, (problem,), tally=tally, attempts=1)
        if work.cache is not None:
            work.cache.prune(self._chunk_keys(work))
        return self._result(
            state,
            "written",
            why,
            tally,
            id=result.id,
            path=result.path,
            supersedes=entry.supersedes,
            statements=len(reply.statements),
            check_ms=tally.check_s * 1000,
        )

    def _load(self, state: DomainState) -> _Domain:
        entries = [read_entry(self.wiki, row)[0] for row in state.evidence]
        evidence = {e.id: evidence_from_entry(e) for e in entries}
        previous = read_entry(self.wiki, state.current[0])[0] if state.current else None
        for old in state.current:  # context, never evidence: citing one reads as "generated"
            evidence[old.id] = Evidence(old.id, old.scope, old.origin, old.summary)
        blocks = {e.id: entry_block(e) for e in entries}
        return _Domain(state, entries, evidence, blocks, previous)

    def _skip(self, state: DomainState, reason: str, tally: _Tally, why: str) -> DomainResult:
        reason = " ".join(reason.split())[:300] or "the model saw nothing worth synthesising"
        if not self.dry_run:
            store.log_op(
                self.wiki,
                SKIP_OP,
                state.domain,
                scope=state.scope,
                fingerprint=state.fingerprint,
                reason=reason,
            )
        return self._result(
            state,
            "skipped" if not self.dry_run else "planned",
            reason if not self.dry_run else why,
            tally,
            check_ms=tally.check_s * 1000,
        )

    def _failed(
        self,
        state: DomainState,
        problems: Sequence[CitationProblem],
        *,
        tally: _Tally,
        attempts: int = 0,
    ) -> DomainResult:
        if not self.dry_run:
            record_failure(
                self.wiki,
                state.scope,
                state.domain,
                problems,
                entries=len(state.evidence),
                fingerprint=state.fingerprint,
                attempts=attempts,
                method=self.backend.name,
            )
        return self._result(
            state,
            "failed",
            f"{problems[0].kind}: {problems[0].detail}",
            tally,
            problems=tuple(problems),
            check_ms=tally.check_s * 1000,
        )

    # -- extractive (offline)
    def _extractive(self, work: _Domain) -> Reply:
        """One cited statement per active entry (its own summary), grouped by tag."""
        groups: dict[str, list[Entry]] = {}
        for entry in work.entries:
            groups.setdefault(entry.tags[0] if entry.tags else "", []).append(entry)
        statements, topics = [], []
        for topic in sorted(groups, key=lambda t: (t == "", t)):
            for entry in groups[topic]:
                statements.append(Statement(entry.summary, (entry.id,)))
                topics.append(topic or "other")
        reply = Reply(
            title=f"{work.state.domain}: its active entries by tag",
            summary=(
                f"The {work.state.domain} domain's active entries, one statement each, grouped "
                "by tag (an extractive synthesis, made without an LLM)."
            ),
            statements=tuple(statements),
            topics=tuple(topics),
        )
        problems = self._check_final(work, reply)
        if problems:
            raise _Failed(problems, attempts=1)
        return reply

    # -- with an LLM
    def _synthesise(self, work: _Domain) -> Reply | None:
        ids = [e.id for e in work.entries]
        total = sum(backends.estimate_tokens(work.blocks[i]) for i in ids)
        previous = _previous_text(work.previous, self.previous_chars)
        if total <= self.chunk_tokens:
            work.tally.chunks = 1
            prompt = render_prompt(
                "consolidate_domain.j2",
                domain=work.state.domain,
                scope=work.state.scope,
                blocks=[work.blocks[i] for i in ids],
                previous=previous,
            )
            return self._ask(work, "consolidate", prompt, "final", self._check_final)
        chunks = make_chunks(ids, work.blocks, self.chunk_tokens)
        work.tally.chunks = len(chunks)
        cache = work.cache = ChunkCache(self.wiki, work.state.scope, work.state.domain)
        active = set(ids)
        notes: dict[tuple[str, tuple[str, ...]], tuple[str, Statement]] = {}
        leftovers: list[str] = []  # entries whose notes were dropped: shown whole to the combiner
        missing = False
        for number, members in enumerate(chunks, start=1):
            progress.current().detail(f"chunk {number}/{len(chunks)}")
            key = self._chunk_key(work, members)
            hit = None if self.force else cache.find(key, members, active, keep=not self.dry_run)
            if hit is not None:
                work.tally.cached += 1
                found, lost = hit
                leftovers += lost
            else:
                prompt = render_prompt(
                    "consolidate_chunk.j2",
                    domain=work.state.domain,
                    scope=work.state.scope,
                    part=number,
                    parts=len(chunks),
                    blocks=[work.blocks[i] for i in members],
                    max_notes=MAX_NOTES,
                )
                allowed = {i: work.evidence[i] for i in members}
                check = functools.partial(self._check_notes, allowed=allowed)
                reply = self._ask(work, "consolidate-chunk", prompt, "chunk", check)
                if reply is None:
                    missing = True
                    continue
                found = list(zip(reply.topics, reply.statements, strict=True))
                cache.put(key, members, found)
            for topic, statement in found:
                notes.setdefault((statement.text, statement.cites), (topic, statement))
        if not self.dry_run:
            cache.flush()
        if missing:  # dry run: the combining call's prompt is not known yet; estimate it
            guess = backends.estimate_tokens(previous) + 60 * MAX_NOTES * len(chunks)
            self._dry_call(work, guess, "final")
            self._dry_verify(work)
            return None
        prompt = render_prompt(
            "consolidate_combine.j2",
            domain=work.state.domain,
            scope=work.state.scope,
            entries=len(ids),
            parts=len(chunks),
            notes=[(topic, s.text, s.cites) for topic, s in notes.values()],
            leftovers=[work.blocks[i] for i in ids if i in set(leftovers)],
            previous=previous,
        )
        return self._ask(work, "consolidate-combine", prompt, "final", self._check_final)

    def _chunk_key(self, work: _Domain, members: Sequence[str]) -> str:
        """The chunk's fingerprint: its members' ids and file hashes, and the notes' format."""
        digest = hashlib.sha256(f"chunk {FORMAT}\n".encode())
        for entry_id in members:
            digest.update(f"{entry_id} {work.sha[entry_id]}\n".encode())
        return digest.hexdigest()

    def _chunk_keys(self, work: _Domain) -> set[str]:
        ids = [e.id for e in work.entries]
        return {self._chunk_key(work, m) for m in make_chunks(ids, work.blocks, self.chunk_tokens)}

    def _ask(
        self,
        work: _Domain,
        purpose: str,
        prompt: str,
        kind: str,
        check: Callable[[_Domain, Reply], list[CitationProblem]],
    ) -> Reply | None:
        """One call, checked; one repair with the reasons; else _Failed. None in a dry run."""
        if self.dry_run:
            self._dry_call(work, backends.estimate_tokens(prompt), kind)
            if kind == "final":
                self._dry_verify(work)
            return None
        text = self._call(work, purpose, prompt, kind)
        reply, problems = self._judge(work, text, check, kind)
        if not problems:
            self.ok += 1
            return reply
        self.failed += 1
        repair = render_prompt(
            "consolidate_repair.j2", prompt=prompt, reply=text.strip(), problems=problems
        )
        try:
            text = self._call(work, "consolidate-repair", repair, kind)
        except _Failed as exc:  # the repair does not fit the window: the first reasons stand
            raise _Failed([*problems, *exc.problems], attempts=1) from None
        reply, problems = self._judge(work, text, check, kind)
        if problems:
            self.failed += 1
            raise _Failed(problems, attempts=2)
        self.ok += 1
        return reply

    def _judge(
        self,
        work: _Domain,
        text: str,
        check: Callable[[_Domain, Reply], list[CitationProblem]],
        kind: str,
    ) -> tuple[Reply, list[CitationProblem]]:
        try:
            reply = parse_reply(text, final=kind == "final")
        except ValueError as exc:
            return Reply(), [CitationProblem("malformed", "", str(exc))]
        problems = check(work, reply)
        if not problems and kind == "final" and self.verify and reply.skip is None:
            problems = self._verify(work, reply)
        return reply, problems

    def _dry_call(self, work: _Domain, prompt_tokens: int, kind: str) -> None:
        cost = prompt_tokens + backends.estimate_tokens(self.system) + OUT_TOKENS[kind]
        if not self.budget.fits(cost):
            raise _OutOfBudget
        self.budget.calls += 1
        self.budget.tokens += cost
        work.tally.calls += 1
        work.tally.tokens += cost

    def _dry_verify(self, work: _Domain) -> None:
        """Dry run: the verifying calls a final reply brings, one per chunk of the evidence (as
        when each entry is cited once), so a run given the estimate can verify what it writes."""
        if not self.verify:
            return
        ids = [e.id for e in work.entries]
        for members in make_chunks(ids, work.blocks, self.chunk_tokens):
            calls, tokens = work.tally.calls, work.tally.tokens
            size = sum(backends.estimate_tokens(work.blocks[i]) for i in members)
            try:
                self._dry_call(work, size + TEMPLATE_TOKENS, "verify")
            finally:
                work.tally.verify_calls += work.tally.calls - calls
                work.tally.verify_tokens += work.tally.tokens - tokens

    def _call(self, work: _Domain, purpose: str, prompt: str, kind: str) -> str:
        """One completion within the budget; transport faults are retried, then _BackendDown."""
        out = OUT_TOKENS[kind]
        cost = backends.estimate_tokens(self.system + prompt) + out
        fit = backends.limits(self.wiki, self.backend)
        if fit.context_window - (cost - out) - backends.PROMPT_MARGIN < backends.MIN_REPLY:
            self.failed += 1  # never sent: counted as failed LLM work
            raise _Failed(
                [
                    CitationProblem(
                        "too-long",
                        "",
                        f"the {purpose} prompt (about {cost - out} tokens) does not fit the "
                        f"{fit.context_window}-token context window of {self.backend.model}",
                    )
                ],
                attempts=1,
            )
        attempts = 1 + max(0, int(self.settings["retries"]))
        for attempt in range(1, attempts + 1):
            if not self.budget.fits(cost):
                raise _OutOfBudget
            self.budget.calls += 1
            work.tally.calls += 1
            try:
                done = backends.call(
                    self.wiki,
                    self.backend,
                    prompt,
                    purpose=purpose,
                    scope=work.state.scope,
                    system=self.system,
                    max_tokens=out,
                )
            except BackendUnavailable as exc:
                self._spend(work, cost - out)
                self.failed += 1
                raise _BackendDown(exc.message) from None
            except BackendFailed as exc:
                self._spend(work, cost - out)
                if attempt == attempts:
                    self.failed += 1
                    raise _BackendDown(f"{exc.message} (after {attempts} attempts)") from None
                time.sleep(float(self.settings["retry_wait_seconds"]) * attempt)
                continue
            self._spend(work, done.tokens_in + done.tokens_out)
            return done.text
        raise AssertionError("unreachable")  # pragma: no cover

    def _spend(self, work: _Domain, tokens: int) -> None:
        self.budget.tokens += tokens
        work.tally.tokens += tokens

    # -- checks
    def _check_notes(
        self, work: _Domain, reply: Reply, allowed: dict[str, Evidence]
    ) -> list[CitationProblem]:
        if reply.skip is not None:
            return [
                CitationProblem(
                    "malformed", "", 'a part\'s notes cannot be SKIP; reply {"statements": []}'
                )
            ]
        start = time.perf_counter()
        try:
            return check_statements(reply.statements, allowed, scope=work.state.scope)
        finally:
            work.tally.check_s += time.perf_counter() - start

    def _check_final(self, work: _Domain, reply: Reply) -> list[CitationProblem]:
        if reply.skip is not None:
            return []
        start = time.perf_counter()
        try:
            problems = check_statements(reply.statements, work.evidence, scope=work.state.scope)
            cited = [
                work.evidence[i]
                for i in cited_ids(reply.statements)
                if i in work.evidence and not work.evidence[i].is_generated
            ]
            for text in (reply.title, reply.summary):
                problems += check_facts(text, cited, strip=set(work.evidence))
        finally:
            work.tally.check_s += time.perf_counter() - start
        if not problems:
            entry = self._entry(work, reply)
            for problem in check_entry(entry, self.wiki.schema):
                problems.append(CitationProblem("invalid-entry", "", problem.message))
        return problems

    def _verify(self, work: _Domain, reply: Reply) -> list[CitationProblem]:
        """Ask whether each statement is supported by its citations, in batches that keep each
        prompt within ``chunk_tokens``."""
        numbered = list(enumerate(reply.statements, start=1))
        batches: list[list[tuple[int, Statement]]] = [[]]
        shown: set[str] = set()
        size = 0
        for number, statement in numbered:
            new = [i for i in dict.fromkeys(statement.cites) if i in work.blocks and i not in shown]
            cost = sum(backends.estimate_tokens(work.blocks[i]) for i in new)
            if batches[-1] and size + cost > self.chunk_tokens:
                batches.append([])
                shown, size = set(), 0
                new = [i for i in dict.fromkeys(statement.cites) if i in work.blocks]
                cost = sum(backends.estimate_tokens(work.blocks[i]) for i in new)
            batches[-1].append((number, statement))
            shown.update(new)
            size += cost
        problems: list[CitationProblem] = []
        for batch in batches:
            problems += self._verify_batch(work, batch)
        return problems

    def _verify_batch(
        self, work: _Domain, batch: list[tuple[int, Statement]]
    ) -> list[CitationProblem]:
        ids = cited_ids(s for _, s in batch)
        prompt = render_prompt(
            "consolidate_verify.j2",
            domain=work.state.domain,
            scope=work.state.scope,
            statements=[(n, s.text, s.cites) for n, s in batch],
            blocks=[work.blocks[i] for i in ids if i in work.blocks],
        )
        calls, tokens = work.tally.calls, work.tally.tokens
        try:
            text = self._call(work, "consolidate-verify", prompt, "verify")
        finally:
            work.tally.verify_calls += work.tally.calls - calls
            work.tally.verify_tokens += work.tally.tokens - tokens
        by_number = dict(batch)
        try:
            data = json_object(text)
            flagged = data.get("unsupported")
            if not isinstance(flagged, list):
                raise ValueError("no 'unsupported' list")
            problems = []
            for item in flagged:
                number = int(item.get("statement", 0) if isinstance(item, dict) else item)
                reason = str(item.get("reason", "")) if isinstance(item, dict) else ""
                if number not in by_number:
                    raise ValueError(f"statement {number} was not asked about")
                problems.append(
                    CitationProblem(
                        "unsupported",
                        by_number[number].text,
                        f"the verifying call found statement {number} unsupported by its "
                        f"citations: {reason or 'no reason given'}",
                    )
                )
            self.ok += 1
            return problems
        except (ValueError, TypeError) as exc:
            self.failed += 1
            return [
                CitationProblem(
                    "unverified", "", f"the verifying call gave no usable verdict ({exc})"
                )
            ]

    # -- the entry
    def _entry(self, work: _Domain, reply: Reply) -> Entry:
        state = work.state
        method = "llm" if self.backend.is_llm else "extractive"
        extra: dict[str, Any] = {
            FINGERPRINT_FIELD: state.fingerprint,
            "input_entries": len(state.evidence),
            "method": method,
        }
        if self.backend.is_llm:
            extra["model"] = f"{self.backend.name}/{self.backend.model}"
        tags = tuple(dict.fromkeys(slugify(t, 40) for t in reply.topics if t and t != "other"))[:8]
        return Entry(
            id="",
            type="synthesis",
            date=clock.today().isoformat(),
            summary=" ".join(reply.summary.split()),
            domain=state.domain,
            status="active",
            scope=state.scope,
            origin="consolidated",
            tags=tags,
            supersedes=tuple(r.id for r in state.current),
            sources=tuple(sorted(cited_ids(reply.statements))),
            extra=tuple(sorted(extra.items())),
            body=synthesis_body(reply, state, method, self.backend),
        )


def synthesis_body(reply: Reply, state: DomainState, method: str, backend: backends.Backend) -> str:
    lines = [f"# {' '.join(reply.title.split())}", ""]
    if method == "extractive":
        lines += [
            "_Extractive synthesis (no LLM): each statement is an active entry's own summary._",
            "",
        ]
    lines += [" ".join(reply.summary.split()), ""]
    groups: dict[str, list[Statement]] = {}  # by topic, in the order topics first appear
    for topic, statement in zip(reply.topics, reply.statements, strict=True):
        groups.setdefault(topic or "Findings", []).append(statement)
    for topic, statements in groups.items():
        lines += [f"## {topic}", ""]
        lines += [f"- {' '.join(s.text.split())} [{', '.join(s.cites)}]" for s in statements]
        lines.append("")
    by = "extractively" if method == "extractive" else f"by {backend.name}/{backend.model}"
    count = len(state.evidence)
    lines += [
        "---",
        f"Consolidated {by} from {count} active {'entry' if count == 1 else 'entries'} of "
        f"{state.key}. Each statement cites the entries it rests on; this text is generated, "
        "never evidence.",
    ]
    return "\n".join(lines)


def _previous_text(previous: Entry | None, limit: int = PREVIOUS_CHARS) -> str:
    if previous is None or limit <= 0:
        return ""
    text = f"{previous.summary}\n\n{previous.body}".strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- replies


def parse_reply(text: str, *, final: bool = True) -> Reply:
    """A reply as :class:`Reply`; ValueError (with what is wrong) when malformed.

    ``SKIP: reason`` and ``{"skip": "reason"}`` are SKIP; otherwise ``{"title", "summary",
    "statements": [{"topic"?, "text", "cites": [ids]}]}`` (title and summary only when
    ``final``).
    """
    stripped = text.strip()
    if re.match(r"(?i)^skip\b", stripped):
        reason = re.sub(r"(?i)^skip\b[\s:.\-—]*", "", stripped, count=1)
        return Reply(skip=reason.strip() or "no reason given")
    data = json_object(text)
    skip = data.get("skip")
    if skip:
        return Reply(skip=str(data.get("reason") or "") if skip is True else str(skip))
    raw = data.get("statements")
    if not isinstance(raw, list):
        raise ValueError("the reply has no 'statements' list")
    statements, topics = [], []
    for n, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError(f"statements[{n}] needs a 'text' string")
        cites = item.get("cites", [])
        if isinstance(cites, str):
            cites = [cites]
        if not isinstance(cites, list) or not all(isinstance(c, str) for c in cites):
            raise ValueError(f"statements[{n}].cites must be a list of entry ids")
        statements.append(Statement(item["text"].strip(), tuple(c.strip() for c in cites)))
        topic = item.get("topic", "")
        topics.append(" ".join(str(topic).split()) if topic else "")
    title = data.get("title", "")
    summary = data.get("summary", "")
    if final:
        if not isinstance(title, str) or not title.strip():
            raise ValueError("the reply needs a 'title'")
        if not isinstance(summary, str) or not summary.strip():
            raise ValueError("the reply needs a one-sentence 'summary'")
        if not statements:
            raise ValueError('a synthesis needs statements; reply {"skip": "<why>"} instead')
    return Reply(
        title=str(title).strip(),
        summary=str(summary).strip(),
        statements=tuple(statements),
        topics=tuple(topics),
    )

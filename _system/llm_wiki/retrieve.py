"""Answering "what did we decide about X, and why?": an LLM reads index lines, opens a few entries,
and answers with checked citations. Every step has a bounded cost.

The flow (:func:`query`):

1. **Lines.** The viewer's index lines (the frontmatter *is* the index). If they all fit the
   token budget, the LLM reads them all; otherwise a lexical prefilter (FTS5 BM25 over summary,
   tags, aliases, questions, domain and body, weighted by :data:`WEIGHTS`) keeps the best lines
   that fit. The pick prompt never exceeds the budget, whatever the archive's size.
2. **Pick.** The LLM names at most k entries. Names that were not among the lines it was shown
   are dropped; if none remain, the ranker's top k stand in. An explicit empty list means the LLM
   found nothing relevant.
3. **Current state.** A picked entry that was superseded brings the entries that replaced it
   (following the chain to the newest), opened before it.
4. **Open.** Each opened entry goes into the answer prompt up to a per-entry cap: frontmatter and
   summary whole, the body excerpted (paragraphs that share the question's words first), so the
   whole prompt respects the budget even with 1 MiB bodies.
5. **Answer.** The LLM answers from the opened entries, citing ids; citations outside the opened
   set are flagged (:mod:`llm_wiki.citations`), never silently kept. "NOTHING FOUND" from the
   LLM, or offline a best match below :data:`NOTHING_BELOW`, makes the answer say so.
6. **File back** (optional, LLM backends only): a passing answer drawn from one scope becomes a
   ``type: synthesis, origin: answer`` entry whose sources are the cited entries.

Offline (no key, no network) the ranker picks — its top k, leaving out any whose own coverage is
under :data:`NOTHING_BELOW` — and the answer quotes the picked entries' summaries, saying it is
extractive.

**The ranker** (:class:`Ranker`, all in SQL/FTS5, never a scan of all rows in Python). Two
queries give candidates: FTS5 BM25 over the weighted columns (summary, tags, aliases,
questions, domain, body), and IDF-weighted *coverage* — the share of the question's key-term
weight an entry holds, a term in the head fields (summary, tags, aliases, questions) counting
extra. The score adds the two (:class:`Weights`, chosen by measurement on the dev questions
over clean, 10k and 100k archives). FTS5's ``bm25()`` counts every entry, hidden ones too, so
for a reader behind walls the score is coverage alone, computed from the reader's own entries:
what another scope holds cannot move what this reader sees. Then: for a question about the present ("now",
"currently", "still", "these days", ...) the leading candidates (within
:data:`TEMPORAL_BAND` of the best score) in the best one's domain are ordered newest first (a
newer record on the same words in the same domain is the likelier current state); and every
superseded entry is preceded by the entries that replaced it, so a replaced decision never
ranks above its replacement. Key terms are the question's words minus stop words and words
about deciding ("decide", "choose", "options", ...); FTS5's porter tokenizer stems both sides.

**Nothing found (offline).** The best match's *coverage* — the share of the question's key terms
(weighted by inverse document frequency among the entries the reader can see) that it contains —
must reach :data:`NOTHING_BELOW` (0.30); below it the answer says nothing was found. Set from
the dev questions: it refuses 2 of the 3 unanswerable ones, and 2 of the 27 answerable ones on
the clean archive (none in the 10k and 100k archives), both phrased in words the records do not
use. A lexical score cannot do better; an LLM backend says "nothing found" itself.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_wiki.access import Viewer, scope_field
from llm_wiki.backends import Backend, call, estimate_tokens, get_backend
from llm_wiki.catalog import Catalog, Row, read_catalog
from llm_wiki.citations import Statement, check_statements, evidence_from_entry, extract_cited
from llm_wiki.errors import InvalidInput
from llm_wiki.prompts import json_object, render_prompt
from llm_wiki.wiki import Wiki

NOTHING_BELOW = 0.30  # offline: best match's coverage of the question's key terms (dev set)
TEMPORAL_BAND = 0.7  # present-tense questions: newest first among scores >= this x the best
MIN_BUDGET = 1000
DEFAULT_K = 3
DEFAULT_BUDGET = 8000
MAX_K = 20
RANKED_FOR_METRICS = 20
MIN_LINE_TOKENS = 15  # no index line is shorter; lets a big archive skip summing its lines
PICK_MAX_TOKENS = 300
ANSWER_MAX_TOKENS = 1024
NOTHING_FOUND = "NOTHING FOUND"

_WORD_RE = re.compile(r"[^\W_]+")  # as FTS5's unicode61 tokenizer splits


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    """a an the and or of to in on for with without from by at as is are was were be been
    being do does did done doing have has had having it its it's this that these those there
    here we our ours us you your yours they them their he she his her i me my what which who
    whom whose why how when where whether if then than so such not no nor but also just only
    very can could should would will shall may might must about into over under again further
    once any all each few more most other some own same too s t don didn doesn isn aren wasn
    weren haven hasn hadn won wouldn shouldn couldn ve re ll d m get got gets make made
    one ones something anything thing things way ways lot"""
)
# How people ask about decisions, not what the decision is about.
_FRAME = _words(
    """decide decided decides deciding decision decisions choose chose chosen choosing choice
    pick picked picking agree agreed agreeing settle settled settling go went going
    option options alternative alternatives consider considered considering weigh weighed
    look looked looking instead rather reason reasons why"""
)
_TEMPORAL = _words("now currently current nowadays today still anymore latest presently newest")


# --------------------------------------------------------------------------- the question


@dataclass(frozen=True)
class Question:
    text: str
    terms: tuple[str, ...]  # key terms, in order, each once
    present: bool  # asks about the current state ("now", "still", "these days", ...)

    @property
    def match(self) -> str:
        """The FTS5 query: any key term."""
        return " OR ".join(_quote(t) for t in self.terms)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def parse_question(text: str) -> Question:
    words = [w.lower() for w in _WORD_RE.findall(text)]
    present = any(w in _TEMPORAL for w in words) or "these days" in " ".join(words)
    terms = tuple(
        dict.fromkeys(
            w
            for w in words
            if w not in _STOP
            and w not in _FRAME
            and w not in _TEMPORAL
            and (len(w) > 1 or w.isdigit())
        )
    )
    return Question(text=" ".join(text.split()), terms=terms, present=present)


# --------------------------------------------------------------------------- the ranker


@dataclass(frozen=True)
class Ranked:
    row: Row
    score: float  # higher is better (a pulled-in current entry takes its predecessor's)
    via: str = ""  # the superseded entry whose match brought this (current) entry in


@dataclass(frozen=True)
class Ranking:
    question: Question
    items: tuple[Ranked, ...]
    coverage: float  # of the best lexical match (0 when nothing matched)

    @property
    def nothing_found(self) -> bool:
        return not self.items or self.coverage < NOTHING_BELOW


@dataclass(frozen=True)
class Weights:
    """How the ranker weighs its evidence (measured in tests/bench/test_retrieval.py)."""

    columns: tuple[float, ...] = (2.0, 1.0, 2.0, 2.0, 0.5, 1.0)  # BM25: summary, tags,
    # aliases, questions, domain, body: the fields written to be found count twice the body
    head: float = 1.0  # coverage: a term in summary/tags/aliases/questions counts 1 + head
    bm25: float = 0.5  # share of the BM25 score (scaled to the best) added to coverage
    common: float = 0.2  # terms in more than this share of entries carry no coverage
    cover: float = 1.0  # weight of coverage (0: BM25 alone, for comparison)


WEIGHTS = Weights()
HEAD_COLUMNS = "{summary tags aliases questions}"
POOL = 200  # candidates taken from each of the two lexical queries


class Ranker:
    """Lexical ranking for one viewer over an open catalog (see the module doc).

    Two SQL queries give candidates: FTS5 BM25 over the weighted columns, and IDF-weighted
    *coverage* (the share of the question's key-term weight an entry holds, a term found in the
    head fields counting extra). BM25 alone lets short entries that repeat one or two of the
    words beat a long record that holds all of them; coverage alone ignores how central the
    words are. The score is ``coverage + weights.bm25 * bm25 / best bm25``.
    """

    def __init__(self, catalog: Catalog, viewer: Viewer, weights: Weights | None = None) -> None:
        self.catalog = catalog
        self.viewer = viewer
        self.weights = weights or WEIGHTS
        self._visible: int | None = None
        self._walls_ready = False
        self._idf: dict[str, tuple[float, int]] = {}

    def rank(self, question: Question, limit: int) -> Ranking:
        if not question.terms:
            return Ranking(question, (), 0.0)
        pool = max(limit, POOL)
        idf = self.idf(question.terms)
        # FTS5's bm25() counts every entry, hidden ones too; under walls the ranking uses only
        # statistics of the reader's own entries, so a hidden entry cannot move a visible one.
        bm25 = self._bm25(question, pool) if self.viewer.sees_all else {}
        covered = self._coverage_ranking(idf, pool) if self.weights.cover else {}
        if not bm25 and not covered:
            return Ranking(question, (), 0.0)
        best, floor = max(bm25.values(), default=0.0), min(bm25.values(), default=0.0)
        cover_floor = min(covered.values()) if covered else 0.0
        scores = {
            rowid: self.weights.cover * covered.get(rowid, cover_floor)
            + self.weights.bm25 * bm25.get(rowid, floor) / (best or 1.0)
            for rowid in bm25.keys() | covered.keys()
        }
        order = sorted(scores, key=lambda r: (-scores[r], -r))  # ties: the newer row first
        wanted = limit
        if question.present:  # the temporal band may reach past the limit
            cut = TEMPORAL_BAND * scores[order[0]]
            wanted = max(limit, sum(1 for r in order if scores[r] >= cut))
        rows = self._rows(order[:wanted])
        items = [Ranked(rows[r], scores[r]) for r in order[:wanted] if r in rows]
        if not items:
            return Ranking(question, (), 0.0)
        coverage = self.coverage(question, items[0].row, idf)
        if question.present:
            items = _newest_first_at_top(items)
        return Ranking(question, tuple(self.with_current(items)[:limit]), coverage)

    def _within(self, column: str) -> str:
        """A condition limiting ``column`` (a rowid) to this viewer's entries: under walls, a
        temporary table of the reader's rowids, built once per ranker. FTS5 queries are
        materialized first, so SQLite never drives a MATCH by that list."""
        if self.viewer.sees_all:
            return "1"
        if not self._walls_ready:
            clause, params = self.viewer.sql_filter()
            db = self.catalog.db
            db.execute("DROP TABLE IF EXISTS temp.llm_wiki_visible")
            db.execute("CREATE TEMP TABLE llm_wiki_visible(rowid INTEGER PRIMARY KEY)")
            db.execute(
                f"INSERT INTO temp.llm_wiki_visible SELECT rowid FROM entries WHERE {clause}",
                params,
            )
            self._walls_ready = True
        return f"{column} IN temp.llm_wiki_visible"

    def _bm25(self, question: Question, pool: int) -> dict[int, float]:
        """rowid -> BM25 (higher is better) of the ``pool`` best matches. Only for a reader
        who sees every entry: FTS5's statistics count them all."""
        assert self.viewer.sees_all
        weights = ", ".join(repr(float(w)) for w in self.weights.columns)
        cur = self.catalog.db.execute(
            f"SELECT rowid, -bm25(fts, {weights}) AS s FROM fts WHERE fts MATCH ? "
            "ORDER BY s DESC LIMIT ?",
            [question.match, pool],
        )
        return dict(cur.fetchall())

    def _rows(self, rowids: Sequence[int]) -> dict[int, Row]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        ids = [
            i for (i,) in self.catalog.db.execute(
                f"SELECT id FROM entries WHERE rowid IN ({marks})", list(rowids)
            )
        ]  # fmt: skip
        return {row.rowid: row for row in self.catalog.rows(self.viewer, ids=ids)}

    def idf(self, terms: Sequence[str]) -> dict[str, tuple[float, int]]:
        """term -> (IDF, document frequency), among the entries this viewer can see.

        A term no entry holds weighs as much as the rarest term that some entry holds: a
        question in other words should not look unanswerable just because of them. Counted once
        per term for the ranker's life, like :meth:`visible`.
        """
        for term in terms:
            if term not in self._idf:
                df = self._count(_quote(term))
                weight = math.log(1 + (self.visible() - max(df, 1) + 0.5) / (max(df, 1) + 0.5))
                self._idf[term] = (weight, df)
        return {term: self._idf[term] for term in terms}

    def _coverage_ranking(self, idf: dict[str, tuple[float, int]], pool: int) -> dict[int, float]:
        """rowid -> coverage score of the ``pool`` best entries by IDF-weighted coverage.

        Terms held by more than ``weights.common`` of the entries are left out (they say little
        and their long lists cost time) unless that would leave no term, or the reader is behind
        walls, where coverage is the whole score.
        """
        total = sum(w for w, _ in idf.values()) or 1.0
        common = max(self.weights.common * self.visible(), 1)
        present = {t: v for t, v in idf.items() if v[1]}
        terms = present
        if self.viewer.sees_all:  # under walls coverage is the only signal: keep every term
            terms = {t: v for t, v in present.items() if v[1] <= common} or present
        parts: list[str] = []
        args: list[Any] = []
        for term, (weight, _) in terms.items():
            parts.append("SELECT rowid, ? AS w FROM fts WHERE fts MATCH ?")
            args += [weight / total, _quote(term)]
            if self.weights.head:
                parts.append("SELECT rowid, ? AS w FROM fts WHERE fts MATCH ?")
                args += [self.weights.head * weight / total, f"{HEAD_COLUMNS}: {_quote(term)}"]
        if not parts:
            return {}
        union = " UNION ALL ".join(parts)
        source = f"({union})"
        if not self.viewer.sees_all:  # materialized, so the reader's list never drives MATCH
            source = f"m WHERE {self._within('rowid')}"
            union = f"WITH m AS MATERIALIZED ({union}) "
        else:
            union = ""
        sql = (
            f"{union}SELECT rowid, sum(w) AS s FROM {source} "
            "GROUP BY rowid ORDER BY s DESC, rowid DESC LIMIT ?"
        )
        return dict(self.catalog.db.execute(sql, [*args, pool]).fetchall())

    def coverage(
        self, question: Question, row: Row, idf: dict[str, tuple[float, int]] | None = None
    ) -> float:
        """Share of the question's key-term weight (IDF among visible entries) found in ``row``
        (any field): the offline "nothing found" test."""
        idf = idf or self.idf(question.terms)
        total = sum(w for w, _ in idf.values())
        found = sum(
            w
            for term, (w, df) in idf.items()
            if df
            and self.catalog.db.execute(
                "SELECT 1 FROM fts WHERE fts MATCH ? AND rowid = ?", (_quote(term), row.rowid)
            ).fetchone()
        )
        return found / total if total else 0.0

    def visible(self) -> int:
        if self._visible is None:
            self._visible = self.catalog.count(self.viewer)
        return self._visible

    def _count(self, match: str) -> int:
        if self.viewer.sees_all:
            sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
        else:
            sql = (
                "WITH m AS MATERIALIZED (SELECT rowid AS r FROM fts WHERE fts MATCH ?) "
                f"SELECT count(*) FROM m WHERE {self._within('r')}"
            )
        return int(self.catalog.db.execute(sql, [match]).fetchone()[0])

    def with_current(self, items: Iterable[Ranked]) -> list[Ranked]:
        """Each superseded entry preceded by the entries that replaced it (newest first)."""
        out: list[Ranked] = []
        seen: set[str] = set()
        for item in items:
            if item.row.id in seen:
                continue
            for newer in self.replacements(item.row):
                if newer.id not in seen:
                    seen.add(newer.id)
                    out.append(Ranked(newer, item.score, via=item.row.id))
            seen.add(item.row.id)
            out.append(item)
        return out

    def replacements(self, row: Row) -> list[Row]:
        """Every visible entry that (transitively) replaced ``row``, the current ones first."""
        found: dict[str, Row] = {}
        todo = list(row.superseded_by)
        while todo:
            entry_id = todo.pop()
            if entry_id in found or entry_id == row.id:
                continue
            newer = self.catalog.get(entry_id, self.viewer)
            if newer is None:
                continue
            found[entry_id] = newer
            todo.extend(newer.superseded_by)
        return sorted(found.values(), key=lambda r: (bool(r.superseded_by), _neg_date(r.date)))


def _neg_date(day: str) -> tuple[int, ...]:
    return tuple(-int(p) for p in day.split("-") if p.isdigit())


def _newest_first_at_top(items: list[Ranked]) -> list[Ranked]:
    """For a question about the present: among the leading candidates (scores within
    TEMPORAL_BAND of the best) in the best one's domain, newest first. They keep the places
    they held, so entries of other domains do not move."""
    cut = TEMPORAL_BAND * items[0].score
    size = next((n for n, i in enumerate(items) if i.score < cut), len(items))
    domain = items[0].row.domain
    places = [n for n in range(size) if items[n].row.domain == domain]
    newest = sorted((items[n] for n in places), key=lambda i: i.row.date, reverse=True)
    out = list(items)
    for n, item in zip(places, newest, strict=True):
        out[n] = item
    return out


# --------------------------------------------------------------------------- prompts


def _line(row: Row) -> str:
    return row.index_line("")


def _line_tokens(row: Row) -> int:
    return estimate_tokens(_line(row) + "\n")


# --------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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

    @property
    def ranked_ids(self) -> list[str]:
        """Picks (with their current entries) first, then the ranker's order."""
        ids = [s.row.id for s in self.opened]
        ids += [r.row.id for r in self.ranking.items if r.row.id not in ids]
        return ids


def budget_and_k(wiki: Wiki, k: int | None, budget: int | None) -> tuple[int, int]:
    k = int(k if k is not None else wiki.settings.get("query.k", DEFAULT_K))
    budget = int(
        budget if budget is not None else wiki.settings.get("query.budget_tokens", DEFAULT_BUDGET)
    )
    if not 1 <= k <= MAX_K:
        raise InvalidInput(f"--k {k} is out of range; use 1 to {MAX_K}.")
    if budget < MIN_BUDGET:
        raise InvalidInput(f"--budget {budget} is too small; use at least {MIN_BUDGET} tokens.")
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
            lines=[_line(r) for r in rows],
            k=k,
            total=total,
            prefiltered=prefiltered,
        )
        prompt_tokens = estimate_tokens(system + "\n\n" + prompt)
        assert prompt_tokens <= budget, (prompt_tokens, budget)

    tokens_in = tokens_out = 0
    if backend.is_llm and not rows:
        return Retrieval(parsed, ranking, rows, prefiltered, total, (), (), True, prompt_tokens)
    if backend.is_llm:
        shown = {r.id: r for r in rows}
        completion = call(
            wiki,
            backend,
            prompt,
            purpose="query.pick",
            scope=_scopes(rows),
            system=system,
            max_tokens=PICK_MAX_TOKENS,
        )
        tokens_in, tokens_out = completion.tokens_in, completion.tokens_out
        ids, said_none = parse_pick(completion.text, shown, k)
        if said_none:
            return Retrieval(
                parsed, ranking, rows, prefiltered, total, (), (), True, prompt_tokens,
                tokens_in, tokens_out,
            )  # fmt: skip
        picks = [shown[i] for i in ids] or [r.row for r in ranking.items[:k]]
        nothing = not picks
    else:
        nothing = ranking.nothing_found
        picks = [  # each quoted entry must answer the question on its own, as the best does
            r.row
            for r in ranking.items[:k]
            if r.via or ranker.coverage(parsed, r.row) >= NOTHING_BELOW
        ]
    opened = () if nothing else tuple(_with_replacements(ranker, picks))
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
    )


def shortlist_lines(
    catalog: Catalog, viewer: Viewer, ranking: Ranking, allowance: int, total: int
) -> tuple[tuple[Row, ...], bool]:
    """All the viewer's lines if they fit ``allowance`` tokens, else the best-ranked that fit."""
    if total * MIN_LINE_TOKENS <= allowance:
        rows = catalog.rows(viewer)
        if sum(_line_tokens(r) for r in rows) <= allowance:
            return tuple(rows), False
    chosen: list[Row] = []
    used = 0
    for item in ranking.items:
        cost = _line_tokens(item.row)
        if used + cost > allowance:
            if item.via:
                continue  # a replacement line that does not fit; smaller ones may follow
            break
        chosen.append(item.row)
        used += cost
    return tuple(chosen), True


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


def _with_replacements(ranker: Ranker, picks: Sequence[Row]) -> list[Source]:
    """The picks, each preceded by the entries that replaced it, with notes on who replaced
    whom among them."""
    rows: list[Row] = []
    for row in picks:
        for newer in [*ranker.replacements(row), row]:
            if all(newer.id != r.id for r in rows):
                rows.append(newer)
    opened = {r.id for r in rows}
    out = []
    for row in rows:
        notes = []
        replaced = [old for old in row.supersedes if old in opened]
        if replaced:
            notes.append("replaces " + ", ".join(replaced))
        if row.superseded_by:
            notes.append("superseded by " + ", ".join(row.superseded_by))
        out.append(Source(row, "; ".join(notes)))
    return out


def _scopes(rows: Iterable[Row]) -> str:
    return scope_field(r.scope for r in rows)


# --------------------------------------------------------------------------- the answer


@dataclass(frozen=True)
class Citation:
    id: str
    source: Source | None  # None: not among the opened entries (flagged)

    def to_dict(self) -> dict[str, Any]:
        if self.source is None:
            return {"id": self.id, "opened": False, "problem": "not among the opened entries"}
        return {**self.source.to_dict(), "opened": True}


@dataclass(frozen=True)
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

    @property
    def flagged(self) -> list[str]:
        return [c.id for c in self.cited if c.source is None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "cited": [c.to_dict() for c in self.cited],
            "opened": [s.to_dict() for s in self.opened],
            "mode": self.mode,
            "backend": self.backend,
            "model": self.model,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
        }


def query(
    wiki: Wiki,
    viewer: Viewer,
    question: str,
    *,
    k: int | None = None,
    budget: int | None = None,
    backend: str | None = None,
    model: str | None = None,
    file_back: bool = False,
) -> Answer:
    """The whole flow for one question (see the module doc)."""
    k, budget = budget_and_k(wiki, k, budget)
    chosen = get_backend(wiki, backend, model)
    if file_back and not chosen.is_llm:
        raise InvalidInput(
            "--file-back needs an LLM backend (an extractive answer adds nothing); use "
            "--backend anthropic or claude-cli."
        )
    chosen.check()
    got = retrieve(wiki, viewer, question, backend=chosen, k=k, budget=budget)
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
        )
    if not chosen.is_llm:
        return _extractive(got, chosen)
    return _generated(wiki, viewer, got, chosen, budget, file_back)


def _nothing_text(got: Retrieval, backend: Backend) -> str:
    if backend.is_llm:
        return "Nothing found: no entry in the archive answers this question."
    if not got.question.terms:
        return "Nothing found: the question has no words to search for; ask about a topic."
    if not got.ranking.items:
        return "Nothing found: no entry shares a key word with the question."
    return (
        "Nothing found: no entry matches the question well enough (the best match holds "
        f"{got.ranking.coverage:.0%} of its key terms; the offline threshold is "
        f"{NOTHING_BELOW:.0%}). Try other words, or an LLM backend."
    )


def _extractive(got: Retrieval, backend: Backend) -> Answer:
    lines = [
        "Extractive answer (offline backend: the best-matching entries' summaries, quoted; "
        "no text was generated):",
        "",
    ]
    for source in got.opened:
        row = source.row
        status = "" if row.effective_status == "active" else f", {row.effective_status}"
        lines.append(f"- [{row.id}] ({row.date}, {row.type}{status}) {row.summary}")
        if row.superseded_by:
            lines.append(f"  Superseded by {', '.join(row.superseded_by)}.")
        replaced = [old for old in row.supersedes if any(o.row.id == old for o in got.opened)]
        if replaced:
            lines.append(f"  It replaced {', '.join(replaced)}.")
    return Answer(
        question=got.question.text,
        answer="\n".join(lines),
        cited=tuple(Citation(s.row.id, s) for s in got.opened),
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
    from llm_wiki.reads import read_entry

    entries = [(s, read_entry(wiki, s.row)[0]) for s in got.opened]
    system = render_prompt("query_system.j2")
    prompt = _answer_prompt(got.question, entries, budget - estimate_tokens(system + "\n\n"))
    completion = call(
        wiki,
        backend,
        prompt,
        purpose="query.answer",
        scope=_scopes(s.row for s in got.opened),
        system=system,
        max_tokens=ANSWER_MAX_TOKENS,
    )
    tokens_in = got.tokens_in + completion.tokens_in
    tokens_out = got.tokens_out + completion.tokens_out
    text = completion.text.strip()
    if not text or text.upper().startswith(NOTHING_FOUND):
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
        )
    by_id = {s.row.id: s for s in got.opened}
    cited = tuple(Citation(c, by_id.get(c)) for c in extract_cited(text))
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
    )
    if file_back:
        answer = _file_back(wiki, viewer, answer, [e for _, e in entries])
    return answer


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
    from llm_wiki.entries import dump_entry

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
    from llm_wiki.entries import Entry
    from llm_wiki.errors import WikiError
    from llm_wiki.write import write_entry

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

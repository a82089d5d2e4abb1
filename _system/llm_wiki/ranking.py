"""Lexical ranking: a question's key terms, the ranker over the catalog, the shortlist of lines.

The query flow (:mod:`llm_wiki.retrieve`) and ingest use it; ``tests/bench/test_retrieval.py``
measures it.

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

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_wiki.access import Viewer
from llm_wiki.backends import estimate_tokens
from llm_wiki.catalog import Catalog, Row

NOTHING_BELOW = 0.30  # offline: best match's coverage of the question's key terms (dev set)
TEMPORAL_BAND = 0.7  # present-tense questions: newest first among scores >= this x the best
MIN_LINE_TOKENS = 15  # no index line is shorter; lets a big archive skip summing its lines

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
        # An extractive synthesis (written offline) repeats its sources' summaries, so it
        # would outrank each of them; the sources themselves are what a question should open.
        ids = [
            i for (i,) in self.catalog.db.execute(
                f"SELECT id FROM entries WHERE rowid IN ({marks}) AND NOT (origin = "
                "'consolidated' AND extra IS NOT NULL AND "
                "json_extract(extra, '$.method') = 'extractive')",
                list(rowids),
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


# --------------------------------------------------------------------------- the shortlist


def _line(row: Row) -> str:
    return row.index_line("")


def _line_tokens(row: Row) -> int:
    return estimate_tokens(_line(row) + "\n")


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

"""Ranking: a question's key terms and intent, the ranker over the catalog, the shortlist of lines.

The query flow (:mod:`llm_wiki.retrieve`) and ingest use it; ``tests/bench/test_retrieval.py``
measures it against plain BM25 and FTS5 on real ADR folders.

**Signals, fused by rank.** Each signal ranks the reader's entries on its own:

- *lexical*: FTS5's ``bm25()`` finds the pool, BM25F proper (each field normalised by its own
  length) orders it (:mod:`.lexical`; behind walls both from the reader's own statistics);
- *semantic* (with the ``embeddings`` extra, :mod:`.vectors`): the cosine between the
  question's all-MiniLM-L6-v2 vector and each entry's;
- *period*, when the question names a year or a month: the candidates dated in it.

The lists are fused by reciprocal rank (RRF, k = 60): an entry's score is the sum of
1 / (60 + its rank) over the lists. Ranks, not raw scores, are added, so no signal's scale
(BM25 grows with the question's length and the archive's vocabulary, cosines do not) can
swamp another, and the fusion means the same at 40 entries and at 100,000. Nothing is fitted.

**Time.** What a question asks about time (:mod:`.question`) then orders the leading
results. A question about now puts each replacing decision before the one it replaced (a
superseded entry's replacements are pulled in), and fuses one more list over its leading
decisions that would answer on their own: with vectors, newest first; lexically, those newer
than the first in the order of relevance, then the rest (the newest of five lexical
candidates is as often an entry that shares two words with the question as a replacement
nothing links). A question about the old design does the reverse: replaced before replacing.
Any other question keeps the relevance order.

**Nothing found.** :attr:`Ranking.nothing_found` (see :class:`Evidence`): the question names
something no entry mentions, or (lexical only) the best match scores under a share of what
an average-length entry holding each of the question's terms once would score (IDF from the
reader's own archive), or, with vectors, no entry comes within the model's distance of
meaning anything close.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from typing import Any

import llm_wiki.ranking.lexical as lexical
import llm_wiki.ranking.pool as pool_
from llm_wiki.access import Viewer
from llm_wiki.backends import estimate_tokens
from llm_wiki.catalog import Catalog, Row
from llm_wiki.ranking.question import (
    FRAME,
    STOP,
    WORD_RE,
    Question,
    everyday,
    intent_of,
    names,
    parse_question,
    period_of,
    quote,
)
from llm_wiki.records import record

__all__ = [
    "FRAME",
    "MIN_LINE_TOKENS",
    "STOP",
    "WORD_RE",
    "Evidence",
    "Question",
    "Ranked",
    "Ranker",
    "Ranking",
    "intent_of",
    "parse_question",
    "period_of",
    "shortlist_lines",
]

RRF_K = 20  # reciprocal rank fusion (Cormack et al. 2009); 20 over 60 by leave-one-folder-out
POOL = 200  # candidates each signal contributes
TIME_DEPTH = 5  # leading candidates a question about now also ranks by date
TIME_DEPTH_SEMANTIC = 10  # the same with vectors (a more reliable head; both by leave-one-out)
NEWER_FIRST = False  # the within-window move of a newer entry about the same thing
BM25F = True  # lexical only: the pool ordered by BM25F proper (per-field length normalisation)
BM25F_SEMANTIC = False  # with vectors: FTS5's order (both by leave-one-folder-out)
DOMAIN_MEANS = False  # BM25F: each field against its domain's mean, not the whole view's (measured, off: DESIGN.md)
WINDOW = 3  # leading results that time reorders: the k an answer opens by default
MIN_LINE_TOKENS = 15  # no index line is shorter; lets a big archive skip summing its lines


# --------------------------------------------------------------------------- results


@record
class Ranked:
    row: Row
    score: float  # fused: higher is better (a pulled-in entry takes the score that brought it)
    via: str = ""  # the entry whose place brought this one in (a replacement or a replaced one)


@record
class Evidence:
    """What "nothing found" was decided on. Nothing is found when

    - ``unseen``: the question names something (written like a name: "Istio", "MkDocs",
      "Cloud Foundry") that no entry the reader may read mentions; or, from the calibrated
      signal of the ranking in use:
    - with vectors, ``cosine`` < :data:`COSINE_FLOOR`: no entry's meaning comes close;
    - lexical only, ``held`` < :data:`HELD_FLOOR`: the best lexical match scores less than
      that share of what an entry of average length holding each of the question's terms
      once would score. ``held`` = the best BM25F score / the sum of the question's IDFs
      (among the reader's entries, each less the IDF of a term every entry holds; a term no
      entry holds weighs as one a single entry holds, and an everyday word among those by
      :data:`EVERYDAY_UNHELD`). Both sides are BM25F in the
      same archive, so the share does not grow with the question's length as a raw score
      does; it still differs between archives (long records full of a term score higher).

    The floors and the weight were chosen by leave-one-folder-out over the dev folders
    (``tests/bench/lofo.py``), never on the folder they are then measured on; the parts are
    kept (``best``, ``idf_held``, ``idf_unheld``, ``idf_everyday``) so the choice can be
    re-made without ranking again.
    """

    unseen: tuple[str, ...] = ()
    held: float = 0.0
    cosine: float | None = None
    signals: tuple[str, ...] = ()
    best: float = 0.0  # the best BM25F score (lexical only)
    idf_held: float = 0.0  # the IDFs of the question's terms some entry holds
    idf_unheld: float = 0.0  # the same for terms no entry holds (each as if one entry did)
    idf_everyday: float = 0.0  # ... of which everyday words (counted by EVERYDAY_UNHELD)

    def share(self, everyday_weight: float) -> float:
        """``held`` with everyday words no entry holds weighed by ``everyday_weight``."""
        total = self.idf_held + self.idf_unheld - (1 - everyday_weight) * self.idf_everyday
        if total <= 1e-9:  # no term tells one entry from another: a match is all there is
            return 1.0 if self.best > 0 else 0.0
        return self.best / total

    def to_dict(self) -> dict[str, Any]:
        return {
            "unseen": list(self.unseen),
            "held": round(self.held, 4),
            "held_floor": HELD_FLOOR,
            "cosine": None if self.cosine is None else round(self.cosine, 4),
            "cosine_floor": COSINE_FLOOR if self.cosine is not None else None,
            "signals": list(self.signals),
        }

    @property
    def nothing(self) -> bool:
        if self.unseen:
            return True
        if self.cosine is not None:
            return self.cosine < COSINE_FLOOR
        return self.held < HELD_FLOOR


@record
class Ranking:
    question: Question
    items: tuple[Ranked, ...]
    nothing_found: bool = False
    evidence: Evidence = field(default_factory=Evidence)
    cosines: dict[int, float] = field(default_factory=dict)  # rowid -> cosine, with vectors
    # FTS5's own bm25() order of the lexical pool when BM25F reordered it (the shortlist's
    # second opinion, see shortlist_lines); empty when the ranking is already in that order
    fts_order: tuple[int, ...] = ()


# --------------------------------------------------------------------------- the ranker


class Ranker:
    """Ranking for one viewer over an open catalog (see the module doc).

    ``semantic``: use the vectors (None: when :func:`vectors.status` says they are on).
    """

    def __init__(self, catalog: Catalog, viewer: Viewer, *, semantic: bool | None = None) -> None:
        self.catalog = catalog
        self.viewer = viewer
        self._semantic = semantic
        self._vectors: Any = None
        self._visible: int | None = None
        self._walls_ready = False
        self._df: dict[str, int] = {}
        self._rows_in_fts: int | None = None
        self._fts_order: list[int] = []  # the last _lexical call's pool, in FTS5's order

    # -- what the ranker uses
    @property
    def semantic(self) -> bool:
        if self._semantic is None:
            from llm_wiki.ranking.vectors import status  # deferred: settings only

            self._semantic = status(self.catalog.wiki).on
        return self._semantic

    def vectors(self) -> Any:
        if self._vectors is None:
            from llm_wiki.ranking.vectors import Vectors  # deferred: numpy and the model load

            self._vectors = Vectors.open(self.catalog.wiki, self.catalog)
        return self._vectors

    def _fts_rows(self) -> int:
        """FTS5's own row count (what its bm25() counts IDF against)."""
        if self._rows_in_fts is None:
            self._rows_in_fts = lexical._averages(self.catalog.db)[0]
        return self._rows_in_fts

    def visible(self) -> int:
        if self._visible is None:
            self._visible = self.catalog.count(self.viewer)
        return self._visible

    # -- ranking
    def rank(self, question: Question, limit: int, *, window: int = WINDOW) -> Ranking:
        pool = max(limit, POOL)
        # searched with its compounds; weighed, for "nothing found" and what answers alone, as
        # asked (a compound spells terms it already has: "webapp", held by one entry in 100k,
        # would weigh as a demand of its own that the best entry does not meet)
        searched = self._with_compounds(question)
        lists: list[list[int]] = []
        # Vectors rank only when every entry the reader may read has one: a list of the few
        # embedded entries would lift exactly those (after a bulk import, until `llm-wiki index`
        # embeds the rest); another scope's backlog does not count (walls).
        with_vectors = bool(
            self.semantic
            and question.text
            and not question.only_period  # no topic to come close to: the dates alone order it
            and self.visible()
            and not self.vectors().missing_for(self.viewer)
        )
        bm25f = BM25F_SEMANTIC if with_vectors else BM25F
        self._fts_order = []
        lex = self._lexical(searched, pool, bm25f=bm25f) if question.terms else []
        if lex:
            lists.append([r for r, _ in lex])
        sem: list[tuple[int, float]] = []
        if with_vectors:
            sem, _ = self.vectors().search(question.text, self.viewer, pool)
            if sem:
                lists.append([r for r, _ in sem])
        dated: list[int] = []
        # "What did we decide in 2021?": the period's entries, newest first
        if question.only_period:
            dated = self._dated(question.period, pool)
            if dated:
                lists.append(dated)
        if not lists:
            return Ranking(question, (), True, Evidence())
        fused = _rrf(lists)
        order = sorted(fused, key=lambda r: (-fused[r], -r))
        extra: list[list[int]] = []
        if question.period:
            dates = self._dates(order[:pool])
            inside = [r for r in order[:pool] if dates.get(r, "").startswith(question.period)]
            if inside:
                extra.append(inside)
        depth = TIME_DEPTH_SEMANTIC if sem else TIME_DEPTH
        if question.present and depth:  # the leading candidates, newer ones first
            head = self._answering(question, order[:depth], dict(sem))
            if len(head) > 1:  # (one alone has no newer or older to be put before)
                dates = self._dates(head)
                if sem:  # newest first
                    extra.append(sorted(head, key=lambda r: dates.get(r, ""), reverse=True))
                else:  # what is newer than the first, in the order of relevance, then the rest
                    first = dates.get(head[0], "")
                    extra.append(sorted(head, key=lambda r: dates.get(r, "") <= first))
        if extra:
            fused = _rrf([*lists, *extra])
            order = sorted(fused, key=lambda r: (-fused[r], -r))
        wanted = order[: max(limit, window)]
        rows = self._rows(wanted)
        items = [Ranked(rows[r], fused[r]) for r in wanted if r in rows]
        if not items:
            return Ranking(question, (), True, Evidence())
        best = 0.0  # the best BM25F score, for "nothing found" (lexical only)
        if lex and not with_vectors:
            asked = bm25f and searched is question  # lex's scores are the asked terms'
            best = lex[0][1] if asked else self._best_bm25f(question, [r for r, _ in lex])
        nothing, evidence = self.nothing(question, best, sem)
        if dated:  # entries of the period it asks about are what it asks for
            nothing, evidence = False, Evidence(signals=("period",))
        items = self.by_time(question, items, window)
        fts_order = tuple(self._fts_order) if bm25f else ()
        return Ranking(question, tuple(items[:limit]), nothing, evidence, dict(sem), fts_order)

    def _with_compounds(self, question: Question) -> Question:
        """``question`` with each pair of its adjacent key terms written as one word added as
        a term, where entries hold that word: "the task work queue" also asks for
        "workqueue", as a record titled "WorkQueue" writes it (FTS5 keeps it one token)."""
        held = set(question.terms)
        words = [w.lower() for w in WORD_RE.findall(question.text)]
        extra = [
            a + b
            for a, b in zip(words, words[1:], strict=False)
            if a in held and b in held and a + b not in held and not a.isdigit()
            and not b.isdigit() and self.df(a + b)
        ]  # fmt: skip
        if not extra:
            return question
        return Question(
            text=question.text,
            terms=tuple(dict.fromkeys([*question.terms, *extra])),
            intent=question.intent,
            when=question.when,
            period=question.period,
            only_period=question.only_period,
        )

    def on_topic(self, ranking: Ranking, rows: Sequence[Row]) -> list[bool]:
        """Whether each of ``rows`` answers the question on its own: it holds at least an
        average term's worth of the question's weight and, of a question with two terms or
        more, at least two of them, or (with vectors) its meaning comes
        within :data:`COSINE_FLOOR`; for a question that names only a period, it is dated in it."""
        if ranking.question.only_period:
            return [row.date.startswith(ranking.question.period) for row in rows]
        return self._answers_alone(ranking.question, [r.rowid for r in rows], ranking.cosines)

    def _answers_alone(
        self, question: Question, rowids: Sequence[int], cosines: dict[int, float]
    ) -> list[bool]:
        """Per rowid: it holds at least an average term's worth of the question's weight and
        two of its terms (one alone), or its cosine is within :data:`COSINE_FLOOR` (see
        :meth:`on_topic`). In a seven-entry wiki the one entry holding "days" held the most
        specific term of "What do we use for payment events these days?": one word of several
        is a mention, not an answer."""
        weights = self._term_weights(question)
        floor = sum(weights.values()) / len(weights) if weights else math.inf
        held = self._terms_held(list(weights), rowids)
        least = min(2, len(weights))  # one word of several is a mention, not an answer
        return [
            (sum(weights[t] for t in held[r]) >= floor and len(held[r]) >= least)
            or cosines.get(r, -1.0) >= COSINE_FLOOR
            for r in rowids
        ]

    def _lexical(
        self, question: Question, pool: int, *, bm25f: bool = True
    ) -> list[tuple[int, float]]:
        """FTS5's BM25 finds the pool, BM25F orders it (:mod:`.lexical`); behind walls both
        from the reader's own statistics."""
        db = self.catalog.db
        weights = lexical.COLUMN_WEIGHTS if bm25f else lexical.COLUMN_WEIGHTS_SEMANTIC
        if self.viewer.sees_all:
            found = (
                pool_.bm25_pool(
                    db, question.terms, pool, lexical._weights(weights), self.df, self._fts_rows()
                )
                if question.match == pool_.any_of(question.terms)  # the query it stands in for
                else None
            )
            if found is None:
                found = lexical.bm25(db, question.match, pool, weights)
        else:
            df = {t: self.df(t) for t in question.terms}
            within = self._within("rowid")
            mean = sum(self.catalog.field_means(self.viewer, None)[""])
            found = lexical.walled_bm25(
                db, question.terms, within, self.visible(), df, pool, mean, weights
            )
        if not bm25f or not found:
            return found
        self._fts_order = [r for r, _ in found]
        idf = self._term_weights(question)
        hits = self.df if self.viewer.sees_all else None  # FTS5's own counts, for no wall
        rowids = [r for r, _ in found]
        return lexical.bm25f(db, question.terms, rowids, idf, self._means(rowids), hits)

    def _means(self, rowids: Sequence[int]) -> dict[int, list[float]]:
        """rowid -> BM25F's mean field lengths for that entry, among the entries of the scopes
        the reader may read (:meth:`Catalog.field_means`, exact behind walls too): with
        :data:`DOMAIN_MEANS` the means in the entry's own domain, else the whole view's.
        Against the whole archive's, a domain of short notes (10,000 one-paragraph
        decisions) set the mean a domain of long records was measured by, so a term in a
        long record's body counted for a tenth of one in a note's; within its domain an entry
        is long or short only among its own kind. Only the pool's domains are looked up."""
        if not DOMAIN_MEANS:
            every = self.catalog.field_means(self.viewer, None)[""]
            return dict.fromkeys(rowids, every)
        domain = self._domains(rowids)
        means = self.catalog.field_means(self.viewer, domain.values())
        return {r: means[d] for r, d in domain.items() if d in means}

    def _best_bm25f(self, question: Question, rowids: Sequence[int]) -> float:
        """The best BM25F score among ``rowids`` (when the pool is ordered otherwise)."""
        db = self.catalog.db
        idf = self._term_weights(question)
        got = lexical.bm25f(db, question.terms, rowids, idf, self._means(rowids))
        return got[0][1] if got else 0.0

    # -- time
    def _answering(
        self, question: Question, head: list[int], cosines: dict[int, float]
    ) -> list[int]:
        """The decisions of ``head`` that would answer the question on their own (see
        :meth:`on_topic`): what the newest-first list of a question about now may lift. An
        entry that shares a word or two with the question, or an incident or a reflection
        newer than the decision, is no candidate for what holds now (in a small archive the
        leading candidates are nearly every entry, and a newer one holding only "days" came
        first)."""
        kinds = self._column(head, "type")
        head = [r for r in head if kinds.get(r) == "decision"]
        if not head or not self._term_weights(question):
            return head
        return [
            r
            for r, ok in zip(head, self._answers_alone(question, head, cosines), strict=True)
            if ok
        ]

    def by_time(self, question: Question, items: list[Ranked], window: int) -> list[Ranked]:
        """Supersession and dates, as the question's intent asks (see the module doc)."""
        if question.intent == "present":  # moving a newer entry up may pass its replacement:
            if NEWER_FIRST:
                items = self._newer_first(question, self.with_current(items), window, newest=True)
            return self.with_current(items)  # put each replacement back before it
        if question.intent == "past":
            if NEWER_FIRST:
                items = self._newer_first(question, self.with_earlier(items), window, newest=False)
            return self.with_earlier(items)
        return items

    def _newer_first(
        self, question: Question, items: list[Ranked], window: int, *, newest: bool
    ) -> list[Ranked]:
        """Within the first ``window`` items, move an entry before a higher-ranked one about the
        same thing when it is newer (``newest``) or older: same thing = it holds at least half
        the weight (IDF) of the question's terms that the higher-ranked one holds. Entries linked
        by supersession are never swapped here; a move that carries an entry past its own
        replacement is put right by the caller's second supersession pass."""
        head = list(items[:window])
        if len(head) < 2 or not question.terms:
            return items
        held = self._terms_held(question.terms, [i.row.rowid for i in head])
        weight = {t: lexical.idf(self.visible(), self.df(t)) for t in question.terms}

        def same(upper: int, lower: int) -> bool:  # holds most of what the upper one holds
            mine = held.get(upper, set())
            shared = sum(weight[t] for t in mine & held.get(lower, set()))
            return bool(mine) and shared >= 0.5 * sum(weight[t] for t in mine)

        def later(a: Row, b: Row) -> bool:  # is a on the side of time the question asks for
            return (a.date > b.date) if newest else (a.date < b.date)

        def linked(a: Row, b: Row) -> bool:  # explicit supersession between them
            return b.id in a.supersedes or a.id in b.supersedes

        for _ in range(len(head) ** 2):  # each move puts a strictly later entry first
            move = next(
                (
                    (i, j)
                    for j in range(1, len(head))
                    for i in range(j)
                    if later(head[j].row, head[i].row)
                    and not linked(head[j].row, head[i].row)
                    and same(head[i].row.rowid, head[j].row.rowid)
                ),
                None,
            )
            if move is None:
                break
            i, j = move
            head.insert(i, head.pop(j))
        return head + list(items[window:])

    def with_current(self, items: Iterable[Ranked]) -> list[Ranked]:
        """Each superseded entry preceded by the entries that replaced it (newest first)."""
        return self._preceded_by(items, self.replacements)

    def with_earlier(self, items: Iterable[Ranked]) -> list[Ranked]:
        """Each replacing entry preceded by the entries it replaced (oldest first)."""
        return self._preceded_by(items, self.predecessors)

    @staticmethod
    def _preceded_by(items: Iterable[Ranked], related: Callable[[Row], list[Row]]) -> list[Ranked]:
        """Each item preceded by its ``related`` rows not placed yet, each once, at its score."""
        out: list[Ranked] = []
        seen: set[str] = set()
        for item in items:
            if item.row.id in seen:
                continue
            for other in related(item.row):
                if other.id not in seen:
                    seen.add(other.id)
                    out.append(Ranked(other, item.score, via=item.row.id))
            seen.add(item.row.id)
            out.append(item)
        return out

    def replacements(self, row: Row) -> list[Row]:
        """Every visible entry that (transitively) replaced ``row``, the current ones first."""
        found = self._follow(row, lambda r: r.superseded_by)
        return sorted(found, key=lambda r: (bool(r.superseded_by), _neg_date(r.date)))

    def predecessors(self, row: Row) -> list[Row]:
        """Every visible entry ``row`` (transitively) replaced, the oldest first."""
        return sorted(self._follow(row, lambda r: r.supersedes), key=lambda r: (r.date, r.id))

    def _follow(self, row: Row, step: Any) -> list[Row]:
        found: dict[str, Row] = {}
        todo = list(step(row))
        while todo:
            entry_id = todo.pop()
            if entry_id in found or entry_id == row.id:
                continue
            other = self.catalog.get(entry_id, self.viewer)
            if other is None:
                continue
            found[entry_id] = other
            todo.extend(step(other))
        return list(found.values())

    # -- nothing found
    def nothing(
        self, question: Question, best: float, semantic: Sequence[tuple[int, float]]
    ) -> tuple[bool, Evidence]:
        """Whether the archive answers nothing (see :class:`Evidence`); ``best``: the best
        BM25F score of the question's candidates (lexical only)."""
        unseen = tuple(" ".join(name) for name in names(question.text) if not self._mentioned(name))
        # Each term weighs what it tells beyond a term every entry holds (whose IDF is not quite
        # 0): in an archive of one entry no word tells anything, so the share cannot refuse.
        # A term no entry holds weighs as one that a single entry holds (the rarest a held term
        # can be): the IDF of "none hold it" is larger still, and in a small archive it swamps
        # every held term ("Which database holds the ledger?" over a few entries).
        total = self.visible()
        least = math.log(1 + 0.5 / (total + 0.5))  # the IDF of a term every entry holds
        weights = self._term_weights(question)
        rarest = math.log(1 + (total - 1 + 0.5) / 1.5) - least
        missing = [t for t in question.terms if not self.df(t)]
        common = sum(1 for t in missing if everyday(t))
        idf_held = sum(w - least for w in weights.values())
        idf_unheld, idf_everyday = rarest * len(missing), rarest * common
        held = Evidence(
            best=best, idf_held=idf_held, idf_unheld=idf_unheld, idf_everyday=idf_everyday
        ).share(EVERYDAY_UNHELD)
        evidence = Evidence(
            unseen=unseen,
            held=held,
            cosine=semantic[0][1] if semantic else None,
            signals=("lexical", "semantic") if semantic else ("lexical",),
            best=best,
            idf_held=idf_held,
            idf_unheld=idf_unheld,
            idf_everyday=idf_everyday,
        )
        return evidence.nothing, evidence

    def _term_weights(self, question: Question) -> dict[str, float]:
        """The question's terms that some entry the reader may read holds, by how much each
        says: IDF among the reader's entries, in the always-positive form log(1 + (N - n +
        0.5) / (n + 0.5)) (FTS5's form gives every term held by over half the entries the same
        near-zero weight, which in a small archive is most of a question)."""
        total = self.visible()
        return {
            t: math.log(1 + (total - self.df(t) + 0.5) / (self.df(t) + 0.5))
            for t in question.terms
            if self.df(t)
        }

    def _mentioned(self, name: tuple[str, ...]) -> bool:
        """Whether entries the reader may read hold the name: each of its words that is not
        an everyday word (:func:`everyday`; of a name of everyday words only, any word), or
        the words written together ("Cloud Foundry" is mentioned by "CloudFoundry"). Every
        word of a name, everyday ones too, raised false_none on the dev sets (DESIGN.md)."""
        words = [w.lower() for part in name for w in WORD_RE.findall(part)]
        if not words:
            return True
        if len(words) > 1 and self.df("".join(words)):
            return True
        rare = [w for w in words if not everyday(w)]
        if rare:  # "GraphQL API": "API" is held everywhere, the word that names it nowhere
            return all(self.df(w) for w in rare)
        return any(self.df(w) for w in words)

    # -- SQL helpers
    def df(self, term: str) -> int:
        """How many of the reader's entries hold ``term`` (counted once a ranker)."""
        if term not in self._df:
            if self.viewer.sees_all:
                sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
            else:
                sql = (
                    "WITH m AS MATERIALIZED (SELECT rowid AS r FROM fts WHERE fts MATCH ?) "
                    f"SELECT count(*) FROM m WHERE {self._within('r')}"
                )
            self._df[term] = int(self.catalog.db.execute(sql, [quote(term)]).fetchone()[0])
        return self._df[term]

    def idf(self, terms: Sequence[str]) -> dict[str, tuple[float, int]]:
        """term -> (IDF among the reader's entries, how many hold it)."""
        return {t: (lexical.idf(self.visible(), self.df(t)), self.df(t)) for t in terms}

    def _terms_held(self, terms: Sequence[str], rowids: Sequence[int]) -> dict[int, set[str]]:
        """rowid -> which of ``terms`` each of ``rowids`` holds."""
        out: dict[int, set[str]] = {r: set() for r in rowids}
        if not rowids:
            return out
        marks = ",".join("?" * len(rowids))
        for term in terms:
            if not self.df(term):
                continue
            for (rowid,) in self.catalog.db.execute(
                f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN ({marks})",
                [quote(term), *rowids],
            ):
                out[int(rowid)].add(term)
        return out

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

    def _dated(self, period: str, limit: int) -> list[int]:
        """The rowids of this viewer's entries dated in ``period`` ("YYYY" or "YYYY-MM"),
        newest first."""
        sql = (
            f"SELECT rowid FROM entries WHERE substr(date, 1, {len(period)}) = ? AND "
            f"{self._within('rowid')} ORDER BY date DESC, rowid DESC LIMIT ?"
        )
        return [int(r) for (r,) in self.catalog.db.execute(sql, [period, limit])]

    def _domains(self, rowids: Sequence[int]) -> dict[int, str]:
        return self._column(rowids, "domain")

    def _dates(self, rowids: Sequence[int]) -> dict[int, str]:
        return self._column(rowids, "date")

    def _column(self, rowids: Sequence[int], column: str) -> dict[int, str]:
        """rowid -> the entry's ``column`` (one of the entries table's own, named here)."""
        out: dict[int, str] = {}
        ids = list(rowids)
        for start in range(0, len(ids), 900):
            part = ids[start : start + 900]
            marks = ",".join("?" * len(part))
            for rowid, value in self.catalog.db.execute(
                f"SELECT rowid, {column} FROM entries WHERE rowid IN ({marks})", part
            ):
                out[int(rowid)] = str(value or "")
        return out


# Chosen by leave-one-folder-out over the dev folders (tests/bench/test_retrieval.py).
COSINE_FLOOR = 1 / 3  # all-MiniLM-L6-v2: below it, the closest entry does not answer
HELD_FLOOR = 0.34  # lexical: the best BM25F score's share of an average entry holding every term
EVERYDAY_UNHELD = 1.0  # lexical: how an everyday word no entry holds counts in that share


def _rrf(lists: Sequence[Sequence[int]]) -> dict[int, float]:
    scores: dict[int, float] = {}
    for ranked in lists:
        for n, rowid in enumerate(ranked):
            scores[rowid] = scores.get(rowid, 0.0) + 1.0 / (RRF_K + n + 1)
    return scores


def _neg_date(day: str) -> tuple[int, ...]:
    return tuple(-int(p) for p in day.split("-") if p.isdigit())


# --------------------------------------------------------------------------- the shortlist


def _line(row: Row) -> str:
    return row.index_line("")


def _line_tokens(row: Row) -> int:
    return estimate_tokens(_line(row) + "\n")


def shortlist_order(ranking: Ranking) -> list[Ranked]:
    """The ranked entries in the order a shortlist takes them: when BM25F ordered the lexical
    pool, by RRF of the ranking and FTS5's own bm25() order of that pool, each entry with the
    entries pulled in before it (its replacements, or what it replaced) kept just before it.

    The shortlist is a recall stage: the LLM picks from a few dozen lines, so what counts is
    that the answer is among them, not first. BM25F normalises each field by its own length
    and FTS5 the whole entry; in an archive of short notes a long record falls far under both
    (its terms count for little against the archive's mean length), and further under
    BM25F. Fusing the two orders the ranker already has hedges between them, as RRF fuses the
    other signals; the offline answer keeps the ranking's own order."""
    items = list(ranking.items)
    if not ranking.fts_order:
        return items
    groups: list[list[Ranked]] = []
    pending: list[Ranked] = []
    for item in items:
        pending.append(item)
        if not item.via:
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    heads = [g[-1].row.rowid for g in groups]
    fused = _rrf([heads, list(ranking.fts_order)])
    place = {rowid: n for n, rowid in enumerate(heads)}
    groups.sort(key=lambda g: (-fused.get(g[-1].row.rowid, 0.0), place[g[-1].row.rowid]))
    return [item for group in groups for item in group]


def shortlist_lines(
    catalog: Catalog, viewer: Viewer, ranking: Ranking, allowance: int, total: int
) -> tuple[tuple[Row, ...], bool]:
    """All the viewer's lines if they fit ``allowance`` tokens, else the best that fit, in
    :func:`shortlist_order`."""
    if total * MIN_LINE_TOKENS <= allowance:
        rows = catalog.rows(viewer)
        if sum(_line_tokens(r) for r in rows) <= allowance:
            return tuple(rows), False
    chosen: list[Row] = []
    used = 0
    for item in shortlist_order(ranking):
        cost = _line_tokens(item.row)
        if used + cost > allowance:
            if item.via:
                continue  # a pulled-in line that does not fit; smaller ones may follow
            break
        chosen.append(item.row)
        used += cost
    return tuple(chosen), True

"""The BM25 pool without scoring every entry that holds a common word (execution only: the pool
is exactly the one FTS5's ``bm25()`` over the whole question gives).

``SELECT rowid, -bm25(fts) ... WHERE fts MATCH 'use OR kafka OR queue' ORDER BY s DESC, rowid
DESC LIMIT 200`` makes FTS5 score every row that holds any term; at 100k entries "use" alone
is in 60% of them, and scoring them (a size lookup and a position list a row) is most of a
query's cost, though no entry holding only "use" can reach the pool.

**Why the pool is the same.** FTS5 scores a row as the sum, over the query's phrases *in the
order they are written*, of idf(phrase) * f (k1 + 1) / (f + k1 (1 - b + b D / avgdl)), where
f is the phrase's column-weighted count in the row (0 when absent, adding exactly 0.0), D the
row's length; idf counts the rows holding the phrase alone. So any FTS5 expression that
writes the same phrases, each once, in the same order, gives every row it matches the same
score, bit for bit, whatever AND, OR or NOT joins them. The common terms (``common``, the
most frequent, when they are a prefix or a suffix of the question's terms) are split off:

- ``common AND rare``: the rows holding both, phrases in the question's order;
- ``rare NOT common``: the rows holding only rare terms (the common phrases add 0.0 there,
  wherever they are written).

Every row holding a rare term is scored, exactly. A row holding only common terms scores at
most sum(idf(t) (k1 + 1)) over them (f / (f + K) < 1 for K > 0). When the pool's last score
is above that bound, no such row can enter the pool or tie with it, so the two queries' best
``pool`` rows are FTS5's. Otherwise (too few rare matches, or a common-only row could
compete) the one full query runs, as before.
"""

from __future__ import annotations

import itertools
import math
import sqlite3
from collections.abc import Callable, Sequence

from llm_wiki.catalog.db import fts5_varints
from llm_wiki.ranking.question import quote

K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
COMMON_SHARE = 0.1  # a term in at least this share of the rows is split off when it can be
MAX_QUERIES = 6  # FTS5 statements a split may take (each counts every phrase's rows for its IDF)
COUNT_COST = 0.03  # counting a row for an IDF against scoring it with bm25() (measured at 100k)


def _sql(weights: str) -> str:
    return (
        f"SELECT rowid, -bm25(fts, {weights}) AS s FROM fts WHERE fts MATCH ? "
        "ORDER BY s DESC, rowid DESC LIMIT ?"
    )


def idf(total: int, df: int) -> float:
    """FTS5's IDF: log((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((total - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def fts5_totals(db: sqlite3.Connection) -> list[int]:
    """FTS5's own totals, as bm25() reads them (record 1 of fts_data): [rows, then tokens in
    each column]; [] for an index with none."""
    got = db.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
    return fts5_varints(bytes(got[0])) if got and got[0] else []


def any_of(terms: Sequence[str]) -> str:
    """The one FTS5 query :func:`bm25_pool` stands in for: any of ``terms``."""
    return " OR ".join(quote(t) for t in terms)


def _either(terms: Sequence[str]) -> str:
    return "(" + " OR ".join(quote(t) for t in terms) + ")"


def _blocks(terms: Sequence[str], common: set[str]) -> list[tuple[bool, list[str]]]:
    """``terms`` in order, cut into runs of common and of rare terms: (common?, run)."""
    out: list[tuple[bool, list[str]]] = []
    for term in terms:
        kind = term in common
        if out and out[-1][0] == kind:
            out[-1][1].append(term)
        else:
            out.append((kind, [term]))
    return out


def cover(terms: Sequence[str], common: set[str]) -> list[str] | None:
    """FTS5 expressions that together match exactly the rows holding a rare term, each row
    once, each writing every phrase a row it matches can hold in the question's order: one per
    pattern of which runs are present (a run present: any of its terms, OR-ed in order; absent:
    NOT-ed at the end, where it adds 0.0). None when that takes more than :data:`MAX_QUERIES`."""
    blocks = _blocks(terms, common)
    rare = [n for n, (is_common, _) in enumerate(blocks) if not is_common]
    if not rare or len(rare) == len(blocks):
        return None
    patterns = [
        p for p in itertools.product((True, False), repeat=len(blocks)) if any(p[n] for n in rare)
    ]
    if len(patterns) > MAX_QUERIES:
        return None
    out = []
    for present in patterns:
        held = " AND ".join(_either(b) for (_, b), on in zip(blocks, present, strict=True) if on)
        absent = [t for (_, b), on in zip(blocks, present, strict=True) if not on for t in b]
        out.append(f"({held}) NOT {_either(absent)}" if absent else held)
    return out


def bm25_pool(
    db: sqlite3.Connection,
    terms: Sequence[str],
    pool: int,
    weights: str,
    df: Callable[[str], int],
    rows: int,
) -> list[tuple[int, float]] | None:
    """The ``pool`` best (rowid, score) of the OR of ``terms``, best first, as FTS5's one
    query ranks them; None when the split cannot prove it (the caller runs that query).
    ``df``: rows holding a term (FTS5's own count); ``rows``: FTS5's row count.

    The common terms are those in at least :data:`COMMON_SHARE` of the rows. Which of them
    are split off is chosen by cost: a statement counts every phrase's rows for its IDF (cheap,
    :data:`COUNT_COST` of scoring a row) and scores each row it matches; the rows holding only
    the terms split off are never scored. No split that is not clearly cheaper than the one
    query is made."""
    if rows <= 0:
        return None
    counted = sum(df(t) for t in terms)
    candidates = sorted((t for t in terms if df(t) >= COMMON_SHARE * rows), key=df)[-6:]
    one_query = COUNT_COST * counted + min(rows, counted)
    best: tuple[float, set[str], list[str]] | None = None
    for k in range(len(candidates), 0, -1):
        for chosen in itertools.combinations(candidates, k):
            split_off = set(chosen)
            expressions = cover(terms, split_off)
            if expressions is None:
                continue
            scored = sum(df(t) for t in terms if t not in split_off)
            cost = len(expressions) * COUNT_COST * counted + scored
            if best is None or cost < best[0]:
                best = (cost, split_off, expressions)
    if best is None or best[0] > 0.7 * one_query:
        return None
    _, common_set, expressions = best
    common = [t for t in terms if t in common_set]
    rare = [t for t in terms if t not in common_set]
    if sum(df(t) for t in rare) < pool:  # the rare terms cannot fill the pool
        return None
    sql = _sql(weights)
    got = [(int(r), float(s)) for e in expressions for r, s in db.execute(sql, [e, pool])]
    if len(got) < pool:
        return None
    got.sort(key=lambda x: (-x[1], -x[0]))
    got = got[:pool]
    bound = sum(idf(rows, df(t)) * (K1 + 1.0) for t in common)
    if not got[-1][1] > bound * (1 + 1e-9) + 1e-12:
        return None
    return got


# --------------------------------------------------------------------------- column counts

_ONE_COLUMN = [
    ", ".join("1.0" if c == on else "0.0" for c in range(6)) for on in range(6)
]  # bm25() weights that count one column of the fts table's six


def column_counts(
    db: sqlite3.Connection,
    term: str,
    rowids: Sequence[int],
    sizes: dict[int, list[int]],
    hits: int,
) -> dict[int, list[int]] | None:
    """rowid -> how often ``term`` occurs in each column of the fts table, for the ``rowids``
    that hold it: what FTS5's ``fts5vocab`` instance table says (:func:`lexical.bm25f`),
    without walking every instance of a common term in the whole archive.

    One statement scans the term's rows between the lowest and highest of ``rowids`` (the
    ``+rowid IN`` is only a filter, so FTS5 is not asked to seek once per rowid, which costs
    the term's whole statistics every time) and takes ``bm25()`` with one column weighted 1 and
    the others 0: a = idf f (k1 + 1) / (f + K), with K from the row's length, so f = a K /
    (idf (k1 + 1) - a), an integer. None (use the vocab table) when the term is not one plain
    ASCII word (its phrase could then be several tokens) or a count does not come out whole.
    ``sizes``: rowid -> tokens in each column; ``hits``: rows holding the term (FTS5's count).
    """
    if not (term.isascii() and term.isalnum()) or not rowids:
        return None
    numbers = fts5_totals(db)
    if len(numbers) != 7 or not numbers[0]:
        return None
    rows, avgdl = numbers[0], sum(numbers[1:]) / numbers[0]
    weight = idf(rows, hits)
    marks = ",".join("?" * len(rowids))
    scores = ", ".join(f"bm25(fts, {w})" for w in _ONE_COLUMN)
    out: dict[int, list[int]] = {}
    for rowid, *per_column in db.execute(
        f"SELECT rowid, {scores} FROM fts WHERE fts MATCH ? AND rowid BETWEEN ? AND ? "
        f"AND +rowid IN ({marks})",
        [quote(term), min(rowids), max(rowids), *rowids],
    ):
        size = sum(sizes.get(int(rowid)) or ())
        k = K1 * (1 - 0.75 + 0.75 * size / avgdl)
        counts = []
        for value in per_column:
            a = -float(value)
            f = a * k / max(weight * (K1 + 1.0) - a, 1e-300) if a > 0 else 0.0
            n = round(f)
            if abs(f - n) > 1e-3 * max(1, n):
                return None
            counts.append(n)
        out[int(rowid)] = counts
    return out

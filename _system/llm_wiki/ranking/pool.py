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

import math
import sqlite3
from collections.abc import Callable, Sequence

from llm_wiki.ranking.question import quote

K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
COMMON_SHARE = 0.1  # a term in at least this share of the rows is split off when it can be


def _sql(weights: str) -> str:
    return (
        f"SELECT rowid, -bm25(fts, {weights}) AS s FROM fts WHERE fts MATCH ? "
        "ORDER BY s DESC, rowid DESC LIMIT ?"
    )


def _fts5_idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def _either(terms: Sequence[str]) -> str:
    return "(" + " OR ".join(quote(t) for t in terms) + ")"


def split(terms: Sequence[str], df: Callable[[str], int], rows: int) -> tuple[int, int]:
    """(start, end) of the run of common terms split off: a prefix or a suffix of ``terms``
    (the longer of the two; (0, 0) when neither), never all of them."""
    common = [rows > 0 and df(t) >= COMMON_SHARE * rows for t in terms]
    prefix = next((i for i, c in enumerate(common) if not c), len(terms))
    suffix = next((i for i, c in enumerate(reversed(common)) if not c), len(terms))
    if prefix == len(terms):  # every term is common: nothing to prune by
        return 0, 0
    if prefix >= suffix:
        return 0, prefix
    return len(terms) - suffix, len(terms)


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
    ``df``: rows holding a term (FTS5's own count); ``rows``: FTS5's row count."""
    start, end = split(terms, df, rows)
    if start == end:
        return None
    common, rare = terms[start:end], [*terms[:start], *terms[end:]]
    if sum(df(t) for t in rare) < pool:  # the rare terms cannot fill the pool
        return None
    both = (
        f"{_either(common)} AND {_either(rare)}"
        if start == 0
        else f"{_either(rare)} AND {_either(common)}"
    )
    only_rare = f"{_either(rare)} NOT {_either(common)}"
    sql = _sql(weights)
    got = [(int(r), float(s)) for r, s in db.execute(sql, [both, pool])]
    got += [(int(r), float(s)) for r, s in db.execute(sql, [only_rare, pool])]
    if len(got) < pool:
        return None
    got.sort(key=lambda x: (-x[1], -x[0]))
    got = got[:pool]
    bound = sum(_fts5_idf(rows, df(t)) * (K1 + 1.0) for t in common)
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
    got = db.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
    numbers = _varints(bytes(got[0])) if got and got[0] else []
    if len(numbers) != 7 or not numbers[0]:
        return None
    rows, avgdl = numbers[0], sum(numbers[1:]) / numbers[0]
    idf = _fts5_idf(rows, hits)
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
            f = a * k / max(idf * (K1 + 1.0) - a, 1e-300) if a > 0 else 0.0
            n = round(f)
            if abs(f - n) > 1e-3 * max(1, n):
                return None
            counts.append(n)
        out[int(rowid)] = counts
    return out


def _varints(blob: bytes) -> list[int]:
    out, value = [], 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out

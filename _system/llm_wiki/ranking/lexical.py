"""BM25 over the catalog's FTS5 table, for a reader who sees everything and for one behind walls.

Two stages. FTS5's ``bm25()`` with column weights (:data:`COLUMN_WEIGHTS`) finds the pool
(the best few hundred; one length normalisation over the whole entry, FTS5's fixed k1 = 1.2 and
b = 0.75); :func:`bm25f` then orders the pool by BM25F proper, each field normalised by its own
length. The columns weigh the same: with BM25F, leave-one-folder-out chose equal weights over
"summary, aliases and questions twice the body" on every held-out folder (a short field's
match already counts for more once it is normalised by its own length).

**Behind walls** FTS5's statistics (the number of entries holding a term, the mean length)
count every entry, hidden ones too, so :func:`walled_bm25` computes the same formula from the
reader's own entries: for each term it takes the per-entry ``bm25()`` of the one-term query
(which only the entry's own term frequency and length shape) and recovers the entry's
weighted term frequency from it, then scores with the document frequencies and the mean length
of the entries the reader may read. What another scope holds cannot move what this reader
sees. The mean lengths (the whole entry's here, each field's in its domain for :func:`bm25f`)
are the catalog's ``lengths`` table summed over the reader's scopes, exact at any size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence

import llm_wiki.ranking.pool as pool
from llm_wiki.ranking.question import quote

COLUMN_WEIGHTS = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # summary, tags, aliases, questions, domain, body
COLUMN_WEIGHTS_SEMANTIC = (2.0, 1.0, 2.0, 2.0, 0.5, 1.0)  # with vectors (FTS5's order, no BM25F)
K1 = 1.2
B = 0.75


def _weights(weights: Sequence[float] | None = None) -> str:
    return ", ".join(repr(float(w)) for w in (weights or COLUMN_WEIGHTS))


def bm25(
    db: sqlite3.Connection, match: str, pool: int, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """(rowid, score) of the ``pool`` best matches of ``match``, best first (every entry
    counted: only for a reader who sees them all)."""
    cur = db.execute(
        f"SELECT rowid, -bm25(fts, {_weights(weights)}) AS s FROM fts WHERE fts MATCH ? "
        "ORDER BY s DESC, rowid DESC LIMIT ?",
        [match, pool],
    )
    return [(int(r), float(s)) for r, s in cur]


idf = pool.idf  # FTS5's IDF, one definition for the pool and BM25F


def _averages(db: sqlite3.Connection) -> tuple[int, float]:
    """FTS5's own (rows, mean tokens per row), as bm25() uses them (record 1 of fts_data)."""
    numbers = pool.fts5_totals(db)
    if not numbers or not numbers[0]:
        return 0, 1.0
    rows = numbers[0]
    return rows, sum(numbers[1:]) / rows


def _sizes(db: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, int]:
    """rowid -> tokens in the entry (all columns), from fts_docsize."""
    out: dict[int, int] = {}
    ids = list(rowids)
    for start in range(0, len(ids), 900):
        part = ids[start : start + 900]
        marks = ",".join("?" * len(part))
        for rowid, blob in db.execute(
            f"SELECT id, sz FROM fts_docsize WHERE id IN ({marks})", part
        ):
            out[int(rowid)] = sum(pool.fts5_varints(bytes(blob)))
    return out


def walled_bm25(
    db: sqlite3.Connection,
    terms: Sequence[str],
    within: str,
    visible: int,
    df: dict[str, int],
    pool: int,
    mean: float,
    weights: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """BM25 as :func:`bm25` computes it, from the statistics of the rows ``within`` admits
    (a condition on ``rowid``; ``visible`` of them, ``df``: each term's count among them,
    ``mean``: their mean length in tokens)."""
    total, mean_all = _averages(db)
    if not total or not visible:
        return []
    weighted: dict[int, dict[str, float]] = {}
    for term in terms:
        if not df.get(term):
            continue
        n_all = int(db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", [quote(term)]).fetchone()[0])  # fmt: skip
        cur = db.execute(
            f"WITH m AS MATERIALIZED (SELECT rowid, -bm25(fts, {_weights(weights)}) AS s FROM fts "
            f"WHERE fts MATCH ?) SELECT rowid, s FROM m WHERE {within}",
            [quote(term)],
        )
        for rowid, s in cur:
            weighted.setdefault(int(rowid), {})[term] = float(s) / idf(total, n_all)
    if not weighted:
        return []
    sizes = _sizes(db, list(weighted))
    mean = mean or 1.0
    scores: dict[int, float] = {}
    for rowid, parts in weighted.items():
        size = sizes.get(rowid, 0)
        k_all = K1 * (1 - B + B * size / mean_all)
        k_own = K1 * (1 - B + B * size / mean)
        score = 0.0
        for term, a in parts.items():
            # a = tf (k1 + 1) / (tf + k_all)  =>  tf = a k_all / (k1 + 1 - a)
            tf = a * k_all / max(K1 + 1 - a, 1e-12)
            score += idf(visible, df[term]) * tf * (K1 + 1) / (tf + k_own)
        scores[rowid] = score
    best = sorted(scores, key=lambda r: (-scores[r], -r))[:pool]
    return [(r, scores[r]) for r in best]


def _column_sizes(db: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, list[int]]:
    """rowid -> tokens in each column, from fts_docsize."""
    out: dict[int, list[int]] = {}
    ids = list(rowids)
    for start in range(0, len(ids), 900):
        part = ids[start : start + 900]
        marks = ",".join("?" * len(part))
        for rowid, blob in db.execute(
            f"SELECT id, sz FROM fts_docsize WHERE id IN ({marks})", part
        ):
            out[int(rowid)] = pool.fts5_varints(bytes(blob))
    return out


def column_means(db: sqlite3.Connection) -> list[float]:
    """Mean tokens per entry in each column, FTS5's own totals (every entry counted)."""
    numbers = pool.fts5_totals(db)
    if numbers and numbers[0]:
        return [n / numbers[0] for n in numbers[1:]]
    return [1.0] * len(COLUMN_WEIGHTS)


COLUMNS = ("summary", "tags", "aliases", "questions", "domain", "body")  # the fts table's
TOKENIZE = "porter unicode61 remove_diacritics 2"  # as catalog/db.py makes the fts table


def _stems(db: sqlite3.Connection, terms: Sequence[str]) -> dict[str, str]:
    """term -> the token FTS5 stores for it (the same tokenizer run on the term, in a temporary
    table; a word the tokenizer splits keeps its first token)."""
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.llm_wiki_stem USING fts5(t, tokenize = "
        f"'{TOKENIZE}')"
    )
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.llm_wiki_stem_v "
        "USING fts5vocab(temp, llm_wiki_stem, instance)"
    )
    db.execute("DELETE FROM temp.llm_wiki_stem")
    db.executemany(
        "INSERT INTO temp.llm_wiki_stem(rowid, t) VALUES (?, ?)",
        [(n + 1, t) for n, t in enumerate(terms)],
    )
    out: dict[str, str] = {}
    for token, doc, _offset in db.execute(
        "SELECT term, doc, offset FROM temp.llm_wiki_stem_v ORDER BY doc, offset"
    ):
        out.setdefault(terms[int(doc) - 1], str(token))
    return out


def bm25f(
    db: sqlite3.Connection,
    terms: Sequence[str],
    rowids: Sequence[int],
    idf_of: dict[str, float],
    means: Sequence[float] | Mapping[int, Sequence[float]],
    hits: Callable[[str], int] | None = None,
) -> list[tuple[int, float]]:
    """``rowids`` scored by BM25F proper (Robertson & Zaragoza 2009), best first: each column's
    term frequency normalised by *its own* length against that column's mean, then weighted
    (:data:`COLUMN_WEIGHTS`) and summed before one saturation, k1 = 1.2, b = 0.75 for every
    column. FTS5's ``bm25()`` normalises by the whole entry's length, so a long record's
    summary match counted for less than a short note's; here a field's length only shapes
    that field. ``idf_of``: term -> IDF among the reader's entries (terms missing count 0).
    ``means``: each column's mean length, one list for every row or, by rowid, each row's own
    (the ranker gives each entry its domain's means: see :meth:`Ranker._lexical`).

    The frequencies are FTS5's own, per column, from its ``fts5vocab`` instance table (no
    ``bm25()`` call: FTS5 recounts a term's entries for its IDF on every rowid lookup), or the
    same counts from one scan (:func:`pool.column_counts`) when ``hits`` gives FTS5's own count
    of the rows holding a term."""
    ids = list(rowids)
    wanted = [t for t in terms if idf_of.get(t, 0.0) > 0]
    if not ids or not wanted:
        return [(r, 0.0) for r in ids]
    sizes = _column_sizes(db, ids)
    column = {name: n for n, name in enumerate(COLUMNS)}
    marks = ",".join("?" * len(ids))
    score = dict.fromkeys(ids, 0.0)
    stems: dict[str, str] | None = None
    for term in wanted:
        counted = pool.column_counts(db, term, ids, sizes, hits(term)) if hits else None
        if counted is not None:
            tf = counted
        else:
            if stems is None:
                db.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.llm_wiki_vocab "
                    "USING fts5vocab(main, fts, instance)"
                )
                stems = _stems(db, wanted)
            if term not in stems:
                continue
            tf = {}
            for doc, col, count in db.execute(
                "SELECT doc, col, count(*) FROM temp.llm_wiki_vocab WHERE term = ? "
                f"AND doc IN ({marks}) GROUP BY doc, col",
                [stems[term], *ids],
            ):
                tf.setdefault(int(doc), [0] * len(COLUMNS))[column[str(col)]] = int(count)
        for rowid, per_column in tf.items():
            size = sizes.get(rowid) or [0] * len(COLUMNS)
            mean = means.get(rowid, size) if isinstance(means, Mapping) else means
            weighted = sum(
                COLUMN_WEIGHTS[c] * n / (1 - B + B * (size[c] / mean[c] if mean[c] else 0.0))
                for c, n in enumerate(per_column)
                if n
            )
            score[rowid] += idf_of[term] * weighted * (K1 + 1) / (weighted + K1)
    return sorted(score.items(), key=lambda x: (-x[1], -x[0]))

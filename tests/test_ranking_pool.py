"""The lexical shortcuts change nothing: the pool found without scoring every entry that holds a
common word is FTS5's own pool, bit for bit, and the per-column counts read from one scan are the
``fts5vocab`` counts (``llm_wiki.ranking.pool``)."""

from __future__ import annotations

import random
import sqlite3

import pytest

from llm_wiki.ranking import lexical, pool
from llm_wiki.ranking.question import quote

COMMON = ["use", "team", "service"]
RARE = ["kafka", "queue", "ledger", "postgres", "redis", "billing"]


@pytest.fixture(scope="module")
def db():
    """An fts table as the catalog makes it: "use" in 70% of the rows, "team" in 40%, "service"
    in 15%, each rare word in 3-10%, with repeats and lengths that make many exact ties."""
    rng = random.Random(5)
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(summary, tags, aliases, questions, domain, body, "
        f"tokenize = '{lexical.TOKENIZE}')"
    )
    filler = "we measured the load and wrote it down".split()
    share = {"use": 0.7, "team": 0.4, "service": 0.15}
    rows = []
    for n in range(1, 3001):
        cols = []
        for c in range(6):
            words = rng.choices(filler, k=rng.choice([0, 3, 8]) if c < 5 else rng.randint(5, 60))
            for word, p in share.items():
                if rng.random() < p / 3:
                    words += [word] * rng.randint(1, 3)
            for word in RARE:
                if rng.random() < 0.006:
                    words += ["using" if word == "use" else word] * rng.randint(1, 2)
            rng.shuffle(words)
            cols.append(" ".join(words))
        rows.append((n, *cols))
    db.executemany("INSERT INTO fts(rowid, summary, tags, aliases, questions, domain, body) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)  # fmt: skip
    db.commit()  # FTS5 writes its totals (what bm25() counts against) when the rows commit
    return db


def _df(db):
    cache: dict[str, int] = {}

    def df(term: str) -> int:
        if term not in cache:
            sql = "SELECT count(*) FROM fts WHERE fts MATCH ?"
            cache[term] = int(db.execute(sql, [quote(term)]).fetchone()[0])
        return cache[term]

    return df


def _orders():
    rng = random.Random(9)
    out = [["use", "kafka", "queue"], ["kafka", "queue", "use"], ["use", "team", "ledger"],
           ["kafka", "use", "queue"], ["service", "redis"], ["kafka"], ["use", "team"]]  # fmt: skip
    for _ in range(40):
        terms = rng.sample(COMMON, rng.randint(0, 2)) + rng.sample(RARE, rng.randint(1, 3))
        rng.shuffle(terms)
        out.append(terms)
    return out


@pytest.mark.parametrize("weights", [lexical.COLUMN_WEIGHTS, lexical.COLUMN_WEIGHTS_SEMANTIC])
@pytest.mark.parametrize("size", [50, 200])
def test_the_split_pool_is_fts5s_pool(db, weights, size):
    df, rows = _df(db), lexical._averages(db)[0]
    split = 0
    for terms in _orders():
        full = lexical.bm25(db, " OR ".join(quote(t) for t in terms), size, weights)
        got = pool.bm25_pool(db, terms, size, lexical._weights(weights), df, rows)
        if got is not None:
            split += 1
            assert got == full, terms  # the same rows, scores and order, bit for bit
    assert split >= 10  # the shortcut is taken (where the common terms lead or trail)


def test_no_split_when_it_could_change_the_pool(db):
    df, rows = _df(db), lexical._averages(db)[0]
    # a common term between two rare ones: six statements, one per pattern of present runs
    assert len(pool.cover(["kafka", "use", "queue"], {"use"}) or ()) == 6
    # more runs than that: the least common of the common terms counts as rare
    assert pool.cover(["use", "kafka", "team", "queue"], {"use", "team"}) is None
    assert pool.cover(["use", "kafka", "team", "queue"], {"use"}) is not None
    # one common term alone: nothing to split it from
    assert pool.bm25_pool(db, ["use"], 50, lexical._weights(), df, rows) is None
    # the rare terms cannot fill the pool
    assert pool.bm25_pool(db, ["use", "kafka"], 2000, lexical._weights(), df, rows) is None


def test_column_counts_are_the_vocab_counts(db):
    df = _df(db)
    means = lexical.column_means(db)
    for terms in _orders():
        ids = [r for r, _ in lexical.bm25(db, " OR ".join(quote(t) for t in terms), 200)]
        idf = {t: 1.0 + n for n, t in enumerate(terms)}
        by_vocab = lexical.bm25f(db, terms, ids, idf, means)
        assert lexical.bm25f(db, terms, ids, idf, means, df) == by_vocab, terms
    sizes = lexical._column_sizes(db, range(1, 3001))
    counts = pool.column_counts(db, "use", list(range(1, 3001)), sizes, df("use"))
    assert counts is not None and len(counts) == df("use")
    assert pool.column_counts(db, "café", [1, 2], sizes, 1) is None  # not one ASCII word

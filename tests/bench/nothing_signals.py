"""Lexical "nothing found": candidate signals beside the shipped share, each measured by leave
one folder out exactly as :mod:`lofo` chooses the share's floor (nothing here is shipped).

For every dev question (the five folders of :data:`lofo.FOLDERS`, the shipped ranking) the
script takes the ranker's own evidence and the BM25F list, reads the archive's tokens from FTS5's
``fts5vocab`` instance table, and computes, with each question term weighed by its IDF among the
archive's entries as the share weighs it (a term no entry holds as one a single entry holds):

- ``fields``: the weight of the question's terms held in the best entry's summary, tags,
  aliases or questions, over the question's weight;
- ``top``: the same for the best entry as a whole; ``top3``: the best of the first three;
- ``top_over_second``: ``top`` over the second entry's;
- ``rarest_in_top``: 1 when the best entry holds the question's rarest held term;
- ``clarity``: the KL divergence of the first three entries' language model (weighed by BM25F
  score, mixed 0.6 / 0.4 with the archive's) from the archive's (Cronen-Townsend et al. 2002);
- ``passage``: the most question weight that one 50-token window of a body (or one entry's
  fields together) holds, over the question's weight, anywhere in the archive;
- ``agreement``: 1 when the best BM25F entry is among the first three by ``passage``.

A question is "nothing found" when it names something no entry mentions, or its share is under
the floor, or the signal is under its floor; both floors are chosen on four folders (the largest
none_correct within :data:`lofo.FALSE_NONE_BUDGET`; ties: fewer false "nothing"s, then the lower
floors) and the fifth is scored with them. Run: ``python tests/bench/nothing_signals.py``.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devsets  # noqa: E402
import lofo  # noqa: E402

FIELDS = ("summary", "tags", "aliases", "questions")
WINDOW = 50
CLARITY_DEPTH = 3  # leading entries whose language model the clarity compares
CLARITY_MIX = 0.6  # each entry's own share of its smoothed model (the rest is the archive's)
SIGNALS = ("fields", "top", "top3", "top_over_second", "rarest_in_top", "clarity", "passage",
           "agreement")  # fmt: skip


def _tokens(db: Any) -> dict[int, dict[str, list[str]]]:
    """rowid -> column -> the entry's tokens in order (FTS5's own, stemmed)."""
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ns_v USING fts5vocab(main, fts, instance)")
    got: dict[int, dict[str, list[tuple[int, str]]]] = {}
    for term, doc, col, offset in db.execute("SELECT term, doc, col, offset FROM temp.ns_v"):
        got.setdefault(int(doc), {}).setdefault(str(col), []).append((int(offset), term))
    return {d: {c: [t for _, t in sorted(v)] for c, v in cols.items()} for d, cols in got.items()}


def _best_window(entry: dict[str, list[str]], weight: dict[str, float]) -> float:
    """The most question weight one window of the body, or the fields together, holds."""
    best = sum(weight[s] for s in {t for c in FIELDS for t in entry.get(c, [])} if s in weight)
    hits = [(i, s) for i, s in enumerate(entry.get("body", [])) if s in weight]
    inside: Counter[str] = Counter()
    start = 0
    for at, stem in hits:
        inside[stem] += 1
        while hits[start][0] <= at - WINDOW:
            inside[hits[start][1]] -= 1
            if not inside[hits[start][1]]:
                del inside[hits[start][1]]
            start += 1
        best = max(best, sum(weight[s] for s in inside))
    return best


def _clarity(lex: list[tuple[int, float]], docs: dict[int, dict[str, list[str]]],
             archive: Counter[str], size: int) -> float:  # fmt: skip
    lex = lex[:CLARITY_DEPTH]
    total = sum(s for _, s in lex) or 1.0
    model: Counter[str] = Counter()
    for name, score in lex:
        tokens = Counter(t for col in docs.get(name, {}).values() for t in col)
        length = sum(tokens.values()) or 1
        for t, n in tokens.items():
            model[t] += score / total * CLARITY_MIX * n / length
    for t in model:  # smoothed by the archive's model, every term (held by them or not)
        model[t] += (1 - CLARITY_MIX) * archive[t] / size
    rest = (1 - CLARITY_MIX) * (1 - sum(archive[t] for t in model) / size)
    tail = rest * math.log(1 - CLARITY_MIX) if rest > 0 else 0.0
    return tail + sum(p * math.log(p * size / archive[t]) for t, p in model.items() if p > 0)


def folder_signals(folder: str) -> list[dict[str, Any]]:
    """One row a question: its qid, whether it is answerable, its evidence and signals."""
    from llm_wiki.access import Viewer
    from llm_wiki.catalog import read_catalog
    from llm_wiki.ranking import Ranker, parse_question
    from llm_wiki.wiki import Wiki

    sets = lofo.FOLDERS[folder]
    root = devsets.wiki_for(devsets.SETS[sets[0]])
    devsets.set_embeddings(root, False)
    out = []
    with read_catalog(Wiki(root)) as catalog:
        docs = _tokens(catalog.db)
        archive = Counter(t for cols in docs.values() for col in cols.values() for t in col)
        for q in (q for name in sets for q in devsets.questions(name)):
            ranker = Ranker(catalog, Viewer.everyone(), semantic=False)
            lex, evidence = _ranked(ranker, parse_question(q["question"]))
            signals = _signals(ranker, parse_question(q["question"]), lex, docs, archive)
            out.append({
                "qid": q["qid"], "folder": folder, "answerable": bool(q["relevant"]),
                "evidence": evidence, **signals,
            })  # fmt: skip
    return out


def _ranked(ranker: Any, question: Any) -> tuple[list[tuple[int, float]], Any]:
    """The first ten of the BM25F list the ranking used, and its nothing-found evidence."""
    seen: dict[str, Any] = {}
    plain = ranker._lexical

    def kept(*args: Any, **kw: Any) -> Any:
        seen["lex"] = plain(*args, **kw)
        return seen["lex"]

    ranker._lexical = kept
    ranking = ranker.rank(question, limit=10)
    return seen.get("lex", [])[:10], ranking.evidence


def _signals(
    ranker: Any,
    question: Any,
    lex: list[tuple[int, float]],
    docs: dict[int, dict[str, list[str]]],
    archive: Counter[str],
) -> dict[str, float]:
    from llm_wiki.ranking import lexical

    total = ranker.visible()
    least = math.log(1 + 0.5 / (total + 0.5))
    rarest = math.log(1 + (total - 1 + 0.5) / 1.5) - least
    terms = list(question.terms)
    weight_of = {
        t: (math.log(1 + (total - ranker.df(t) + 0.5) / (ranker.df(t) + 0.5)) - least)
        if ranker.df(t) else rarest
        for t in terms
    }  # fmt: skip
    whole = sum(weight_of.values()) or 1e-9
    stems = lexical._stems(ranker.catalog.db, [t for t in terms if ranker.df(t)]) if terms else {}
    weight: dict[str, float] = {}
    for t, stem in stems.items():
        weight[stem] = max(weight.get(stem, 0.0), weight_of[t])

    def held(rowid: int, cols: tuple[str, ...] | None = None) -> float:
        entry = docs.get(rowid, {})
        there = {t for c, toks in entry.items() if cols is None or c in cols for t in toks}
        return sum(w for stem, w in weight.items() if stem in there) / whole

    signals = dict.fromkeys(SIGNALS, 0.0)
    names = [r for r, _ in lex]
    if not names:
        return signals
    passage = {d: _best_window(e, weight) / whole for d, e in docs.items()}
    by_passage = sorted(passage, key=lambda d: -passage[d])
    rare = max(weight, key=lambda stem: weight[stem]) if weight else None
    top = held(names[0])
    second = held(names[1]) if len(names) > 1 else 0.0
    signals.update(
        fields=held(names[0], FIELDS),
        top=top,
        top3=max(held(n) for n in names[:3]),
        top_over_second=top / second if second else 10.0,
        rarest_in_top=float(any(rare in toks for toks in docs.get(names[0], {}).values())),
        clarity=_clarity(lex, docs, archive, sum(archive.values())),
        passage=max(passage.values(), default=0.0),
        agreement=float(names[0] in by_passage[:3]),
    )
    return signals


def _flags(rows: list[dict[str, Any]], held: float, signal: str | None, floor: float) -> list[bool]:
    return [
        lofo.nothing(r["evidence"], held, 0.0) or (signal is not None and r[signal] < floor)
        for r in rows
    ]


def _counts(rows: list[dict[str, Any]], flags: list[bool]) -> tuple[int, int, int, int]:
    nones = [f for r, f in zip(rows, flags, strict=True) if not r["answerable"]]
    answerable = [f for r, f in zip(rows, flags, strict=True) if r["answerable"]]
    return sum(nones), len(nones), sum(answerable), len(answerable)


def _choose(rows: list[dict[str, Any]], signal: str | None) -> tuple[float, float]:
    floors = sorted({round(r[signal], 2) for r in rows} | {0.0}) if signal else [0.0]
    best: tuple[Any, ...] | None = None
    for held in lofo.HELD_FLOORS:
        for floor in floors:
            caught, nones, false, answerable = _counts(rows, _flags(rows, held, signal, floor))
            if false / answerable > lofo.FALSE_NONE_BUDGET:
                continue
            key = (caught / nones, -false / answerable, -held, -floor)
            if best is None or key > best:
                best = key
    return (0.0, 0.0) if best is None else (-best[2], -best[3])


def _auc(rows: list[dict[str, Any]], signal: str) -> float:
    """How often an unanswerable question that names nothing absent scores under an
    answerable one (0.5: no separation)."""
    low = [r[signal] for r in rows if not r["answerable"] and not r["evidence"].unseen]
    high = [r[signal] for r in rows if r["answerable"]]
    pairs = [(a < b) + 0.5 * (a == b) for a in low for b in high]
    return sum(pairs) / len(pairs) if pairs else 0.5


def main() -> None:
    rows = [r for folder in lofo.FOLDERS for r in folder_signals(folder)]
    print("| signal (with the share) | AUC | LOFO none_correct | false_none | floors (share, signal) per fold |")  # fmt: skip
    print("|---|---|---|---|---|")
    for signal in (None, *SIGNALS):
        total = [0, 0, 0, 0]
        chosen = []
        for folder in lofo.FOLDERS:
            held, floor = _choose([r for r in rows if r["folder"] != folder], signal)
            test = [r for r in rows if r["folder"] == folder]
            got = _counts(test, _flags(test, held, signal, floor))
            total = [a + b for a, b in zip(total, got, strict=True)]
            chosen.append(f"{held:.2f}/{floor:.2f}" if signal else f"{held:.2f}")
        auc = f"{_auc(rows, signal):.3f}" if signal else "–"
        print(f"| {signal or 'share alone (shipped)'} | {auc} | {total[0]}/{total[1]} = "
              f"{total[0] / total[1]:.3f} | {total[2]}/{total[3]} = {total[2] / total[3]:.3f} | "
              f"{', '.join(chosen)} |")  # fmt: skip


if __name__ == "__main__":
    main()

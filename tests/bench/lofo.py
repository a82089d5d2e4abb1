"""Choosing the ranker's few parameters without tuning them to one set: leave one folder out.

The dev questions ask about five folders (tdr: ``tdr-dev`` + ``tdr-dev2``; cloud-platform;
madr; log4brains; ck8s, added last: see the eval README). For each folder F, every parameter setting is scored on the other three
folders' questions pooled, the best is chosen, and F is then measured with that choice; the
figures reported per folder are those held-out ones. The values the package ships are the
ones chosen with all the folders (the setting a held-out folder would get).

Two choices, made separately because they touch different things:

- **ranking** (:data:`GRID`): whether BM25F orders the lexical pool, RRF's k, how many leading candidates a question about now (or
  then) also ranks by date, whether a newer entry about the same thing moves up within the
  window, the column weights. Objective: MRR + current_first on the training questions.
- **nothing found**: the lexical floor (``HELD_FLOOR``) with how an everyday word no entry
  holds counts in the lexical share (``EVERYDAY_UNHELD``), and, with vectors, the cosine floor.
  Objective: the largest none_correct whose false_none stays at most :data:`FALSE_NONE_BUDGET`
  on the training questions (ties: the lower floor, which says "nothing" less often).

Run: ``python tests/bench/lofo.py [--embeddings]`` (prints the tables); the benchmark test
``test_retrieval.py::test_leave_one_folder_out`` runs it and checks the targets.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import devsets  # noqa: E402

FOLDERS: dict[str, tuple[str, ...]] = {
    "tdr": ("tdr-dev", "tdr-dev2"),
    "cloud-platform": ("cloud-platform-dev",),
    "madr": ("madr-dev",),
    "log4brains": ("log4brains-dev",),
    "ck8s": ("ck8s-dev",),
}
FLAT = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
FIELDS = (2.0, 1.0, 2.0, 2.0, 0.5, 1.0)  # summary, tags, aliases, questions, domain, body
GRID: dict[str, tuple[Any, ...]] = {
    "BM25F": (True, False),
    "RRF_K": (20, 60),
    "TIME_DEPTH": (0, 5, 10),
    "NEWER_FIRST": (False, True),
    "COLUMN_WEIGHTS": (FIELDS, FLAT),
}
HELD_FLOORS = (0.0, *(round(0.2 + 0.02 * i, 2) for i in range(16)))  # 0.20 .. 0.50
EVERYDAY_WEIGHTS = (0.0, 0.5, 1.0)
COSINE_FLOORS = (0.0, 0.2, 0.25, 0.28, 0.3, 0.32, 1 / 3, 0.35, 0.38, 0.4)
FALSE_NONE_BUDGET = 0.02


@dataclass
class Run:
    """One setting's results on one folder: rankings by record name and each question's
    nothing-found evidence."""

    questions: list[dict[str, Any]]
    rankings: dict[str, list[str]]
    evidence: dict[str, Any]


@contextmanager
def setting(params: dict[str, Any], embeddings: bool = False) -> Iterator[None]:
    from llm_wiki import ranking
    from llm_wiki.ranking import lexical

    for name in ("TIME_DEPTH", "BM25F", "COLUMN_WEIGHTS"):  # with vectors: their own constants
        if embeddings and name in params:
            params = {**params, f"{name}_SEMANTIC": params[name]}
            params.pop(name)
    where = {"COLUMN_WEIGHTS": lexical, "COLUMN_WEIGHTS_SEMANTIC": lexical}
    saved = {k: getattr(where.get(k, ranking), k) for k in params}
    for k, v in params.items():
        setattr(where.get(k, ranking), k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(where.get(k, ranking), k, v)


class _Remembered:
    """An encoder that embeds each question once a process (the settings differ in ranking
    only, so the same question gets the same vector in every one)."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.dim = encoder.dim
        self.seen: dict[str, Any] = {}

    def embed(self, texts: list[str], *args: Any) -> Any:
        if len(texts) != 1:
            return self.encoder.embed(texts, *args)
        if texts[0] not in self.seen:
            self.seen[texts[0]] = self.encoder.embed(texts, *args)
        return self.seen[texts[0]]


def _remember_questions() -> None:
    from llm_wiki.ranking import vectors

    if getattr(vectors.encoder, "remembered", False):
        return
    original = vectors.encoder

    def encoder(wiki: Any) -> Any:
        enc, fingerprint = original(wiki)
        if not isinstance(enc, _Remembered):
            key = str(wiki.settings.get("embeddings.model") or "")
            vectors._ENCODERS[key] = (_Remembered(enc), fingerprint)
        return vectors._ENCODERS[str(wiki.settings.get("embeddings.model") or "")]

    encoder.remembered = True  # type: ignore[attr-defined]
    vectors.encoder = encoder


def run_folder(folder: str, params: dict[str, Any], embeddings: bool) -> Run:
    from llm_wiki import ranking

    if embeddings:
        _remember_questions()

    qs = [q for name in FOLDERS[folder] for q in devsets.questions(name)]
    seen: dict[str, Any] = {}
    original = ranking.Ranker.rank

    def rank(self: Any, question: Any, limit: int, **kw: Any) -> Any:
        got = original(self, question, limit, **kw)
        seen[question.text] = got.evidence
        return got

    ranking.Ranker.rank = rank  # type: ignore[method-assign]
    try:
        with setting(params, embeddings):
            folders = devsets.SETS[FOLDERS[folder][0]]
            rankings, _, _ = devsets.ours(folders, qs, embeddings=embeddings)
    finally:
        ranking.Ranker.rank = original  # type: ignore[method-assign]
    evidence = {q["qid"]: seen.get(" ".join(q["question"].split())) for q in qs}
    return Run(qs, rankings, evidence)


def nothing(evidence: Any, held_floor: float, cosine_floor: float, everyday: float = 1.0) -> bool:
    if evidence is None:
        return True
    if evidence.unseen:
        return True
    if evidence.cosine is not None:
        return bool(evidence.cosine < cosine_floor)
    return bool(evidence.share(everyday) < held_floor)


def scored(
    runs: list[Run], held_floor: float = 0.0, cosine_floor: float = 0.0, everyday: float = 1.0
) -> dict[str, Any]:
    qs = [q for r in runs for q in r.questions]
    rankings = {k: v for r in runs for k, v in r.rankings.items()}
    flags = {
        k: nothing(ev, held_floor, cosine_floor, everyday)
        for r in runs
        for k, ev in r.evidence.items()
    }
    return devsets.score(qs, rankings, flags)


def settings(grid: dict[str, tuple[Any, ...]] | None = None) -> list[dict[str, Any]]:
    grid = grid or GRID
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def objective(m: dict[str, Any]) -> float:
    return float(m["mrr"]) + float(m["current_first"] or 0.0)


def choose_floors(runs: list[Run], embeddings: bool) -> tuple[float, float, float]:
    """(lexical floor, cosine floor, everyday weight): the largest none_correct within the
    false_none budget; ties: fewer false "nothing"s, then the lower floors, then the larger
    weight. With vectors the lexical share is not used (the cosine decides)."""
    best: tuple[Any, ...] | None = None
    floors = [
        (h, c, w)
        for h in (HELD_FLOORS if not embeddings else (0.0,))
        for c in (COSINE_FLOORS if embeddings else (0.0,))
        for w in (EVERYDAY_WEIGHTS if not embeddings else (1.0,))
    ]
    for held, cosine, weight in floors:
        m = scored(runs, held, cosine, weight)
        if (m["false_none"] or 0.0) > FALSE_NONE_BUDGET:
            continue
        key = (
            float(m["none_correct"] or 0.0),
            -float(m["false_none"] or 0.0),
            -held,
            -cosine,
            weight,
        )
        if best is None or key > best:
            best = key
    if best is None:
        return 0.0, 0.0, 1.0
    return -best[2], -best[3], best[4]


def label(params: dict[str, Any]) -> str:
    w = "fields" if params["COLUMN_WEIGHTS"] == FIELDS else "flat"
    return (
        f"{'bm25f' if params.get('BM25F', True) else 'fts5-bm25'} "
        f"k={params['RRF_K']} time={params['TIME_DEPTH']} "
        f"newer={'y' if params['NEWER_FIRST'] else 'n'} {w}"
    )


def leave_one_folder_out(
    embeddings: bool, grid: dict[str, tuple[Any, ...]] | None = None
) -> dict[str, Any]:
    """Every setting on every folder once, then the held-out choice per folder and the choice
    on all of them. Returns {"held_out": {folder: metrics}, "pooled": metrics, "chosen": {...}}."""
    grid = settings(grid)
    runs = {
        n: {f: run_folder(f, params, embeddings) for f in FOLDERS} for n, params in enumerate(grid)
    }

    def pick(train: list[str]) -> tuple[int, float, float, float]:
        n = max(
            range(len(grid)),
            key=lambda i: (objective(scored([runs[i][f] for f in train])), -i),
        )
        held, cosine, weight = choose_floors([runs[n][f] for f in train], embeddings)
        return n, held, cosine, weight

    def text(n: int, held: float, cosine: float, weight: float) -> str:
        return f"{label(grid[n])} held={held:.2f} everyday={weight:.1f} cos={cosine:.2f}"

    held_out: dict[str, Any] = {}
    chosen: dict[str, str] = {}
    test_runs: list[tuple[Run, float, float, float]] = []
    for folder in FOLDERS:
        n, held, cosine, weight = pick([f for f in FOLDERS if f != folder])
        run = runs[n][folder]
        held_out[folder] = scored([run], held, cosine, weight)
        chosen[folder] = text(n, held, cosine, weight)
        test_runs.append((run, held, cosine, weight))
    qs = [q for r, *_ in test_runs for q in r.questions]
    rankings = {k: v for r, *_ in test_runs for k, v in r.rankings.items()}
    flags = {k: nothing(ev, h, c, w) for r, h, c, w in test_runs for k, ev in r.evidence.items()}
    pooled = devsets.score(qs, rankings, flags)
    n, held, cosine, weight = pick(list(FOLDERS))
    chosen["all"] = text(n, held, cosine, weight)
    return {
        "held_out": held_out,
        "pooled": pooled,
        "chosen": chosen,
        "all": (grid[n], held, cosine, weight),
    }


def main() -> None:
    embeddings = "--embeddings" in sys.argv
    grid = None
    if "--small" in sys.argv:  # the dimensions that moved anything in the full lexical run
        grid = {**GRID, "NEWER_FIRST": (False,), "COLUMN_WEIGHTS": (FIELDS,)}
    got = leave_one_folder_out(embeddings, grid)
    rows = {f: {"held-out": m} for f, m in got["held_out"].items()}
    rows["pooled"] = {"held-out": got["pooled"]}
    print(devsets.table(rows))
    for folder, text in got["chosen"].items():
        print(f"chosen without {folder}: {text}" if folder != "all" else f"all folders: {text}")


if __name__ == "__main__":
    main()

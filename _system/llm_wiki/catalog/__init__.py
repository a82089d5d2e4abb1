"""The derived catalog (SQLite + FTS5 under .llm-wiki/) and the INDEX.md / index/ files.

Markdown entries are the truth; everything here is a view that rebuilds from them. Three parts:

- :mod:`.db`: the schema, :class:`Row`, and :class:`Catalog`, the queries each run for a viewer;
- :mod:`.refresh`: keeping the catalog in step with log.md and the files;
- :mod:`.index_md`: rendering INDEX.md and index/<domain>.md.

This module opens the catalog (:func:`open_catalog`, :func:`read_catalog`) and runs ``llm-wiki
index`` (:func:`rebuild_index`) and ``llm-wiki index --check`` (:func:`check_index`); it
re-exports the names the rest of the package uses, so ``from llm_wiki.catalog import …`` is the
one way in.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from llm_wiki.access import Viewer
from llm_wiki.catalog.db import (
    CATALOG_VERSION,
    COLUMNS,
    Catalog,
    Fork,
    Row,
    create_db,
    render_line,
    sqlite3,  # the C module (see db.py)
)
from llm_wiki.catalog.fresh import is_fresh
from llm_wiki.errors import os_failure, storage_failure
from llm_wiki.files import sweep_temp
from llm_wiki.wiki import STATE_DIR, Wiki

if TYPE_CHECKING:  # names __getattr__ below loads on first use, typed for the checker
    from pathlib import Path

    from llm_wiki.catalog.refresh import Parsed, add_written, record_archived
    from llm_wiki.catalog.result import IndexResult

__all__ = [
    "CATALOG_VERSION",
    "Catalog",
    "Fork",
    "IndexResult",
    "Row",
    "add_written",
    "check_index",
    "open_catalog",
    "peek_catalog",
    "read_catalog",
    "rebuild_index",
    "record_archived",
    "render_line",
]

# Names of .refresh, loaded when first asked for: a read of a fresh catalog needs none of them.
_FROM_REFRESH = frozenset(
    {"Parsed", "add_written", "bulk_load", "iter_archived", "parse_file", "record_archived", "scan"}
)


def __getattr__(name: str) -> Any:
    if name in _FROM_REFRESH:
        import llm_wiki.catalog.refresh as refresh_module  # deferred: start-up of every read

        return getattr(refresh_module, name)
    if name == "IndexResult":
        from llm_wiki.catalog.result import IndexResult  # deferred: start-up of every read

        return IndexResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _connect_current(path: str) -> sqlite3.Connection | None:
    """The catalog at ``path`` if it exists and was built by this version of the code."""
    if not os.path.exists(path):
        return None
    db = sqlite3.connect(path, timeout=60)
    try:
        got = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    except sqlite3.DatabaseError:
        got = None
    if got and got[0] == CATALOG_VERSION:
        db.execute("PRAGMA synchronous=NORMAL")  # WAL mode is kept in the file itself
        return db
    db.close()
    return None


def _catalog_path(wiki: Wiki) -> str:
    return wiki.state_file("catalog.sqlite3")


def parsed_shas(wiki: Wiki) -> dict[str, str]:
    """Entry id -> sha256 of each file the catalog parsed into a row (see :func:`each_parsed_sha`)."""
    return dict(each_parsed_sha(wiki))


def each_parsed_sha(wiki: Wiki, ids: Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
    """(entry id, sha256) of each file the catalog parsed into a row (of ``ids`` only, if
    given), streamed in id order, read as it stands (no refresh, no lock); nothing when there is
    no catalog of this version. verify uses it to skip parsing a file whose bytes are the very
    bytes the catalog already parsed."""
    path = _catalog_path(wiki)
    if not os.path.exists(path):
        return
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return
    try:
        got = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if not got or got[0] != CATALOG_VERSION:
            return
        db.execute("PRAGMA cache_size=-256")  # one pass over the table: no page is read twice
        if ids is None:
            yield from db.execute("SELECT id, sha256 FROM entries ORDER BY id")  # by its index
        else:
            wanted = sorted(set(ids))
            for at in range(0, len(wanted), 500):  # under SQLite's limit of bound parameters
                part = wanted[at : at + 500]
                marks = ",".join("?" * len(part))
                yield from db.execute(
                    f"SELECT id, sha256 FROM entries WHERE id IN ({marks}) ORDER BY id", part
                )
    except sqlite3.Error:
        return
    finally:
        db.close()


def open_catalog(wiki: Wiki, *, lock_held: bool = True) -> Catalog:
    """Open the catalog, up to date.

    Writers call this with the write lock held (the default). Readers pass ``lock_held=False``
    and never wait for a writer: a stale catalog is brought up to date under the lock when the
    lock is free, and taken as it stands while another process holds it (see
    :func:`_snapshot_or_refresh`). Only a missing catalog, or one of another version, makes a
    reader wait for the lock. A catalog is only ever dropped or rebuilt under the lock.
    """
    path = _catalog_path(wiki)
    try:
        db = _connect_current(path)
        if db is not None:
            catalog = Catalog(wiki, db)
            if lock_held:
                _refresh(catalog)
                return catalog
            current = _snapshot_or_refresh(catalog)
            if current is not None:
                return current
        with contextlib.nullcontext() if lock_held else _locked(wiki):
            db = _connect_current(path)
            if db is None:
                _drop_catalog(wiki)
                db = create_db(path)
            catalog = Catalog(wiki, db)
            _refresh(catalog)
            return catalog
    except sqlite3.DatabaseError as exc:
        failure = storage_failure(exc)
        if failure is not None:  # a full or read-only disk: the cache is fine, the disk is not
            raise failure from None
        # a damaged cache: drop it and build it again
        with contextlib.nullcontext() if lock_held else _locked(wiki):
            _drop_catalog(wiki)
            catalog = Catalog(wiki, create_db(path))
            _refresh(catalog)
            return catalog
    except OSError as exc:
        raise os_failure(exc, f"cannot open the catalog in {wiki.path(STATE_DIR)}") from None


def _refresh(catalog: Catalog) -> None:
    from llm_wiki.catalog.refresh import refresh  # deferred: start-up of a fresh read

    refresh(catalog)


def _locked(wiki: Wiki, *, blocking: bool = True) -> Any:
    import llm_wiki.store as store  # deferred: start-up of a fresh read (log and lock code)

    return store.locked(wiki, blocking=blocking)


def _snapshot_or_refresh(catalog: Catalog) -> Catalog | None:
    """A reader's catalog without waiting: ``catalog`` itself when fresh; brought up to date
    under the lock when the lock is free right now; taken as it stands when another process
    holds the lock. A process holding the lock is writing (or importing, archiving, syncing)
    and has acknowledged nothing the catalog lacks: every write commits its catalog row before
    it returns, so what the snapshot misses is only what is still being written. The viewer's
    walls still apply, since they are read from access.yaml, not the catalog. None when the
    catalog vanished or changed version while the lock was taken (the caller builds it)."""
    if is_fresh(catalog):
        return catalog
    with _locked(catalog.wiki, blocking=False) as got:
        if not got:
            return catalog
        # reconnect under the lock: another process may have rebuilt it meanwhile
        wiki = catalog.wiki
        catalog.close()
        db = _connect_current(_catalog_path(wiki))
        if db is None:
            return None
        catalog = Catalog(wiki, db)
        _refresh(catalog)
        return catalog


def read_catalog(wiki: Wiki) -> Catalog:
    """The catalog for a read command: fresh, opened without holding the lock afterwards."""
    return open_catalog(wiki, lock_held=False)


def peek_catalog(wiki: Wiki) -> Catalog | None:
    """The catalog for a caller that must not wait at all (the agent hooks): as a reader gets
    it (:func:`_snapshot_or_refresh`), but None when there is no catalog of this version yet
    rather than waiting for a first build, which can take seconds."""
    try:
        db = _connect_current(_catalog_path(wiki))
        if db is None:
            return None
        return _snapshot_or_refresh(Catalog(wiki, db))
    except sqlite3.DatabaseError:
        return None


def _drop_catalog(wiki: Wiki) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_catalog_path(wiki) + suffix)


def _index_folders(wiki: Wiki) -> list[Path]:
    """Every folder an index file is written in: the root, ``index/`` and its month folders,
    and the same under each scope's ``indexes/<scope>/`` (walls)."""
    scopes = wiki.root / "indexes"
    bases = [
        wiki.root,
        *(sorted(p for p in scopes.iterdir() if p.is_dir()) if scopes.is_dir() else []),
    ]
    out = []
    for base in bases:
        index_dir = base / "index"
        months = sorted(p for p in index_dir.iterdir() if p.is_dir()) if index_dir.is_dir() else []
        out += [base, index_dir, *months]
    return out


def rebuild_index(wiki: Wiki, *, full: bool = False) -> IndexResult:
    """``llm-wiki index``: scan every file, re-parse what changed, write the index files.
    ``full``: drop the catalog first and parse every file."""
    import llm_wiki.progress as progress  # deferred: start-up of a fresh read
    from llm_wiki.catalog.refresh import scan  # deferred: start-up of a fresh read
    from llm_wiki.catalog.result import IndexResult  # deferred: as above

    with _locked(wiki):
        for folder in (wiki.state_dir / "tmp", wiki.state_dir, *_index_folders(wiki)):
            sweep_temp(folder)  # temp files of writes that were killed
        path = _catalog_path(wiki)
        try:
            db = None if full else _connect_current(path)
        except sqlite3.DatabaseError:
            db = None
        if db is None:
            _drop_catalog(wiki)
            db = create_db(path)
        catalog = Catalog(wiki, db)
        try:
            result = scan(catalog, progress.current())
            return IndexResult(
                entries=catalog.count(Viewer.everyone()),
                parsed=result.parsed,
                removed=result.removed,
                written=result.written,
                problems=tuple(catalog.problems()),
                unlogged=_unlogged(wiki, result.read),
            )
        finally:
            catalog.close()


def _unlogged(wiki: Wiki, read: Sequence[tuple[str, str, str]]) -> tuple[tuple[str, str], ...]:
    """(id, path) of each entry file a scan read whose bytes no write line of log.md logged:
    edited, or added, behind the tool's back. The catalog follows the files, so without this
    `index` would put a hand edit into INDEX.md and answers without a word (verify says more)."""
    if not read:
        return ()
    import llm_wiki.store as store  # deferred: start-up of a fresh read (log and lock code)

    logged: dict[str, set[str]] = {}
    for entry_id, sha, _scope, _path in store.iter_writes(wiki):
        logged.setdefault(entry_id, set()).add(sha)
    return tuple(
        (entry_id, path) for entry_id, sha, path in read if sha not in logged.get(entry_id, ())
    )


# Everything a read is served from, in an order both catalogs share: a hand edit of any row
# (a summary, a scope, a tag, a count, the full-text index) shows as a difference.
_CONTENT = (
    # mtime_ns and size are a scan's bookkeeping (an archived row keeps its file's), not served
    "SELECT " + COLUMNS.replace("mtime_ns, size, ", "") + " FROM entries ORDER BY id",
    "SELECT old, new FROM edges ORDER BY old, new",
    "SELECT id, tag FROM tags ORDER BY id, tag",
    "SELECT id, actor FROM actors ORDER BY id, actor",
    "SELECT scope, domain, type, status, archived, n FROM counts WHERE n != 0 "
    "ORDER BY scope, domain, type, status, archived",
    "SELECT e.id, f.summary, f.tags, f.aliases, f.questions, f.domain, f.body "
    "FROM fts f JOIN entries e ON e.rowid = f.rowid ORDER BY e.id",
    "SELECT count(*) FROM fts",
    # BM25F's field lengths by scope and domain: kept in step by every write, so drift shows
    "SELECT scope, domain, n, summary, tags, aliases, questions, domain_tokens, body "
    "FROM lengths ORDER BY scope, domain",
    "SELECT path, message FROM problems ORDER BY path",
)


def check_index(wiki: Wiki) -> IndexResult:
    """``llm-wiki index --check``: what a rebuild from scratch would change. Writes nothing in
    the wiki: the fresh catalog is built in a temp file (in memory, its full-text index of every
    body would grow with the wiki)."""
    import tempfile  # deferred: only `index --check` needs a scratch folder

    from llm_wiki.catalog.index_md import (  # deferred: only a check renders every file
        expected_files,
        stale_index_files,
    )
    from llm_wiki.catalog.refresh import (  # deferred: start-up of a fresh read
        bulk_load,
        iter_archived,
        parse_file,
    )
    from llm_wiki.catalog.result import IndexResult  # deferred: as above
    from llm_wiki.store import archive_names, iter_entry_files  # deferred: as above

    scratch = tempfile.TemporaryDirectory(prefix="llm-wiki-check-")
    fresh_db = create_db(os.path.join(scratch.name, "catalog.sqlite3"))
    fresh = Catalog(wiki, fresh_db)
    try:
        loose = list(iter_entry_files(wiki))
        seen = {rel for rel, _, _ in loose}
        parsed = 0

        def files() -> Iterator[Parsed]:  # streamed, as a full build is: one batch in memory
            nonlocal parsed
            for rel, mtime, size in loose:
                parsed += 1
                yield parse_file(rel, (wiki.root / rel).read_bytes(), mtime, size)
            for item in iter_archived(wiki, archive_names(wiki)):
                if item.path not in seen or item.path == item.archive:
                    seen.add(item.path)
                    parsed += 1
                    yield item

        with fresh_db:
            bulk_load(fresh, files())
        stale: list[str] = []
        expected = []
        for rel, text in expected_files(fresh):
            expected.append(rel)
            try:
                if (wiki.root / rel).read_bytes() != text.encode():
                    stale.append(rel)
            except FileNotFoundError:
                stale.append(rel)
        stale += stale_index_files(fresh, expected)
        entries = fresh.count(Viewer.everyone())
        same = entries == 0  # no catalog (or an unreadable one) matches an empty wiki only
        if os.path.exists(_catalog_path(wiki)):
            with contextlib.suppress(sqlite3.DatabaseError):
                db = sqlite3.connect(_catalog_path(wiki))
                try:  # row by row, in a fixed order: neither side is held in memory
                    same = all(
                        all(
                            want == have
                            for want, have in itertools.zip_longest(
                                fresh_db.execute(query), db.execute(query)
                            )
                        )
                        for query in _CONTENT
                    )
                finally:
                    db.close()
        if not same:
            stale.append(".llm-wiki/catalog.sqlite3")
        return IndexResult(
            entries=entries,
            parsed=parsed,
            removed=0,
            stale=tuple(sorted(set(stale))),
            problems=tuple(fresh.problems()),
        )
    finally:
        fresh.close()
        scratch.cleanup()

"""Keeping the catalog in step with the files: following log.md, scanning, archived entries.

The catalog follows log.md: a read whose log.md has not changed since the catalog last looked
costs one stat and one small read (:func:`is_fresh`); new log lines are applied one by one
(:func:`refresh`); anything else (a rewritten log after a git merge, a missing catalog) falls
back to :func:`scan`, which lists only folders whose stat moved since a scan listed them and
re-parses only files whose size or mtime changed. ``llm-wiki index`` always scans. Each change re-renders only the index files it touched (:mod:`.index_md`).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import namedtuple
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import llm_wiki.store as store
from llm_wiki.catalog.db import (
    CATALOG_VERSION,
    COLUMNS,
    Catalog,
    fts5_varints,
    render_line,
    row_from_db,
)
from llm_wiki.catalog.fresh import log_state, tail_at, walls_changed
from llm_wiki.entries import NAME_RE, Entry, decode_text, parse_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.records import Frozen
from llm_wiki.wiki import Wiki

try:  # json's own C string encoder, without json's ~0.8 ms import (see _json below)
    from _json import encode_basestring
except ImportError:  # pragma: no cover - not CPython
    from json.encoder import py_encode_basestring as encode_basestring

if TYPE_CHECKING:
    import llm_wiki.progress as progress
    from llm_wiki.catalog.index_md import Change


# --------------------------------------------------------------------------- parsed files


if TYPE_CHECKING:

    class Parsed(NamedTuple):
        """A file read from disk: its entry, or the reason it could not be read."""

        path: str
        sha256: str
        mtime_ns: int
        size: int
        entry: Entry | None
        archive: str | None = None
        problem: str = ""
        archive_at: str | None = None

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    Parsed = namedtuple(
        "Parsed",
        ["path", "sha256", "mtime_ns", "size", "entry", "archive", "problem", "archive_at"],
        defaults=(None, "", None),
    )


def parse_file(
    rel: str,
    data: bytes,
    mtime_ns: int,
    size: int,
    archive: str | None = None,
    archive_at: str | None = None,
) -> Parsed:
    sha = store.sha256_bulk(data)
    if not entry_path_ok(rel):  # an archive member or a log line from another clone
        problem = f"{rel}: not a path of the form entries/YYYY/MM/<id>.md; the copy is ignored."
        return Parsed(rel, sha, mtime_ns, size, None, archive, problem)
    try:
        entry = parse_entry(decode_text(data, rel), what=rel)
    except InvalidInput as exc:
        return Parsed(rel, sha, mtime_ns, size, None, archive, exc.message)
    expected = os.path.basename(rel)[:-3]
    if entry.id != expected:
        problem = f"{rel}: its id {entry.id!r} does not match its file name; restore the file."
        return Parsed(rel, sha, mtime_ns, size, None, archive, problem)
    # The domain and scope name index files (index/<domain>.md, indexes/<scope>/): a file that
    # came by git or by hand must not point them outside the wiki.
    for name, value in (("domain", entry.domain), ("scope", entry.scope)):
        if value and not NAME_RE.match(value):
            problem = (
                f"{rel}: its {name} {value!r} is not lowercase letters, digits and hyphens; "
                "restore the file."
            )
            return Parsed(rel, sha, mtime_ns, size, None, archive, problem)
    return Parsed(rel, sha, mtime_ns, size, entry, archive, archive_at=archive_at)


def _duplicate_id(rel: str, entry_id: str, holder: str) -> str:
    """The problem recorded for a file whose id another file (``holder``) already uses."""
    return f"{rel}: id {entry_id} is already used by {holder}; remove the copy."


def entry_path_ok(rel: str) -> bool:
    """Whether ``rel`` is a path of entries/<year>/<month>/<file>: a row's path is where the
    archiver removes an original, so one that leads out of entries/ must never become a row."""
    parts = rel.split("/")
    return len(parts) == 4 and parts[0] == "entries" and not {"", ".", ".."} & set(parts)


def _json(values: Sequence[Any]) -> str:
    """``json.dumps(values, ensure_ascii=False)`` of a list of strings (or of lists of strings),
    by the C function json itself encodes each string with, joined with json's separators: no
    encoder per call (a full build encodes seven lists per entry), and a write loads no json.
    Anything else goes through json."""
    if not values:
        return "[]"
    parts = []
    for value in values:
        if isinstance(value, str):
            parts.append(encode_basestring(value))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            parts.append("[" + ", ".join(map(encode_basestring, value)) + "]")
        else:
            return _dumps(values, ensure_ascii=False)
    return "[" + ", ".join(parts) + "]"


def _dumps(value: Any, **options: Any) -> str:
    import json  # deferred: a write without extra fields, resolves or relinks loads no json

    return json.dumps(value, **options)


def _loads(text: str) -> Any:
    import json  # deferred: as _dumps

    return json.loads(text)


def _row_values(parsed: Parsed, superseded_by: str | None, line: str) -> tuple[Any, ...]:
    """The ``entries`` columns (in ``db.COLUMNS`` order) for one parsed file."""
    entry = parsed.entry
    assert entry is not None
    return (
        entry.id,
        parsed.path,
        parsed.archive,
        parsed.sha256,
        parsed.mtime_ns,
        parsed.size,
        entry.type,
        entry.date,
        entry.domain,
        entry.scope,
        entry.status,
        entry.origin,
        entry.summary,
        _json(entry.tags),
        _json(entry.actors),
        _json(entry.aliases),
        _json(entry.questions),
        _json(entry.supersedes),
        _json(entry.sources),
        _json([[a.id, a.rejected_because] for a in entry.alternatives_considered]),
        _dumps(dict(entry.extra), ensure_ascii=False, sort_keys=True) if entry.extra else None,
        len(entry.body),
        superseded_by,
        line,
        parsed.archive_at,
        _dumps(entry.resolves, ensure_ascii=False) if entry.resolves else None,
    )


class ScanResult(Frozen):
    """Files a scan re-parsed, rows it dropped, index files it wrote; ``read``: (id, sha256,
    path) of each loose entry file it read."""

    FIELDS = ("parsed", "removed", "written", "read")
    __slots__ = FIELDS
    parsed: int
    removed: int
    written: tuple[str, ...]
    read: tuple[tuple[str, str, str], ...]

    def __init__(
        self,
        parsed: int,
        removed: int,
        written: tuple[str, ...] = (),
        read: tuple[tuple[str, str, str], ...] = (),
    ) -> None:
        object.__setattr__(self, "parsed", parsed)
        object.__setattr__(self, "removed", removed)
        object.__setattr__(self, "written", written)
        object.__setattr__(self, "read", read)


class _NeedsScan(Exception):
    """Following log.md cannot settle where an entry is; a scan of the files can."""


def write_index_files(catalog: Catalog, **kwargs: Any) -> list[str]:
    """:func:`.index_md.write_index_files`, loaded when something is rendered: a read of a
    fresh catalog renders nothing."""
    import llm_wiki.catalog.index_md as index_md  # deferred: start-up of every read

    return index_md.write_index_files(catalog, **kwargs)


# --------------------------------------------------------------------------- writing rows


def _insert(catalog: Catalog, parsed: Parsed) -> None:
    entry = parsed.entry
    assert entry is not None
    cur = catalog.db.execute(
        f"INSERT INTO entries({COLUMNS}) VALUES({','.join('?' * 26)})",
        _row_values(parsed, None, ""),
    )
    _insert_side_tables(catalog, [(cur.lastrowid, entry)])


def _insert_side_tables(catalog: Catalog, items: Sequence[tuple[int | None, Entry]]) -> None:
    db = catalog.db
    db.executemany(
        "INSERT OR IGNORE INTO edges(old, new) VALUES(?, ?)",
        [(old, e.id) for _, e in items for old in e.supersedes],
    )
    db.executemany(
        "INSERT INTO tags(id, tag) VALUES(?, ?)", [(e.id, t) for _, e in items for t in e.tags]
    )
    db.executemany(
        "INSERT INTO actors(id, actor) VALUES(?, ?)",
        [(e.id, a) for _, e in items for a in e.actors],
    )
    db.executemany(
        "INSERT INTO fts(rowid, summary, tags, aliases, questions, domain, body) "
        "VALUES(?, ?, ?, ?, ?, ?, ?)",
        [
            (
                rowid,
                e.summary,
                " ".join(e.tags),
                " ; ".join(e.aliases),
                " ; ".join(e.questions),
                e.domain,
                searchable_body(e),
            )
            for rowid, e in items
        ],
    )
    _count_lengths(catalog, [rowid for rowid, _ in items if rowid is not None], 1)


def searchable_body(e: Entry) -> str:
    """The body as the search index holds it: the body, then what its alternatives say that
    the body does not (an entry written with ``--alt kafka-msk: ordering is not needed``
    answers "Why not Kafka?"), an option's id as words ("kafka msk"). An imported record's
    alternatives are read from its own text, which the body already holds: searched again in
    other words they tipped the dev folders' rankings (pooled lexical MRR .928 -> .924)."""
    if e.origin == "imported" or not e.alternatives_considered:
        return e.body
    low = e.body.lower()
    extra = [
        part
        for a in e.alternatives_considered
        for part in (a.id.replace("-", " ").replace("_", " "), a.rejected_because)
        if part and part.lower() not in low
    ]
    return e.body if not extra else e.body + "\n\n" + "\n".join(extra)


def _count_lengths(catalog: Catalog, rowids: Sequence[int], sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) the field lengths FTS5 counted for ``rowids`` in the
    ``lengths`` table, by their scope and domain: after their fts rows go in, before they go
    out, in the caller's transaction, so the table always sums what fts holds."""
    totals: dict[tuple[str, str], list[int]] = {}
    for start in range(0, len(rowids), 900):
        part = list(rowids[start : start + 900])
        marks = ",".join("?" * len(part))
        for scope, domain, blob in catalog.db.execute(
            "SELECT e.scope, e.domain, d.sz FROM fts_docsize d JOIN entries e ON e.rowid = d.id "
            f"WHERE d.id IN ({marks})",
            part,
        ):
            sums = totals.setdefault((scope, domain), [0] * 7)
            sums[0] += 1
            for n, tokens in enumerate(fts5_varints(bytes(blob))):
                sums[n + 1] += tokens
    catalog.db.executemany(
        "INSERT INTO lengths VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(scope, domain) DO "
        "UPDATE SET n = n + excluded.n, summary = summary + excluded.summary, "
        "tags = tags + excluded.tags, aliases = aliases + excluded.aliases, "
        "questions = questions + excluded.questions, "
        "domain_tokens = domain_tokens + excluded.domain_tokens, body = body + excluded.body",
        [(scope, domain, *(sign * v for v in sums)) for (scope, domain), sums in totals.items()],
    )
    if sign < 0:
        catalog.db.execute("DELETE FROM lengths WHERE n <= 0")


def bulk_load(catalog: Catalog, parsed: Iterable[Parsed], batch: int = 2000) -> None:
    """Fill an empty catalog (a full build), streaming: rows go in by the ``batch``, so memory
    holds one batch of entries, not the wiki. Lines are rendered as they go in; the few
    entries something supersedes are re-rendered at the end, once every row is there."""
    first = int(catalog.db.execute("SELECT coalesce(max(rowid), 0) FROM entries").fetchone()[0]) + 1
    held: dict[str, str] = {}  # id -> path of the copy loaded
    problems: list[tuple[str, str]] = []
    rows: list[tuple[Any, ...]] = []
    items: list[tuple[int | None, Entry]] = []
    replaced: set[str] = set()

    def flush() -> None:
        catalog.db.executemany(
            f"INSERT INTO entries(rowid, {COLUMNS}) VALUES({','.join('?' * 27)})", rows
        )
        _insert_side_tables(catalog, items)
        rows.clear()
        items.clear()

    for item in parsed:
        entry = item.entry
        if entry is None:
            problems.append((item.path, item.problem))
            continue
        if entry.id in held:
            problems.append((item.path, _duplicate_id(item.path, entry.id, held[entry.id])))
            continue
        held[entry.id] = item.path
        replaced.update(entry.supersedes)
        rowid = first + len(held) - 1
        rows.append((rowid, *_row_values(item, None, render_line(entry, (), item.archive))))
        items.append((rowid, entry))
        if len(rows) >= batch:
            flush()
    flush()
    catalog.db.executemany("INSERT OR REPLACE INTO problems(path, message) VALUES(?, ?)", problems)
    _relink(catalog, replaced & held.keys())


def _delete_id(catalog: Catalog, entry_id: str) -> None:
    got = catalog.db.execute("SELECT rowid FROM entries WHERE id=?", (entry_id,)).fetchone()
    if got is None:
        return
    _count_lengths(catalog, [got[0]], -1)
    catalog.db.execute("DELETE FROM fts WHERE rowid=?", (got[0],))
    catalog.db.execute("DELETE FROM entries WHERE id=?", (entry_id,))
    catalog.db.execute("DELETE FROM edges WHERE new=?", (entry_id,))
    catalog.db.execute("DELETE FROM tags WHERE id=?", (entry_id,))
    catalog.db.execute("DELETE FROM actors WHERE id=?", (entry_id,))


def _relink(
    catalog: Catalog, ids: Iterable[str], inserted: dict[str, Parsed] | None = None
) -> set[str]:
    """Recompute superseded_by and the cached line of ``ids``; return their domains.
    ``inserted``: rows this change just inserted from these parsed files (id -> file), whose
    fields are the entry's own, so their line is rendered from the entry (as a full build
    renders it) without reading the row back and decoding its lists."""
    domains: set[str] = set()
    for entry_id in sorted(set(ids)):
        item = (inserted or {}).get(entry_id)
        row: Any
        if item is not None and item.entry is not None and item.path == item.entry.relpath:
            row = item.entry
        else:
            got = catalog.db.execute(
                f"SELECT {COLUMNS} FROM entries WHERE id=?", (entry_id,)
            ).fetchone()
            if got is None:
                continue
            row = row_from_db(got)
            item = None
        newer = tuple(
            r[0]
            for r in catalog.db.execute(
                "SELECT e.new FROM edges e JOIN entries n ON n.id = e.new "
                "WHERE e.old=? AND n.scope=? ORDER BY e.new",
                (entry_id, row.scope),
            )
        )
        line = render_line(row, newer, row.archive if item is None else item.archive)
        catalog.db.execute(
            "UPDATE entries SET superseded_by=?, line=? WHERE id=?",
            (_dumps(newer) if newer else None, line, entry_id),
        )
        domains.add(row.domain)
    return domains


def apply(catalog: Catalog, parsed: Iterable[Parsed], removed: Iterable[str] = ()) -> set[str]:
    """Upsert parsed files and drop removed paths; return the domains whose files changed."""
    domains: set[str] = set()
    relink: set[str] = set()
    inserted: dict[str, Parsed] = {}  # id -> the file its row was just made from

    def forget(entry_id: str) -> None:
        inserted.pop(entry_id, None)
        got = catalog.db.execute(
            "SELECT domain, supersedes FROM entries WHERE id=?", (entry_id,)
        ).fetchone()
        if got is not None:
            domains.add(got[0])
            relink.update(_loads(got[1]))
            _delete_id(catalog, entry_id)

    def id_at(path: str) -> str | None:
        got = catalog.db.execute("SELECT id FROM entries WHERE path=?", (path,)).fetchone()
        return got[0] if got else None

    for path in removed:
        catalog.db.execute("DELETE FROM problems WHERE path=?", (path,))
        if (entry_id := id_at(path)) is not None:
            forget(entry_id)
    for item in parsed:
        catalog.db.execute("DELETE FROM problems WHERE path=?", (item.path,))
        if item.entry is not None:
            other = catalog.db.execute(
                "SELECT path, archive FROM entries WHERE id=?", (item.entry.id,)
            ).fetchone()
            if (
                other
                and other[0] != item.path
                and (other[1] or os.path.exists(catalog.wiki.path(other[0])))
            ):
                problem = _duplicate_id(item.path, item.entry.id, other[0])
                item = item._replace(entry=None, problem=problem)
        if item.entry is None:
            catalog.db.execute(
                "INSERT OR REPLACE INTO problems(path, message) VALUES(?, ?)",
                (item.path, item.problem),
            )
            if (entry_id := id_at(item.path)) is not None:
                forget(entry_id)
            continue
        forget(item.entry.id)
        _insert(catalog, item)
        inserted[item.entry.id] = item
        domains.add(item.entry.domain)
        relink.add(item.entry.id)
        relink.update(item.entry.supersedes)
    domains |= _relink(catalog, relink, inserted)
    return domains


# --------------------------------------------------------------------------- following log.md


def add_written(catalog: Catalog, entry: Entry, rel: str, sha: str) -> None:
    """Record an entry this process just wrote (lock held) and refresh its index files."""
    st = os.stat(catalog.wiki.path(rel))
    parsed = Parsed(rel, sha, st.st_mtime_ns, st.st_size, entry)
    _apply_and_render(catalog, [parsed])


def _apply_and_render(
    catalog: Catalog, parsed: list[Parsed], archived: Sequence[tuple[str, str, str | None]] = ()
) -> None:
    """Apply changes, consume the log, and re-render only the domains they touched.

    ``render_pending`` stays set until the files are written, so a process killed in
    between leaves a flag that makes the next open re-render everything. When the log
    cannot settle where an archived entry is, a scan of the files does.
    """
    stale = catalog.meta("render_pending") == "1"
    _track_changes(catalog, True)
    try:
        try:
            with catalog.db:
                catalog.set_meta("render_pending", "1")
                domains = apply(catalog, parsed)
                domains |= _mark_archived(catalog, archived)
                _consume_log(catalog)
        except _NeedsScan:
            _track_changes(catalog, False)
            scan(catalog)
            return
        changes = _changes(catalog)
    finally:
        _track_changes(catalog, False)
    if stale:
        write_index_files(catalog, domains=None, full=True)
    else:
        write_index_files(catalog, domains=domains, changes=changes)


# Every row a change touches, as it was before the change: what the domain files hold, so they
# can be spliced (index_md._splice). Temporary: they live on this connection only, for one change.
_TRACK = (
    "CREATE TEMP TABLE IF NOT EXISTS touched(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, "
    "scope TEXT, domain TEXT, line TEXT, was INTEGER)",
    "CREATE TEMP TRIGGER IF NOT EXISTS touched_insert AFTER INSERT ON main.entries BEGIN "
    "INSERT INTO touched(id, was) VALUES(new.id, 0); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS touched_delete AFTER DELETE ON main.entries BEGIN "
    "INSERT INTO touched(id, scope, domain, line, was) "
    "VALUES(old.id, old.scope, old.domain, old.line, 1); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS touched_update AFTER UPDATE ON main.entries BEGIN "
    "INSERT INTO touched(id, scope, domain, line, was) "
    "VALUES(old.id, old.scope, old.domain, old.line, 1); END",
)
_UNTRACK = (
    "DROP TRIGGER IF EXISTS temp.touched_insert",
    "DROP TRIGGER IF EXISTS temp.touched_delete",
    "DROP TRIGGER IF EXISTS temp.touched_update",
    "DROP TABLE IF EXISTS temp.touched",
)


def _track_changes(catalog: Catalog, on: bool) -> None:
    for statement in _TRACK if on else _UNTRACK:
        catalog.db.execute(statement)


def _changes(catalog: Catalog) -> dict[str, Change]:
    """id -> how the row was before the change (its first record) and how it is now."""
    first: dict[str, tuple[str, str, str] | None] = {}
    for entry_id, scope, domain, line, was in catalog.db.execute(
        "SELECT id, scope, domain, line, was FROM temp.touched ORDER BY seq"
    ):
        if entry_id not in first:
            first[entry_id] = (scope, domain, line) if was else None
    import llm_wiki.catalog.index_md as index_md  # deferred: only a change renders index files

    out: dict[str, Change] = {}
    for entry_id, before in first.items():
        got = catalog.db.execute(
            "SELECT scope, domain, line, date, superseded_by IS NOT NULL FROM entries WHERE id=?",
            (entry_id,),
        ).fetchone()
        out[entry_id] = index_md.Change(before, tuple(got) if got is not None else None)  # type: ignore[arg-type]
    return out


def _consume_log(catalog: Catalog) -> None:
    size, tail = log_state(catalog.wiki)
    catalog.set_meta("log_offset", str(size))
    catalog.set_meta("log_tail", tail)


def refresh(catalog: Catalog) -> None:
    """Bring the catalog up to date with log.md (incrementally) or the files (by scan)."""
    if catalog.meta("version") != CATALOG_VERSION:
        scan(catalog)
        return
    offset = int(catalog.meta("log_offset", "0") or 0)
    size, _ = log_state(catalog.wiki)
    if size >= offset and tail_at(catalog.wiki, offset) == catalog.meta("log_tail"):
        if size > offset:
            _follow_log(catalog, offset)
        if catalog.meta("render_pending") == "1" or walls_changed(catalog):
            write_index_files(catalog, domains=None, full=True)
        return
    scan(catalog)


def _follow_log(catalog: Catalog, offset: int) -> None:
    parsed: list[Parsed] = []
    archived: list[tuple[str, str, str | None]] = []
    for _, line in store.read_log(catalog.wiki, offset):
        if line.op == "write" and line.fields.get("path"):
            rel = line.fields["path"]
            if catalog.sha_of(line.subject) == line.fields.get("sha256"):
                continue
            if not entry_path_ok(rel):  # not where an entry lives: the files will tell
                scan(catalog)
                return
            try:
                with open(catalog.wiki.path(rel), "rb") as fh:
                    data = fh.read()
                    st = os.fstat(fh.fileno())
            except FileNotFoundError:
                # archived or removed since (lines that came with a git pull): a scan knows
                scan(catalog)
                return
            parsed.append(parse_file(rel, data, st.st_mtime_ns, st.st_size))
        elif line.op == "archive" and line.fields.get("archive"):
            archived.append((line.subject, line.fields["archive"], None))
    _apply_and_render(catalog, parsed, archived)


def record_archived(catalog: Catalog, archived: Sequence[tuple[str, str, str | None]]) -> None:
    """Record entries this process just archived (lock held): (id, archive, locator)."""
    _apply_and_render(catalog, [], archived)


def _mark_archived(catalog: Catalog, archived: Sequence[tuple[str, str, str | None]]) -> set[str]:
    """Point rows at the archive holding them, as a scan would: a loose file wins, then the
    first archive by name. Raises _NeedsScan when only a scan can tell where an entry is."""
    if not archived:
        return set()
    import llm_wiki.archive_file as archive_file  # deferred: tarfile + zstandard, only for archives

    on_disk = store.archive_names(catalog.wiki)
    located: dict[str, dict[str, str | None]] = {}
    ids = []
    for entry_id, name, at in archived:
        got = catalog.db.execute(
            "SELECT path, archive FROM entries WHERE id=?", (entry_id,)
        ).fetchone()
        if got is None or name not in on_disk:
            raise _NeedsScan
        path, current = got
        if (catalog.wiki.root / path).exists() or (current in on_disk and current <= name):
            continue
        if at is None:
            if name not in located:
                try:
                    located[name] = archive_file.locate(catalog.wiki, name)
                except WikiError:
                    raise _NeedsScan from None
            if path not in located[name]:
                raise _NeedsScan
            at = located[name][path]
        catalog.db.execute(
            "UPDATE entries SET archive=?, archive_at=?, mtime_ns=NULL, size=NULL WHERE id=?",
            (name, at, entry_id),
        )
        ids.append(entry_id)
    return _relink(catalog, ids)


# --------------------------------------------------------------------------- scanning the files


def scan(catalog: Catalog, report: progress.Progress | None = None) -> ScanResult:
    """Compare every file with the catalog; re-parse only what changed; render. ``report``:
    where to show the files read (``llm-wiki index``; other callers show nothing)."""
    archived: dict[str, str] = dict(
        catalog.db.execute("SELECT path, archive FROM entries WHERE archive IS NOT NULL").fetchall()
    )
    loose, pending, missing, signatures, had_rows = _scan_loose(catalog)
    changed: list[Parsed] = []  # from archives; loose files are parsed below, as needed
    on_disk = store.archive_names(catalog.wiki)
    held = {  # path -> the archive the catalog reads it from
        path: archive
        for path, archive in archived.items()
        if archive in on_disk and path not in loose
    }
    # Archives new to the catalog are read; all of them when a file left entries/ (it may
    # have been archived by another machine).
    vanished = any(p not in held for p in missing)
    to_read = on_disk if vanished else on_disk - set(archived.values())
    for item in iter_archived(catalog.wiki, to_read):
        if item.path == item.archive:
            changed.append(item)  # an unreadable archive: recorded as a problem
            continue
        if item.path in loose:
            continue  # a loose file in entries/ holds it
        current, name = held.get(item.path), item.archive or ""
        if current is not None and current <= name:
            continue  # the first archive by name holds it
        held[item.path] = name
        changed.append(item)
    from_archives = {p.path for p in changed}
    removed = sorted(
        p
        for p in missing | archived.keys()
        if p not in loose and p not in held and p not in from_archives
    )
    root = catalog.wiki.root
    if report is None:
        import llm_wiki.progress as progress  # deferred: a write never scans

        shown = progress.SILENT
    else:
        shown = report
    if report is not None:
        report.task("index: reading entries", total=len(pending))
    read: list[tuple[str, str, str]] = []

    def parsed_files() -> Iterator[Parsed]:
        for rel, mtime, size in shown.each(sorted(pending), lambda p: p[0]):
            got = parse_file(rel, (root / rel).read_bytes(), mtime, size)
            if got.entry is not None:
                read.append((got.entry.id, got.sha256, rel))
            yield got

    parsed = parsed_files()
    with catalog.db:
        catalog.set_meta("render_pending", "1")
        touched: set[str] | None = None
        if had_rows or archived:
            touched = apply(catalog, [*parsed, *changed], removed)
        else:
            bulk_load(catalog, itertools.chain(parsed, changed))
        catalog.db.executemany(
            "INSERT OR REPLACE INTO dirstat(month, sig) VALUES(?, ?)", signatures.items()
        )
        # A scan may change any row without a line in log.md: readers that follow the log on
        # their own (the site's build state) see a new generation and start over.
        catalog.set_meta("generation", os.urandom(8).hex())
        _consume_log(catalog)
    if report is not None:
        report.task("index: writing INDEX.md and index/")
    written = write_index_files(catalog, domains=touched, full=True)
    if catalog.meta("version") != CATALOG_VERSION:  # the first build is complete
        with catalog.db:
            catalog.set_meta("version", CATALOG_VERSION)
        catalog.db.execute("PRAGMA journal_mode=WAL")
        catalog.db.execute("PRAGMA synchronous=NORMAL")
    return ScanResult(
        parsed=len(pending) + len(changed),
        removed=len(removed),
        written=tuple(written),
        read=tuple(read),
    )


def _scan_loose(
    catalog: Catalog,
) -> tuple[_Loose, list[tuple[str, int, int]], set[str], dict[str, str], bool]:
    """Stat the loose entry files of each folder that may have changed; pick those whose size
    or mtime differ from the row.

    A folder whose own stat (inode, mtime, ctime) is as it was when a scan last listed it, well
    after its last change, holds the files that scan saw: a file created, removed or renamed in
    it (git, an editor's save, by hand) moves its mtime. Its files are not listed. A folder
    whose names and stats equal its stored signature needs no rows read. Returns the loose
    paths, the (path, mtime, size) of files to re-parse, the catalog's loose paths no longer on
    disk, the signatures of the folders compared, and whether the catalog had loose rows.
    """
    db = catalog.db
    stored = dict(db.execute("SELECT month, sig FROM dirstat").fetchall())
    in_catalog = {m for (m,) in db.execute(_MONTHS_IN_CATALOG).fetchall() if m is not None}
    in_catalog.update(
        m for (m,) in db.execute("SELECT DISTINCT substr(path, 1, 16) FROM problems").fetchall()
    )
    listed_at = time.time_ns()  # before any folder is looked at
    loose = _Loose()
    pending: list[tuple[str, int, int]] = []
    missing: set[str] = set()
    signatures: dict[str, str] = {}
    walked: set[str] = set()
    for month, path in store.iter_month_dirs(catalog.wiki):
        walked.add(month)
        old_files, _, old_folder = stored.get(month, "").partition(" ")
        folder = _folder_stamp(path)
        if month in in_catalog and _folder_unchanged(old_folder, folder):
            loose.unlisted[month] = path
            continue
        files = store.month_files(path)
        loose.months[month] = files
        sig = _signature(files)
        signed = f"{sig} {folder}:{listed_at}"
        if month in in_catalog and old_files == sig:
            if stored.get(month) != signed:
                signatures[month] = signed
            continue
        known = _rows_in(catalog, month)
        for name, mtime, size in files:
            rel = month + name
            if known.get(rel) != (mtime, size):
                pending.append((rel, mtime, size))
        missing |= known.keys() - {month + name for name, _, _ in files}
        signatures[month] = signed
    for month in in_catalog - walked:
        missing |= _rows_in(catalog, month).keys()
    db.execute(
        "DELETE FROM dirstat WHERE month NOT IN (SELECT value FROM json_each(?))",
        (_dumps(sorted(walked)),),
    )
    return loose, pending, missing, signatures, bool(in_catalog)


# The distinct entries/YYYY/MM/ of the loose rows, one index lookup per folder (a skip-scan of
# entries_by_month) rather than a pass over every row.
_MONTHS_IN_CATALOG = """
WITH RECURSIVE m(month) AS (
  SELECT (SELECT min(substr(path, 1, 16)) FROM entries WHERE archive IS NULL)
  UNION ALL
  SELECT (
    SELECT min(substr(path, 1, 16)) FROM entries
    WHERE archive IS NULL AND substr(path, 1, 16) > m.month
  ) FROM m WHERE m.month IS NOT NULL
) SELECT month FROM m
"""

# A folder's stat is trusted once the listing that signed it was taken this long after the
# folder's last change: a change made after the listing then moves the folder's mtime past the
# one stored, even where the filesystem keeps times coarsely (ticks of a few ms; 1-2 s on some).
FOLDER_SETTLED_NS = 3_000_000_000


def _folder_stamp(path: str) -> str:
    st = os.stat(path)
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _folder_unchanged(signed: str, now: str) -> bool:
    """Whether a folder stamped ``now`` is as it was when listed (``signed``: its stamp then and
    the time of the listing), and had settled before that listing."""
    stamp, _, listed_at = signed.rpartition(":")
    if stamp != now or not listed_at.isdigit():
        return False
    _, mtime, ctime = stamp.split(":")
    return max(int(mtime), int(ctime)) + FOLDER_SETTLED_NS < int(listed_at)


def _signature(files: list[tuple[str, int, int]]) -> str:
    """A folder's (name, mtime_ns, size) list as one short text: the sha256 of its marshal
    (format 2: no back-references, so equal lists give equal bytes, and a list is read back
    from its bytes, so equal bytes mean equal lists). Four times cheaper than its repr."""
    import marshal  # deferred: only a scan signs folders

    return store.sha256_bulk(marshal.dumps(files, 2))


class _Loose:
    """The loose entry files a scan found, by folder; ``path in loose`` builds one folder's
    set of names on first asking (a scan with no archive and nothing gone asks nothing). A
    folder the scan did not list (``unlisted``: unchanged since it was) is listed then."""

    def __init__(self) -> None:
        self.months: dict[str, list[tuple[str, int, int]]] = {}
        self.unlisted: dict[str, str] = {}  # entries/YYYY/MM/ -> its path
        self._names: dict[str, set[str]] = {}

    def __contains__(self, rel: object) -> bool:
        if not isinstance(rel, str):
            return False
        cut = rel.rfind("/") + 1
        month, name = rel[:cut], rel[cut:]
        if month not in self._names:
            if month in self.unlisted:
                self.months[month] = store.month_files(self.unlisted.pop(month), stat=False)
            self._names[month] = {n for n, _, _ in self.months.get(month, ())}
        return name in self._names[month]


def _rows_in(catalog: Catalog, month: str) -> dict[str, tuple[int, int] | None]:
    """The loose rows (and unreadable files) of one ``entries/YYYY/MM/`` folder."""
    bounds = (month, month[:-1] + "0")  # "0" sorts right after "/"
    known: dict[str, tuple[int, int] | None] = {
        path: (mtime, size)
        for path, mtime, size in catalog.db.execute(
            "SELECT path, mtime_ns, size FROM entries "
            "WHERE archive IS NULL AND path >= ? AND path < ?",
            bounds,
        ).fetchall()
    }
    for (path,) in catalog.db.execute(
        "SELECT path FROM problems WHERE path >= ? AND path < ?", bounds
    ).fetchall():
        known.setdefault(path, None)
    return known


def iter_archived(wiki: Wiki, names: Iterable[str]) -> Iterator[Parsed]:
    """Entries held in the named archives, first copy of each path wins (sorted by name)."""
    names = sorted(names)
    if not names:
        return
    import llm_wiki.archive_file as archive_file  # deferred: tarfile + zstandard, only for archives

    for name in names:
        try:
            for member in archive_file.iter_members(wiki, name):
                data = member.data
                yield parse_file(member.rel, data, 0, len(data), name, member.at)
        except WikiError as exc:  # the rest of it is absent; `verify` names the archive
            yield Parsed(name, "", 0, 0, None, name, exc.message)

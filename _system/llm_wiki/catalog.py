"""The derived catalog (SQLite + FTS5 under .llm-wiki/) and the INDEX.md / index/ files.

Markdown entries are the truth; everything here is a view that rebuilds from them. The catalog
follows log.md: a read whose log.md has not changed since the catalog last looked costs one stat
and one small read; new log lines are applied one by one; anything else (a rewritten log after a
git merge, a missing catalog) falls back to a scan that re-parses only files whose size or mtime
changed. ``llm-wiki index`` always scans.

Index lines are rendered once per entry and cached in the catalog, so a write re-renders only
INDEX.md and the domain files it touched. Deleting ``.llm-wiki/``, ``INDEX.md`` and ``index/``
and running ``llm-wiki index`` gives the same bytes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from llm_wiki import store
from llm_wiki.access import Viewer, walls_on
from llm_wiki.entries import (
    GENERATED_ORIGINS,
    NAME_RE,
    Alternative,
    Entry,
    decode_text,
    parse_entry,
)
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

CATALOG_VERSION = "6"
LATEST_IN_INDEX = 15
SUMMARY_IN_LINE = 300
TAIL_BYTES = 4096  # of log.md, fingerprinted to notice a log that was merged, not appended to
ROOT_MARK = "\x00"  # stands for the link prefix to the wiki root inside cached lines
# Newest first; on the same day a replacement comes before what it replaced.
ORDER = "date DESC, superseded_by IS NOT NULL, id DESC"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS entries(
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL,
  archive TEXT,
  sha256 TEXT NOT NULL,
  mtime_ns INTEGER,
  size INTEGER,
  type TEXT, date TEXT, domain TEXT, scope TEXT, status TEXT, origin TEXT,
  summary TEXT, tags TEXT, actors TEXT, aliases TEXT, questions TEXT,
  supersedes TEXT, sources TEXT, alternatives TEXT, extra TEXT,
  body_len INTEGER,
  superseded_by TEXT,
  line TEXT,
  archive_at TEXT
);
CREATE INDEX IF NOT EXISTS entries_by_domain ON entries(domain, date DESC, id DESC);
CREATE INDEX IF NOT EXISTS entries_by_date ON entries(date DESC, id DESC);
CREATE INDEX IF NOT EXISTS entries_by_path ON entries(path);
-- what a scan asks first: which folders hold loose rows, and which rows are archived
CREATE INDEX IF NOT EXISTS entries_by_month ON entries(substr(path, 1, 16)) WHERE archive IS NULL;
CREATE INDEX IF NOT EXISTS entries_archived ON entries(path, archive) WHERE archive IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_by_scope ON entries(scope, domain, date);
CREATE INDEX IF NOT EXISTS entries_by_scope_date ON entries(scope, date);
-- Counts for INDEX.md, kept by triggers so a write never scans the catalog.
CREATE TABLE IF NOT EXISTS counts(
  scope TEXT NOT NULL, domain TEXT NOT NULL, type TEXT NOT NULL, status TEXT NOT NULL,
  archived INTEGER NOT NULL, n INTEGER NOT NULL,
  PRIMARY KEY(scope, domain, type, status, archived)
);
CREATE TRIGGER IF NOT EXISTS counts_insert AFTER INSERT ON entries BEGIN
  INSERT INTO counts VALUES(new.scope, new.domain, new.type,
    CASE WHEN new.superseded_by IS NOT NULL THEN 'superseded' ELSE new.status END,
    new.archive IS NOT NULL, 1)
  ON CONFLICT(scope, domain, type, status, archived) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS counts_delete AFTER DELETE ON entries BEGIN
  UPDATE counts SET n = n - 1 WHERE scope = old.scope AND domain = old.domain
    AND type = old.type AND archived = (old.archive IS NOT NULL)
    AND status = CASE WHEN old.superseded_by IS NOT NULL THEN 'superseded' ELSE old.status END;
END;
CREATE TRIGGER IF NOT EXISTS counts_update AFTER UPDATE OF superseded_by, archive ON entries BEGIN
  UPDATE counts SET n = n - 1 WHERE scope = old.scope AND domain = old.domain
    AND type = old.type AND archived = (old.archive IS NOT NULL)
    AND status = CASE WHEN old.superseded_by IS NOT NULL THEN 'superseded' ELSE old.status END;
  INSERT INTO counts VALUES(new.scope, new.domain, new.type,
    CASE WHEN new.superseded_by IS NOT NULL THEN 'superseded' ELSE new.status END,
    new.archive IS NOT NULL, 1)
  ON CONFLICT(scope, domain, type, status, archived) DO UPDATE SET n = n + 1;
END;
CREATE TABLE IF NOT EXISTS edges(old TEXT NOT NULL, new TEXT NOT NULL, PRIMARY KEY(old, new));
CREATE INDEX IF NOT EXISTS edges_by_new ON edges(new);
CREATE TABLE IF NOT EXISTS tags(id TEXT NOT NULL, tag TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tags_by_tag ON tags(tag);
CREATE INDEX IF NOT EXISTS tags_by_id ON tags(id);
CREATE TABLE IF NOT EXISTS actors(id TEXT NOT NULL, actor TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS actors_by_actor ON actors(actor);
CREATE INDEX IF NOT EXISTS actors_by_id ON actors(id);
CREATE TABLE IF NOT EXISTS problems(path TEXT PRIMARY KEY, message TEXT NOT NULL);
-- Each entries/YYYY/MM/ folder's file names and stats as of the last scan that matched them;
-- any change to the folder's rows drops its signature, so an equal signature proves the rows
-- still match the files and a scan compares no rows for that folder.
CREATE TABLE IF NOT EXISTS dirstat(month TEXT PRIMARY KEY, sig TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS dirstat_insert AFTER INSERT ON entries BEGIN
  DELETE FROM dirstat WHERE month = substr(new.path, 1, 16);
END;
CREATE TRIGGER IF NOT EXISTS dirstat_delete AFTER DELETE ON entries BEGIN
  DELETE FROM dirstat WHERE month = substr(old.path, 1, 16);
END;
CREATE TRIGGER IF NOT EXISTS dirstat_update AFTER UPDATE OF path, mtime_ns, size, archive ON entries BEGIN
  DELETE FROM dirstat WHERE month IN (substr(old.path, 1, 16), substr(new.path, 1, 16));
END;
-- Index files as last written (size, mtime): an unchanged domain's file is not re-rendered.
CREATE TABLE IF NOT EXISTS rendered(path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
  summary, tags, aliases, questions, domain, body,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

_COLUMNS = (
    "id, path, archive, sha256, mtime_ns, size, type, date, domain, scope, status, origin, "
    "summary, tags, actors, aliases, questions, supersedes, sources, alternatives, extra, "
    "body_len, superseded_by, line, archive_at"
)


@dataclass(frozen=True)
class Row:
    """One entry as the catalog knows it (frontmatter, no body)."""

    id: str
    path: str
    archive: str | None
    sha256: str
    type: str
    date: str
    domain: str
    scope: str
    status: str
    origin: str
    summary: str
    tags: tuple[str, ...]
    actors: tuple[str, ...]
    aliases: tuple[str, ...]
    questions: tuple[str, ...]
    supersedes: tuple[str, ...]
    sources: tuple[str, ...]
    alternatives: tuple[Alternative, ...]
    superseded_by: tuple[str, ...]
    line: str
    archive_at: str | None = None  # where in its archive (see archive.read_member)
    rowid: int = 0

    @property
    def effective_status(self) -> str:
        return "superseded" if self.superseded_by else self.status

    @property
    def is_generated(self) -> bool:
        return self.origin in GENERATED_ORIGINS

    def index_line(self, prefix: str = "") -> str:
        return self.line.replace(ROOT_MARK, prefix)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "date": self.date,
            "domain": self.domain,
            "scope": self.scope,
            "status": self.effective_status,
            "written_status": self.status,
            "origin": self.origin,
            "summary": self.summary,
            "tags": list(self.tags),
            "actors": list(self.actors),
            "aliases": list(self.aliases),
            "questions": list(self.questions),
            "supersedes": list(self.supersedes),
            "superseded_by": list(self.superseded_by),
            "sources": list(self.sources),
            "alternatives_considered": [
                {"id": a.id, "rejected_because": a.rejected_because} for a in self.alternatives
            ],
            "path": self.path,
            "archive": self.archive,
            "sha256": self.sha256,
        }


def _row_values(parsed: Parsed, superseded_by: str | None, line: str) -> tuple[Any, ...]:
    """The ``entries`` columns (in ``_COLUMNS`` order) for one parsed file."""
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
        json.dumps(entry.tags, ensure_ascii=False),
        json.dumps(entry.actors, ensure_ascii=False),
        json.dumps(entry.aliases, ensure_ascii=False),
        json.dumps(entry.questions, ensure_ascii=False),
        json.dumps(entry.supersedes, ensure_ascii=False),
        json.dumps(entry.sources, ensure_ascii=False),
        json.dumps(
            [[a.id, a.rejected_because] for a in entry.alternatives_considered],
            ensure_ascii=False,
        ),
        json.dumps(dict(entry.extra), ensure_ascii=False, sort_keys=True) if entry.extra else None,
        len(entry.body),
        superseded_by,
        line,
        parsed.archive_at,
    )


def _row(r: sqlite3.Row | tuple[Any, ...]) -> Row:
    (
        id_,
        path,
        archive,
        sha,
        _mtime,
        _size,
        type_,
        date,
        domain,
        scope,
        status,
        origin,
        summary,
        tags,
        actors,
        aliases,
        questions,
        supersedes,
        sources,
        alternatives,
        _extra,
        _body_len,
        superseded_by,
        line,
        archive_at,
        *rest,
    ) = r
    return Row(
        id=id_,
        path=path,
        archive=archive,
        sha256=sha,
        type=type_,
        date=date,
        domain=domain,
        scope=scope,
        status=status,
        origin=origin,
        summary=summary,
        tags=tuple(json.loads(tags)),
        actors=tuple(json.loads(actors)),
        aliases=tuple(json.loads(aliases)),
        questions=tuple(json.loads(questions)),
        supersedes=tuple(json.loads(supersedes)),
        sources=tuple(json.loads(sources)),
        alternatives=tuple(Alternative(a, b) for a, b in json.loads(alternatives)),
        superseded_by=tuple(json.loads(superseded_by)) if superseded_by else (),
        line=line,
        archive_at=archive_at,
        rowid=rest[0] if rest else 0,
    )


def _where(
    viewer: Viewer,
    *,
    type: str | None = None,
    domain: str | None = None,
    tag: str | None = None,
    actor: str | None = None,
    since: str | None = None,
    until: str | None = None,
    status: str = "all",
    scope: str | None = None,
    ids: Iterable[str] | None = None,
) -> tuple[str | None, list[Any]]:
    """A WHERE clause for the filters of ``list`` (None: nothing can match)."""
    clause, args = viewer.sql_filter()
    where: list[str] = [clause]
    params: list[Any] = list(args)
    for condition, value in (
        ("type = ?", type),
        ("domain = ?", domain),
        ("scope = ?", scope),
        ("id IN (SELECT id FROM tags WHERE tag = ?)", tag),
        ("id IN (SELECT id FROM actors WHERE actor = ?)", actor),
        ("date >= ?", since),
        ("date <= ?", until),
    ):
        if value:
            where.append(condition)
            params.append(value)
    if status == "superseded":
        where.append("superseded_by IS NOT NULL")
    elif status != "all":
        where.append("superseded_by IS NULL AND status = ?")
        params.append(status)
    if ids is not None:
        id_list = list(ids)
        if not id_list:
            return None, []
        where.append(f"id IN ({','.join('?' * len(id_list))})")
        params.extend(id_list)
    return " AND ".join(where), params


# --------------------------------------------------------------------------- parsed files


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


def parse_file(
    rel: str,
    data: bytes,
    mtime_ns: int,
    size: int,
    archive: str | None = None,
    archive_at: str | None = None,
) -> Parsed:
    sha = store.sha256_bytes(data)
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


# --------------------------------------------------------------------------- lines


_WS_RE = re.compile(r"[\s\x00-\x1f\x7f]+")


def _clean(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def render_line(
    entry: Entry | Row, superseded_by: Sequence[str], archive: str | None = None
) -> str:
    """One dense index line: enough for an LLM to decide whether to open the entry."""
    summary = _clean(entry.summary)
    if len(summary) > SUMMARY_IN_LINE:
        summary = summary[: SUMMARY_IN_LINE - 1].rstrip() + "…"
    path = entry.path if isinstance(entry, Row) else entry.relpath
    status = entry.status
    parts = [f"- {entry.date} {entry.type}"]
    if status != "active":
        parts.append(f"({status})")
    parts.append(f"[{entry.id}]({ROOT_MARK}{path})")
    if entry.tags:
        parts.append(" ".join("#" + _clean(t).replace(" ", "-") for t in entry.tags))
    text = " ".join(parts) + " — " + summary
    if entry.aliases:
        text += " · aka: " + "; ".join(_clean(a) for a in entry.aliases)
    if entry.questions:
        text += " · Q: " + " ".join(_clean(q) for q in entry.questions)
    if entry.supersedes:
        text += " · supersedes " + ", ".join(entry.supersedes)
    if superseded_by:
        text += " · **superseded by " + ", ".join(superseded_by) + "**"
    if archive:
        text += f" · archived in {archive}"
    return text


# --------------------------------------------------------------------------- index targets


class Target(NamedTuple):
    """Where one set of index files goes. ``scope`` None: every scope (single-user mode)."""

    scope: str | None
    dir: Path
    index_prefix: str  # from <dir>/INDEX.md to the wiki root
    domain_prefix: str  # from <dir>/index/<domain>.md to the wiki root


def index_targets(wiki: Wiki, scopes: Iterable[str]) -> list[Target]:
    """Single-user: INDEX.md and index/ at the root. Walls: one set per scope under indexes/."""
    if not walls_on(wiki):
        return [Target(None, wiki.root, "", "../")]
    return [
        Target(scope, wiki.root / "indexes" / scope, "../../", "../../../")
        for scope in sorted(set(scopes))
    ]


# --------------------------------------------------------------------------- the catalog


class Catalog:
    """An open catalog. Use :func:`open_catalog`; close it (or use ``with``)."""

    def __init__(self, wiki: Wiki, db: sqlite3.Connection) -> None:
        self.wiki = wiki
        self.db = db

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- meta
    def _meta(self, key: str, default: str = "") -> str:
        got = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return got[0] if got else default

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    # -- lookups used by writers (no viewer: callers must not reveal what they learn)
    def scope_of(self, entry_id: str) -> str | None:
        got = self.db.execute("SELECT scope FROM entries WHERE id=?", (entry_id,)).fetchone()
        return got[0] if got else None

    def sha_of(self, entry_id: str) -> str | None:
        got = self.db.execute("SELECT sha256 FROM entries WHERE id=?", (entry_id,)).fetchone()
        return got[0] if got else None

    def all_rows(self) -> list[Row]:
        """Every row, unfiltered: for maintenance code that applies the viewer itself."""
        cur = self.db.execute(f"SELECT {_COLUMNS}, rowid FROM entries ORDER BY {ORDER}")
        return [_row(r) for r in cur]

    # -- reads for a viewer
    def get(self, entry_id: str, viewer: Viewer) -> Row | None:
        got = self.db.execute(
            f"SELECT {_COLUMNS}, rowid FROM entries WHERE id=?", (entry_id,)
        ).fetchone()
        if got is None:
            return None
        row = _row(got)
        return row if viewer.can_read(row.scope) else None

    def rows(
        self,
        viewer: Viewer,
        *,
        limit: int | None = None,
        offset: int = 0,
        **filters: Any,
    ) -> list[Row]:
        """Rows this viewer may read matching ``filters`` (see :func:`_where`), newest first."""
        where, params = _where(viewer, **filters)
        if where is None:
            return []
        sql = f"SELECT {_COLUMNS}, rowid FROM entries WHERE {where} ORDER BY {ORDER}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params.extend([limit, offset])
        return [_row(r) for r in self.db.execute(sql, params)]

    def count_rows(self, viewer: Viewer, **filters: Any) -> int:
        where, params = _where(viewer, **filters)
        if where is None:
            return 0
        return int(
            self.db.execute(f"SELECT count(*) FROM entries WHERE {where}", params).fetchone()[0]
        )

    def count(self, viewer: Viewer) -> int:
        clause, args = viewer.sql_filter()
        return int(
            self.db.execute(f"SELECT count(*) FROM entries WHERE {clause}", args).fetchone()[0]
        )

    def scopes(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT scope FROM entries ORDER BY scope")]

    def problems(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT path, message FROM problems ORDER BY path"))

    def log_offset(self) -> int:
        return int(self._meta("log_offset", "0"))

    # -- writing rows
    def _insert(self, parsed: Parsed) -> None:
        entry = parsed.entry
        assert entry is not None
        cur = self.db.execute(
            f"INSERT INTO entries({_COLUMNS}) VALUES({','.join('?' * 25)})",
            _row_values(parsed, None, ""),
        )
        self._insert_side_tables([(cur.lastrowid, entry)])

    def _insert_side_tables(self, items: Sequence[tuple[int | None, Entry]]) -> None:
        db = self.db
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
                    e.body,
                )
                for rowid, e in items
            ],
        )

    def _bulk_load(self, parsed: Iterable[Parsed], batch: int = 2000) -> None:
        """Fill an empty catalog (a full build), streaming: rows go in by the ``batch``, so memory
        holds one batch of entries, not the wiki. Lines are rendered as they go in; the few
        entries something supersedes are re-rendered at the end, once every row is there."""
        first = (
            int(self.db.execute("SELECT coalesce(max(rowid), 0) FROM entries").fetchone()[0]) + 1
        )
        held: dict[str, str] = {}  # id -> path of the copy loaded
        problems: list[tuple[str, str]] = []
        rows: list[tuple[Any, ...]] = []
        items: list[tuple[int | None, Entry]] = []
        replaced: set[str] = set()

        def flush() -> None:
            self.db.executemany(
                f"INSERT INTO entries(rowid, {_COLUMNS}) VALUES({','.join('?' * 26)})", rows
            )
            self._insert_side_tables(items)
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
        self.db.executemany("INSERT OR REPLACE INTO problems(path, message) VALUES(?, ?)", problems)
        self._relink(replaced & held.keys())

    def _delete_id(self, entry_id: str) -> None:
        got = self.db.execute("SELECT rowid FROM entries WHERE id=?", (entry_id,)).fetchone()
        if got is None:
            return
        self.db.execute("DELETE FROM fts WHERE rowid=?", (got[0],))
        self.db.execute("DELETE FROM entries WHERE id=?", (entry_id,))
        self.db.execute("DELETE FROM edges WHERE new=?", (entry_id,))
        self.db.execute("DELETE FROM tags WHERE id=?", (entry_id,))
        self.db.execute("DELETE FROM actors WHERE id=?", (entry_id,))

    def _relink(self, ids: Iterable[str]) -> set[str]:
        """Recompute superseded_by and the cached line of ``ids``; return their domains."""
        domains: set[str] = set()
        for entry_id in sorted(set(ids)):
            got = self.db.execute(
                f"SELECT {_COLUMNS} FROM entries WHERE id=?", (entry_id,)
            ).fetchone()
            if got is None:
                continue
            row = _row(got)
            newer = tuple(
                r[0]
                for r in self.db.execute(
                    "SELECT e.new FROM edges e JOIN entries n ON n.id = e.new "
                    "WHERE e.old=? AND n.scope=? ORDER BY e.new",
                    (entry_id, row.scope),
                )
            )
            line = render_line(row, newer, row.archive)
            self.db.execute(
                "UPDATE entries SET superseded_by=?, line=? WHERE id=?",
                (json.dumps(newer) if newer else None, line, entry_id),
            )
            domains.add(row.domain)
        return domains

    def apply(self, parsed: Iterable[Parsed], removed: Iterable[str] = ()) -> set[str]:
        """Upsert parsed files and drop removed paths; return the domains whose files changed."""
        domains: set[str] = set()
        relink: set[str] = set()

        def forget(entry_id: str) -> None:
            got = self.db.execute(
                "SELECT domain, supersedes FROM entries WHERE id=?", (entry_id,)
            ).fetchone()
            if got is not None:
                domains.add(got[0])
                relink.update(json.loads(got[1]))
                self._delete_id(entry_id)

        def id_at(path: str) -> str | None:
            got = self.db.execute("SELECT id FROM entries WHERE path=?", (path,)).fetchone()
            return got[0] if got else None

        for path in removed:
            self.db.execute("DELETE FROM problems WHERE path=?", (path,))
            if (entry_id := id_at(path)) is not None:
                forget(entry_id)
        for item in parsed:
            self.db.execute("DELETE FROM problems WHERE path=?", (item.path,))
            if item.entry is not None:
                other = self.db.execute(
                    "SELECT path, archive FROM entries WHERE id=?", (item.entry.id,)
                ).fetchone()
                if (
                    other
                    and other[0] != item.path
                    and (other[1] or (self.wiki.root / other[0]).exists())
                ):
                    problem = _duplicate_id(item.path, item.entry.id, other[0])
                    item = item._replace(entry=None, problem=problem)
            if item.entry is None:
                self.db.execute(
                    "INSERT OR REPLACE INTO problems(path, message) VALUES(?, ?)",
                    (item.path, item.problem),
                )
                if (entry_id := id_at(item.path)) is not None:
                    forget(entry_id)
                continue
            forget(item.entry.id)
            self._insert(item)
            domains.add(item.entry.domain)
            relink.add(item.entry.id)
            relink.update(item.entry.supersedes)
        domains |= self._relink(relink)
        return domains

    # -- keeping up with the files
    def add_written(self, entry: Entry, rel: str, sha: str) -> None:
        """Record an entry this process just wrote (lock held) and refresh its index files."""
        st = (self.wiki.root / rel).stat()
        parsed = Parsed(rel, sha, st.st_mtime_ns, st.st_size, entry)
        self._apply_and_render([parsed])

    def _apply_and_render(
        self, parsed: list[Parsed], archived: Sequence[tuple[str, str, str | None]] = ()
    ) -> None:
        """Apply changes, consume the log, and re-render only the domains they touched.

        ``render_pending`` stays set until the files are written, so a process killed in
        between leaves a flag that makes the next open re-render everything. When the log
        cannot settle where an archived entry is, a scan of the files does.
        """
        stale = self._meta("render_pending") == "1"
        try:
            with self.db:
                self._set_meta("render_pending", "1")
                domains = self.apply(parsed)
                domains |= self._mark_archived(archived)
                self._consume_log()
        except _NeedsScan:
            self.scan()
            return
        self.render(domains=None if stale else domains, full=stale)

    def _consume_log(self) -> None:
        size, tail = _log_state(self.wiki)
        self._set_meta("log_offset", str(size))
        self._set_meta("log_tail", tail)

    def _walls_changed(self) -> bool:
        """access.yaml appeared or went since the index files were last planned: they must be
        re-planned (one set per scope under walls, one whole-wiki set without)."""
        return self._meta("walls", "0") != ("1" if walls_on(self.wiki) else "0")

    def is_fresh(self) -> bool:
        if self._meta("version") != CATALOG_VERSION or self._meta("render_pending") == "1":
            return False
        if self._walls_changed():
            return False
        size, tail = _log_state(self.wiki)
        return str(size) == self._meta("log_offset") and tail == self._meta("log_tail")

    def refresh(self) -> None:
        """Bring the catalog up to date with log.md (incrementally) or the files (by scan)."""
        if self._meta("version") != CATALOG_VERSION:
            self.scan()
            return
        offset = int(self._meta("log_offset", "0") or 0)
        size, _ = _log_state(self.wiki)
        if size >= offset and _tail_at(self.wiki, offset) == self._meta("log_tail"):
            if size > offset:
                self._follow_log(offset)
            if self._meta("render_pending") == "1" or self._walls_changed():
                self.render(domains=None, full=True)
            return
        self.scan()

    def _follow_log(self, offset: int) -> None:
        parsed: list[Parsed] = []
        archived: list[tuple[str, str, str | None]] = []
        for _, line in store.read_log(self.wiki, offset):
            if line.op == "write" and line.fields.get("path"):
                rel = line.fields["path"]
                if self.sha_of(line.subject) == line.fields.get("sha256"):
                    continue
                if not entry_path_ok(rel):  # not where an entry lives: the files will tell
                    self.scan()
                    return
                try:
                    data = (self.wiki.root / rel).read_bytes()
                    st = (self.wiki.root / rel).stat()
                except FileNotFoundError:
                    # archived or removed since (lines that came with a git pull): a scan knows
                    self.scan()
                    return
                parsed.append(parse_file(rel, data, st.st_mtime_ns, st.st_size))
            elif line.op == "archive" and line.fields.get("archive"):
                archived.append((line.subject, line.fields["archive"], None))
        self._apply_and_render(parsed, archived)

    def record_archived(self, archived: Sequence[tuple[str, str, str | None]]) -> None:
        """Record entries this process just archived (lock held): (id, archive, locator)."""
        self._apply_and_render([], archived)

    def _mark_archived(self, archived: Sequence[tuple[str, str, str | None]]) -> set[str]:
        """Point rows at the archive holding them, as a scan would: a loose file wins, then the
        first archive by name. Raises _NeedsScan when only a scan can tell where an entry is."""
        if not archived:
            return set()
        from llm_wiki import archive_file  # deferred: tarfile + zstandard, only for archives

        on_disk = store.archive_names(self.wiki)
        located: dict[str, dict[str, str | None]] = {}
        ids = []
        for entry_id, name, at in archived:
            got = self.db.execute(
                "SELECT path, archive FROM entries WHERE id=?", (entry_id,)
            ).fetchone()
            if got is None or name not in on_disk:
                raise _NeedsScan
            path, current = got
            if (self.wiki.root / path).exists() or (current in on_disk and current <= name):
                continue
            if at is None:
                if name not in located:
                    try:
                        located[name] = archive_file.locate(self.wiki, name)
                    except WikiError:
                        raise _NeedsScan from None
                if path not in located[name]:
                    raise _NeedsScan
                at = located[name][path]
            self.db.execute(
                "UPDATE entries SET archive=?, archive_at=?, mtime_ns=NULL, size=NULL WHERE id=?",
                (name, at, entry_id),
            )
            ids.append(entry_id)
        return self._relink(ids)

    def scan(self) -> ScanResult:
        """Compare every file with the catalog; re-parse only what changed; render."""
        archived: dict[str, str] = dict(
            self.db.execute(
                "SELECT path, archive FROM entries WHERE archive IS NOT NULL"
            ).fetchall()
        )
        loose, pending, missing, signatures, had_rows = self._scan_loose()
        changed: list[Parsed] = []  # from archives; loose files are parsed below, as needed
        on_disk = store.archive_names(self.wiki)
        held = {  # path -> the archive the catalog reads it from
            path: archive
            for path, archive in archived.items()
            if archive in on_disk and path not in loose
        }
        # Archives new to the catalog are read; all of them when a file left entries/ (it may
        # have been archived by another machine).
        vanished = any(p not in held for p in missing)
        to_read = on_disk if vanished else on_disk - set(archived.values())
        for item in _iter_archived(self.wiki, to_read):
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
        seen = loose | held.keys() | {p.path for p in changed}
        removed = sorted((missing | archived.keys()) - seen)
        root = self.wiki.root
        parsed = (
            parse_file(rel, (root / rel).read_bytes(), mtime, size)
            for rel, mtime, size in sorted(pending)
        )
        with self.db:
            self._set_meta("render_pending", "1")
            touched: set[str] | None = None
            if had_rows or archived:
                touched = self.apply([*parsed, *changed], removed)
            else:
                self._bulk_load(itertools.chain(parsed, changed))
            self.db.executemany(
                "INSERT OR REPLACE INTO dirstat(month, sig) VALUES(?, ?)", signatures.items()
            )
            self._consume_log()
        written = self.render(domains=touched, full=True)
        if self._meta("version") != CATALOG_VERSION:  # the first build is complete
            with self.db:
                self._set_meta("version", CATALOG_VERSION)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        return ScanResult(
            parsed=len(pending) + len(changed), removed=len(removed), written=tuple(written)
        )

    # -- rendering INDEX.md and the domain files
    def _scan_loose(
        self,
    ) -> tuple[set[str], list[tuple[str, int, int]], set[str], dict[str, str], bool]:
        """Stat every loose entry file; pick those whose size or mtime differ from the row.

        A folder whose names and stats equal its stored signature needs no rows read at all.
        Returns the loose paths, the (path, mtime, size) of files to re-parse, the catalog's loose
        paths no longer on disk, the signatures of the folders compared, and whether the catalog
        had loose rows.
        """
        db = self.db
        stored = dict(db.execute("SELECT month, sig FROM dirstat").fetchall())
        in_catalog = {
            m
            for query in (
                "SELECT DISTINCT substr(path, 1, 16) FROM entries WHERE archive IS NULL",
                "SELECT DISTINCT substr(path, 1, 16) FROM problems",
            )
            for (m,) in db.execute(query).fetchall()
        }
        loose: set[str] = set()
        pending: list[tuple[str, int, int]] = []
        missing: set[str] = set()
        signatures: dict[str, str] = {}
        walked: set[str] = set()
        for month, files in store.iter_entry_months(self.wiki):
            walked.add(month)
            sig = repr(files)  # names, mtimes and sizes, in name order
            names = {month + name for name, _, _ in files}
            loose |= names
            if month in in_catalog and stored.get(month) == sig:
                continue
            known = self._rows_in(month)
            for name, mtime, size in files:
                rel = month + name
                if known.get(rel) != (mtime, size):
                    pending.append((rel, mtime, size))
            missing |= known.keys() - names
            signatures[month] = sig
        for month in in_catalog - walked:
            missing |= self._rows_in(month).keys()
        db.execute(
            "DELETE FROM dirstat WHERE month NOT IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(walked)),),
        )
        return loose, pending, missing, signatures, bool(in_catalog)

    def _rows_in(self, month: str) -> dict[str, tuple[int, int] | None]:
        """The loose rows (and unreadable files) of one ``entries/YYYY/MM/`` folder."""
        bounds = (month, month[:-1] + "0")  # "0" sorts right after "/"
        known: dict[str, tuple[int, int] | None] = {
            path: (mtime, size)
            for path, mtime, size in self.db.execute(
                "SELECT path, mtime_ns, size FROM entries "
                "WHERE archive IS NULL AND path >= ? AND path < ?",
                bounds,
            ).fetchall()
        }
        for (path,) in self.db.execute(
            "SELECT path FROM problems WHERE path >= ? AND path < ?", bounds
        ).fetchall():
            known.setdefault(path, None)
        return known

    def render(
        self,
        *,
        domains: Iterable[str] | None = (),
        full: bool = False,
    ) -> list[str]:
        """Write the index files that changed; return their paths (relative to the root).

        INDEX.md and the files of ``domains`` (None: all) are rendered. With ``full``, every
        other index file is checked too: re-rendered unless it is exactly as last written
        (same size and mtime), and index files that no domain owns any more are removed.
        """
        wanted = None if domains is None else set(domains)
        walls = "1" if walls_on(self.wiki) else "0"
        recorded = {
            p: (n, m) for p, n, m in self.db.execute("SELECT path, size, mtime_ns FROM rendered")
        }
        plan = self._plan()
        written, seen = [], []
        for rel, (target, domain, groups) in plan.items():
            path = self.wiki.root / rel
            if domain is not None and wanted is not None and domain not in wanted:
                if not full:
                    continue
                try:
                    st = path.stat()
                except FileNotFoundError:
                    st = None
                if st is not None and recorded.get(rel) == (st.st_size, st.st_mtime_ns):
                    continue
            data = self._render_file(target, domain, groups).encode()
            try:
                same = path.read_bytes() == data
            except FileNotFoundError:
                same = False
            if not same:
                atomic_write(path, data)
                written.append(rel)
            st = path.stat()
            seen.append((rel, st.st_size, st.st_mtime_ns))
        if full:
            for rel in self._stale_index_files(plan):
                with contextlib.suppress(FileNotFoundError):
                    (self.wiki.root / rel).unlink()
                written.append(rel)
            _prune_empty_dirs(self.wiki.root / "index", self.wiki.root / "indexes")
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO rendered(path, size, mtime_ns) VALUES(?, ?, ?)", seen
            )
            if full:
                self.db.execute(
                    "DELETE FROM rendered WHERE path NOT IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(plan)),),
                )
            self._set_meta("render_pending", "0")
            if full:
                self._set_meta("walls", walls)
        return written

    def _plan(self) -> dict[str, tuple[Target, str | None, list[Any]]]:
        """Every index file that should exist: path -> (target, domain or None for INDEX.md,
        the target's count groups)."""
        plan: dict[str, tuple[Target, str | None, list[Any]]] = {}
        for target in index_targets(self.wiki, self.scopes()):
            base = target.dir.relative_to(self.wiki.root).as_posix()
            base = "" if base == "." else base + "/"
            groups = self._counts(target.scope)
            plan[base + "INDEX.md"] = (target, None, groups)
            for domain in sorted({g[0] for g in groups}):
                plan[f"{base}index/{domain}.md"] = (target, domain, groups)
        return plan

    def _stale_index_files(self, files: Iterable[str]) -> list[str]:
        stale = []
        expected = set(files)
        candidates = [self.wiki.root / "index", self.wiki.root / "indexes"]
        for base in candidates:
            if not base.is_dir():
                continue
            for path in base.rglob("*.md"):
                rel = path.relative_to(self.wiki.root).as_posix()
                if rel not in expected:
                    stale.append(rel)
        if walls_on(self.wiki) and (self.wiki.root / "INDEX.md").exists():
            stale.append("INDEX.md")  # a whole-wiki map would mix scopes
        return sorted(stale)

    def expected_files(self) -> Iterator[tuple[str, str]]:
        """Every index file as it should be (path, text), one at a time."""
        for rel, (target, domain, groups) in self._plan().items():
            yield rel, self._render_file(target, domain, groups)

    def _render_file(self, target: Target, domain: str | None, groups: list[Any]) -> str:
        """The text of one planned index file: the target's INDEX.md (``domain`` None) or a
        domain file."""
        if domain is None:
            return self._render_index(target, groups)
        return self._render_domain(target, domain)

    def _scope_sql(self, scope: str | None) -> tuple[str, list[str]]:
        return ("scope = ?", [scope]) if scope is not None else ("1", [])

    def _counts(self, scope: str | None) -> list[tuple[str, str, str, int, int, str]]:
        """(domain, type, effective status, archived?, count, latest date of the domain) groups,
        from the trigger-kept ``counts`` table and one index lookup per domain."""
        clause, params = self._scope_sql(scope)
        groups = self.db.execute(
            "SELECT domain, type, status, archived, sum(n) FROM counts "
            f"WHERE n > 0 AND {clause} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
            params,
        ).fetchall()
        latest = {}
        for domain in {g[0] for g in groups}:
            latest[domain] = self.db.execute(
                f"SELECT max(date) FROM entries WHERE domain = ? AND {clause}", [domain, *params]
            ).fetchone()[0]
        return [(d, t, st, a, n, latest[d]) for d, t, st, a, n in groups]

    def _render_index(
        self, target: Target, groups: list[tuple[str, str, str, int, int, str]]
    ) -> str:
        clause, params = self._scope_sql(target.scope)
        total = 0
        by_status: dict[str, int] = {}
        by_type: dict[str, int] = {}
        archived = 0
        domains: dict[str, list[Any]] = {}
        for domain, kind, status, is_archived, n, latest in groups:
            total += n
            by_status[status] = by_status.get(status, 0) + n
            by_type[kind] = by_type.get(kind, 0) + n
            archived += n if is_archived else 0
            d = domains.setdefault(domain, [0, 0, ""])
            d[0] += n
            d[1] += n if status == "active" else 0
            d[2] = max(d[2], latest)
        title = "INDEX" if target.scope is None else f"INDEX — scope {target.scope}"
        lines = [
            f"# {title}",
            "",
            "Generated by llm-wiki from the entries' frontmatter; do not edit (run `llm-wiki index`).",
            "Each domain file lists one line per entry, newest first.",
            "",
        ]
        order = ["active", "proposed", "superseded", "deprecated", "rejected"]
        status_text = " · ".join(
            f"{by_status[s]} {s}"
            for s in sorted(by_status, key=lambda s: (order.index(s) if s in order else 99, s))
        )
        lines.append(
            f"**{_n(total, 'entry', 'entries')}**" + (f": {status_text}" if status_text else "")
        )
        if by_type:
            lines.append("Types: " + " · ".join(f"{by_type[t]} {t}" for t in sorted(by_type)))
        if archived:
            lines.append(f"Archived: {archived}")
        lines += ["", "## Domains", ""]
        if not domains:
            lines.append("(none yet: write the first entry with `llm-wiki write`)")
        for domain in sorted(domains):
            n, active, latest = domains[domain]
            lines.append(
                f"- [{domain}](index/{domain}.md) — {_n(n, 'entry', 'entries')}, {active} active, "
                f"latest {latest}"
            )
        lines += ["", "## Latest", ""]
        # the cut-off date comes from an index, so this never sorts the whole catalog
        cutoff = self.db.execute(
            f"SELECT date FROM entries WHERE {clause} ORDER BY date DESC LIMIT 1 OFFSET ?",
            [*params, LATEST_IN_INDEX - 1],
        ).fetchone()
        cur = self.db.execute(
            f"SELECT date, type, id, path, summary FROM entries WHERE {clause} AND date >= ? "
            f"ORDER BY {ORDER} LIMIT ?",
            [*params, cutoff[0] if cutoff else "", LATEST_IN_INDEX],
        )
        newest = [
            f"- {day} {kind} [{i}]({target.index_prefix}{path}) — {_short(summary)}"
            for day, kind, i, path, summary in cur
        ]
        lines += newest or ["(none yet)"]
        return "\n".join(lines) + "\n"

    def _render_domain(self, target: Target, domain: str) -> str:
        clause, params = self._scope_sql(target.scope)
        cur = self.db.execute(
            f"SELECT line FROM entries WHERE domain = ? AND {clause} ORDER BY {ORDER}",
            [domain, *params],
        )
        body = [line for (line,) in cur]
        head = [
            f"# Domain: {domain}",
            "",
            f"{_n(len(body), 'entry', 'entries')}, newest first. Generated from frontmatter; "
            "do not edit.",
            "",
        ]
        return ("\n".join(head + body) + "\n").replace(ROOT_MARK, target.domain_prefix)


def _prune_empty_dirs(*bases: Path) -> None:
    """Remove the folders an index layout no longer uses (``index/`` once walls are on, a
    scope's folder under ``indexes/`` once they are off), deepest first."""
    for base in bases:
        if not base.is_dir():
            continue
        for folder in sorted((p for p in base.rglob("*") if p.is_dir()), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        with contextlib.suppress(OSError):
            base.rmdir()


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _short(text: str, limit: int = 160) -> str:
    text = _clean(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class ScanResult:
    parsed: int
    removed: int
    written: tuple[str, ...] = ()


class _NeedsScan(Exception):
    """Following log.md cannot settle where an entry is; a scan of the files can."""


def _iter_archived(wiki: Wiki, names: Iterable[str]) -> Iterator[Parsed]:
    """Entries held in the named archives, first copy of each path wins (sorted by name)."""
    names = sorted(names)
    if not names:
        return
    from llm_wiki import archive_file  # deferred: tarfile + zstandard, only for archives

    for name in names:
        try:
            for member in archive_file.iter_members(wiki, name):
                data = member.data
                yield parse_file(member.rel, data, 0, len(data), name, member.at)
        except WikiError as exc:  # the rest of it is absent; `verify` names the archive
            yield Parsed(name, "", 0, 0, None, name, exc.message)


def _log_state(wiki: Wiki) -> tuple[int, str]:
    try:
        size = wiki.log_path.stat().st_size
    except FileNotFoundError:
        return 0, ""
    return size, _tail_at(wiki, size)


def _tail_at(wiki: Wiki, offset: int) -> str:
    """A fingerprint of the log's last TAIL_BYTES before ``offset``: if git merged lines in
    before that point, it changes (a few lines, not one: two clones that archived the same
    entry end their logs with the same sha256)."""
    if offset <= 0:
        return ""
    try:
        with open(wiki.log_path, "rb") as fh:
            start = max(0, offset - TAIL_BYTES)
            fh.seek(start)
            return store.sha256_bytes(fh.read(offset - start))
    except FileNotFoundError:
        return ""


# --------------------------------------------------------------------------- opening


def _connect_current(path: Path) -> sqlite3.Connection | None:
    """The catalog at ``path`` if it exists and was built by this version of the code."""
    if not path.exists():
        return None
    db = sqlite3.connect(str(path), timeout=60)
    try:
        got = db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
    except sqlite3.DatabaseError:
        got = None
    if got and got[0] == CATALOG_VERSION:
        db.execute("PRAGMA synchronous=NORMAL")  # WAL mode is kept in the file itself
        return db
    db.close()
    return None


def create_db(path: Path | str) -> sqlite3.Connection:
    """A new, empty catalog database. Until its first full build has finished (which sets its
    version and switches it to WAL), it runs without a journal: a build that dies leaves a
    file without a version, which the next open drops."""
    db = sqlite3.connect(str(path), timeout=60)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(_SCHEMA)
    return db


def _catalog_path(wiki: Wiki) -> Path:
    return wiki.state_path("catalog.sqlite3")


def open_catalog(wiki: Wiki, *, lock_held: bool = True) -> Catalog:
    """Open the catalog, up to date.

    Writers call this with the write lock held (the default). Readers pass ``lock_held=False``:
    the lock is taken only if the catalog must change (stale, missing, or from another version).
    A catalog is only ever dropped or rebuilt under the lock.
    """
    path = _catalog_path(wiki)
    try:
        db = _connect_current(path)
        if db is not None:
            catalog = Catalog(wiki, db)
            if not lock_held and catalog.is_fresh():
                return catalog
            if lock_held:
                catalog.refresh()
                return catalog
            catalog.close()
        with contextlib.nullcontext() if lock_held else store.locked(wiki):
            db = _connect_current(path)
            if db is None:
                _drop_catalog(wiki)
                db = create_db(path)
            catalog = Catalog(wiki, db)
            catalog.refresh()
            return catalog
    except sqlite3.DatabaseError:
        # a damaged cache: drop it and build it again
        with contextlib.nullcontext() if lock_held else store.locked(wiki):
            _drop_catalog(wiki)
            catalog = Catalog(wiki, create_db(path))
            catalog.refresh()
            return catalog
    except OSError as exc:
        raise WikiError(
            f"cannot open the catalog in {wiki.state_dir}: {exc.strerror or exc}; check permissions."
        ) from None


def read_catalog(wiki: Wiki) -> Catalog:
    """The catalog for a read command: fresh, opened without holding the lock afterwards."""
    return open_catalog(wiki, lock_held=False)


def _drop_catalog(wiki: Wiki) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(_catalog_path(wiki)) + suffix)


@dataclass(frozen=True)
class IndexResult:
    entries: int
    parsed: int
    removed: int
    written: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    problems: tuple[tuple[str, str], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "parsed": self.parsed,
            "removed": self.removed,
            "written": list(self.written),
            "stale": list(self.stale),
            "problems": [{"path": p, "message": m} for p, m in self.problems],
        }


def rebuild_index(wiki: Wiki) -> IndexResult:
    """``llm-wiki index``: scan every file, re-parse what changed, write the index files."""
    with store.locked(wiki):
        path = _catalog_path(wiki)
        try:
            db = _connect_current(path)
        except sqlite3.DatabaseError:
            db = None
        if db is None:
            _drop_catalog(wiki)
            db = create_db(path)
        catalog = Catalog(wiki, db)
        try:
            result = catalog.scan()
            return IndexResult(
                entries=catalog.count(Viewer.everyone()),
                parsed=result.parsed,
                removed=result.removed,
                written=result.written,
                problems=tuple(catalog.problems()),
            )
        finally:
            catalog.close()


def check_index(wiki: Wiki) -> IndexResult:
    """``llm-wiki index --check``: what a rebuild from scratch would change. Writes nothing in
    the wiki: the fresh catalog is built in a temp file (in memory, its full-text index of every
    body would grow with the wiki)."""
    import tempfile

    scratch = tempfile.TemporaryDirectory(prefix="llm-wiki-check-")
    fresh_db = create_db(os.path.join(scratch.name, "catalog.sqlite3"))
    fresh = Catalog(wiki, fresh_db)
    try:
        loose = list(store.iter_entry_files(wiki))
        seen = {rel for rel, _, _ in loose}
        parsed = 0

        def files() -> Iterator[Parsed]:  # streamed, as a full build is: one batch in memory
            nonlocal parsed
            for rel, mtime, size in loose:
                parsed += 1
                yield parse_file(rel, (wiki.root / rel).read_bytes(), mtime, size)
            for item in _iter_archived(wiki, store.archive_names(wiki)):
                if item.path not in seen or item.path == item.archive:
                    seen.add(item.path)
                    parsed += 1
                    yield item

        with fresh_db:
            fresh._bulk_load(files())
        stale: list[str] = []
        expected = []
        for rel, text in fresh.expected_files():
            expected.append(rel)
            try:
                if (wiki.root / rel).read_bytes() != text.encode():
                    stale.append(rel)
            except FileNotFoundError:
                stale.append(rel)
        stale += fresh._stale_index_files(expected)
        state = (
            "SELECT id, path, archive, archive_at, sha256, superseded_by, line FROM entries "
            "ORDER BY id"
        )
        entries = fresh.count(Viewer.everyone())
        same = entries == 0  # no catalog (or an unreadable one) matches an empty wiki only
        if _catalog_path(wiki).exists():
            with contextlib.suppress(sqlite3.DatabaseError):
                db = sqlite3.connect(str(_catalog_path(wiki)))
                try:  # row by row, in id order: neither side is held in memory
                    pairs = itertools.zip_longest(fresh_db.execute(state), db.execute(state))
                    same = all(want == have for want, have in pairs)
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

"""The catalog's database (SQLite + FTS5 under .llm-wiki/): its schema, its rows, and the queries
every reader runs through a viewer.

Markdown entries are the truth; the catalog is a view that rebuilds from them (``refresh``
keeps it in step). Every query that reads entries for someone takes a :class:`Viewer` and applies
it here, in SQL, so a caller can never forget the walls. The lookups that take no viewer
(:meth:`Catalog.scope_of`, :meth:`Catalog.sha_of`) serve writers, which must not reveal what
they learn, and :meth:`Catalog.superseded_before` the archive job, which acts on every scope.
Only this package and the ranker (its FTS5 queries) write SQL against the catalog.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from llm_wiki.access import Viewer
from llm_wiki.entries import GENERATED_ORIGINS, Alternative, Entry
from llm_wiki.records import Frozen
from llm_wiki.wiki import Wiki

if TYPE_CHECKING:
    import sqlite3
else:
    try:  # the C module the sqlite3 package re-exports, without the package's ~0.9 ms of Python
        import _sqlite3 as sqlite3  # (date adapters and converters: the catalog binds no dates)
    except ImportError:  # pragma: no cover - not CPython
        import sqlite3

CATALOG_VERSION = "9"  # 8: lengths; 9: alternatives searched (searchable_body)
SUMMARY_IN_LINE = 300
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
  archive_at TEXT,
  resolves TEXT
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
-- Tokens in each full-text field (FTS5's own counts, from fts_docsize) and entries, by scope
-- and domain: BM25F's mean field lengths, a reader's from the scopes it may read. refresh keeps
-- it in step with fts in the same transaction (see refresh._count_lengths).
CREATE TABLE IF NOT EXISTS lengths(
  scope TEXT NOT NULL, domain TEXT NOT NULL, n INTEGER NOT NULL,
  summary INTEGER NOT NULL, tags INTEGER NOT NULL, aliases INTEGER NOT NULL,
  questions INTEGER NOT NULL, domain_tokens INTEGER NOT NULL, body INTEGER NOT NULL,
  PRIMARY KEY(scope, domain)
);
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

COLUMNS = (
    "id, path, archive, sha256, mtime_ns, size, type, date, domain, scope, status, origin, "
    "summary, tags, actors, aliases, questions, supersedes, sources, alternatives, extra, "
    "body_len, superseded_by, line, archive_at, resolves"
)


# What Catalog.tally counts by: a column, or the effective status.
_TALLIES = {
    "type": "type",
    "domain": "domain",
    "scope": "scope",
    "origin": "origin",
    "status": "CASE WHEN superseded_by IS NOT NULL THEN 'superseded' ELSE status END",
}


class Row(Frozen):
    """One entry as the catalog knows it (frontmatter, no body). ``archive_at``: where in its
    archive (see archive.read_member); ``resolves``: incidents this entry says it resolves."""

    FIELDS = (
        "id",
        "path",
        "archive",
        "sha256",
        "type",
        "date",
        "domain",
        "scope",
        "status",
        "origin",
        "summary",
        "tags",
        "actors",
        "aliases",
        "questions",
        "supersedes",
        "sources",
        "alternatives",
        "superseded_by",
        "line",
        "archive_at",
        "rowid",
        "resolves",
    )
    # no __slots__: a __dict__, as a dataclass has (site.state builds rows by filling it)
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
    archive_at: str | None
    rowid: int
    resolves: tuple[str, ...]

    def __init__(
        self,
        id: str,
        path: str,
        archive: str | None,
        sha256: str,
        type: str,
        date: str,
        domain: str,
        scope: str,
        status: str,
        origin: str,
        summary: str,
        tags: tuple[str, ...],
        actors: tuple[str, ...],
        aliases: tuple[str, ...],
        questions: tuple[str, ...],
        supersedes: tuple[str, ...],
        sources: tuple[str, ...],
        alternatives: tuple[Alternative, ...],
        superseded_by: tuple[str, ...],
        line: str,
        archive_at: str | None = None,
        rowid: int = 0,
        resolves: tuple[str, ...] = (),
    ) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "archive", archive)
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "date", date)
        object.__setattr__(self, "domain", domain)
        object.__setattr__(self, "scope", scope)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "summary", summary)
        object.__setattr__(self, "tags", tags)
        object.__setattr__(self, "actors", actors)
        object.__setattr__(self, "aliases", aliases)
        object.__setattr__(self, "questions", questions)
        object.__setattr__(self, "supersedes", supersedes)
        object.__setattr__(self, "sources", sources)
        object.__setattr__(self, "alternatives", alternatives)
        object.__setattr__(self, "superseded_by", superseded_by)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "archive_at", archive_at)
        object.__setattr__(self, "rowid", rowid)
        object.__setattr__(self, "resolves", resolves)

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
            "resolves": list(self.resolves),
            "sources": list(self.sources),
            "alternatives_considered": [
                {"id": a.id, "rejected_because": a.rejected_because} for a in self.alternatives
            ],
            "path": self.path,
            "archive": self.archive,
            "sha256": self.sha256,
        }


def row_from_db(r: sqlite3.Row | tuple[Any, ...]) -> Row:
    import json  # deferred: a write reads no row back (refresh._relink)

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
        resolves,
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
        resolves=tuple(json.loads(resolves)) if resolves else (),
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


# --------------------------------------------------------------------------- lines


_WS_RE = re.compile(r"[\s\x00-\x1f\x7f]+")


def clean(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def render_line(
    entry: Entry | Row, superseded_by: Sequence[str], archive: str | None = None
) -> str:
    """One dense index line: enough for an LLM to decide whether to open the entry."""
    summary = clean(entry.summary)
    if len(summary) > SUMMARY_IN_LINE:
        summary = summary[: SUMMARY_IN_LINE - 1].rstrip() + "…"
    path = entry.path if isinstance(entry, Row) else entry.relpath
    status = entry.status
    parts = [f"- {entry.date} {entry.type}"]
    if status != "active":
        parts.append(f"({status})")
    parts.append(f"[{entry.id}]({ROOT_MARK}{path})")
    if entry.tags:
        parts.append(" ".join("#" + clean(t).replace(" ", "-") for t in entry.tags))
    text = " ".join(parts) + " — " + summary
    if entry.aliases:
        text += " · aka: " + "; ".join(clean(a) for a in entry.aliases)
    if entry.questions:
        text += " · Q: " + " ".join(clean(q) for q in entry.questions)
    if entry.supersedes:
        text += " · supersedes " + ", ".join(entry.supersedes)
    if superseded_by:
        text += " · **superseded by " + ", ".join(superseded_by) + "**"
    if archive:
        text += f" · archived in {archive}"
    return text


# --------------------------------------------------------------------------- the catalog


class Fork(Frozen):
    """``old`` is superseded by several current entries (``heads``): a forked decision."""

    FIELDS = ("old", "heads")
    __slots__ = FIELDS
    old: Row
    heads: tuple[Row, ...]

    def __init__(self, old: Row, heads: tuple[Row, ...]) -> None:
        object.__setattr__(self, "old", old)
        object.__setattr__(self, "heads", heads)

    def message(self) -> str:
        heads = " and ".join(h.id for h in self.heads)
        return (
            f"{self.old.id} is superseded by both {heads}, which are both current (a fork: two "
            "writers superseded it); write one entry that supersedes them all and says which holds."
        )


class Catalog:
    """An open catalog. Use :func:`llm_wiki.catalog.open_catalog`; close it (or use ``with``)."""

    def __init__(self, wiki: Wiki, db: sqlite3.Connection) -> None:
        self.wiki = wiki
        self.db = db

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- meta (the catalog's own state: version, log offset, render flags)
    def meta(self, key: str, default: str = "") -> str:
        got = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return got[0] if got else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", (key, value))

    # -- lookups used by writers (no viewer: callers must not reveal what they learn)
    def scope_of(self, entry_id: str) -> str | None:
        got = self.db.execute("SELECT scope FROM entries WHERE id=?", (entry_id,)).fetchone()
        return got[0] if got else None

    def type_of(self, entry_id: str) -> str | None:
        got = self.db.execute("SELECT type FROM entries WHERE id=?", (entry_id,)).fetchone()
        return got[0] if got else None

    def sha_of(self, entry_id: str) -> str | None:
        got = self.db.execute("SELECT sha256 FROM entries WHERE id=?", (entry_id,)).fetchone()
        return got[0] if got else None

    # -- reads for a viewer
    def get(self, entry_id: str, viewer: Viewer) -> Row | None:
        got = self.db.execute(
            f"SELECT {COLUMNS}, rowid FROM entries WHERE id=?", (entry_id,)
        ).fetchone()
        if got is None:
            return None
        row = row_from_db(got)
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
        sql = f"SELECT {COLUMNS}, rowid FROM entries WHERE {where} ORDER BY {ORDER}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params.extend([limit, offset])
        return [row_from_db(r) for r in self.db.execute(sql, params)]

    def count_rows(self, viewer: Viewer, **filters: Any) -> int:
        if all(v in (None, "", "all") for v in filters.values()):
            return self.count(viewer)  # the whole view: from the counts, not the rows
        where, params = _where(viewer, **filters)
        if where is None:
            return 0
        return int(
            self.db.execute(f"SELECT count(*) FROM entries WHERE {where}", params).fetchone()[0]
        )

    def count(self, viewer: Viewer) -> int:
        """How many entries the viewer can read, from the trigger-kept counts (``count(*)``
        reads every row: milliseconds a `list` of a big wiki would spend each time)."""
        clause, args = viewer.sql_filter()
        got = self.db.execute(f"SELECT coalesce(sum(n), 0) FROM counts WHERE {clause}", args)
        return int(got.fetchone()[0])

    def field_means(self, viewer: Viewer, domains: Iterable[str] | None) -> dict[str, list[float]]:
        """domain -> the mean tokens per entry in each full-text field (summary, tags, aliases,
        questions, domain, body) among the entries of that domain the viewer can read, from
        the ``lengths`` table (one row per scope and domain: no entry is read). ``domains``
        None: every domain together, under the key ""."""
        clause, args = viewer.sql_filter()
        if domains is None:
            got = self.db.execute(
                "SELECT '', sum(n), sum(summary), sum(tags), sum(aliases), sum(questions), "
                f"sum(domain_tokens), sum(body) FROM lengths WHERE {clause}",
                args,
            ).fetchall()
        else:
            wanted = sorted(set(domains))
            if not wanted:
                return {}
            marks = ",".join("?" * len(wanted))
            got = self.db.execute(
                "SELECT domain, sum(n), sum(summary), sum(tags), sum(aliases), sum(questions), "
                f"sum(domain_tokens), sum(body) FROM lengths WHERE {clause} "
                f"AND domain IN ({marks}) GROUP BY domain",
                [*args, *wanted],
            ).fetchall()
        out: dict[str, list[float]] = {}
        for domain, n, *tokens in got:
            out[str(domain)] = [t / n for t in tokens] if n else [1.0] * len(tokens)
        return out

    def scopes(self) -> list[str]:
        """The scopes that hold entries, from the trigger-kept counts (a write asks, and a
        DISTINCT over the entries reads all of them)."""
        return [
            r[0]
            for r in self.db.execute("SELECT DISTINCT scope FROM counts WHERE n > 0 ORDER BY scope")
        ]

    def problems(self) -> list[tuple[str, str]]:
        return list(self.db.execute("SELECT path, message FROM problems ORDER BY path"))

    def tally(self, viewer: Viewer, by: str) -> dict[str, int]:
        """How many of the viewer's entries hold each value of ``by`` (``type``, ``domain``,
        ``scope``, ``origin``, or ``status``: the effective one), in value order."""
        clause, params = viewer.sql_filter()
        cur = self.db.execute(
            f"SELECT {_TALLIES[by]} AS k, count(*) FROM entries WHERE {clause} "
            "GROUP BY k ORDER BY k",
            params,
        )
        return {str(k): int(n) for k, n in cur}

    def extent(self, viewer: Viewer) -> tuple[int, int, str | None, str | None]:
        """(entries, of them archived, first date, latest date) of the viewer's entries."""
        clause, params = viewer.sql_filter()
        total, archived, first, latest = self.db.execute(
            f"SELECT count(*), count(archive), min(date), max(date) FROM entries WHERE {clause}",
            params,
        ).fetchone()
        return int(total), int(archived), first, latest

    def cited(self, viewer: Viewer, *, generated: bool = True) -> set[str]:
        """Every source the viewer's entries name (``generated=False``: only those named by
        entries no LLM wrote)."""
        clause, params = viewer.sql_filter("e.scope")
        sql = f"SELECT DISTINCT j.value FROM entries AS e, json_each(e.sources) AS j WHERE {clause}"
        if not generated:
            origins = sorted(GENERATED_ORIGINS)
            sql += f" AND e.origin NOT IN ({','.join('?' * len(origins))})"
            params = [*params, *origins]
        return {str(value) for (value,) in self.db.execute(sql, params)}

    def extractive(self, viewer: Viewer) -> set[str]:
        """The viewer's syntheses the consolidator wrote without an LLM (``method: extractive``):
        each only repeats its sources' summaries, so rankings and briefings leave them out."""
        clause, params = viewer.sql_filter()
        sql = (
            f"SELECT id FROM entries WHERE {clause} AND origin = 'consolidated' "
            "AND extra IS NOT NULL AND json_extract(extra, '$.method') = 'extractive'"
        )
        return {str(i) for (i,) in self.db.execute(sql, params)}

    def resolved(self, viewer: Viewer) -> set[str]:
        """Every incident an entry the viewer reads says it resolves (entries no LLM wrote)."""
        clause, params = viewer.sql_filter("e.scope")
        origins = sorted(GENERATED_ORIGINS)
        sql = (
            f"SELECT DISTINCT j.value FROM entries AS e, json_each(e.resolves) AS j WHERE {clause}"
            f" AND e.resolves IS NOT NULL AND e.origin NOT IN ({','.join('?' * len(origins))})"
        )
        return {str(value) for (value,) in self.db.execute(sql, [*params, *origins])}

    def sources(self, viewer: Viewer) -> Iterator[tuple[str, list[str]]]:
        """(id, sources) of every entry the viewer can read."""
        import json  # deferred: as in row_from_db

        clause, params = viewer.sql_filter()
        for entry_id, sources in self.db.execute(
            f"SELECT id, sources FROM entries WHERE {clause}", params
        ):
            yield entry_id, json.loads(sources)

    # -- for the disk commands (no viewer: they act on every scope)
    def forks(self, viewer: Viewer) -> list[Fork]:
        """Entries superseded along two or more lines that never met again (two machines
        superseded the same entry): each with the current entries at the ends of those lines."""
        clause, args = viewer.sql_filter()
        sql = (
            f"SELECT {COLUMNS}, rowid FROM entries WHERE {clause} AND superseded_by LIKE '%,%' "
            "ORDER BY id"
        )
        out = []
        for old in [row_from_db(r) for r in self.db.execute(sql, args)]:
            heads: dict[str, Row] = {}
            todo, seen = list(old.superseded_by), {old.id}
            while todo:
                entry_id = todo.pop()
                if entry_id in seen:
                    continue
                seen.add(entry_id)
                newer = self.get(entry_id, viewer)
                if newer is None:
                    continue
                if newer.superseded_by:
                    todo.extend(newer.superseded_by)
                else:
                    heads[newer.id] = newer
            if len(heads) >= 2:
                out.append(Fork(old, tuple(sorted(heads.values(), key=lambda r: r.id))))
        return out

    def superseded_before(self, cutoff: str) -> list[Row]:
        """Loose rows whose earliest replacement (an entry of their own scope superseding them)
        is dated before ``cutoff``, in path order: what the archive job retires."""
        columns = ", ".join(f"e.{c}" for c in COLUMNS.split(", "))
        cur = self.db.execute(
            f"SELECT {columns}, e.rowid FROM entries e "
            "JOIN edges g ON g.old = e.id JOIN entries n ON n.id = g.new AND n.scope = e.scope "
            "WHERE e.archive IS NULL GROUP BY e.id HAVING min(n.date) < ? ORDER BY e.path",
            (cutoff,),
        )
        return [row_from_db(r) for r in cur]


def fts5_varints(blob: bytes) -> list[int]:
    """FTS5 (like SQLite) writes big-endian varints: 7 bits a byte, high bit = more."""
    out, value = [], 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def create_db(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A new, empty catalog database. Until its first full build has finished (which sets its
    version and switches it to WAL), it runs without a journal: a build that dies leaves a
    file without a version, which the next open drops."""
    db = sqlite3.connect(str(path), timeout=60)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(_SCHEMA)
    return db

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
import json
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_wiki import store
from llm_wiki.access import Viewer, walls_on
from llm_wiki.entries import Alternative, Entry, decode_text, parse_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.wiki import Wiki

CATALOG_VERSION = "1"
LATEST_IN_INDEX = 15
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
  line TEXT
);
CREATE INDEX IF NOT EXISTS entries_by_domain ON entries(domain, date DESC, id DESC);
CREATE INDEX IF NOT EXISTS entries_by_date ON entries(date DESC, id DESC);
CREATE INDEX IF NOT EXISTS entries_by_path ON entries(path);
CREATE TABLE IF NOT EXISTS edges(old TEXT NOT NULL, new TEXT NOT NULL, PRIMARY KEY(old, new));
CREATE INDEX IF NOT EXISTS edges_by_new ON edges(new);
CREATE TABLE IF NOT EXISTS tags(id TEXT NOT NULL, tag TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tags_by_tag ON tags(tag);
CREATE INDEX IF NOT EXISTS tags_by_id ON tags(id);
CREATE TABLE IF NOT EXISTS actors(id TEXT NOT NULL, actor TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS actors_by_actor ON actors(actor);
CREATE INDEX IF NOT EXISTS actors_by_id ON actors(id);
CREATE TABLE IF NOT EXISTS problems(path TEXT PRIMARY KEY, message TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
  summary, tags, aliases, questions, domain, body,
  tokenize = 'porter unicode61 remove_diacritics 2'
);
"""

_COLUMNS = (
    "id, path, archive, sha256, mtime_ns, size, type, date, domain, scope, status, origin, "
    "summary, tags, actors, aliases, questions, supersedes, sources, alternatives, extra, "
    "body_len, superseded_by, line"
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
    rowid: int = 0

    @property
    def effective_status(self) -> str:
        return "superseded" if self.superseded_by else self.status

    @property
    def is_generated(self) -> bool:
        return self.origin in ("consolidated", "answer")

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
    for column, value in (("type", type), ("domain", domain), ("scope", scope)):
        if value:
            where.append(f"{column} = ?")
            params.append(value)
    if tag:
        where.append("id IN (SELECT id FROM tags WHERE tag = ?)")
        params.append(tag)
    if actor:
        where.append("id IN (SELECT id FROM actors WHERE actor = ?)")
        params.append(actor)
    if since:
        where.append("date >= ?")
        params.append(since)
    if until:
        where.append("date <= ?")
        params.append(until)
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


@dataclass
class Parsed:
    """A file read from disk: its entry, or the reason it could not be read."""

    path: str
    sha256: str
    mtime_ns: int
    size: int
    entry: Entry | None
    archive: str | None = None
    problem: str = ""


def parse_file(
    rel: str, data: bytes, mtime_ns: int, size: int, archive: str | None = None
) -> Parsed:
    sha = store.sha256_bytes(data)
    try:
        entry = parse_entry(decode_text(data, rel), what=rel)
    except InvalidInput as exc:
        return Parsed(rel, sha, mtime_ns, size, None, archive, exc.message)
    expected = os.path.basename(rel)[:-3]
    if entry.id != expected:
        problem = f"{rel}: its id {entry.id!r} does not match its file name; restore the file."
        return Parsed(rel, sha, mtime_ns, size, None, archive, problem)
    return Parsed(rel, sha, mtime_ns, size, entry, archive)


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


@dataclass(frozen=True)
class Target:
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
            f"INSERT INTO entries({_COLUMNS}) VALUES({','.join('?' * 24)})",
            (
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
                json.dumps(dict(entry.extra), ensure_ascii=False, sort_keys=True)
                if entry.extra
                else None,
                len(entry.body),
                None,
                "",
            ),
        )
        rowid = cur.lastrowid
        self.db.executemany(
            "INSERT OR IGNORE INTO edges(old, new) VALUES(?, ?)",
            [(old_id, entry.id) for old_id in entry.supersedes],
        )
        self.db.executemany(
            "INSERT INTO tags(id, tag) VALUES(?, ?)", [(entry.id, t) for t in entry.tags]
        )
        self.db.executemany(
            "INSERT INTO actors(id, actor) VALUES(?, ?)", [(entry.id, a) for a in entry.actors]
        )
        self.db.execute(
            "INSERT INTO fts(rowid, summary, tags, aliases, questions, domain, body) "
            "VALUES(?, ?, ?, ?, ?, ?, ?)",
            (
                rowid,
                entry.summary,
                " ".join(entry.tags),
                " ; ".join(entry.aliases),
                " ; ".join(entry.questions),
                entry.domain,
                entry.body,
            ),
        )

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
                    item = Parsed(
                        item.path,
                        item.sha256,
                        item.mtime_ns,
                        item.size,
                        None,
                        item.archive,
                        f"{item.path}: id {item.entry.id} is already used by {other[0]}; "
                        "remove the copy.",
                    )
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
        with self.db:
            self._set_meta("render_pending", "1")
            domains = self.apply([parsed])
            self._consume_log()
        self.render(domains=domains)

    def _consume_log(self) -> None:
        size, tail = _log_state(self.wiki)
        self._set_meta("log_offset", str(size))
        self._set_meta("log_tail", tail)

    def is_fresh(self) -> bool:
        if self._meta("version") != CATALOG_VERSION or self._meta("render_pending") == "1":
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
            if self._meta("render_pending") == "1":
                self.render()
            return
        self.scan()

    def _follow_log(self, offset: int) -> None:
        parsed: list[Parsed] = []
        archived: list[tuple[str, str]] = []
        for _, line in store.read_log(self.wiki, offset):
            if line.op == "write" and line.fields.get("path"):
                rel = line.fields["path"]
                if self.sha_of(line.subject) == line.fields.get("sha256"):
                    continue
                try:
                    data = (self.wiki.root / rel).read_bytes()
                    st = (self.wiki.root / rel).stat()
                except FileNotFoundError:
                    continue  # archived or removed since: a scan settles it below
                parsed.append(parse_file(rel, data, st.st_mtime_ns, st.st_size))
            elif line.op == "archive" and line.fields.get("archive"):
                archived.append((line.subject, line.fields["archive"]))
        with self.db:
            self._set_meta("render_pending", "1")
            domains = self.apply(parsed)
            domains |= self._mark_archived(archived)
            self._consume_log()
        self.render(domains=domains)

    def _mark_archived(self, archived: Sequence[tuple[str, str]]) -> set[str]:
        ids = []
        for entry_id, archive in archived:
            self.db.execute(
                "UPDATE entries SET archive=?, mtime_ns=NULL, size=NULL WHERE id=?",
                (archive, entry_id),
            )
            ids.append(entry_id)
        return self._relink(ids)

    def scan(self) -> ScanResult:
        """Compare every file with the catalog; re-parse only what changed; render."""
        known: dict[str, tuple[int | None, int | None, str | None]] = {
            path: (mtime, size, archive)
            for path, mtime, size, archive in self.db.execute(
                "SELECT path, mtime_ns, size, archive FROM entries"
            )
        }
        for (path,) in self.db.execute("SELECT path FROM problems"):
            known.setdefault(path, (-1, -1, None))
        seen: set[str] = set()
        changed: list[Parsed] = []
        for rel, st in store.iter_entry_files(self.wiki):
            seen.add(rel)
            prior = known.get(rel)
            if prior and prior[2] is None and prior[0] == st.st_mtime_ns and prior[1] == st.st_size:
                continue
            data = (self.wiki.root / rel).read_bytes()
            changed.append(parse_file(rel, data, st.st_mtime_ns, st.st_size))
        on_disk = archive_names(self.wiki)
        known_archives = {a for _, _, a in known.values() if a}
        for path, (_, _, archive) in known.items():
            if archive and archive in on_disk and path not in seen:
                seen.add(path)
        # Archives new to the catalog are read; all of them when a file left entries/ (it may
        # have been archived by another machine).
        vanished = any(p not in seen for p in known)
        to_read = on_disk if vanished else on_disk - known_archives
        for item in _iter_archived(self.wiki, to_read):
            if item.path in seen:
                continue  # a loose file in entries/, or an earlier archive, holds it
            seen.add(item.path)
            if known.get(item.path, (None, None, None))[2] != item.archive:
                changed.append(item)
        removed = [p for p in known if p not in seen]
        with self.db:
            self._set_meta("render_pending", "1")
            self._set_meta("version", CATALOG_VERSION)
            self.apply(changed, removed)
            self._consume_log()
        written = self.render(full=True)
        return ScanResult(parsed=len(changed), removed=len(removed), written=tuple(written))

    # -- rendering INDEX.md and the domain files
    def render(
        self,
        *,
        domains: Iterable[str] = (),
        full: bool = False,
    ) -> list[str]:
        """Write the index files that changed; return their paths (relative to the root)."""
        pending = self._meta("render_pending") == "1"
        files = self.expected_files(domains=None if (full or pending) else set(domains))
        written = []
        for rel, text in files.items():
            path = self.wiki.root / rel
            data = text.encode()
            try:
                if path.read_bytes() == data:
                    continue
            except FileNotFoundError:
                pass
            store.atomic_write(path, data)
            written.append(rel)
        if full or pending:
            for rel in self._stale_index_files(files):
                with contextlib.suppress(FileNotFoundError):
                    (self.wiki.root / rel).unlink()
                written.append(rel)
        with self.db:
            self._set_meta("render_pending", "0")
        return written

    def _stale_index_files(self, files: dict[str, str]) -> list[str]:
        stale = []
        candidates = [self.wiki.root / "index", self.wiki.root / "indexes"]
        for base in candidates:
            if not base.is_dir():
                continue
            for path in base.rglob("*.md"):
                rel = path.relative_to(self.wiki.root).as_posix()
                if rel not in files:
                    stale.append(rel)
        if walls_on(self.wiki) and (self.wiki.root / "INDEX.md").exists():
            stale.append("INDEX.md")  # a whole-wiki map would mix scopes
        return sorted(stale)

    def expected_files(self, domains: set[str] | None = None) -> dict[str, str]:
        """Index files as they should be: all, or INDEX.md(s) plus the given domains' files."""
        out: dict[str, str] = {}
        for target in index_targets(self.wiki, self.scopes()):
            base = target.dir.relative_to(self.wiki.root).as_posix()
            base = "" if base == "." else base + "/"
            stats = self._domain_stats(target.scope)
            out[base + "INDEX.md"] = self._render_index(target, stats)
            for domain in stats:
                if domains is None or domain in domains:
                    out[f"{base}index/{domain}.md"] = self._render_domain(target, domain)
        return out

    def _scope_sql(self, scope: str | None) -> tuple[str, list[str]]:
        return ("scope = ?", [scope]) if scope is not None else ("1", [])

    def _domain_stats(self, scope: str | None) -> dict[str, tuple[int, int, str]]:
        clause, params = self._scope_sql(scope)
        cur = self.db.execute(
            "SELECT domain, count(*), sum(superseded_by IS NULL AND status='active'), max(date) "
            f"FROM entries WHERE {clause} GROUP BY domain ORDER BY domain",
            params,
        )
        return {d: (n, int(a or 0), latest) for d, n, a, latest in cur}

    def _render_index(self, target: Target, stats: dict[str, tuple[int, int, str]]) -> str:
        clause, params = self._scope_sql(target.scope)
        total = sum(n for n, _, _ in stats.values())
        by_status = dict(
            self.db.execute(
                "SELECT CASE WHEN superseded_by IS NOT NULL THEN 'superseded' ELSE status END s, "
                f"count(*) FROM entries WHERE {clause} GROUP BY s ORDER BY s",
                params,
            ).fetchall()
        )
        by_type = self.db.execute(
            f"SELECT type, count(*) FROM entries WHERE {clause} GROUP BY type ORDER BY type", params
        ).fetchall()
        archived = self.db.execute(
            f"SELECT count(*) FROM entries WHERE {clause} AND archive IS NOT NULL", params
        ).fetchone()[0]
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
            for s in sorted(
                by_status, key=lambda s: (s not in order, order.index(s) if s in order else 0, s)
            )
        )
        lines.append(
            f"**{_n(total, 'entry', 'entries')}**" + (f": {status_text}" if status_text else "")
        )
        if by_type:
            lines.append("Types: " + " · ".join(f"{n} {t}" for t, n in by_type))
        if archived:
            lines.append(f"Archived: {archived}")
        lines += ["", "## Domains", ""]
        if not stats:
            lines.append("(none yet: write the first entry with `llm-wiki write`)")
        for domain, (n, active, latest) in stats.items():
            lines.append(
                f"- [{domain}](index/{domain}.md) — {_n(n, 'entry', 'entries')}, {active} active, "
                f"latest {latest}"
            )
        lines += ["", "## Latest", ""]
        cur = self.db.execute(
            f"SELECT date, type, id, path, summary FROM entries WHERE {clause} "
            f"ORDER BY {ORDER} LIMIT ?",
            [*params, LATEST_IN_INDEX],
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


def archive_names(wiki: Wiki) -> set[str]:
    """``archive/*.tar.zst`` as paths relative to the root."""
    if not wiki.archive_dir.is_dir():
        return set()
    return {f"archive/{p.name}" for p in wiki.archive_dir.glob("*.tar.zst")}


def _iter_archived(wiki: Wiki, names: Iterable[str]) -> Iterator[Parsed]:
    """Entries held in the named archives, first copy of each path wins (sorted by name)."""
    names = sorted(names)
    if not names:
        return
    from llm_wiki import archive

    for name in names:
        for rel, data in archive.iter_members(wiki, name):
            yield parse_file(rel, data, 0, len(data), archive=name)


def _log_state(wiki: Wiki) -> tuple[int, str]:
    try:
        size = wiki.log_path.stat().st_size
    except FileNotFoundError:
        return 0, ""
    return size, _tail_at(wiki, size)


def _tail_at(wiki: Wiki, offset: int) -> str:
    if offset <= 0:
        return ""
    try:
        with open(wiki.log_path, "rb") as fh:
            start = max(0, offset - 64)
            fh.seek(start)
            return fh.read(offset - start).hex()
    except FileNotFoundError:
        return ""


# --------------------------------------------------------------------------- opening


def connect(path: Path | str) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(_SCHEMA)
    return db


def _catalog_path(wiki: Wiki) -> Path:
    return wiki.state_path("catalog.sqlite3")


def open_catalog(wiki: Wiki, *, lock_held: bool = True, refresh: bool = True) -> Catalog:
    """Open the catalog, bringing it up to date first when ``refresh``.

    Writers call this with the write lock held (the default). Readers pass ``lock_held=False``:
    the lock is taken only if the catalog is stale.
    """
    try:
        db = connect(_catalog_path(wiki))
    except sqlite3.DatabaseError:
        _drop_catalog(wiki)
        db = connect(_catalog_path(wiki))
    except OSError as exc:
        raise WikiError(
            f"cannot open the catalog in {wiki.state_dir}: {exc}; check permissions."
        ) from None
    catalog = Catalog(wiki, db)
    if not refresh:
        return catalog
    try:
        if lock_held:
            catalog.refresh()
        elif not catalog.is_fresh():
            with store.locked(wiki):
                catalog.refresh()
    except sqlite3.DatabaseError:
        catalog.close()
        if not lock_held:
            with store.locked(wiki):
                _drop_catalog(wiki)
        else:
            _drop_catalog(wiki)
        return open_catalog(wiki, lock_held=lock_held, refresh=refresh)
    return catalog


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
        catalog = open_catalog(wiki, refresh=False)
        try:
            with catalog.db:
                catalog._set_meta("render_pending", "1")
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
    """``llm-wiki index --check``: what a rebuild from scratch would change. Writes nothing."""
    fresh_db = connect(":memory:")
    fresh = Catalog(wiki, fresh_db)
    try:
        parsed = [
            parse_file(rel, (wiki.root / rel).read_bytes(), st.st_mtime_ns, st.st_size)
            for rel, st in store.iter_entry_files(wiki)
        ]
        seen = {p.path for p in parsed}
        for item in _iter_archived(wiki, archive_names(wiki)):
            if item.path not in seen:
                seen.add(item.path)
                parsed.append(item)
        with fresh_db:
            fresh.apply(parsed)
        stale: list[str] = []
        expected = fresh.expected_files()
        for rel, text in expected.items():
            try:
                if (wiki.root / rel).read_bytes() != text.encode():
                    stale.append(rel)
            except FileNotFoundError:
                stale.append(rel)
        stale += fresh._stale_index_files(expected)
        state = "SELECT id, path, archive, sha256, superseded_by, line FROM entries ORDER BY id"
        want = fresh_db.execute(state).fetchall()
        have: list[Any] = []
        if _catalog_path(wiki).exists():
            with contextlib.suppress(sqlite3.DatabaseError):
                db = sqlite3.connect(str(_catalog_path(wiki)))
                try:
                    have = db.execute(state).fetchall()
                finally:
                    db.close()
        if have != want:
            stale.append(".llm-wiki/catalog.sqlite3")
        return IndexResult(
            entries=len(want),
            parsed=len(parsed),
            removed=0,
            stale=tuple(sorted(set(stale))),
            problems=tuple(fresh.problems()),
        )
    finally:
        fresh.close()

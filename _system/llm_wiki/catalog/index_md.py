"""INDEX.md and index/<domain>.md: the generated map an LLM reads, rendered from the catalog.

Index lines are rendered once per entry and cached in the catalog (:func:`.db.render_line`), so
a write re-renders only INDEX.md and the domain files it touched; and a domain file is not
rendered again either, but spliced (:func:`_splice`): the lines of the rows that changed are taken
out and their new lines put in where the order puts them, so a write costs the same into a domain
of ten entries or of a hundred thousand (bar copying the file's bytes). Single-user, the files sit at
the wiki's root; under walls, one set per scope under ``indexes/<scope>/``, since nothing stored
may mix scopes. Deleting ``.llm-wiki/``, ``INDEX.md`` and ``index/`` and running ``llm-wiki
index`` gives the same bytes.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from llm_wiki.access import walls_on
from llm_wiki.catalog.db import ORDER, ROOT_MARK, Catalog, clean
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

if TYPE_CHECKING:
    from pathlib import Path

LATEST_IN_INDEX = 15
SPLIT_AT = 1000  # a domain of more entries is indexed one file per month as well


if TYPE_CHECKING:

    class Target(NamedTuple):
        """Where one set of index files goes. ``scope`` None: every scope (single-user mode)."""

        scope: str | None
        base: str  # the set's folder from the wiki root: "" or "indexes/<scope>/"
        index_prefix: str  # from <base>INDEX.md to the wiki root
        domain_prefix: str  # from <base>index/<domain>.md to the wiki root

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    Target = namedtuple("Target", ["scope", "base", "index_prefix", "domain_prefix"])


def index_targets(wiki: Wiki, scopes: Iterable[str]) -> list[Target]:
    """Single-user: INDEX.md and index/ at the root. Walls: one set per scope under indexes/."""
    if not walls_on(wiki):
        return [Target(None, "", "", "../")]
    return [
        Target(scope, f"indexes/{scope}/", "../../", "../../../") for scope in sorted(set(scopes))
    ]


# --------------------------------------------------------------------------- rendering


if TYPE_CHECKING:

    class Change(NamedTuple):
        """One row a change touched: as it was (None: new) and as it is (None: gone)."""

        before: tuple[str, str, str] | None  # (scope, domain, line)
        after: tuple[str, str, str, str, int] | None  # (scope, domain, line, date, superseded?)

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    Change = namedtuple("Change", ["before", "after"])


def write_index_files(
    catalog: Catalog,
    *,
    domains: Iterable[str] | None = (),
    full: bool = False,
    changes: Mapping[str, Change] | None = None,
) -> list[str]:
    """Write the index files that changed; return their paths (relative to the root).

    INDEX.md and the files of ``domains`` (None: all) are rendered: of a domain indexed by
    month, its month list and the months ``changes`` touched (every month without ``changes``).
    With ``full``, every other index file is checked too: re-rendered unless it is exactly as
    last written (same size and mtime), and index files that no domain owns any more are
    removed. ``changes`` (id -> :class:`Change`, every row the change touched) lets a domain or
    month file that is exactly as last written be spliced rather than rendered; the bytes are
    the same.
    """
    wanted = None if domains is None else set(domains)
    walls = "1" if walls_on(catalog.wiki) else "0"
    recorded = _recorded(catalog, whole=full or wanted is None)
    plan = index_plan(catalog)
    written: list[str] = []
    seen: list[tuple[str, int, int]] = []
    expected = list(plan)
    work: list[tuple[str, Target, str | None, str | None]] = []
    for rel, (target, domain, groups) in plan.items():
        if domain is not None and not full and wanted is not None and domain not in wanted:
            continue
        if domain is None or _domain_size(groups, domain) <= SPLIT_AT:
            work.append((rel, target, domain, None))
            if domain is not None:
                _drop_months(catalog, rel, written)  # the domain was indexed by month
            continue
        work.append((rel, target, domain, ""))
        folder = catalog.wiki.path(rel[:-3])
        if full or changes is None or domain not in (wanted or ()) or not os.path.isdir(folder):
            months = _months(catalog, target.scope, domain)
            expected += [_month_path(rel, m) for m in months]
        else:
            months = _touched_months(changes, target, domain)
        work += [(_month_path(rel, m), target, domain, m) for m in months]
    for rel, target, domain, month in work:
        path = catalog.wiki.path(rel)
        if domain is not None and wanted is not None and domain not in wanted:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                st = None
            if st is not None and recorded(rel) == (st.st_size, st.st_mtime_ns):
                continue
        spliced = None
        if changes is not None and domain is not None:
            if month == "":
                spliced = _splice_months(catalog, target, domain, path, recorded(rel), changes)
            else:
                spliced = _splice(
                    catalog, target, domain, path, recorded(rel), changes, month=month
                )
        if spliced is not None:
            data, same = spliced
        else:
            if month == "":
                data = _render_months(catalog, target, domain).encode()  # type: ignore[arg-type]
            elif domain is None:
                data = _render_index(catalog, target, plan[rel][2]).encode()
            else:
                data = _render_domain(catalog, target, domain, month=month).encode()
            try:
                same = _read(path) == data
            except FileNotFoundError:
                same = False
            if not same and data == b"" and not os.path.exists(path):
                same = True  # a month no row is in any more: no file
        if not same:
            if data:
                atomic_write(path, data)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            written.append(rel)
        try:
            st = os.stat(path)
        except FileNotFoundError:  # a month no entry is dated in any more
            catalog.db.execute("DELETE FROM rendered WHERE path = ?", (rel,))
        else:
            seen.append((rel, st.st_size, st.st_mtime_ns))
    if full:
        for rel in stale_index_files(catalog, expected):
            with contextlib.suppress(FileNotFoundError):
                (catalog.wiki.root / rel).unlink()
            written.append(rel)
        _prune_empty_dirs(catalog.wiki.root / "index", catalog.wiki.root / "indexes")
    with catalog.db:
        catalog.db.executemany(
            "INSERT OR REPLACE INTO rendered(path, size, mtime_ns) VALUES(?, ?, ?)", seen
        )
        if full:
            import json  # deferred: a write renders a few files, not all

            catalog.db.execute(
                "DELETE FROM rendered WHERE path NOT IN (SELECT value FROM json_each(?))",
                (json.dumps(expected),),
            )
        catalog.set_meta("render_pending", "0")
        if full:
            catalog.set_meta("walls", walls)
    return written


def _recorded(catalog: Catalog, *, whole: bool) -> Callable[[str], tuple[int, int] | None]:
    """rel -> (size, mtime_ns) as the index last wrote it, or None. ``whole``: every file will
    be looked at, so the table is read at once; else the few a write renders are looked up one
    by one (the table holds a row per index file: reading ~700 rows at 100k entries was a
    tenth of a write's own work)."""
    if whole:
        rows = catalog.db.execute("SELECT path, size, mtime_ns FROM rendered")
        return {p: (n, m) for p, n, m in rows}.get

    def lookup(rel: str) -> tuple[int, int] | None:
        got = catalog.db.execute(
            "SELECT size, mtime_ns FROM rendered WHERE path = ?", (rel,)
        ).fetchone()
        return None if got is None else (got[0], got[1])

    return lookup


def index_plan(catalog: Catalog) -> dict[str, tuple[Target, str | None, list[Any]]]:
    """Every INDEX.md and domain file that should exist: path -> (target, domain or None for
    INDEX.md, the target's count groups). A domain of more than :data:`SPLIT_AT` entries has
    month files too (``index/<domain>/<YYYY-MM>.md``), listed by its domain file."""
    plan: dict[str, tuple[Target, str | None, list[Any]]] = {}
    for target in index_targets(catalog.wiki, catalog.scopes()):
        base = target.base
        groups = _counts(catalog, target.scope)
        plan[base + "INDEX.md"] = (target, None, groups)
        for domain in sorted({g[0] for g in groups}):
            plan[f"{base}index/{domain}.md"] = (target, domain, groups)
    return plan


def _domain_size(groups: list[Any], domain: str) -> int:
    return sum(g[4] for g in groups if g[0] == domain)


def _month_path(domain_rel: str, month: str) -> str:
    return f"{domain_rel[:-3]}/{month}.md"


def _months(catalog: Catalog, scope: str | None, domain: str) -> list[str]:
    """The months (YYYY-MM) the domain has entries in, newest first: one index lookup each."""
    clause, params = _scope_sql(scope)
    months: list[str] = []
    below = "9999-99"
    while True:
        got = catalog.db.execute(
            f"SELECT max(date) FROM entries WHERE domain = ? AND {clause} AND date < ?",
            [domain, *params, below],
        ).fetchone()
        if got is None or got[0] is None:
            return months
        below = got[0][:7]
        months.append(below)


def _touched_months(changes: Mapping[str, Change], target: Target, domain: str) -> list[str]:
    """The months of ``domain`` whose rows ``changes`` touched (a line starts ``- YYYY-MM-DD``)."""
    months = set()
    for change in changes.values():
        for side in (change.before, change.after):
            if side is not None and side[1] == domain and target.scope in (None, side[0]):
                months.add(side[2][2:9])
    return sorted(months, reverse=True)


def _drop_months(catalog: Catalog, domain_rel: str, written: list[str]) -> None:
    """Remove the month files of a domain no longer indexed by month (it shrank)."""
    if not os.path.isdir(catalog.wiki.path(domain_rel[:-3])):
        return
    folder = catalog.wiki.root / domain_rel[:-3]
    for path in sorted(folder.glob("*.md")):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        written.append(path.relative_to(catalog.wiki.root).as_posix())
    with contextlib.suppress(OSError):
        folder.rmdir()


def stale_index_files(catalog: Catalog, files: Iterable[str]) -> list[str]:
    stale = []
    expected = set(files)
    for top in ("index", "indexes"):
        # What Path.rglob("*.md") finds (files and folders so named; symlinked folders not
        # entered), by os.walk: pathlib's objects cost ~30 ms over 100k entries' ~700 files.
        for folder, dirs, names in os.walk(catalog.wiki.root / top):
            at = os.path.relpath(folder, catalog.wiki.root).replace(os.sep, "/")
            for name in (*dirs, *names):
                if name.endswith(".md") and f"{at}/{name}" not in expected:
                    stale.append(f"{at}/{name}")
    if walls_on(catalog.wiki) and (catalog.wiki.root / "INDEX.md").exists():
        stale.append("INDEX.md")  # a whole-wiki map would mix scopes
    return sorted(stale)


def expected_files(catalog: Catalog) -> Iterator[tuple[str, str]]:
    """Every index file as it should be (path, text), one at a time."""
    for rel, (target, domain, groups) in index_plan(catalog).items():
        if domain is None:
            yield rel, _render_index(catalog, target, groups)
        elif _domain_size(groups, domain) <= SPLIT_AT:
            yield rel, _render_domain(catalog, target, domain)
        else:
            yield rel, _render_months(catalog, target, domain)
            for month in _months(catalog, target.scope, domain):
                yield _month_path(rel, month), _render_domain(catalog, target, domain, month=month)


def _scope_sql(scope: str | None) -> tuple[str, list[str]]:
    return ("scope = ?", [scope]) if scope is not None else ("1", [])


def _counts(catalog: Catalog, scope: str | None) -> list[tuple[str, str, str, int, int, str]]:
    """(domain, type, effective status, archived?, count, latest date of the domain) groups,
    from the trigger-kept ``counts`` table and one index lookup per domain, those in one
    statement (a statement per domain cost a write ~20 round trips)."""
    clause, params = _scope_sql(scope)
    groups = catalog.db.execute(
        "SELECT domain, type, status, archived, sum(n) FROM counts "
        f"WHERE n > 0 AND {clause} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        params,
    ).fetchall()
    latest = dict(
        catalog.db.execute(
            f"SELECT d.domain, (SELECT max(date) FROM entries WHERE domain = d.domain AND {clause}) "
            f"FROM (SELECT DISTINCT domain FROM counts WHERE n > 0 AND {clause}) d",
            [*params, *params],
        )
    )
    return [(d, t, st, a, n, latest[d]) for d, t, st, a, n in groups]


def _render_index(
    catalog: Catalog, target: Target, groups: list[tuple[str, str, str, int, int, str]]
) -> str:
    clause, params = _scope_sql(target.scope)
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
    if any(d[0] > SPLIT_AT for d in domains.values()):
        lines[3] += (
            f" A domain of over {SPLIT_AT} entries lists its months instead, each month's file "
            "one line per entry."
        )
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
    cutoff = catalog.db.execute(
        f"SELECT date FROM entries WHERE {clause} ORDER BY date DESC LIMIT 1 OFFSET ?",
        [*params, LATEST_IN_INDEX - 1],
    ).fetchone()
    cur = catalog.db.execute(
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


def _render_domain(
    catalog: Catalog, target: Target, domain: str, *, month: str | None = None
) -> str:
    """A domain file of every entry, or (``month``) one month's file of a domain indexed by
    month ("" when no entry of the domain is dated in that month)."""
    clause, params = _scope_sql(target.scope)
    within, bounds = _month_sql(month)
    cur = catalog.db.execute(
        f"SELECT line FROM entries WHERE domain = ? AND {clause}{within} ORDER BY {ORDER}",
        [domain, *params, *bounds],
    )
    body = [line for (line,) in cur]
    if month is not None and not body:
        return ""
    head = _domain_head(domain, len(body), month).decode().split("\n")[:-1]
    prefix = target.domain_prefix + ("../" if month is not None else "")
    return ("\n".join(head + body) + "\n").replace(ROOT_MARK, prefix)


def _month_sql(month: str | None) -> tuple[str, list[str]]:
    if month is None:
        return "", []
    return " AND date >= ? AND date <= ?", [f"{month}-00", f"{month}-99"]


def _domain_head(domain: str, count: int, month: str | None = None) -> bytes:
    title = domain if month is None else f"{domain}, {month}"
    return (
        f"# Domain: {title}\n\n{_n(count, 'entry', 'entries')}, newest first. Generated from "
        "frontmatter; do not edit.\n\n"
    ).encode()


def _month_count(catalog: Catalog, scope: str | None, domain: str, month: str) -> int:
    clause, params = _scope_sql(scope)
    within, bounds = _month_sql(month)
    got = catalog.db.execute(
        f"SELECT count(*) FROM entries WHERE domain = ? AND {clause}{within}",
        [domain, *params, *bounds],
    ).fetchone()
    return int(got[0])


def _render_months(catalog: Catalog, target: Target, domain: str) -> str:
    """The domain file of a domain indexed by month: its count, then one line per month."""
    counts = {
        m: _month_count(catalog, target.scope, domain, m)
        for m in _months(catalog, target.scope, domain)
    }
    return _months_text(domain, counts)


def _months_text(domain: str, counts: Mapping[str, int]) -> str:
    total = sum(counts.values())
    lines = [
        f"# Domain: {domain}",
        "",
        f"{_n(total, 'entry', 'entries')}, newest first, one file per month (over {SPLIT_AT} "
        "entries). Generated from frontmatter; do not edit.",
        "",
    ]
    for month in sorted(counts, reverse=True):
        lines.append(f"- [{month}]({domain}/{month}.md) — {_n(counts[month], 'entry', 'entries')}")
    return "\n".join(lines) + "\n"


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _unchanged_since(path: str, recorded: tuple[int, int] | None) -> bool:
    """Whether ``path`` is as the last index wrote it: (size, mtime_ns) as ``recorded`` then."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return recorded == (st.st_size, st.st_mtime_ns)


def _splice_months(
    catalog: Catalog,
    target: Target,
    domain: str,
    path: str,
    recorded: tuple[int, int] | None,
    changes: Mapping[str, Change],
) -> tuple[bytes | bytearray, bool] | None:
    """The month list's new bytes from its old ones: the months ``changes`` touched counted
    again, the others as they were. None when only a render can tell (the file is not exactly
    as last written, or does not read back as a month list)."""
    if not _unchanged_since(path, recorded):
        return None
    old = _read(path)
    counts: dict[str, int] = {}
    try:
        for line in old.decode().split("\n")[4:-1]:
            month, _, rest = line.removeprefix("- [").partition("]")
            counts[month] = int(rest.rsplit("— ", 1)[-1].split(" ")[0])
    except (UnicodeDecodeError, ValueError):  # not a month list (a domain file of every entry)
        return None
    if _months_text(domain, counts).encode() != old:
        return None
    for month in _touched_months(changes, target, domain):
        counts[month] = _month_count(catalog, target.scope, domain, month)
    counts = {m: n for m, n in counts.items() if n}
    if sum(counts.values()) != _domain_count(catalog, target.scope, domain):
        return None
    data = _months_text(domain, counts).encode()
    return data, data == old


def _comes_first(a: tuple[str, int, str], b: tuple[str, int, str]) -> bool:
    """Whether row ``a`` (date, superseded?, id) comes before ``b`` in ORDER (date DESC,
    superseded_by IS NOT NULL, id DESC); text compares as SQLite's BINARY collation does."""
    if a[0] != b[0]:
        return a[0] > b[0]
    if a[1] != b[1]:
        return a[1] < b[1]
    return a[2] > b[2]


def _in_order(a: tuple[str, int, str], b: tuple[str, int, str]) -> int:
    return -1 if _comes_first(a, b) else (1 if _comes_first(b, a) else 0)


def _splice(
    catalog: Catalog,
    target: Target,
    domain: str,
    path: str,
    recorded: tuple[int, int] | None,
    changes: Mapping[str, Change],
    *,
    month: str | None = None,
) -> tuple[bytes | bytearray, bool] | None:
    """The domain file's new bytes made from its old ones (and whether they are the same): the
    changed rows' old lines out, their new lines in, each right after the row the order puts before it, and the count in
    the head. None when only a render can tell: the file is not exactly as last written, its
    head does not count its lines, or a line could be mistaken for another's.

    Why the result equals a render: the old file is the domain's rows in ORDER, one line each
    (the head's count equals the lines, so no line holds a line break). Rows that did not
    change keep their lines and their order relative to each other; each changed row goes in
    right after its predecessor in the new order (inserted first, as rows go in new order), and
    a predecessor's line is found by a search that cannot match another row's line, since it
    holds the link ``[id](`` once and nothing else that looks like one.
    """
    if not _unchanged_since(path, recorded):
        return None
    prefix = target.domain_prefix + ("../" if month is not None else "")
    gone: list[bytes] = []
    new: list[tuple[tuple[str, int, str], bytes]] = []
    for entry_id, change in changes.items():
        if change.before is not None:
            scope, dom, line = change.before
            if (
                dom == domain
                and target.scope in (None, scope)
                and line[2:9] == (month or line[2:9])
            ):
                gone.append(line.replace(ROOT_MARK, prefix).encode())
        if change.after is not None:
            scope, dom, line, date, superseded = change.after
            if dom == domain and target.scope in (None, scope) and date[:7] == (month or date[:7]):
                text = line.replace(ROOT_MARK, prefix).encode()
                if not _findable(text, entry_id):
                    return None
                new.append(((date, superseded, entry_id), text))
    if not gone and not new:
        return b"", True  # no row of this file changed (another scope's, under walls): as it is
    old = _read(path)
    lines = old.count(b"\n") - 4
    head = _domain_head(domain, lines, month)
    if lines < 0 or not old.startswith(head):
        return None
    data = bytearray(old)  # edited in place: each edit moves the bytes after it, copies nothing
    body_at = len(head) - 1  # the head's last line break: every line starts after one
    for text in gone:
        at = data.find(b"\n" + text + b"\n", body_at)
        if at < 0:
            return None
        del data[at + 1 : at + 2 + len(text)]
    new.sort(key=lambda item: functools.cmp_to_key(_in_order)(item[0]))
    for key, text in new:
        before = _predecessor(catalog, target, domain, key, month)
        if before is None:
            at = body_at
        else:
            before_id, before_line = before
            needle = before_line.replace(ROOT_MARK, prefix).encode()
            if not _findable(needle, before_id):
                return None
            at = data.find(b"\n" + needle + b"\n", body_at)
            if at < 0:
                return None
            at += 1 + len(needle)
        data[at + 1 : at + 1] = text + b"\n"
    count = lines - len(gone) + len(new)
    if month is None:
        if count != _domain_count(catalog, target.scope, domain):
            return None
    elif count != _month_count(catalog, target.scope, domain, month):
        return None
    elif count == 0:
        return b"", False  # no entry of the domain is dated in that month any more: no file
    data[: len(head)] = _domain_head(domain, count, month)
    return data, data == old


def _findable(line: bytes, entry_id: str) -> bool:
    """Whether a search for this whole line can find no other row's line: it holds one line,
    one ``](`` (its link's: every line has that) and an id without ``[`` (so the text between
    the last ``[`` and that ``](`` is the id, which no other row has)."""
    return b"\n" not in line and line.count(b"](") == 1 and "[" not in entry_id


def _predecessor(
    catalog: Catalog,
    target: Target,
    domain: str,
    key: tuple[str, int, str],
    month: str | None = None,
) -> tuple[str, str] | None:
    """(id, line) of the row just before ``key`` (date, superseded?, id) in the domain file's
    (or ``month``'s file's) order, or None: the last of its own day that comes first, else the
    last of the nearest later day (of that month). Both are index lookups, however big the
    domain."""
    clause, params = _scope_sql(target.scope)
    day = key[0]
    while True:
        # of the day's rows that come first (as _comes_first: not superseded before superseded,
        # then id DESC, BINARY text comparing as str does), the last in ORDER
        last = catalog.db.execute(
            "SELECT id, line FROM entries "
            f"WHERE domain = ? AND {clause} AND date = ? AND ((superseded_by IS NOT NULL) < ? "
            "OR ((superseded_by IS NOT NULL) = ? AND id > ?)) "
            "ORDER BY superseded_by IS NOT NULL DESC, id ASC LIMIT 1",
            [domain, *params, day, int(key[1]), int(key[1]), key[2]]
            if day == key[0]
            else [domain, *params, day, 2, 2, ""],  # a later day: every row comes first
        ).fetchone()
        if last is not None:
            return last[0], last[1]
        got = catalog.db.execute(
            f"SELECT min(date) FROM entries WHERE domain = ? AND {clause} AND date > ?",
            [domain, *params, day],
        ).fetchone()
        if got is None or got[0] is None or (month is not None and got[0][:7] != month):
            return None
        day = got[0]


def _domain_count(catalog: Catalog, scope: str | None, domain: str) -> int:
    clause, params = _scope_sql(scope)
    got = catalog.db.execute(
        f"SELECT coalesce(sum(n), 0) FROM counts WHERE domain = ? AND {clause}", [domain, *params]
    ).fetchone()
    return int(got[0])


def _prune_empty_dirs(*bases: Path) -> None:
    """Remove the folders an index layout no longer uses (``index/`` once walls are on, a
    scope's folder under ``indexes/`` once they are off), deepest first."""
    for base in bases:
        for folder, _, _ in os.walk(base, topdown=False):  # each folder after those in it
            with contextlib.suppress(OSError):
                os.rmdir(folder)


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _short(text: str, limit: int = 160) -> str:
    text = clean(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

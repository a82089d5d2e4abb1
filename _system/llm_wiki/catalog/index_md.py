"""INDEX.md and index/<domain>.md: the generated map an LLM reads, rendered from the catalog.

Index lines are rendered once per entry and cached in the catalog (:func:`.db.render_line`), so
a write re-renders only INDEX.md and the domain files it touched. Single-user, the files sit at
the wiki's root; under walls, one set per scope under ``indexes/<scope>/``, since nothing stored
may mix scopes. Deleting ``.llm-wiki/``, ``INDEX.md`` and ``index/`` and running ``llm-wiki
index`` gives the same bytes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from llm_wiki.access import walls_on
from llm_wiki.catalog.db import ORDER, ROOT_MARK, Catalog, clean
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

LATEST_IN_INDEX = 15


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


# --------------------------------------------------------------------------- rendering


def write_index_files(
    catalog: Catalog,
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
    walls = "1" if walls_on(catalog.wiki) else "0"
    recorded = {
        p: (n, m) for p, n, m in catalog.db.execute("SELECT path, size, mtime_ns FROM rendered")
    }
    plan = index_plan(catalog)
    written, seen = [], []
    for rel, (target, domain, groups) in plan.items():
        path = catalog.wiki.root / rel
        if domain is not None and wanted is not None and domain not in wanted:
            if not full:
                continue
            try:
                st = path.stat()
            except FileNotFoundError:
                st = None
            if st is not None and recorded.get(rel) == (st.st_size, st.st_mtime_ns):
                continue
        data = _render_file(catalog, target, domain, groups).encode()
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
        for rel in stale_index_files(catalog, plan):
            with contextlib.suppress(FileNotFoundError):
                (catalog.wiki.root / rel).unlink()
            written.append(rel)
        _prune_empty_dirs(catalog.wiki.root / "index", catalog.wiki.root / "indexes")
    with catalog.db:
        catalog.db.executemany(
            "INSERT OR REPLACE INTO rendered(path, size, mtime_ns) VALUES(?, ?, ?)", seen
        )
        if full:
            catalog.db.execute(
                "DELETE FROM rendered WHERE path NOT IN (SELECT value FROM json_each(?))",
                (json.dumps(list(plan)),),
            )
        catalog.set_meta("render_pending", "0")
        if full:
            catalog.set_meta("walls", walls)
    return written


def index_plan(catalog: Catalog) -> dict[str, tuple[Target, str | None, list[Any]]]:
    """Every index file that should exist: path -> (target, domain or None for INDEX.md,
    the target's count groups)."""
    plan: dict[str, tuple[Target, str | None, list[Any]]] = {}
    for target in index_targets(catalog.wiki, catalog.scopes()):
        base = target.dir.relative_to(catalog.wiki.root).as_posix()
        base = "" if base == "." else base + "/"
        groups = _counts(catalog, target.scope)
        plan[base + "INDEX.md"] = (target, None, groups)
        for domain in sorted({g[0] for g in groups}):
            plan[f"{base}index/{domain}.md"] = (target, domain, groups)
    return plan


def stale_index_files(catalog: Catalog, files: Iterable[str]) -> list[str]:
    stale = []
    expected = set(files)
    candidates = [catalog.wiki.root / "index", catalog.wiki.root / "indexes"]
    for base in candidates:
        if not base.is_dir():
            continue
        for path in base.rglob("*.md"):
            rel = path.relative_to(catalog.wiki.root).as_posix()
            if rel not in expected:
                stale.append(rel)
    if walls_on(catalog.wiki) and (catalog.wiki.root / "INDEX.md").exists():
        stale.append("INDEX.md")  # a whole-wiki map would mix scopes
    return sorted(stale)


def expected_files(catalog: Catalog) -> Iterator[tuple[str, str]]:
    """Every index file as it should be (path, text), one at a time."""
    for rel, (target, domain, groups) in index_plan(catalog).items():
        yield rel, _render_file(catalog, target, domain, groups)


def _render_file(catalog: Catalog, target: Target, domain: str | None, groups: list[Any]) -> str:
    """The text of one planned index file: the target's INDEX.md (``domain`` None) or a
    domain file."""
    if domain is None:
        return _render_index(catalog, target, groups)
    return _render_domain(catalog, target, domain)


def _scope_sql(scope: str | None) -> tuple[str, list[str]]:
    return ("scope = ?", [scope]) if scope is not None else ("1", [])


def _counts(catalog: Catalog, scope: str | None) -> list[tuple[str, str, str, int, int, str]]:
    """(domain, type, effective status, archived?, count, latest date of the domain) groups,
    from the trigger-kept ``counts`` table and one index lookup per domain."""
    clause, params = _scope_sql(scope)
    groups = catalog.db.execute(
        "SELECT domain, type, status, archived, sum(n) FROM counts "
        f"WHERE n > 0 AND {clause} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        params,
    ).fetchall()
    latest = {}
    for domain in {g[0] for g in groups}:
        latest[domain] = catalog.db.execute(
            f"SELECT max(date) FROM entries WHERE domain = ? AND {clause}", [domain, *params]
        ).fetchone()[0]
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


def _render_domain(catalog: Catalog, target: Target, domain: str) -> str:
    clause, params = _scope_sql(target.scope)
    cur = catalog.db.execute(
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
    text = clean(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

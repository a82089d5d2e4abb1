"""What changed since the last site build: log.md followed from where that build stopped, the
entry files checked again (:func:`llm_wiki.verify.verify_since`), the rows the new lines and the
changed files name read again from the catalog, and the keys of the pages to plan again (see
site/state.py for what the last build left, site/build.py for the plan that uses it).
"""

from __future__ import annotations

import functools
import os
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import astuple, dataclass
from typing import Any

import llm_wiki.site.state as state
import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.catalog import Row
from llm_wiki.site.view import Line, digest, raw_sources
from llm_wiki.verify import Finding, HashCache, VerifyResult, logged_entries, verify_since
from llm_wiki.verify import verify as verify_wiki
from llm_wiki.wiki import Wiki


def unchanged(
    prev: dict[str, Any], inputs: Inputs, hashes: HashCache, result: VerifyResult
) -> bool:
    """Whether nothing a page or the state holds has changed since the last build: no new line
    in log.md, no entry file whose bytes changed, came or went (so no row to read again, see
    follow), the same raw/ listing and records of the inspector, every file's record the last
    build's (a file hashed again because its record was not yet trusted: the same stat and
    sha256) and the same verify result. Such a build leaves everything as it is (reads no row,
    plans nothing, renders nothing, appends nothing: a record not yet trusted stays so, and its
    file is hashed again next time)."""
    if inputs.new or prev["raw"] != inputs.raw or prev["soft"] != inputs.soft:
        return False
    old, files = hashes.old_files, hashes.files
    if len(old) != len(files) or hashes.changed or hashes.archives != hashes.old_archives:
        return False
    for rel, o in old.items():  # hashed again (a record not yet trusted): the same bytes?
        got = files.get(rel)
        if got is not o and (got is None or got[:5] != o[:5]):
            return False
    last = prev.get("verify")
    return last is not None and (result.checked, [astuple(f) for f in result.findings]) == (
        last[0],
        list(last[1]),
    )


def verify_now(
    wiki: Wiki, viewer: Viewer, prev: dict[str, Any], inputs: Inputs
) -> tuple[HashCache, VerifyResult]:
    """verify's result now, checking again only the entries whose files changed since the last
    build or that log.md's new lines name (see :func:`llm_wiki.verify.verify_since`); the whole
    check when that cannot say."""
    last = prev.get("verify")
    if last is not None:
        hashes = HashCache(prev["files"], prev["archives"])
        named = {line[2] for line in inputs.new or () if line[1] == "write" and line[2]}
        before = VerifyResult(last[0], tuple(Finding(*f) for f in last[1]))
        result = verify_since(
            wiki,
            viewer,
            before,
            logged=Later(lambda: inputs.logged),
            logged_to=inputs.offset,
            hashes=hashes,
            named=named,
        )
        if result is not None:
            return hashes, result
    hashes = HashCache(prev["files"], prev["archives"])
    result = verify_wiki(wiki, viewer, logged=inputs.logged, logged_to=inputs.offset, hashes=hashes)
    return hashes, result


class Later(Mapping[str, list[str]]):
    """A mapping made only when first looked in (``make()`` gives it)."""

    def __init__(self, make: Callable[[], Mapping[str, list[str]]]) -> None:
        self.make = make

    @functools.cached_property
    def got(self) -> Mapping[str, list[str]]:
        return self.make()

    def __getitem__(self, key: str) -> list[str]:
        return self.got[key]

    def __contains__(self, key: object) -> bool:
        return key in self.got

    def __iter__(self) -> Iterator[str]:
        return iter(self.got)

    def __len__(self) -> int:
        return len(self.got)


@dataclass
class Inputs:
    """log.md as far as this build reads it, and the stamps of the other inputs. ``lines`` and
    ``logged`` fold the new lines onto the last build's when first asked for (a rebuild with
    nothing changed never does)."""

    digested: list[Line]  # the new lines as a build keeps them
    new: list[Any] | None  # the parsed lines since the last build, if it is followed
    offset: int
    skips: dict[tuple[str, str], str]
    hard: list[Any]
    soft: list[Any]
    raw: dict[str, int]
    prev: dict[str, Any] | None

    @functools.cached_property
    def lines(self) -> list[Line]:
        return self.digested if self.prev is None else self.prev["lines"] + self.digested

    @functools.cached_property
    def logged(self) -> Mapping[str, list[str]]:  # (a full build's is made by read)
        """Entry id -> its logged record: the new lines' over the last build's, which are read
        from the state only if an id the new lines do not name is looked up (a file edited by
        hand, say) or the state is written whole."""
        prev, new = self.prev, self.new or ()
        assert prev is not None
        if any(line[1] == "archive" for line in new):  # changes a record already there
            return logged_entries(new, prev["logged"])
        return ChainMap(logged_entries(new), Later(lambda: prev["logged"]))  # type: ignore[arg-type]

    @classmethod
    def read(cls, wiki: Wiki, prev: dict[str, Any] | None) -> Inputs:
        start = 0
        if prev is not None:
            start = prev["log_offset"]
            try:
                size = wiki.log_path.stat().st_size
            except OSError:
                size = 0
            if size < start or state.log_tail(wiki, start) != prev["log_tail"]:
                prev, start = None, 0
        new, offset = [], start
        for end, line in store.read_log(wiki, start):
            new.append(line)
            offset = end
        digested = [_shown(digest(line)) for line in new]
        if new or prev is None:
            from llm_wiki.domain_state import logged_skips  # deferred: only new log lines need it
        if prev is None:
            skips = logged_skips(new)
        else:
            skips = logged_skips(new, prev["skips"]) if new else prev["skips"]
        got = cls(
            digested=digested,
            new=new if prev is not None else None,
            offset=offset,
            skips=skips,
            hard=state.hard_stamps(wiki),
            soft=state.soft_stamps(wiki),
            raw=state.raw_listing(wiki),
            prev=prev,
        )
        if prev is None:  # all of log.md, parsed once
            got.__dict__["logged"] = logged_entries(new)
        return got

    def followable(self, prev: dict[str, Any], generation: str) -> bool:
        """Whether this build can start from ``prev`` rather than from scratch."""
        if self.new is None or prev["generation"] != generation:
            return False
        if prev["hard"] != self.hard:
            return False
        return all(line[1] in state.FOLLOWED_OPS for line in self.new)


_UNSHOWN = ("sha256", "path")  # fields of a log line no page shows (see macros.log_table)


def _shown(line: Line) -> Line:
    """A log line without the fields no page shows: a write line's sha256 and path are most of
    the build state's copy of log.md."""
    fields = line[3]
    if any(k in _UNSHOWN for k, _ in fields):
        return (
            line[0],
            line[1],
            line[2],
            tuple([kv for kv in fields if kv[0] not in _UNSHOWN]),
            line[4],
        )
    return line


@dataclass
class Change:
    """What changed since the last build: rows (ids whose row or file changed), the ids whose
    pages show them (``touched``), the keys of the pages to plan again, the domains whose
    consolidation state to recompute (None: all)."""

    rows: set[str]
    touched: set[str]
    keys: set[str]
    domains: set[str] | None
    tuples: list[tuple[Any, ...]]
    delta: dict[str, tuple[Any, ...] | None]  # the row of each changed id now (None: gone)
    before: dict[str, Row]  # the row of each changed id as the last build had it (if it had)


_SUPERSEDES = state._FIELDS.index("supersedes")
_SOURCES = state._FIELDS.index("sources")
_SUPERSEDED_BY = state._FIELDS.index("superseded_by")
_RESOLVES = state._FIELDS.index("resolves")
_DATE = state._FIELDS.index("date")


def follow(
    catalog: Any, viewer: Viewer, prev: dict[str, Any], inputs: Inputs, hashes: HashCache
) -> tuple[list[Row], Change]:
    """The rows now, from the last build's and the catalog's rows of what the new log lines
    and the changed entry files name."""
    old = {t[0]: t for t in prev["rows"]}
    pending = prev.get("rows_delta")  # rows changed by the builds whose records were replayed
    if pending:
        for i, t in pending.items():
            if t is None:
                old.pop(i, None)
            else:
                old[i] = t
    named = {line[2] for line in inputs.new or () if line[1] == "write" and line[2]}
    named |= {os.path.basename(rel)[:-3] for rel in hashes.changed}
    named |= {os.path.basename(rel)[:-3] for rel in hashes.old_files.keys() - hashes.files.keys()}

    def get(entry_id: str) -> tuple[Any, ...] | None:
        row = catalog.get(entry_id, viewer)
        return state.row_tuple(row) if row is not None else None

    now = {i: get(i) for i in sorted(named)}
    linked = set()
    for i in named:
        for t in (old.get(i), now[i]):
            if t is not None:
                linked.update(t[_SUPERSEDES])
    for i in sorted(linked - set(now)):
        now[i] = get(i)
    changed = named | {i for i, t in now.items() if t != old.get(i)}

    def merged(i: str) -> tuple[Any, ...] | None:
        """The row tuple of ``i`` now (None: gone), without a copy of ``old`` with the changes."""
        return now[i] if i in changed else old.get(i)

    moved = changed | set(pending or ())
    if moved:  # the others keep their order: each moved row goes back in its place
        tuples = [t for t in prev["rows"] if t[0] not in moved]
        for i in sorted(moved):
            t = merged(i)
            if t is not None:
                tuples.insert(_place(tuples, t), t)
    else:
        tuples = prev["rows"]
    rows = state.tuple_rows(tuples)
    touched = set(changed)
    keys: set[str] = set()
    domains: set[str] | None = set()
    for i in changed:
        for t in (old.get(i), now.get(i)):
            if t is None:
                continue
            row = state.tuple_row(t)
            touched.update(row.supersedes, row.sources, row.superseded_by, row.resolves)
            keys.update(_member_keys(row))
            domains.add(row.domain)  # type: ignore[union-attr]
    if changed:  # (the tuples' fields by index: the cheapest read of 10,000 rows)
        for t in tuples:
            if (
                (t[_SUPERSEDES] and not changed.isdisjoint(t[_SUPERSEDES]))
                or (t[_SOURCES] and not changed.isdisjoint(t[_SOURCES]))
                or (t[_RESOLVES] and not changed.isdisjoint(t[_RESOLVES]))
            ):
                touched.add(t[0])
    for i in touched:
        for t in (old.get(i), merged(i)):
            if t is not None:
                keys.add(f"m:{t[_DATE][:7]}")
    keys.update(f"e:{i}" for i in touched)
    for line in inputs.new or ():
        keys.add(f"l:{line[0][:7]}")
        if line[1] == "consolidate-skip" and line[2]:
            domains.add(line[2])  # type: ignore[union-attr]
    raw_old = prev["raw"]
    keys.update(f"r:{n}" for n in set(raw_old) ^ set(inputs.raw))
    keys.update(f"r:{n}" for n in set(raw_old) & set(inputs.raw) if raw_old[n] != inputs.raw[n])
    if prev["soft"] != inputs.soft:
        domains = None  # the failure records count in every domain's state
        keys.add("*")
    if keys or inputs.new:
        keys.add("*")
    delta = {i: merged(i) for i in changed}
    before = {i: state.tuple_row(old[i]) for i in changed if i in old}
    return rows, Change(changed, touched, keys, domains, tuples, delta, before)


def _place(tuples: list[tuple[Any, ...]], t: tuple[Any, ...]) -> int:
    """Where row tuple ``t`` goes in ``tuples``, which are in the catalog's order (date DESC,
    superseded last, id DESC: descending by (date, 1 if not superseded else 0, id))."""
    key = (t[_DATE], 0 if t[_SUPERSEDED_BY] else 1, t[0])
    lo, hi = 0, len(tuples)
    while lo < hi:
        mid = (lo + hi) // 2
        m = tuples[mid]
        if (m[_DATE], 0 if m[_SUPERSEDED_BY] else 1, m[0]) > key:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _member_keys(row: Row) -> Iterator[str]:
    """The keys of the pages that list ``row`` among their members."""
    yield f"d:{row.domain}"
    yield f"m:{row.date[:7]}"
    for t in row.tags:
        yield f"t:{t}"
    for a in row.actors:
        yield f"a:{a}"
    for name, _, _ in raw_sources(row.sources):
        yield f"r:{name}"
    if any(s.startswith("adr:") for s in row.sources):
        yield "f:*"

"""Building the site: plan every page, fingerprint what each is made from, render what changed.

A page is planned as a *context*: plain data (strings, numbers, lists) taken from the reader's
:class:`~llm_wiki.site.view.View`, with file contents named by their sha256 rather than copied in.
Its fingerprint is the sha256 of that context (with the code's own fingerprint); the manifest in the
output folder (``.site-manifest.json``) remembers each page's fingerprint, so a rebuild renders only
pages whose context changed — after one write: that entry's page, the pages of entries it relates
to, its domain, tag and actor pages, the lists that count them, the home page, the inspector and one
search shard. Everything is iterated in sorted order and nothing reads the wall clock, so the same
wiki and reader give the same bytes.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import hashlib
import io
import itertools
import json
import operator
import os
import pickle
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

import llm_wiki.progress as progress
import llm_wiki.site.html as html  # the submodules, not the package (which imports this one)
import llm_wiki.site.pages as site_pages  # PAGE_ENTRIES read where it is set (tests change it)
import llm_wiki.site.pictures as pictures
import llm_wiki.site.state as state
from llm_wiki.access import Viewer, walls_on
from llm_wiki.catalog import Row, read_catalog
from llm_wiki.entries import sha256_hex
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.site.follow import Change, Inputs, follow, unchanged, verify_now
from llm_wiki.site.obsidian import write_graph_notes
from llm_wiki.site.pages import (
    BODY_TERMS,
    SITE_TEMPLATES,
    Pages,
    _asset,
    _node,
    _source_node,
    chunks,
    slug,
)
from llm_wiki.site.text import CITE_RE, render_body, words
from llm_wiki.site.view import View
from llm_wiki.verify import HashCache
from llm_wiki.verify import verify as verify_wiki
from llm_wiki.version import __version__
from llm_wiki.wiki import Wiki

MANIFEST = ".site-manifest.json"
# Present while a build changes pages: found at the start, the last build died between its pages
# and the manifest naming them, so the manifest says nothing of what the files hold.
BUILDING = ".site-building"
ASSETS = ("site.css", "site.js", "minisearch.js", "minisearch-LICENSE.txt")
# What the plan yields in place of the entry pages: the sorted ids (see _Builder.run).
_ENTRY_PAGES = object()
# Folders of the wiki that hold its data or its generated views: never a site's --out.
_WIKI_FOLDERS = ("entries", "raw", "archive", "index", "indexes", "graph", "inbox")


@dataclass(frozen=True)
class SiteResult:
    out: str
    reader: str
    pages: int
    written: tuple[str, ...]
    removed: tuple[str, ...]
    entries: int
    graph_notes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "reader": self.reader,
            "pages": self.pages,
            "written": list(self.written),
            "removed": list(self.removed),
            "entries": self.entries,
            "graph_notes": self.graph_notes,
        }


@dataclass
class _Page:
    path: str  # relative to the output folder, posix
    template: str  # a template under templates/site/, or "" for a file made by ``make``
    make: Callable[[dict[str, Any]], bytes] | None = None
    keys: tuple[str, ...] = ()  # what it lists the members of (see site/state.py)

    @property
    def root(self) -> str:
        return "../" * self.path.count("/")


def default_out(wiki: Wiki, viewer: Viewer) -> Path:
    """``.llm-wiki/site/`` (local, rebuildable, never synced); under walls one per reader."""
    base = wiki.state_dir / "site"
    return base / viewer.name if walls_on(wiki) and viewer.name else base


def site_folder(wiki: Wiki, viewer: Viewer, out: str | os.PathLike[str] | None) -> Path:
    """Where the site of ``viewer`` is built: ``out`` resolved, else :func:`default_out`."""
    return Path(out).expanduser().resolve() if out is not None else default_out(wiki, viewer)


# Pages rendered before the cyclic garbage collector is let run again (see _GcPause).
GC_PAUSE_PAGES = 256


class _GcPause:
    """The cyclic garbage collector held off while a build loads and plans.

    Reading the state, the rows and the hash cache creates some hundred thousand tuples that live
    until the build ends; each pass of the collector walks them again (about a tenth of a
    rebuild's CPU at 10k entries). Rendering does make cycles (jinja2's contexts, markdown-it's
    token trees), so the collector runs again once GC_PAUSE_PAGES pages have been rendered: a
    rebuild renders a few, a full build all of them in the memory it had."""

    def __init__(self) -> None:
        self.was = gc.isenabled()
        self.rendered = 0

    def __enter__(self) -> _GcPause:
        gc.disable()
        return self

    def page(self) -> None:
        self.rendered += 1
        if self.rendered == GC_PAUSE_PAGES and self.was:
            gc.enable()

    def __exit__(self, *exc: object) -> None:
        if self.was:
            gc.enable()


def build_site(
    wiki: Wiki,
    viewer: Viewer,
    out: str | os.PathLike[str] | None = None,
    *,
    full: bool = False,
) -> SiteResult:
    """Build (or bring up to date) the static site of what ``viewer`` may read, in ``out``.

    It follows log.md from where the last build in ``out`` stopped (see site/state.py) when it
    can; ``full``: start over (every row read, every entry file hashed, every page planned)."""
    with _GcPause() as pause:
        return _build_site(wiki, viewer, out, full, pause)


def _build_site(
    wiki: Wiki,
    viewer: Viewer,
    out: str | os.PathLike[str] | None,
    full: bool,
    pause: _GcPause,
) -> SiteResult:
    target = site_folder(wiki, viewer, out)
    _check_out(wiki, target)
    # no manifest: _check_out found the folder empty (or absent), so it will hold only the
    # pages this build writes
    empty = not (target / MANIFEST).exists()
    code = _code_fingerprint()
    reader = viewer.name if viewer.walls else ""
    try:
        manifest_bytes = (target / MANIFEST).read_bytes()
    except OSError:
        manifest_bytes = b""
    prev = None
    saved = state.state_path(wiki, target)
    if (target / BUILDING).exists():
        full = True  # the last build died half-way: its files, not the manifest, are on disk
    if not full and manifest_bytes:
        prev = state.load(saved, code, reader, hashlib.sha256(manifest_bytes).hexdigest())
    inputs = Inputs.read(wiki, prev)
    with read_catalog(wiki) as catalog:  # after log.md: the catalog holds at least its lines
        generation = catalog.meta("generation")
        if prev is not None and not inputs.followable(prev, generation):
            prev = None
        if prev is None:
            rows = catalog.rows(viewer)
            change = None
        else:
            hashes, result = verify_now(wiki, viewer, prev, inputs)
            if unchanged(prev, inputs, hashes, result):
                return SiteResult(
                    out=str(target),
                    reader=viewer.name,
                    pages=prev["pages"],
                    written=(),
                    removed=(),
                    entries=prev["entries"],
                    graph_notes=prev["notes"],
                )
            rows, change = follow(catalog, viewer, prev, inputs, hashes)
    view = View(wiki, viewer, rows, lines=inputs.lines)
    if prev is None:
        hashes = HashCache()
        result = verify_wiki(
            wiki, viewer, logged=inputs.logged, logged_to=inputs.offset, hashes=hashes
        )
    view.__dict__["verify"] = result
    view.preread = hashes.read
    builder = _Builder(view, target, code, manifest_bytes, prev, change, inputs, hashes)
    builder.pause = pause
    builder.empty = empty
    written, removed, pages = builder.run()
    if change is None:
        notes = write_graph_notes(view)
    elif change.rows:
        notes = write_graph_notes(view, only=change.rows)
    else:
        notes = prev["notes"] if prev else 0

    def saved_state(now_ns: int) -> dict[str, Any]:
        hashes.finish(now_ns)
        return {
            "code": code,
            "reader": reader,
            "manifest": builder.manifest_sha,
            "generation": generation,
            "hard": inputs.hard,
            "soft": inputs.soft,
            "raw": inputs.raw,
            "log_offset": inputs.offset,
            "log_tail": state.log_tail(wiki, inputs.offset),
            "lines": inputs.lines,
            "logged": inputs.logged,
            "skips": inputs.skips,
            "rows": [state.row_tuple(r) for r in rows] if change is None else change.tuples,
            "keys": builder.keys,
            "deps": builder.deps,
            "states": builder.states,
            "notes": notes,
            "pages": pages,
            "entries": len(view.rows),
            "files": hashes.files,
            "archives": hashes.archives,
            "verify": (result.checked, [astuple(f) for f in result.findings]),
        }

    with contextlib.suppress(OSError):  # no state kept: the next build is a full one
        if prev is None or change is None or state.should_compact(prev):
            state.save(saved, saved_state)
        else:
            logged = {
                line[2] for line in inputs.new or () if line[1] in ("write", "archive") and line[2]
            }
            state.append(
                saved, prev, saved_state, change.delta, logged, builder.planned, hashes.recorded
            )
    return SiteResult(
        out=str(target),
        reader=viewer.name,
        pages=pages,
        written=tuple(written),
        removed=tuple(removed),
        entries=len(view.rows),
        graph_notes=notes,
    )


def _older(rows: list[Row], key: tuple[str, int, str]) -> int:
    """How many of ``rows`` (newest first: descending by :func:`_order`) come before ``key``
    in that order read from the oldest, by bisection (a list of thousands, a few keys)."""
    lo, hi = 0, len(rows)
    while lo < hi:
        mid = (lo + hi) // 2
        if _order(rows[mid]) < key:
            hi = mid
        else:
            lo = mid + 1
    return len(rows) - lo


def _order(row: Row) -> tuple[str, int, str]:
    """A row's place in the catalog's order read from the oldest (date, superseded first, id)."""
    return (row.date, 0 if row.superseded_by else 1, row.id)


_MEMBER: dict[str, Callable[[Row, str], bool]] = {
    "d": lambda row, name: row.domain == name,
    "t": lambda row, name: name in row.tags,
    "a": lambda row, name: name in row.actors,
}


def _check_out(wiki: Wiki, out: Path) -> None:
    root = wiki.root.resolve()
    if out == root or root.is_relative_to(out):
        raise InvalidInput(f"--out {out} holds the wiki itself; choose a folder of its own.")
    for name in _WIKI_FOLDERS:
        if out.is_relative_to(root / name):
            raise InvalidInput(f"--out {out} is inside the wiki's {name}/; choose another folder.")
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"--out {out} is a file; choose a folder.")
    if out.is_dir() and not (out / MANIFEST).exists() and any(map(_site_file, out.iterdir())):
        raise InvalidInput(
            f"--out {out} is not empty and holds no llm-wiki site; choose an empty or new folder."
        )


def _site_file(path: Path) -> bool:
    """Whether a top-level name of the output folder may be the site's: a hidden one (.git of a
    gh-pages checkout, .nojekyll) other than the build's own is the folder owner's, never looked
    in, replaced or removed."""
    return not path.name.startswith(".") or path.name in (MANIFEST, BUILDING)


def _code_fingerprint() -> str:
    """What the rendering code is: a change to a template or to this package re-renders all."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for path in sorted([*here.glob("*.py"), *SITE_TEMPLATES.rglob("*")]):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class _Builder(Pages):
    def __init__(
        self,
        view: View,
        out: Path,
        code: str,
        manifest_bytes: bytes,
        prev: dict[str, Any] | None,
        change: Change | None,
        inputs: Inputs,
        hashes: HashCache,
    ) -> None:
        self.view = view
        self.hashes = hashes.files
        self.out = out
        self.viewer = view.viewer
        self.code = code
        self.common = {
            "title": view.wiki.root.name,
            "reader": view.viewer.name if view.viewer.walls else "",
        }
        self.manifest_bytes = manifest_bytes
        self.manifest_sha = ""
        self.prev = prev
        self.change = change  # None: a full build
        self.inputs = inputs
        self.deps: dict[str, tuple[int, ...]] = {}  # page -> the keys it was made from
        self.planned: set[str] = set()  # the pages whose keys this build made (the others: the
        # last build's very tuples)
        self.keys: list[str] = []  # what those numbers stand for
        self._deps: set[str] = set()  # of the page being planned
        self.pause = _GcPause()  # build_site hands its own
        self._terms: dict[
            str, str
        ] = {}  # id -> its body words (one string), filled as pages render
        self._old_terms: dict[str, dict[str, str]] = {}  # month -> id -> "b" of its old shard
        self.h = html.Fragments()  # the templates' ``h``: list lines written once per build
        self._frames: dict[str, tuple[str, str, str] | None] = {}  # root -> entry.html's frame
        self._refs: dict[str, dict[str, Any]] = {}
        self._decisions: dict[str, dict[str, Any]] = {}
        self._body: tuple[str, str] = ("", "")
        self.force: set[str] = set()  # pages to plan again whatever their keys (first_moved)
        self.empty = False  # the folder held nothing when the build began (see _build_site)
        self.states = self.domain_states()

    def domain_states(self) -> list[list[Any]]:
        """[scope, domain, the inspector's line] of each consolidation state; after a write,
        only the written domains' are computed again."""
        from llm_wiki.domain_state import domain_states  # deferred: only the inspector shows them

        view, change = self.view, self.change
        domains = change.domains if change is not None else None
        if domains is not None and not domains:
            return self.prev["states"]  # type: ignore[index]
        if domains is None:
            rows = view.rows
        elif len(domains) == 1:
            rows = self.by_domain().get(next(iter(domains)), [])
        else:
            rows = [r for r in view.rows if r.domain in domains]
        try:
            got = domain_states(view.wiki, view.viewer, rows, self.inputs.skips)
        except WikiError:
            got = []
        fresh = [
            [
                s.scope,
                s.domain,
                {
                    "scope": s.scope,
                    "domain": s.domain,
                    "entries": len(s.evidence),
                    "synthesis": s.current[0].id if s.current else None,
                    "why": s.out_of_date(llm=False) or "",
                },
            ]
            for s in got
        ]
        if domains is None:
            return fresh
        kept = [s for s in self.prev["states"] if s[1] not in domains]  # type: ignore[index]
        return sorted(kept + fresh, key=lambda s: (s[0], s[1]))

    # -- helpers shared by the page contexts
    def file_sha(self, row: Row) -> str:
        """The sha256 of the bytes a page shows of ``row`` (its file as hashed by this build's
        verify: an edit behind the tool's back changes it; the catalog keeps the logged one).
        "" for a file verify did not find (its body then says it is missing)."""
        if row.archive:
            return row.sha256
        got = self.hashes.get(row.path)
        return got[4] if got is not None else ""

    def ref(self, row: Row) -> dict[str, Any]:
        """How a page names another entry (one shared dict per entry: never mutated)."""
        self._deps.add("e:" + row.id)
        got = self._refs.get(row.id)
        if got is None:
            got = self._refs[row.id] = {
                "id": row.id,
                "date": row.date,
                "type": row.type,
                "status": self.view.status(row),
                "summary": row.summary,
                "domain": row.domain,
                "generated": row.is_generated,
            }
        return got

    def refs(self, ids: Any) -> list[dict[str, Any]]:
        rows = [self.view.by_id[i] for i in ids if i in self.view.by_id]
        return [self.ref(r) for r in sorted(rows, key=lambda r: (r.date, r.id))]

    # -- the plan
    def plan(self) -> Iterator[tuple[Any, ...]]:
        """Every page as (path, template, context function, its arguments, maker, keys): plain
        tuples, so that a rebuild passes over the 10,000 pages nothing touched cheaply; the entry
        pages as one (_ENTRY_PAGES, their ids in order)."""
        view = self.view
        every = ("*",)
        yield "index.html", "home.html", self.home, (), None, every
        yield "search.html", "search.html", self.search_page, (), None, every
        yield "domains/index.html", "domains.html", self.domain_list, (), None, every
        force = self.force
        for domain, rows in sorted(self.by_domain().items()):
            key = (f"d:{domain}",)
            yield f"domains/{domain}.html", "domain.html", self.domain, (domain,), None, key
            moved = self.first_moved("d", domain, rows)
            for j in range(1, chunks(len(rows))):
                path = f"domains/{domain}/{j}.html"
                if j >= moved:
                    force.add(path)
                yield path, "history.html", self.history, (domain, j), None, ()
        tags, actors = self.subjects()
        for kind, subjects, make in (("tag", tags, self.tag), ("actor", actors, self.actor)):
            folder, template, k = f"{kind}s", f"{kind}.html", kind[0]
            yield (
                f"{folder}/index.html",
                "subjects.html",
                self.subject_list,
                (kind, subjects),
                None,
                every,
            )
            for name in sorted(subjects):
                key, base = (f"{k}:{name}",), f"{folder}/{slug(name)}"
                yield f"{base}.html", template, make, (name, subjects, 0), None, key
                moved = self.first_moved(k, name, subjects[name])
                for j in range(1, chunks(len(subjects[name]))):
                    if j >= moved:
                        force.add(f"{base}/{j}.html")
                    yield f"{base}/{j}.html", template, make, (name, subjects, j), None, ()
        yield _ENTRY_PAGES, sorted(view.by_id)  # entries/<id>.html, in that order (see run)
        for name in sorted(self.raw_cited()):
            yield f"raw/{name[4:]}.html", "raw.html", self.raw, (name,), None, (f"r:{name}",)
        yield "inspector/index.html", "inspector.html", self.inspector, (), None, every
        for month in sorted(self._log_months):
            yield (
                f"inspector/log-{month}.html",
                "log.html",
                self.log,
                (month,),
                None,
                (f"l:{month}",),
            )
        for month in self.shard_months():
            yield f"search/{month}.js", "", self.shard, (month,), self.make_shard, (f"m:{month}",)
        for name in ASSETS:
            yield f"assets/{name}", "", _asset, (name,), self.make_asset, ()

    def first_moved(self, kind: str, name: str, rows: list[Row]) -> int:
        """The first of the older pages of a list (see :func:`chunk`) that may hold other
        entries than the last build's: an entry that came, went or moved (its row changed) puts
        every entry after it one place on, while the pages before it hold the same entries in the
        same order, whose own changes their ``e:`` keys follow. Those pages are keyed by their
        entries, not by the list's ``d:``/``t:``/``a:`` key, so a write plans the main page and
        not the thousands of entries on the others. A page whose newer neighbour changes (the
        number of pages did) counts as moved. ``rows``: the list now, newest first."""
        change = self.change
        if change is None:
            return 1
        if f"{kind}:{name}" not in change.keys:
            return len(rows)  # no page: nothing in the list came, went or changed
        member = _MEMBER[kind]
        by_id = self.view.by_id
        now = [by_id[i] for i in change.rows if i in by_id and member(by_id[i], name)]
        was = [r for r in change.before.values() if member(r, name)]
        if not now and not was:
            return len(rows)
        changed = sorted(_order(r) for r in now)
        # entries the list holds now, before the first changed one in either version: the same
        # unchanged entries in the same order in both
        same = min(
            _older(rows, key) - bisect.bisect_left(changed, key) for key in map(_order, now + was)
        )
        pages = min(chunks(len(rows)), chunks(len(rows) - len(now) + len(was)))
        return max(1, min(same // site_pages.PAGE_ENTRIES + 1, pages - 1))

    # -- running it
    def run(self) -> tuple[list[str], list[str], int]:
        manifest = self._read_manifest()
        old = manifest.get("pages", {}) if manifest.get("code") == self.code else {}
        if manifest.get("reader") != self.common["reader"]:
            old = {}
        died = marked = (self.out / BUILDING).exists()
        if died:  # a page may hold what the build that died wrote (wider walls, say)
            old = {}
        known = manifest.get("pages", {})
        pages: dict[str, str] = {}
        written: list[str] = []
        self.out.mkdir(parents=True, exist_ok=True)
        if not manifest:  # claim the folder first: a build that dies half-way can be re-run
            self._write_manifest({})
        change = self.change
        prev_deps: dict[str, tuple[int, ...]] = {}
        if change is not None and self.prev is not None:
            prev_deps = self.prev["deps"]
            self.keys = list(self.prev["keys"])
        index = self._index = {k: i for i, k in enumerate(self.keys)}
        dirty = {index[k] for k in change.keys if k in index} if change is not None else set()
        following = change is not None
        force = self.force  # filled by the plan as it goes
        shown = progress.current()
        shown.task("site")
        skipped = 0  # pages left alone, counted as done in batches
        deps = self.deps

        def make_page(
            path: str,
            template: str,
            function: Callable[..., dict[str, Any]],
            args: tuple[Any, ...],
            make: Callable[[dict[str, Any]], bytes] | None,
            keys: tuple[str, ...],
        ) -> None:
            nonlocal skipped, marked
            if skipped:
                shown.done(skipped)
                skipped = 0
            shown.done()
            page = _Page(path, template, make, keys)
            self._deps = set(keys)
            context = function(*args)
            fp = _fingerprint(self.code, page.template, self.common, context)
            pages[page.path] = fp
            self.planned.add(page.path)
            if old.get(page.path) == fp and os.path.isfile(os.path.join(self.out, page.path)):
                # not rendered: what rendering it would look up was named by its context
                deps[page.path] = self._intern(self._deps)
                return
            self.pause.page()
            data = page.make(context) if page.make else self.render(page, context)
            deps[page.path] = self._intern(self._deps)
            if not marked:
                (self.out / BUILDING).touch()
                marked = True
            if _write_if_changed(os.path.join(self.out, page.path), data, page.path not in known):
                written.append(page.path)

        for item in self.plan():
            if item[0] is _ENTRY_PAGES:  # ten thousand pages: the same test, without the plan's
                by_id, entry = self.view.by_id, self.entry  # tuple for each one
                ids = item[1]
                if following:
                    paths = [f"entries/{i}.html" for i in ids]
                    again = _planned_again(paths, old, prev_deps, dirty, force)
                    # every page in its place (the manifest's order), as the last build left it;
                    # make_page replaces the entries of the pages planned again
                    pages.update(zip(paths, map(old.get, paths, itertools.repeat("")), strict=True))
                    deps.update(
                        zip(paths, map(prev_deps.get, paths, itertools.repeat(())), strict=True)
                    )
                    skipped += len(paths) - len(again)
                    ids = sorted([path[8:-5] for path in again])  # (ids' order, not paths')
                for entry_id in ids:
                    make_page(
                        f"entries/{entry_id}.html",
                        "entry.html",
                        entry,
                        (by_id[entry_id],),
                        None,
                        (),
                    )
                continue
            path = item[0]
            if following and path in prev_deps and path in old and path not in force:
                before = prev_deps[path]
                if dirty.isdisjoint(before):  # nothing it is made from changed
                    pages[path] = old[path]
                    deps[path] = before
                    skipped += 1
                    continue
            make_page(*item)
        if skipped:
            shown.done(skipped)
        removed = []
        stale = set(known) - set(pages)
        if died or (not known and not self.empty):  # a build died before its manifest named
            # what it wrote: those files are on disk, named nowhere, and may be pages of wider
            # walls (a folder that held nothing holds only this build's pages: not listed)
            stale = {
                p.relative_to(self.out).as_posix()
                for top in self.out.iterdir()
                if _site_file(top)
                for p in (top.rglob("*") if top.is_dir() else (top,))
                if p.is_file() and p.name not in (MANIFEST, BUILDING)
            } - set(pages)
        if stale and not marked:
            (self.out / BUILDING).touch()
        for rel in sorted(stale):
            with contextlib.suppress(FileNotFoundError):
                (self.out / rel).unlink()
                removed.append(rel)
        if removed:
            _prune_empty(self.out)
        self._write_manifest(pages)
        with contextlib.suppress(FileNotFoundError):
            (self.out / BUILDING).unlink()
        return written, removed, len(pages)

    def _intern(self, keys: set[str]) -> tuple[int, ...]:
        """A page's keys as indexes into ``self.keys`` (the state stays small and a page's
        check is one set operation)."""
        index, table = self._index, self.keys
        out = []
        for key in keys:
            i = index.get(key)
            if i is None:
                i = index[key] = len(table)
                table.append(key)
            out.append(i)
        return tuple(sorted(out))

    def _write_manifest(self, pages: dict[str, str]) -> None:
        manifest = {  # keys in order, pages in the plan's (fixed) order: nothing to sort
            "code": self.code,
            "generator": f"llm-wiki {__version__}",
            "pages": pages,
            "reader": self.common["reader"],
        }
        # one line: json's C encoder (indent= takes the pure-Python one, 5x slower at 10k pages)
        data = (json.dumps(manifest, separators=(",", ":")) + "\n").encode()
        self.manifest_sha = hashlib.sha256(data).hexdigest()  # OpenSSL: ~1.5 MB at 10k
        if data != self.manifest_bytes:  # what the folder held when the build began: replaced
            # without reading it again (~1.5 MB at 10k pages, each new page of memory a fault)
            _write_if_changed(self.out / MANIFEST, data, fresh=True)

    def _read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads(self.manifest_bytes.decode("utf-8"))
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    @functools.cached_property
    def env(self) -> Any:
        from llm_wiki.site.jinja import environment  # deferred: only a page to render needs it

        env = environment(slug)  # (its bytecode cache pointed at this wiki once per build)
        env.bytecode_cache.use(self.view.wiki.state_dir / state.FOLDER / "templates")
        return env

    def render(self, page: _Page, context: dict[str, Any]) -> bytes:
        extra = self.finish(page, context)
        if page.template == "entry.html":  # its main part in Python, its frame rendered once
            main = html.entry_main(
                context,
                extra["body_html"],
                extra["picture"],
                extra["excerpts"],
                page.root,
                slug,
                self.h,
            )
            frame = self.frame(page)
            if frame is not None:
                head, middle, tail = frame
                summary = html.escape(context["entry"]["summary"])
                return f"{head}{summary}{middle}{main}{tail}".encode()
            extra = {"main": Markup(main)}
        html_ = self.env.get_template(page.template).render(
            **context, **extra, site=self.common, root=page.root, page=page.path, h=self.h
        )
        return html_.encode()

    def frame(self, page: _Page) -> tuple[str, str, str] | None:
        """entry.html around an entry's title and main part, rendered once per depth: what comes
        before the title, between it and the main part, after the main part. None if it is not
        one frame for every entry page (the site's title holding a marker character, a template
        showing the page's own path): each page is then rendered whole."""
        if page.root not in self._frames:

            def text(path: str) -> str:
                return str(
                    self.env.get_template(page.template).render(
                        entry={"summary": "\x00"},
                        main=Markup("\x01"),
                        site=self.common,
                        root=page.root,
                        page=path,
                        h=self.h,
                    )
                )

            got, parts = text(page.path), None
            if got == text("") and got.count("\x00") == got.count("\x01") == 1:
                head, rest = got.split("\x00")
                if "\x01" in rest:
                    middle, tail = rest.split("\x01")
                    parts = (head, middle, tail)
            self._frames[page.root] = parts
        return self._frames[page.root]

    def finish(self, page: _Page, ctx: dict[str, Any]) -> dict[str, Any]:
        """What a page shows beyond its context, derived from it alone: bodies (read by their
        sha256-named file), pictures."""
        root = page.root
        if page.template == "entry.html":
            e = ctx["entry"]
            body = self.body_of(ctx["body_ref"], e["id"])
            groups = {
                "replaced": [_node(r) for r in ctx["replaced"]],
                "replaced_by": [_node(r) for r in ctx["replaced_by"]],
                "cites": [_source_node(s) for s in ctx["sources"]],
                "cited_by": [_node(r) for r in ctx["cited_by"]],
            }
            return {
                "body_html": self.markdown(body, root, _adr_folder(ctx["sources"])),
                "picture": pictures.relations(_node(e, here=True), groups, root),
                "excerpts": self.excerpts(ctx["sources"]),
            }
        if page.template == "domain.html":
            synthesis = ctx["synthesis"]
            html = None
            if synthesis:
                html = self.markdown(self.body_of(synthesis["body_ref"], synthesis["id"]), root)
            return {
                "synthesis_html": html,
                "timeline_svg": pictures.timeline(
                    ctx["timeline"], root, f"Decisions of {ctx['domain']} over time"
                ),
                "chart": pictures.per_month(ctx["months"], f"Entries of {ctx['domain']} per month"),
            }
        if page.template == "home.html":
            return {"chart": pictures.per_month(ctx["months"], "Entries per month, by type")}
        if page.template == "raw.html":
            text = self.view.raw_text(ctx["name"])
            lines = text.splitlines() if text is not None else None
            marked: set[int] = set()
            for first, last, _ in ctx["cited"]:
                if first:
                    marked.update(range(first, (last or first) + 1))
            return {"lines": lines, "marked": marked}
        return {}

    def body_of(self, ref: list[Any], entry_id: str) -> str:
        if self._body[0] == entry_id:
            body = self._body[1]
        else:
            body = self.view.body(self.view.by_id[entry_id])
        if entry_id not in self._terms:
            self._terms[entry_id] = " ".join(words(body)[:BODY_TERMS])  # not 10k lists of words
        return body

    def links(self, row: Row) -> dict[str, Any]:
        """What rendering ``row``'s body will look up, for its page's context: each ``[id]`` it
        cites (linked only if visible) and, when it holds a link, the ADR file map (a relative
        link goes to the entry imported from that file). The body is kept for the render."""
        body = self.view.body(row, last=True)  # its page is the last to show it
        self._body = (row.id, body)
        cited = sorted(set(CITE_RE.findall(body)))
        by_id = self.view.by_id
        for entry_id in cited:
            self._deps.add("e:" + entry_id)
        files = ""
        if "](" in body or "]:" in body:
            self._deps.add("f:*")
            files = self.adr_digest
        return {"cites": [[i, i in by_id] for i in cited], "files": files}

    @functools.cached_property
    def adr_digest(self) -> str:
        return sha256_hex(repr(sorted(self.adr_files[0].items())).encode())  # (names follow)

    def markdown(self, body: str, root: str, folder: str | None = None) -> Any:
        """``body`` as HTML. A relative link to an ADR file is resolved from ``folder`` (where
        the entry's own ADR file was: its sources' ``adr:`` path) when it is known, else by the
        file's name when one visible entry alone was imported from a file of that name."""
        by_id = self.view.by_id
        paths, names = self.adr_files

        def entry_href(entry_id: str) -> str | None:
            return f"{root}entries/{entry_id}.html" if entry_id in by_id else None

        def file_href(path: str) -> str | None:
            entry_id = None
            if folder is not None:
                entry_id = paths.get(posixpath.normpath(posixpath.join(folder, path)))
            if entry_id is None:
                entry_id = names.get(path.rsplit("/", 1)[-1])
            return entry_href(entry_id) if entry_id else None

        return render_body(body, entry_href=entry_href, file_href=file_href)

    @property
    def adr_files(self) -> tuple[dict[str, str], dict[str, str | None]]:
        """ADR file path (as its ``adr:`` source names it) -> the visible entry imported from
        it, the newest if several; and file name -> that entry, None where entries of several
        paths share the name (two repositories' 0001-record-architecture-decisions.md)."""
        if not hasattr(self, "_adr"):
            paths: dict[str, str] = {}
            for row in sorted(self._groups["adr"], key=lambda r: (r.date, r.id)):
                for s in row.sources:
                    if s.startswith("adr:"):
                        paths[posixpath.normpath(s[4:])] = row.id
            names: dict[str, str | None] = {}
            for path, entry_id in paths.items():
                name = path.rsplit("/", 1)[-1]
                names[name] = entry_id if names.get(name, entry_id) == entry_id else None
            self._adr = (paths, names)
        return self._adr

    def excerpts(self, sources: list[dict[str, Any]]) -> dict[str, list[tuple[int, str, bool]]]:
        """Source -> the cited lines of its raw file with two lines around them."""
        out: dict[str, list[tuple[int, str, bool]]] = {}
        for s in sources:
            if s["kind"] != "raw" or not s["first"]:
                continue
            text = self.view.raw_text(s["name"])
            if text is None:
                continue
            lines = text.splitlines()
            first, last = s["first"], s["last"] or s["first"]
            lo, hi = max(1, first - 2), min(len(lines), last + 2)
            out[s["source"]] = [(n, lines[n - 1], first <= n <= last) for n in range(lo, hi + 1)]
        return out


# --------------------------------------------------------------------------- small helpers


def _fingerprint(code: str, template: str, common: dict[str, Any], ctx: dict[str, Any]) -> str:
    """sha256 of what a page is made from: plain data (str, int, bool, None, lists, tuples and
    dicts built in a fixed order) pickled without a memo, so equal data gives equal bytes whatever
    objects it shares (a memo would write a repeated object as a reference). Half the cost of its
    ``repr``, many times cheaper than sorted JSON, which matters for 10,000 entry pages."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=5)
    pickler.fast = True
    pickler.dump((code, template, common, ctx))
    return hashlib.sha256(buf.getbuffer()).hexdigest()


def _planned_again(
    paths: list[str],
    old: dict[str, str],
    prev_deps: dict[str, tuple[int, ...]],
    dirty: set[int],
    force: set[str],
) -> set[str]:
    """Which of ``paths`` a following build plans again: those the last build did not make
    (no fingerprint or no keys), those forced, and those holding a dirty key; the test the plan
    makes of each page, for ten thousand entry pages at once (in C: map, compress, set
    operations; a Python loop over them was a tenth of a rebuild)."""
    clean = map(dirty.isdisjoint, map(prev_deps.get, paths, itertools.repeat((), len(paths))))
    again = set(itertools.compress(paths, map(operator.not_, clean)))
    every = set(paths)
    again |= every - prev_deps.keys()
    again |= every - old.keys()
    again |= every & force
    return again


def _write_if_changed(path: str | os.PathLike[str], data: bytes, fresh: bool = False) -> bool:
    """Write ``data`` to ``path`` unless it already holds exactly that. An existing file is
    replaced atomically (``--serve`` never sends half a page); a new one is written in place
    (nothing links to it until the pages that do are replaced). Nothing is fsynced: a site is a
    view the next build makes again, and 10,000 fsyncs would cost more than the build.
    ``fresh``: the last build made no such file, so it is created without looking first (a
    file found there after all is replaced)."""
    path = os.fspath(path)
    exists = False
    if not fresh:
        try:
            if os.stat(path).st_size == len(data):
                with open(path, "rb") as fh:
                    if fh.read() == data:
                        return False
            exists = True
        except FileNotFoundError:
            pass
    if not exists:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(path, flags, 0o666)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, flags, 0o666)
        except FileExistsError:
            pass  # a racing build made it, or someone did: replace it below
        else:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            return True
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


def _prune_empty(out: Path) -> None:
    tops = [top for top in out.iterdir() if top.is_dir() and _site_file(top)]
    folders = [p for top in tops for p in (top, *top.rglob("*")) if p.is_dir()]
    for folder in sorted(folders, reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()


def _adr_folder(sources: list[dict[str, Any]]) -> str | None:
    """The folder of the entry's own ADR file (its first ``adr:`` source), if it has one."""
    for s in sources:
        if s["kind"] == "adr":
            return posixpath.dirname(posixpath.normpath(s["name"]))
    return None

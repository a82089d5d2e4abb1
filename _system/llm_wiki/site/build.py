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

import contextlib
import functools
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import jinja2

import llm_wiki.progress as progress
import llm_wiki.site.html as html  # the submodules, not the package (which imports this one)
import llm_wiki.site.pictures as pictures
from llm_wiki.access import Viewer, walls_on
from llm_wiki.catalog import Row
from llm_wiki.entries import NAME_RE, sha256_hex, slugify
from llm_wiki.errors import InvalidInput
from llm_wiki.site.obsidian import write_graph_notes
from llm_wiki.site.text import render_body, words
from llm_wiki.site.view import View, load_view, raw_sources
from llm_wiki.version import __version__
from llm_wiki.wiki import TEMPLATES, Wiki

SITE_TEMPLATES = TEMPLATES / "site"
MANIFEST = ".site-manifest.json"
ASSETS = ("site.css", "site.js", "minisearch.js", "minisearch-LICENSE.txt")
LATEST = 12
CHANGES = 10
BODY_TERMS = 2000  # distinct body words per entry in the search index
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
    context: Callable[[], dict[str, Any]]
    make: Callable[[dict[str, Any]], bytes] | None = None

    @property
    def root(self) -> str:
        return "../" * self.path.count("/")


def default_out(wiki: Wiki, viewer: Viewer) -> Path:
    """``.llm-wiki/site/`` (local, rebuildable, never synced); under walls one per reader."""
    base = wiki.state_dir / "site"
    return base / viewer.name if walls_on(wiki) and viewer.name else base


def build_site(wiki: Wiki, viewer: Viewer, out: str | os.PathLike[str] | None = None) -> SiteResult:
    """Build (or bring up to date) the static site of what ``viewer`` may read, in ``out``."""
    target = Path(out).expanduser().resolve() if out is not None else default_out(wiki, viewer)
    _check_out(wiki, target)
    view = load_view(wiki, viewer)
    builder = _Builder(view, target)
    written, removed, pages = builder.run()
    notes = write_graph_notes(view)
    return SiteResult(
        out=str(target),
        reader=viewer.name,
        pages=pages,
        written=tuple(written),
        removed=tuple(removed),
        entries=len(view.rows),
        graph_notes=notes,
    )


def _check_out(wiki: Wiki, out: Path) -> None:
    root = wiki.root.resolve()
    if out == root or root.is_relative_to(out):
        raise InvalidInput(f"--out {out} holds the wiki itself; choose a folder of its own.")
    for name in _WIKI_FOLDERS:
        if out.is_relative_to(root / name):
            raise InvalidInput(f"--out {out} is inside the wiki's {name}/; choose another folder.")
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"--out {out} is a file; choose a folder.")
    if out.is_dir() and not (out / MANIFEST).exists() and any(out.iterdir()):
        raise InvalidInput(
            f"--out {out} is not empty and holds no llm-wiki site; choose an empty or new folder."
        )


def _code_fingerprint() -> str:
    """What the rendering code is: a change to a template or to this package re-renders all."""
    digest = hashlib.sha256(__version__.encode())
    here = Path(__file__).parent
    for path in sorted([*here.glob("*.py"), *SITE_TEMPLATES.rglob("*")]):
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class _Builder:
    def __init__(self, view: View, out: Path) -> None:
        self.view = view
        self.out = out
        self.viewer = view.viewer
        self.code = _code_fingerprint()
        self.common = {
            "title": view.wiki.root.name,
            "reader": view.viewer.name if view.viewer.walls else "",
        }
        self._terms: dict[str, list[str]] = {}  # id -> body words, filled as pages render
        self._refs: dict[str, dict[str, Any]] = {}
        self._decisions: dict[str, dict[str, Any]] = {}

    # -- helpers shared by the page contexts
    def ref(self, row: Row) -> dict[str, Any]:
        """How a page names another entry (one shared dict per entry: never mutated)."""
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
    def plan(self) -> Iterator[_Page]:
        view = self.view
        yield _Page("index.html", "home.html", self.home)
        yield _Page("search.html", "search.html", self.search_page)
        yield _Page("domains/index.html", "domains.html", self.domain_list)
        for domain in sorted({r.domain for r in view.rows}):
            yield _Page(f"domains/{domain}.html", "domain.html", partial(self.domain, domain))
        tags, actors = self.subjects()
        yield _Page("tags/index.html", "subjects.html", partial(self.subject_list, "tag", tags))
        for name in sorted(tags):
            yield _Page(f"tags/{slug(name)}.html", "tag.html", partial(self.tag, name, tags))
        yield _Page(
            "actors/index.html", "subjects.html", partial(self.subject_list, "actor", actors)
        )
        for name in sorted(actors):
            yield _Page(
                f"actors/{slug(name)}.html", "actor.html", partial(self.actor, name, actors)
            )
        for row in sorted(view.rows, key=lambda r: r.id):
            yield _Page(f"entries/{row.id}.html", "entry.html", partial(self.entry, row))
        for name in sorted(self.raw_cited()):
            yield _Page(f"raw/{name[4:]}.html", "raw.html", partial(self.raw, name))
        yield _Page("inspector/index.html", "inspector.html", self.inspector)
        for month in sorted({item.month for item in view.log}):
            yield _Page(f"inspector/log-{month}.html", "log.html", partial(self.log, month))
        for month in self.shard_months():
            yield _Page(f"search/{month}.js", "", partial(self.shard, month), self.make_shard)
        for name in ASSETS:
            yield _Page(f"assets/{name}", "", partial(dict, asset=name), self.make_asset)

    # -- running it
    def run(self) -> tuple[list[str], list[str], int]:
        manifest = self._read_manifest()
        old = manifest.get("pages", {}) if manifest.get("code") == self.code else {}
        if manifest.get("reader") != self.common["reader"]:
            old = {}
        known = manifest.get("pages", {})
        pages: dict[str, str] = {}
        written: list[str] = []
        self.out.mkdir(parents=True, exist_ok=True)
        if not manifest:  # claim the folder first: a build that dies half-way can be re-run
            self._write_manifest({})
        shown = progress.current()
        shown.task("site")
        for page in self.plan():
            shown.done()
            context = page.context()
            fp = _fingerprint(self.code, page.template, self.common, context)
            pages[page.path] = fp
            if old.get(page.path) == fp and os.path.isfile(os.path.join(self.out, page.path)):
                continue
            data = page.make(context) if page.make else self.render(page, context)
            if _write_if_changed(self.out / page.path, data):
                written.append(page.path)
        removed = []
        for rel in sorted(set(known) - set(pages)):
            with contextlib.suppress(FileNotFoundError):
                (self.out / rel).unlink()
                removed.append(rel)
        if removed:
            _prune_empty(self.out)
        self._write_manifest(pages)
        return written, removed, len(pages)

    def _write_manifest(self, pages: dict[str, str]) -> None:
        manifest = {
            "generator": f"llm-wiki {__version__}",
            "code": self.code,
            "reader": self.common["reader"],
            "pages": dict(sorted(pages.items())),
        }
        data = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
        _write_if_changed(self.out / MANIFEST, data.encode())

    def _read_manifest(self) -> dict[str, Any]:
        try:
            data = json.loads((self.out / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def env(self) -> Any:
        return _environment()

    def render(self, page: _Page, context: dict[str, Any]) -> bytes:
        extra = self.finish(page, context)
        html = self.env.get_template(page.template).render(
            **context, **extra, site=self.common, root=page.root, page=page.path
        )
        return html.encode()

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
                "body_html": self.markdown(body, root),
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
        row = self.view.by_id[entry_id]
        body = self.view.body(row)
        self._terms.setdefault(entry_id, words(body)[:BODY_TERMS])
        return body

    def markdown(self, body: str, root: str) -> Any:
        by_id = self.view.by_id
        adr = self.adr_files

        def entry_href(entry_id: str) -> str | None:
            return f"{root}entries/{entry_id}.html" if entry_id in by_id else None

        def file_href(name: str) -> str | None:
            entry_id = adr.get(name)
            return entry_href(entry_id) if entry_id else None

        return render_body(body, entry_href=entry_href, file_href=file_href)

    @property
    def adr_files(self) -> dict[str, str]:
        """ADR file name -> the visible entry imported from it (the newest, if several)."""
        if not hasattr(self, "_adr"):
            found: dict[str, str] = {}
            for row in sorted(self.view.rows, key=lambda r: (r.date, r.id)):
                for s in row.sources:
                    if s.startswith("adr:"):
                        found[s[4:]] = row.id
            self._adr = found
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

    # -- contexts
    def subjects(self) -> tuple[dict[str, list[Row]], dict[str, list[Row]]]:
        if not hasattr(self, "_subjects"):
            tags: dict[str, list[Row]] = {}
            actors: dict[str, list[Row]] = {}
            for row in self.view.rows:
                for t in dict.fromkeys(row.tags):
                    tags.setdefault(t, []).append(row)
                for a in dict.fromkeys(row.actors):
                    actors.setdefault(a, []).append(row)
            self._subjects = (tags, actors)
        return self._subjects

    def months(self, rows: list[Row]) -> dict[str, dict[str, int]]:
        counts: dict[str, Counter[str]] = {}
        for r in rows:
            counts.setdefault(r.type, Counter())[r.date[:7]] += 1
        return {t: dict(sorted(c.items())) for t, c in sorted(counts.items())}

    def home(self) -> dict[str, Any]:
        view = self.view
        rows = view.rows
        changes = []
        for row in rows:  # newest first
            if view.supersedes.get(row.id):
                changes.append({"new": self.ref(row), "old": self.refs(view.supersedes[row.id])})
                if len(changes) == CHANGES:
                    break
        by_status = Counter(view.status(r) for r in rows)
        return {
            "total": len(rows),
            "by_type": dict(sorted(Counter(r.type for r in rows).items())),
            "by_status": dict(sorted(by_status.items())),
            "latest": [self.ref(r) for r in rows[:LATEST]],
            "changes": changes,
            "open_incidents": [self.ref(r) for r in rows if r.id in view.open_incidents],
            "proposed": [
                self.ref(r) for r in rows if r.type == "decision" and view.status(r) == "proposed"
            ],
            "domains": self.domain_rows(),
            "months": self.months(rows),
        }

    def domain_rows(self) -> list[dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for r in self.view.rows:
            d = out.setdefault(
                r.domain, {"name": r.domain, "entries": 0, "current": 0, "latest": ""}
            )
            d["entries"] += 1
            if r.type == "decision" and self.view.status(r) == "active":
                d["current"] += 1
            d["latest"] = max(d["latest"], r.date)
        return [out[k] for k in sorted(out)]

    def domain_list(self) -> dict[str, Any]:
        return {"domains": self.domain_rows()}

    def decision(self, row: Row) -> dict[str, Any]:
        """A decision with its reasons and what it replaced (shared like :meth:`ref`)."""
        got = self._decisions.get(row.id)
        if got is None:
            got = self._decisions[row.id] = {
                **self.ref(row),
                "alternatives": [[a.id, a.rejected_because] for a in row.alternatives],
                "replaced": self.refs(self.view.supersedes.get(row.id, ())),
                "actors": list(row.actors),
            }
        return got

    def domain(self, domain: str) -> dict[str, Any]:
        view = self.view
        rows = [r for r in view.rows if r.domain == domain]  # newest first
        decisions = [r for r in rows if r.type == "decision"]
        syntheses = [
            r
            for r in rows
            if r.type == "synthesis" and r.origin == "consolidated" and view.status(r) == "active"
        ]
        synthesis = None
        if syntheses:
            s = syntheses[0]
            synthesis = {
                **self.ref(s),
                "body_ref": [s.path, s.archive, s.archive_at, s.sha256],
                "cites": self.refs(view.cites.get(s.id, ())),
            }
        incidents = [r for r in rows if r.type == "incident"]
        timeline = [
            {
                "id": r.id,
                "date": r.date,
                "status": view.status(r),
                "summary": r.summary,
                "supersedes": list(view.supersedes.get(r.id, ())),
            }
            for r in sorted(decisions, key=lambda r: (r.date, r.id))
        ]
        return {
            "domain": domain,
            "entries": len(rows),
            "synthesis": synthesis,
            "current": [self.decision(r) for r in decisions if view.status(r) == "active"],
            "proposed": [self.decision(r) for r in decisions if view.status(r) == "proposed"],
            "open_incidents": [self.ref(r) for r in incidents if r.id in view.open_incidents],
            "closed_incidents": [self.ref(r) for r in incidents if r.id not in view.open_incidents],
            "timeline": timeline,
            "months": self.months(rows),
            "history": [self.ref(r) for r in rows],
        }

    def subject_list(self, kind: str, subjects: dict[str, list[Row]]) -> dict[str, Any]:
        return {
            "kind": kind,
            "subjects": [
                {"name": name, "slug": slug(name), "entries": len(subjects[name])}
                for name in sorted(subjects)
            ],
        }

    def tag(self, name: str, tags: dict[str, list[Row]]) -> dict[str, Any]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in tags[name]:
            groups.setdefault(r.domain, []).append(self.ref(r))
        return {
            "name": name,
            "entries": len(tags[name]),
            "groups": [[d, groups[d]] for d in sorted(groups)],
        }

    def actor(self, name: str, actors: dict[str, list[Row]]) -> dict[str, Any]:
        view = self.view
        rows = actors[name]
        decisions = [r for r in rows if r.type == "decision"]
        order = {"active": 0, "proposed": 1}
        decided = sorted(decisions, key=lambda r: order.get(view.status(r), 2))
        partners = Counter(a for r in rows for a in dict.fromkeys(r.actors) if a != name)
        superseded = [
            {"new": self.ref(r), "old": self.refs(view.supersedes[r.id])}
            for r in decisions
            if view.supersedes.get(r.id)
        ]
        return {
            "name": name,
            "entries": len(rows),
            "decided": [self.decision(r) for r in decided],
            "partners": [
                {"name": a, "slug": slug(a), "together": n}
                for a, n in sorted(partners.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "superseded": superseded,
            "other": [self.ref(r) for r in rows if r.type != "decision"],
        }

    def lineage(self, row: Row) -> list[dict[str, Any]]:
        """Every visible entry joined to this one by supersession, either way, oldest first."""
        view = self.view
        seen, todo = {row.id}, [row.id]
        while todo and len(seen) < 200:
            current = todo.pop()
            for other in (*view.supersedes.get(current, ()), *view.superseded_by.get(current, ())):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        return self.refs(seen) if len(seen) > 1 else []

    def entry(self, row: Row) -> dict[str, Any]:
        view = self.view
        sources: list[dict[str, Any]] = []
        for s in row.sources:
            if s in view.by_id:
                sources.append({"kind": "entry", "source": s, "ref": self.ref(view.by_id[s])})
                continue
            raw = next(raw_sources([s]), None)
            if raw is not None:
                name, first, last = raw
                sources.append(
                    {"kind": "raw", "source": s, "name": name, "first": first, "last": last}
                )
            elif s.startswith("adr:"):
                sources.append({"kind": "adr", "source": s, "name": s[4:]})
            else:
                sources.append({"kind": "other", "source": s})
        return {
            "entry": {
                **self.ref(row),
                "written_status": row.status,
                "scope": row.scope,
                "origin": row.origin,
                "actors": list(row.actors),
                "tags": list(row.tags),
                "aliases": list(row.aliases),
                "questions": list(row.questions),
                "supersedes": list(row.supersedes),
                "path": row.path,
                "archive": row.archive,
                "sha256": row.sha256,
                "verify": view.tamper.get(row.id, ""),
            },
            "body_ref": [row.path, row.archive, row.archive_at, row.sha256],
            "alternatives": [[a.id, a.rejected_because] for a in row.alternatives],
            "replaced": self.refs(view.supersedes.get(row.id, ())),
            "replaced_by": self.refs(view.superseded_by.get(row.id, ())),
            "lineage": self.lineage(row),
            "sources": sources,
            "cited_by": self.refs(view.cited_by.get(row.id, ())),
        }

    def raw_cited(self) -> dict[str, list[tuple[int | None, int | None, str]]]:
        """Raw sources cited by visible entries -> (first, last, citing id)."""
        if not hasattr(self, "_raw"):
            found: dict[str, list[tuple[int | None, int | None, str]]] = {}
            for row in self.view.rows:
                for name, first, last in raw_sources(row.sources):
                    found.setdefault(name, []).append((first, last, row.id))
            self._raw = {
                k: sorted(v, key=lambda t: (t[0] or 0, t[1] or 0, t[2])) for k, v in found.items()
            }
        return self._raw

    def raw(self, name: str) -> dict[str, Any]:
        cited = self.raw_cited()[name]
        return {
            "name": name,
            "cited": [[a, b, self.ref(self.view.by_id[i])] for a, b, i in cited],
        }

    def inspector(self) -> dict[str, Any]:
        view = self.view
        log = view.log
        result = view.verify
        months = Counter(item.month for item in log)
        lint = [self.log_dict(i) for i in log if i.op == "lint"][-20:]
        skips = [self.log_dict(i) for i in log if i.op == "consolidate-skip"][-20:]
        archives: dict[str, list[Row]] = {}
        for r in view.rows:
            if r.archive:
                archives.setdefault(r.archive, []).append(r)
        llm = view.llm
        return {
            "verify": {
                "checked": result.checked,
                "findings": [
                    {
                        "kind": f.kind,
                        "id": f.id,
                        "path": f.path,
                        "detail": f.detail,
                        "visible": f.id in view.by_id,
                    }
                    for f in result.findings
                ],
            },
            "lint": lint,
            "llm": {
                "calls": llm["calls"],
                "failed": llm["failed"],
                "tokens_in": llm["tokens_in"],
                "tokens_out": llm["tokens_out"],
                "by_purpose": [[k, v] for k, v in llm["by_purpose"].items()],
                "by_day": [[k, v] for k, v in llm["by_day"].items()][-60:],
                "by_scope": [[k, v] for k, v in llm["by_scope"].items()],
            },
            "syntheses": [
                self.ref(r)
                for r in view.rows
                if r.type == "synthesis" and r.origin == "consolidated"
            ][:30],
            "skips": skips,
            "failures": [
                {"time": f.time, "scope": f.scope, "domain": f.domain, "reasons": list(f.reasons)}
                for f in view.failures
            ][-30:],
            "states": [
                {
                    "scope": s.scope,
                    "domain": s.domain,
                    "entries": len(s.evidence),
                    "synthesis": s.current[0].id if s.current else None,
                    "why": s.out_of_date(llm=False) or "",
                }
                for s in view.domain_states
            ],
            "archives": [
                {
                    "name": name,
                    "size": view.archive_size(name),
                    "entries": [self.ref(r) for r in sorted(archives[name], key=lambda r: r.id)],
                }
                for name in sorted(archives)
            ],
            "settings": [list(kv) for kv in view.settings],
            "recent": [self.log_dict(i) for i in log[-30:]][::-1],
            "months": [[m, months[m]] for m in sorted(months, reverse=True)],
            "ops": [[op, n] for op, n in sorted(Counter(i.op for i in log).items())],
        }

    def log_dict(self, item: Any) -> dict[str, Any]:
        href = ""
        if item.subject in self.view.by_id:
            href = f"entries/{item.subject}.html"
        elif item.subject in self.raw_cited():
            href = f"{item.subject}.html"
        return {
            "time": item.time,
            "op": item.op,
            "subject": item.subject,
            "href": href,
            "fields": [list(kv) for kv in item.fields],
        }

    def log(self, month: str) -> dict[str, Any]:
        if not hasattr(self, "_by_month"):
            self._by_month: dict[str, list[Any]] = {}
            for item in self.view.log:
                self._by_month.setdefault(item.month, []).append(item)
        items = [self.log_dict(i) for i in self._by_month.get(month, [])]
        return {
            "month": month,
            "items": items,
            "ops": sorted({i["op"] for i in items}),
        }

    def search_page(self) -> dict[str, Any]:
        return {"shards": self.shard_months()}

    def shard_months(self) -> list[str]:
        return sorted({r.date[:7] for r in self.view.rows})

    def shard(self, month: str) -> dict[str, Any]:
        rows = sorted((r for r in self.view.rows if r.date[:7] == month), key=lambda r: r.id)
        return {
            "docs": [
                [
                    r.id,
                    r.type,
                    r.date,
                    r.domain,
                    self.view.status(r),
                    r.summary,
                    list(r.aliases),
                    list(r.questions),
                    list(r.tags),
                    r.sha256,
                ]
                for r in rows
            ]
        }

    def make_shard(self, ctx: dict[str, Any]) -> bytes:
        docs = []
        for entry_id, type_, date, domain, status, summary, aliases, questions, tags, _ in ctx[
            "docs"
        ]:
            if entry_id not in self._terms:
                self._terms[entry_id] = words(self.view.body(self.view.by_id[entry_id]))[
                    :BODY_TERMS
                ]
            docs.append(
                {
                    "id": entry_id,
                    "t": type_,
                    "d": date,
                    "m": domain,
                    "st": status,
                    "s": summary,
                    "a": " ; ".join(aliases),
                    "q": " ; ".join(questions),
                    "g": " ".join(tags),
                    "b": " ".join(self._terms[entry_id]),
                }
            )
        data = json.dumps(docs, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return (
            "/* llm-wiki search data: loaded by search.html with a <script> tag (works from "
            "file://) */\n(window.LLM_WIKI_SEARCH = window.LLM_WIKI_SEARCH || []).push("
            f"{data});\n"
        ).encode()

    def make_asset(self, ctx: dict[str, Any]) -> bytes:
        return (SITE_TEMPLATES / "assets" / ctx["asset"]).read_bytes()


# --------------------------------------------------------------------------- small helpers


@functools.cache
def _environment() -> Any:
    """The templates, compiled once per process (compiling costs more than rendering a small
    site; ``--serve`` and the tests build many)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(SITE_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals["slug"] = slug
    env.globals["h"] = html
    return env


def slug(name: str) -> str:
    """A file name for a tag or actor: the name itself when it is already one, else a slug
    with a short hash (two names never share a page)."""
    if NAME_RE.match(name):
        return name
    return f"{slugify(name, 40) or 'x'}-{sha256_hex(name.encode())[:6]}"


def _node(ref: dict[str, Any], here: bool = False) -> dict[str, Any]:
    """A box of the relations picture: date and type (or its status, when not active) on the
    first line, the summary below; a superseded entry's box is dashed."""
    status = ref["status"]
    return {
        "id": None if here else ref["id"],
        "head": ref["date"],
        "kind": ref["type"] if status == "active" else status,
        "label": ref["summary"],
        "title": f"{ref['id']} ({ref['type']}, {status}): {ref['summary']}",
        "dashed": status != "active",
    }


def _source_node(source: dict[str, Any]) -> dict[str, Any]:
    if source["kind"] == "entry":
        return _node(source["ref"])
    if source["kind"] == "raw":
        lines = f"lines {source['first']}-{source['last']}" if source["first"] else "whole file"
        return {"id": None, "head": "raw source", "label": lines, "title": source["source"]}
    if source["kind"] == "adr":
        return {"id": None, "head": "ADR file", "label": source["name"], "title": source["source"]}
    return {"id": None, "head": "source", "label": source["source"], "title": source["source"]}


def _fingerprint(code: str, template: str, common: dict[str, Any], ctx: dict[str, Any]) -> str:
    """sha256 of what a page is made from. ``repr`` of plain data (str, int, bool, None, lists,
    tuples and dicts built in a fixed order) is deterministic and several times cheaper than
    sorted JSON, which matters for 10,000 entry pages a rebuild must compare."""
    return hashlib.sha256(repr((code, template, common, ctx)).encode()).hexdigest()


def _write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` unless it already holds exactly that. An existing file is
    replaced atomically (``--serve`` never sends half a page); a new one is written in place
    (nothing links to it until the pages that do are replaced). Nothing is fsynced: a site is a
    view the next build makes again, and 10,000 fsyncs would cost more than the build."""
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
        exists = True
    except FileNotFoundError:
        exists = False
    if not exists:
        try:
            with open(path, "xb") as fh:
                fh.write(data)
            return True
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as fh:
                fh.write(data)
            return True
        except FileExistsError:
            pass  # a racing build made it: replace it below
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return True


def _prune_empty(out: Path) -> None:
    for folder in sorted((p for p in out.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()

"""What each page of the site shows: the context a template is filled with, made from the view
of the rows the reader may see (:class:`~llm_wiki.site.view.View`), and the small pure helpers
the pages share (list pages of :data:`PAGE_ENTRIES`, subject file names, picture boxes).

:class:`Pages` is the page half of the builder (:class:`llm_wiki.site.build._Builder`), which
adds the plan, the rendering and the files; split off so each half reads on its own.
"""

from __future__ import annotations

import functools
import json
from collections import Counter, defaultdict
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_wiki.catalog import Row
from llm_wiki.entries import NAME_RE, sha256_hex
from llm_wiki.site.text import words
from llm_wiki.site.view import View, raw_sources
from llm_wiki.slugs import slugify
from llm_wiki.wiki import TEMPLATES

SITE_TEMPLATES = TEMPLATES / "site"
LATEST = 12
CHANGES = 10
LISTED = 20  # open incidents and proposed decisions the home page lists (of the rest: how many)
BODY_TERMS = 2000  # distinct body words per entry in the search index
# Entries a subject page (actor, tag) or a domain's history lists before the rest goes on pages of
# their own (see :func:`chunk`).
PAGE_ENTRIES = 100
LINT_FINDINGS = 100  # the inspector lists the first (errors, then warnings, then info)


class Pages:
    """The context of each kind of page (mixed into the builder, which holds the view and says
    how an entry is referred to: the attributes and methods declared here)."""

    view: View
    out: Path
    change: Any  # the build's follow.Change, None for a full build
    states: list[list[Any]]  # each domain's consolidation state
    _deps: set[str]  # what the page being planned is made from
    _terms: dict[str, str]  # id -> its body words, filled as entry pages render
    _old_terms: dict[str, dict[str, str]]  # month -> id -> "b" of its old search shard
    _decisions: dict[str, dict[str, Any]]

    if TYPE_CHECKING:  # the builder's

        def file_sha(self, row: Row) -> str: ...
        def ref(self, row: Row) -> dict[str, Any]: ...
        def refs(self, ids: Any) -> list[dict[str, Any]]: ...
        def links(self, row: Row) -> dict[str, Any]: ...

    @property
    def _groups(self) -> dict[str, Any]:
        """The visible rows grouped as the plan and the lists need them: by domain, tag, actor
        and month (each newest first), the raw sources cited and the rows citing an ADR file."""
        return self._pass[0]

    @property
    def _totals(self) -> dict[str, Any]:
        """What the home page and the domain list count over every visible row."""
        return self._pass[1]

    @functools.cached_property
    def _pass(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The groups and the totals (a rebuild after any write needs them all: the plan, the
        home page, the domain list), from the rows' fields read once into columns: each group
        a short loop of its own, the counts by Counter and the filters by comprehension (one
        loop doing all of it per row cost most of a rebuild's pass over 10,000 rows)."""
        rows = self.view.rows
        superseded = self.view.superseded_by.get
        # the fields every count needs, a column each read in C (one loop of appends: ~2x); the
        # others are read where they are
        ids, types, dates, domains, statuses = [
            list(map(attrgetter(name), rows)) for name in ("id", "type", "date", "domain", "status")
        ]
        shown = ["superseded" if superseded(i) else s for i, s in zip(ids, statuses, strict=True)]
        month_of = [d[:7] for d in dates]
        # defaultdict(list): the group of a key seen before is appended to with no list made
        # per call (setdefault makes one each time); plain dicts again once the pass is done
        by_domain: defaultdict[str, list[Row]] = defaultdict(list)
        for domain, row in zip(domains, rows, strict=True):
            by_domain[domain].append(row)
        by_month: defaultdict[str, list[Row]] = defaultdict(list)
        for month, row in zip(month_of, rows, strict=True):
            by_month[month].append(row)
        tags: defaultdict[str, list[Row]] = defaultdict(list)
        actors: defaultdict[str, list[Row]] = defaultdict(list)
        raw: defaultdict[str, list[tuple[int | None, int | None, str]]] = defaultdict(list)
        archived: defaultdict[str, list[Row]] = defaultdict(list)
        adr: list[Row] = []
        for row in rows:
            # a row goes once into the group of each tag and actor it names, however often it
            # names one: its own appends to a group are consecutive, so one already made is
            # the group's last (half the cost of dict.fromkeys on each row's names)
            for t in row.tags:
                group = tags[t]
                if not group or group[-1] is not row:
                    group.append(row)
            for a in row.actors:
                group = actors[a]
                if not group or group[-1] is not row:
                    group.append(row)
            if row.sources:
                cites_adr = False
                for s in row.sources:
                    if s.startswith("raw/"):
                        for name, first, last in raw_sources((s,)):
                            raw[name].append((first, last, row.id))
                    elif s.startswith("adr:"):
                        cites_adr = True
                if cites_adr:
                    adr.append(row)
            if row.archive:
                archived[row.archive].append(row)
        incidents = [r for r, k in zip(rows, types, strict=True) if k == "incident"]
        syntheses = [
            r
            for r, k in zip(rows, types, strict=True)
            if k == "synthesis" and r.origin == "consolidated"
        ]
        decided = [k == "decision" for k in types]
        proposed = [
            r for r, d, s in zip(rows, decided, shown, strict=True) if d and s == "proposed"
        ]
        current = Counter(
            [m for m, d, s in zip(domains, decided, shown, strict=True) if d and s == "active"]
        )
        months: dict[str, Counter[str]] = {}
        for (kind, month), n in Counter(zip(types, month_of, strict=True)).items():
            got = months.get(kind)
            if got is None:
                got = months[kind] = Counter()
            got[month] = n
        groups = {
            "domain": dict(by_domain),
            "tag": dict(tags),
            "actor": dict(actors),
            "month": dict(by_month),
            "raw": {
                k: sorted(v, key=lambda t: (t[0] or 0, t[1] or 0, t[2])) for k, v in raw.items()
            },
            "adr": adr,
            "incident": incidents,
            "synthesis": syntheses,
            "archive": dict(archived),
        }
        by_type = {kind: sum(counts.values()) for kind, counts in months.items()}
        totals = {
            "by_type": dict(sorted(by_type.items())),
            "by_status": dict(sorted(Counter(shown).items())),
            "months": {t: dict(sorted(c.items())) for t, c in sorted(months.items())},
            "domains": [
                {
                    "name": name,
                    "entries": len(by_domain[name]),
                    "current": current[name],
                    "latest": by_domain[name][0].date,  # (rows are newest first)
                }
                for name in sorted(by_domain)
            ],
            "proposed": proposed,
        }
        return groups, totals

    def subjects(self) -> tuple[dict[str, list[Row]], dict[str, list[Row]]]:
        groups = self._groups
        return groups["tag"], groups["actor"]

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
        totals = self._totals
        incidents = view.open_incidents
        # the first LISTED of each and how many more: the page shows no other (~2,800 entries
        # named in the context of a 10k wiki's home page, each one looked up and fingerprinted)
        opened = [r for r in self._groups["incident"] if r.id in incidents]
        proposed = totals["proposed"]
        return {
            "total": len(rows),
            "by_type": totals["by_type"],
            "by_status": totals["by_status"],
            "latest": [self.ref(r) for r in rows[:LATEST]],
            "changes": changes,
            "open_incidents": [self.ref(r) for r in opened[:LISTED]],
            "open_more": max(0, len(opened) - LISTED),
            "proposed": [self.ref(r) for r in proposed[:LISTED]],
            "proposed_more": max(0, len(proposed) - LISTED),
            "domains": self.domain_rows(),
            "months": totals["months"],
        }

    def domain_rows(self) -> list[dict[str, Any]]:
        return self._totals["domains"]

    def domain_list(self) -> dict[str, Any]:
        return {"domains": self.domain_rows()}

    def decision(self, row: Row) -> dict[str, Any]:
        """A decision with its reasons and what it replaced (shared like :meth:`ref`)."""
        self._deps.add("e:" + row.id)
        self._deps.update("e:" + i for i in self.view.supersedes.get(row.id, ()))
        got = self._decisions.get(row.id)
        if got is None:
            got = self._decisions[row.id] = {
                **self.ref(row),
                "alternatives": [[a.id, a.rejected_because] for a in row.alternatives],
                "replaced": self.refs(self.view.supersedes.get(row.id, ())),
                "actors": list(row.actors),
            }
        return got

    def by_domain(self) -> dict[str, list[Row]]:
        """Domain -> its visible rows, newest first."""
        return self._groups["domain"]  # type: ignore[no-any-return]

    def domain(self, domain: str) -> dict[str, Any]:
        view = self.view
        rows = self.by_domain()[domain]  # newest first
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
                "body_ref": [s.path, s.archive, s.archive_at, self.file_sha(s)],
                "cites": self.refs(view.cites.get(s.id, ())),
                "links": self.links(s),
                "method": view.extra(s, "method"),  # llm | extractive (the offline backend's)
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
            "history": [self.ref(r) for r in chunk(rows, 0)],
            "pager": pager(f"domains/{domain}", 0, len(rows)),
        }

    def history(self, domain: str, j: int) -> dict[str, Any]:
        """Page ``j`` of a domain's history (see :func:`chunk`)."""
        rows = self.by_domain()[domain]
        return {
            "domain": domain,
            "history": [self.ref(r) for r in chunk(rows, j)],
            "pager": pager(f"domains/{domain}", j, len(rows)),
        }

    def subject_list(self, kind: str, subjects: dict[str, list[Row]]) -> dict[str, Any]:
        return {
            "kind": kind,
            "subjects": [
                {"name": name, "slug": slug(name), "entries": len(subjects[name])}
                for name in sorted(subjects)
            ],
        }

    def tag(self, name: str, tags: dict[str, list[Row]], j: int = 0) -> dict[str, Any]:
        """A tag's page: its entries by domain; ``j``: page ``j`` of them (see :func:`chunk`)."""
        groups: dict[str, list[dict[str, Any]]] = {}
        every = tags[name]
        shown = chunk(every, j)
        for r in shown:
            groups.setdefault(r.domain, []).append(self.ref(r))
        return {
            "name": name,
            "shown": len(shown),
            "entries": len(every) if j == 0 else 0,
            "domains": len({r.domain for r in every}) if j == 0 else 0,
            "groups": [[d, groups[d]] for d in sorted(groups)],
            "pager": pager(f"tags/{slug(name)}", j, len(every)),
        }

    def actor(self, name: str, actors: dict[str, list[Row]], j: int = 0) -> dict[str, Any]:
        """A person's page: what they decided, with whom, what they superseded; ``j``: page
        ``j`` of their entries (see :func:`chunk`), which says only what those decided."""
        view = self.view
        every = actors[name]
        rows = chunk(every, j)
        decisions = [r for r in rows if r.type == "decision"]
        order = {"active": 0, "proposed": 1}
        decided = sorted(decisions, key=lambda r: order.get(view.status(r), 2))
        partners: Counter[str] = Counter()
        if j == 0:
            partners.update(a for r in every for a in dict.fromkeys(r.actors) if a != name)
        superseded = [
            {"new": self.ref(r), "old": self.refs(view.supersedes[r.id])}
            for r in decisions
            if view.supersedes.get(r.id)
        ]
        return {
            "name": name,
            "entries": len(every) if j == 0 else 0,
            "decisions": sum(1 for r in every if r.type == "decision") if j == 0 else 0,
            "decided": [self.decision(r) for r in decided],
            "partners": [
                {"name": a, "slug": slug(a), "together": n}
                for a, n in sorted(partners.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "superseded": superseded,
            "other": [self.ref(r) for r in rows if r.type != "decision"],
            "pager": pager(f"actors/{slug(name)}", j, len(every)),
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
        deps = self._deps
        deps.update("e:" + s for s in row.supersedes)  # shown only while visible
        deps.update("e:" + s for s in row.sources)
        deps.update("e:" + s for s in row.resolves)  # shown only while visible
        for s in row.sources:
            if s in view.by_id:
                sources.append({"kind": "entry", "source": s, "ref": self.ref(view.by_id[s])})
                continue
            raw = next(raw_sources([s]), None)
            if raw is not None:
                name, first, last = raw
                deps.add("r:" + name)  # its excerpt
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
                # a synthesis records how it was made: llm | extractive (no LLM)
                "method": view.extra(row, "method") if row.is_generated else None,
            },
            "body_ref": [row.path, row.archive, row.archive_at, self.file_sha(row)],
            "alternatives": [[a.id, a.rejected_because] for a in row.alternatives],
            "replaced": self.refs(view.supersedes.get(row.id, ())),
            "replaced_by": self.refs(view.superseded_by.get(row.id, ())),
            "lineage": self.lineage(row),
            "sources": sources,
            "cited_by": self.refs(view.cited_by.get(row.id, ())),
            "resolves": self.refs(row.resolves) if not row.is_generated else [],
            "resolved_by": self.refs(view.resolved_by.get(row.id, ())),
            "links": self.links(row),
        }

    def raw_cited(self) -> dict[str, list[tuple[int | None, int | None, str]]]:
        """Raw sources cited by visible entries -> (first, last, citing id)."""
        return self._groups["raw"]  # type: ignore[no-any-return]

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
        months = {m: len(items) for m, items in self._log_months.items()}
        ops = Counter(map(itemgetter(1), log))  # (an op no line has: no pass to find it)
        lint = [self.log_dict(i) for i in log if i.op == "lint"][-20:] if ops["lint"] else []
        skips = (
            [self.log_dict(i) for i in log if i.op == "consolidate-skip"][-20:]
            if ops["consolidate-skip"]
            else []
        )
        archives: dict[str, list[Row]] = self._groups["archive"]
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
            "lint_findings": [
                {**f, "refs": [self.ref(view.by_id[i]) for i in f["ids"]]}
                for f in view.lint_findings[:LINT_FINDINGS]
            ],
            "lint_more": max(0, len(view.lint_findings) - LINT_FINDINGS),
            "llm": {
                "calls": llm["calls"],
                "failed": llm["failed"],
                "tokens_in": llm["tokens_in"],
                "tokens_out": llm["tokens_out"],
                "by_purpose": [[k, v] for k, v in llm["by_purpose"].items()],
                "by_day": [[k, v] for k, v in llm["by_day"].items()][-60:],
                "by_scope": [[k, v] for k, v in llm["by_scope"].items()],
            },
            "syntheses": [self.ref(r) for r in self._groups["synthesis"]][:30],
            "skips": skips,
            "failures": [
                {"time": f.time, "scope": f.scope, "domain": f.domain, "reasons": list(f.reasons)}
                for f in view.failures
            ][-30:],
            "states": [s[2] for s in self.states],
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
            "ops": [[op, n] for op, n in sorted(ops.items()) if n],
        }

    def log_dict(self, item: Any) -> dict[str, Any]:
        if item.subject:
            self._deps.add("e:" + item.subject)
            self._deps.add("r:" + item.subject)
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

    @functools.cached_property
    def _log_months(self) -> dict[str, list[Any]]:
        """The log lines this reader sees, by month (in log.md's order)."""
        found: dict[str, list[Any]] = {}
        for item in self.view.log:
            month = item.time[:7]
            got = found.get(month)
            if got is None:
                found[month] = [item]
            else:
                got.append(item)
        return found

    def log(self, month: str) -> dict[str, Any]:
        items = [self.log_dict(i) for i in self._log_months.get(month, [])]
        return {
            "month": month,
            "items": items,
            "ops": sorted({i["op"] for i in items}),
        }

    def search_page(self) -> dict[str, Any]:
        return {"shards": self.shard_months()}

    def shard_months(self) -> list[str]:
        return sorted(self._groups["month"])

    def shard(self, month: str) -> dict[str, Any]:
        rows = sorted(self._groups["month"][month], key=lambda r: r.id)
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
                    self.file_sha(r),
                ]
                for r in rows
            ]
        }

    def make_shard(self, ctx: dict[str, Any]) -> bytes:
        docs = []
        for entry_id, type_, date, domain, status, summary, aliases, questions, tags, _ in ctx[
            "docs"
        ]:
            if entry_id in self._terms:
                terms = self._terms[entry_id]
            else:
                kept = self.old_terms(date[:7]).get(entry_id)
                if kept is None:
                    found = words(self.view.body(self.view.by_id[entry_id]))[:BODY_TERMS]
                    kept = " ".join(found)
                terms = kept
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
                    "b": terms,
                }
            )
        data = json.dumps(docs, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return (
            "/* llm-wiki search data: loaded by search.html with a <script> tag (works from "
            "file://) */\n(window.LLM_WIKI_SEARCH = window.LLM_WIKI_SEARCH || []).push("
            f"{data});\n"
        ).encode()

    def old_terms(self, month: str) -> dict[str, str]:
        """Entry id -> its body words as the shard of ``month`` written by the last build holds
        them, for entries whose row and file have not changed since (none in a full build)."""
        if self.change is None:
            return {}
        got = self._old_terms.get(month)
        if got is None:
            got = {}
            try:
                text = (self.out / "search" / f"{month}.js").read_text(encoding="utf-8")
                start, end = text.index(".push(") + 6, text.rindex(");")
                for doc in json.loads(text[start:end]):
                    if doc["id"] not in self.change.rows:
                        got[doc["id"]] = doc["b"]
            except (OSError, ValueError, KeyError, TypeError):
                got = {}
            self._old_terms[month] = got
        return got

    def make_asset(self, ctx: dict[str, Any]) -> bytes:
        return (SITE_TEMPLATES / "assets" / ctx["asset"]).read_bytes()


# --------------------------------------------------------------------------- small helpers


def chunks(n: int) -> int:
    """How many pages list ``n`` entries: PAGE_ENTRIES to a page, the newest 1-2 pages' worth on
    the main one."""
    return max(1, n // PAGE_ENTRIES)


def chunk(rows: list[Row], j: int) -> list[Row]:
    """The rows (newest first) a list page shows: page ``j`` (1, 2, ... counted from the oldest)
    holds the oldest-first entries ``(j-1)*PAGE_ENTRIES`` to ``j*PAGE_ENTRIES - 1``; the main page
    (``j`` 0) the newest, from the last full page on. Pages are counted from the oldest so that a
    new entry changes the main page and no other (an older page changes only when an entry on it
    does, or one before it comes or goes)."""
    n = len(rows)
    k = chunks(n)
    if j == 0:
        return rows[: n - (k - 1) * PAGE_ENTRIES]
    return rows[n - j * PAGE_ENTRIES : n - (j - 1) * PAGE_ENTRIES]


def pager(base: str, j: int, n: int) -> dict[str, Any]:
    """Links between the pages of the list at ``base`` (``base``.html the main page,
    ``base``/J.html page J). The main page links to every other; page J to its neighbours and
    says which entries it holds counted from the oldest, so that it does not change as the list
    grows (the page before the main one aside, whose newer neighbour becomes a page of its
    own)."""
    k = chunks(n)
    if j == 0:
        return {"base": base, "page": 0, "older": list(range(k - 1, 0, -1))}
    return {
        "base": base,
        "page": j,
        "newer": j + 1 if j + 1 < k else 0,
        "older": j - 1,
        "first": (j - 1) * PAGE_ENTRIES + 1,
        "last": j * PAGE_ENTRIES,
    }


def _asset(name: str) -> dict[str, Any]:
    return {"asset": name}


def slug(name: str) -> str:
    """A file name for a tag or actor: the name itself when it is already one, else a slug
    with a short hash (two names never share a page, and none takes the list's index.html)."""
    if NAME_RE.match(name) and name != "index":
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

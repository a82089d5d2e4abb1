"""The daily briefing: what changed in the archive over the last days, for one reader.

Computed for the viewer, from their entries only (with walls, only their scopes):

- counts, and the entries **recorded** in the period (by their ``write`` line in log.md, so an
  import of old records shows as new on the day it happened), by domain and type;
- what those entries superseded;
- open incidents: an incident is open until an entry supersedes it or says it resolves it
  (``resolves``); citing it in ``sources`` does not close it, and no generated entry closes one;
- the new decisions with the alternatives they rejected;
- forked decisions: an entry two writers superseded, each line still current;
- consolidator failures recorded in the period (synthesis-failures.md);
- LLM calls and tokens over the period (``.llm-wiki/llm-calls.jsonl``).

With an LLM backend, a short "what changed" narrative: statements that each cite the new entries
they rest on and must pass :func:`citations.check_statements`; if any fails, the narrative is
dropped and the briefing says so (fail closed). Offline there is no narrative and the briefing is
deterministic. It is rendered by ``templates/brief/briefing.md.j2``.

:func:`save_briefings` is the daily job: ``briefings/YYYY-MM-DD.md``, or with walls one file per
scope, ``briefings/<scope>/YYYY-MM-DD.md``, since nothing stored may mix scopes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llm_wiki.backends as backends
import llm_wiki.clock as clock
import llm_wiki.store as store
from llm_wiki.access import Viewer, scope_field, walls_on
from llm_wiki.catalog import Catalog, Fork, Row, read_catalog
from llm_wiki.citations import (
    CitationProblem,
    Evidence,
    Statement,
    check_statements,
    evidence_from_entry,
)
from llm_wiki.entries import GENERATED_ORIGINS, Alternative
from llm_wiki.errors import BackendFailed, InvalidInput
from llm_wiki.failures import FailureRecord, failure_records
from llm_wiki.files import atomic_write
from llm_wiki.prompts import entry_block, json_object, render_prompt, render_template
from llm_wiki.reads import read_entry
from llm_wiki.stats import entry_stats, llm_usage
from llm_wiki.wiki import Wiki

DEFAULT_DAYS = 7
BRIEFINGS_DIR = "briefings"
LIST_CAP = 20  # entries shown per (domain, type) group, superseded pairs, open incidents
NARRATIVE_BUDGET = 6000  # tokens of entries shown to the narrative prompt
NARRATIVE_STATEMENTS = 8
NARRATIVE_MAX_TOKENS = 1024


@dataclass(frozen=True)
class Item:
    """An entry as a briefing shows it."""

    id: str
    date: str
    type: str
    domain: str
    scope: str
    status: str  # effective: superseded, or as written
    origin: str
    summary: str
    path: str
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()

    @classmethod
    def of(cls, row: Row) -> Item:
        return cls(
            id=row.id,
            date=row.date,
            type=row.type,
            domain=row.domain,
            scope=row.scope,
            status=row.effective_status,
            origin=row.origin,
            summary=" ".join(row.summary.split()),
            path=row.path,
            supersedes=row.supersedes,
            superseded_by=row.superseded_by,
            alternatives=row.alternatives,
        )

    @property
    def is_generated(self) -> bool:
        return self.origin in GENERATED_ORIGINS

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["supersedes"] = list(self.supersedes)
        data["superseded_by"] = list(self.superseded_by)
        data["alternatives"] = [
            {"id": a.id, "rejected_because": a.rejected_because} for a in self.alternatives
        ]
        return data


@dataclass(frozen=True)
class Group:
    """The new entries of one (domain, type); ``items`` holds at most LIST_CAP of ``total``."""

    domain: str
    type: str
    total: int
    items: tuple[Item, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "type": self.type,
            "total": self.total,
            "entries": [i.to_dict() for i in self.items],
        }


@dataclass(frozen=True)
class Replacement:
    """An entry superseded in the period, and the new entries that replaced it."""

    old: Item
    by: tuple[Item, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old.to_dict(), "by": [i.to_dict() for i in self.by]}


@dataclass(frozen=True)
class Narrative:
    """The "what changed" paragraph. status: written | dropped (failed a check) | none."""

    status: str
    statements: tuple[Statement, ...] = ()
    note: str = ""
    backend: str = ""
    model: str = ""
    problems: tuple[CitationProblem, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "statements": [s.to_dict() for s in self.statements],
            "note": self.note,
            "backend": self.backend,
            "model": self.model,
            "problems": [p.to_dict() for p in self.problems],
        }


@dataclass(frozen=True)
class Briefing:
    date: str  # the day it is for (today, by the one clock)
    days: int
    since: str
    until: str
    reader: str
    scopes: tuple[str, ...]  # with walls: the scopes it covers; empty without walls
    counts: dict[str, Any]
    new: tuple[Group, ...]
    superseded: tuple[Replacement, ...]
    superseded_total: int
    syntheses_replaced: int  # generated syntheses replaced by newer ones (not listed)
    open_incidents: tuple[Item, ...]
    open_total: int
    decisions: tuple[Item, ...]
    failures: tuple[FailureRecord, ...]
    llm: dict[str, Any]
    narrative: Narrative
    error: str | None = None  # the backend failed while writing the narrative
    backend: str = ""  # the backend asked for the narrative (offline: none is written)
    backend_source: str = ""  # where its name came from (set by the Session)
    forks: tuple[Fork, ...] = ()  # entries superseded along lines that never met again

    @property
    def llm_outcome(self) -> dict[str, int]:
        """The narrative's call: ok when written, failed when the call failed or its reply was
        dropped; no call, no count."""
        asked = self.error is not None or self.narrative.status in ("written", "dropped")
        ok = int(self.narrative.status == "written")
        return {"ok": ok, "failed": int(asked and not ok)}

    @property
    def llm_all_failed(self) -> bool:
        """The LLM was asked for the narrative and it could not be used (the command exits 1)."""
        return self.llm_outcome["failed"] > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "days": self.days,
            "since": self.since,
            "until": self.until,
            "reader": self.reader,
            "scopes": list(self.scopes),
            "counts": self.counts,
            "new": [g.to_dict() for g in self.new],
            "superseded": [r.to_dict() for r in self.superseded],
            "superseded_total": self.superseded_total,
            "syntheses_replaced": self.syntheses_replaced,
            "open_incidents": [i.to_dict() for i in self.open_incidents],
            "open_incidents_total": self.open_total,
            "decisions": [i.to_dict() for i in self.decisions],
            "failures": [f.to_dict() for f in self.failures],
            "llm": self.llm,
            "narrative": self.narrative.to_dict(),
            "error": self.error,
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "llm_outcome": self.llm_outcome,
            "forks": [
                {
                    "id": f.old.id,
                    "summary": f.old.summary,
                    "heads": [Item.of(h).to_dict() for h in f.heads],
                }
                for f in self.forks
            ],
        }

    def markdown(self) -> str:

        return render_template("brief/briefing.md.j2", b=self, cap=LIST_CAP)


# --------------------------------------------------------------------------- computing it


def period(days: int) -> tuple[str, str]:
    """(since, until), inclusive: the last ``days`` days up to today, by the one clock."""
    if days < 1:
        raise InvalidInput(f"--days {days}: give 1 or more days.")
    today = clock.today()
    return (today - dt.timedelta(days=days - 1)).isoformat(), today.isoformat()


def brief(
    wiki: Wiki,
    viewer: Viewer,
    *,
    days: int | None = None,
    backend: backends.Backend | None = None,
) -> Briefing:
    """The briefing for ``viewer`` over the last ``days`` days (settings.yaml ``brief.days``).

    ``backend`` writes the narrative (the wiki's own when None); an unusable one raises
    BackendUnavailable before anything is computed (it never falls back to offline).
    """
    if days is None:
        days = wiki.settings.get("brief.days", DEFAULT_DAYS)
        if not isinstance(days, int) or isinstance(days, bool):
            raise InvalidInput(
                f"settings.yaml brief.days is {days!r}; set it to a whole number of days, e.g. 7."
            )
    since, until = period(days)
    llm = backend or backends.get_backend(wiki)
    llm.check()
    written = _written_ids(wiki, since, until)
    with read_catalog(wiki) as catalog:
        stats = entry_stats(wiki, catalog, viewer)
        new_rows = _rows_by_ids(catalog, viewer, written)
        extractive = catalog.extractive(viewer)  # offline boilerplate: counted, not listed
        replaced_ids = [old for r in new_rows for old in r.supersedes]
        replaced = {r.id: r for r in _rows_by_ids(catalog, viewer, replaced_ids)}
        incidents, open_total = _open_incidents(catalog, viewer)
        forks = catalog.forks(viewer)
    superseded, syntheses_replaced = _replacements([Item.of(r) for r in new_rows], replaced)
    left_out = sum(1 for r in new_rows if r.id in extractive)
    new_rows = [r for r in new_rows if r.id not in extractive]
    new = [Item.of(r) for r in new_rows]
    scopes = _scopes(viewer, stats.by_scope)
    failures = [
        f
        for f in failure_records(wiki, None if viewer.sees_all else scopes)
        if since <= f.time[:10] <= until
    ]
    counts = {
        "entries": stats.entries,
        "active": stats.by_status.get("active", 0),
        "superseded": stats.by_status.get("superseded", 0),
        "by_status": dict(sorted(stats.by_status.items())),
        "archived": stats.archived,
        "by_type": stats.by_type,
        "new": len(new),
        "new_by_type": _count(i.type for i in new),
        "extractive_syntheses": left_out,
        "open_incidents": open_total,
        "failures": len(failures),
        "domains": len(stats.by_domain),
    }
    narrative, error = _narrative(wiki, llm, new_rows, replaced)
    usage = llm_usage(wiki, viewer, since=since, until=until)  # the narrative's call included
    usage.pop("by_day", None)
    return Briefing(
        date=until,
        days=days,
        since=since,
        until=until,
        reader=viewer.name,
        scopes=tuple(scopes) if viewer.walls else (),
        counts=counts,
        new=tuple(_groups(new)),
        superseded=tuple(superseded[:LIST_CAP]),
        superseded_total=len(superseded),
        syntheses_replaced=syntheses_replaced,
        open_incidents=tuple(incidents),
        open_total=open_total,
        decisions=tuple(i for i in new if i.type == "decision"),
        failures=tuple(failures),
        llm=usage,
        narrative=narrative,
        error=error,
        backend=llm.name,
        forks=tuple(forks),
    )


def _written_ids(wiki: Wiki, since: str, until: str) -> list[str]:
    """Ids whose ``write`` line in log.md falls in the period, in the order written."""
    ids: dict[str, None] = {}
    for _, line in store.read_log(wiki):
        if line.op == "write" and line.subject and since <= line.time[:10] <= until:
            ids[line.subject] = None
    return list(ids)


def _rows_by_ids(catalog: Catalog, viewer: Viewer, ids: Sequence[str]) -> list[Row]:
    """The rows of ``ids`` the viewer may read, newest first (hidden ones are simply absent)."""
    rows: list[Row] = []
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), 500):  # SQLite's limit on parameters
        rows += catalog.rows(viewer, ids=unique[start : start + 500])
    return sorted(rows, key=lambda r: (r.date, r.id), reverse=True)


def _open_incidents(catalog: Catalog, viewer: Viewer) -> tuple[list[Item], int]:
    """Incidents not superseded and not named in the ``resolves`` of an entry no LLM wrote.
    Being cited (a reflection listing it in ``sources``) does not close one."""
    resolved = catalog.resolved(viewer)
    rows = [
        r for r in catalog.rows(viewer, type="incident", status="active") if r.id not in resolved
    ]
    return [Item.of(r) for r in rows[:LIST_CAP]], len(rows)


def _replacements(new: Sequence[Item], replaced: dict[str, Row]) -> tuple[list[Replacement], int]:
    by_old: dict[str, list[Item]] = {}
    generated = 0
    for item in new:
        for old in item.supersedes:
            row = replaced.get(old)
            if row is None:
                continue
            if item.is_generated and row.is_generated:
                generated += 1  # a synthesis rewritten by the nightly job: not news
                continue
            by_old.setdefault(old, []).append(item)
    out = [Replacement(Item.of(replaced[old]), tuple(items)) for old, items in by_old.items()]
    out.sort(key=lambda r: (r.by[0].date, r.by[0].id), reverse=True)
    return out, generated


def _groups(new: Sequence[Item]) -> list[Group]:
    grouped: dict[tuple[str, str], list[Item]] = {}
    for item in new:
        grouped.setdefault((item.domain, item.type), []).append(item)
    return [
        Group(domain, type_, len(items), tuple(items[:LIST_CAP]))
        for (domain, type_), items in sorted(grouped.items())
    ]


def _scopes(viewer: Viewer, by_scope: dict[str, int]) -> list[str]:
    if viewer.read is None:
        return sorted(by_scope)
    return sorted(viewer.read)


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- the narrative


def _narrative(
    wiki: Wiki, llm: backends.Backend, new_rows: Sequence[Row], replaced: dict[str, Row]
) -> tuple[Narrative, str | None]:
    """Ask the LLM what changed; keep its statements only if every one passes the checks."""
    if not llm.is_llm:
        return Narrative("none", note=f"no narrative: the {llm.name} backend writes none"), None
    evidence_rows = [r for r in new_rows if not r.is_generated]
    if not evidence_rows:
        return Narrative("none", note="no narrative: nothing new was recorded"), None

    budget = int(wiki.settings.get("brief.narrative_budget_tokens", NARRATIVE_BUDGET))
    room = backends.limits(wiki, llm).prompt_room(NARRATIVE_MAX_TOKENS)
    room -= backends.estimate_tokens(render_prompt("brief_system.j2")) + 200  # the template
    budget = max(200, min(budget, room))  # within the model's context window
    blocks: list[str] = []
    evidence: dict[str, Evidence] = {}
    used = 0
    for row in evidence_rows:  # newest first, until the budget is spent
        entry = read_entry(wiki, row)[0]
        block = entry_block(entry)
        for old in entry.supersedes:
            if old in replaced:
                block += f"\nReplaces: {old} ({' '.join(replaced[old].summary.split())})"
        cost = backends.estimate_tokens(block)
        if blocks and used + cost > budget:
            break
        blocks.append(block)
        used += cost
        evidence[entry.id] = evidence_from_entry(entry)
        for old in entry.supersedes:
            if old in replaced and old not in evidence:
                evidence[old] = evidence_from_entry(read_entry(wiki, replaced[old])[0])
    for row in new_rows:  # generated entries may be named, never cited
        if row.is_generated:
            evidence.setdefault(row.id, Evidence(row.id, row.scope, row.origin, row.summary))
    shown = len(blocks)
    prompt = render_prompt(
        "brief_narrative.j2",
        blocks=blocks,
        left_out=len(evidence_rows) - shown,
        most=NARRATIVE_STATEMENTS,
    )
    scope = scope_field(r.scope for r in evidence_rows[:shown])
    try:
        completion = backends.call(
            wiki,
            llm,
            prompt,
            purpose="brief",
            scope=scope,
            system=render_prompt("brief_system.j2"),
            max_tokens=NARRATIVE_MAX_TOKENS,
        )
    except BackendFailed as exc:
        message = f"the {llm.name} backend failed: {exc.message}"
        return Narrative(
            "dropped", note=f"no narrative: {message}", backend=llm.name, model=llm.model
        ), message
    model = completion.model or llm.model
    try:
        statements = _statements(json_object(completion.text))
    except ValueError as exc:
        return Narrative(
            "dropped", note=f"narrative dropped: {exc}", backend=llm.name, model=model
        ), None
    problems: list[CitationProblem] = []
    for statement in statements:
        first = evidence.get(statement.cites[0]) if statement.cites else None
        own_scope = first.scope if first is not None else scope
        problems += check_statements([statement], evidence, scope=own_scope)
    if problems:
        return Narrative(
            "dropped",
            note=f"narrative dropped: it failed the citation checks ({problems[0]})",
            backend=llm.name,
            model=model,
            problems=tuple(problems),
        ), None
    if not statements:
        return Narrative(
            "none", note="no narrative: the model saw nothing worth saying", backend=llm.name
        ), None
    return Narrative("written", tuple(statements), backend=llm.name, model=model), None


def _statements(data: dict[str, Any]) -> list[Statement]:
    raw = data.get("statements")
    if not isinstance(raw, list):
        raise ValueError('the reply has no "statements" list')
    out = []
    for item in raw[:NARRATIVE_STATEMENTS]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError('each statement must be {"text": ..., "cites": [...]}')
        cites = item.get("cites") or []
        if not isinstance(cites, list):
            raise ValueError('"cites" must be a list of entry ids')
        out.append(Statement(" ".join(item["text"].split()), tuple(str(c) for c in cites)))
    return out


# --------------------------------------------------------------------------- the daily job


@dataclass(frozen=True)
class Saved:
    path: str  # relative to the wiki root
    scope: str | None  # with walls: the one scope it covers
    briefing: Briefing

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "scope": self.scope, "briefing": self.briefing.to_dict()}


@dataclass(frozen=True)
class SavedBriefings:
    """What ``brief --save`` wrote: one briefing, or with walls one per scope."""

    saved: tuple[Saved, ...]
    backend: str
    backend_source: str = ""  # where the backend's name came from (set by the Session)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "backend_source": self.backend_source or None,
            "saved": [s.to_dict() for s in self.saved],
        }


def save_briefings(
    wiki: Wiki,
    viewer: Viewer,
    *,
    days: int | None = None,
    backend: backends.Backend | None = None,
) -> SavedBriefings:
    """Write today's briefing to ``briefings/YYYY-MM-DD.md``; with walls (access.yaml), one per
    scope the viewer may read, ``briefings/<scope>/YYYY-MM-DD.md``, each computed as a reader
    of that scope alone."""
    llm = backend or backends.get_backend(wiki)
    today = clock.today().isoformat()
    saved: list[Saved] = []
    if not walls_on(wiki):
        result = brief(wiki, viewer, days=days, backend=llm)
        saved.append(_save(wiki, Path(BRIEFINGS_DIR) / f"{today}.md", None, result))
        return SavedBriefings(tuple(saved), llm.name)
    if viewer.read is None:
        with read_catalog(wiki) as catalog:
            scopes = catalog.scopes()
    else:
        scopes = sorted(viewer.read)
    for scope in scopes:
        one = Viewer(
            name=viewer.name,
            read=frozenset({scope}),
            write=frozenset({scope}) if viewer.can_write(scope) else frozenset(),
            walls=True,
        )
        result = brief(wiki, one, days=days, backend=llm)
        result = dataclasses.replace(result, reader="")  # for everyone of the scope, not one
        saved.append(_save(wiki, Path(BRIEFINGS_DIR) / scope / f"{today}.md", scope, result))
    return SavedBriefings(tuple(saved), llm.name)


def _save(wiki: Wiki, rel: Path, scope: str | None, briefing: Briefing) -> Saved:
    path = wiki.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, briefing.markdown())
    return Saved(rel.as_posix(), scope, briefing)

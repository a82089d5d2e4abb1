"""The import run: a folder of records in, decision entries out, and a report of what it did.

Order of work: list the files (``recursive``: sub-folders too), skip what is not a record by its
content (templates, indexes, READMEs without a decision), parse each record, give each a date
(:mod:`llm_wiki.adr.dates`), resolve its links (:mod:`llm_wiki.adr.links`), compare with what
earlier imports wrote, and write, oldest first, what is new or changed.

Following a folder: an imported entry's ``sources`` is ``adr:<repository>/<path>`` (the
repository's origin URL as host/owner/name, else its folder name; the path inside it), so two
repositories never collide. Importing again writes nothing for an unchanged record (nor for a
copy of it found elsewhere: same file name, same text); a record whose text or links changed
gets a new entry that supersedes the earlier import, with the change at the end of its body.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llm_wiki.progress as progress
from llm_wiki.access import Viewer, require_write
from llm_wiki.adr.dates import (
    date_in_name,
    git_added,
    majority_convention,
    mtime_date,
    read_date,
    remote_name,
    work_tree,
)
from llm_wiki.adr.links import Resolver, Statement
from llm_wiki.adr.markdown import drop_comments, sections
from llm_wiki.adr.parse import Record, is_index, is_template, parse_record, read_meta, summary_of
from llm_wiki.catalog import read_catalog
from llm_wiki.entries import (
    NAME_RE,
    RELATION_INVERSE,
    Entry,
    Relation,
    decode_text,
    slugify,
)
from llm_wiki.errors import InvalidInput
from llm_wiki.reads import read_entry
from llm_wiki.wiki import Wiki
from llm_wiki.write import write_entry

SUMMARY_LIMIT = 280
CHANGES_HEADING = "## Changes since the earlier import"
_CHANGES_MARK = "\n\n---\n\n" + CHANGES_HEADING
_SKIP_DIRS = frozenset({"node_modules", ".git", ".github", "assets", "images", "img"})


@dataclass(frozen=True)
class Imported:
    file: str  # path inside the folder
    id: str
    action: str  # created | updated | unchanged | would-create | would-update
    supersedes: tuple[str, ...]
    date: str
    date_source: str
    note: str = ""

    @property
    def created(self) -> bool:
        return self.action in ("created", "updated")

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "id": self.id,
            "action": self.action,
            "created": self.created,
            "supersedes": list(self.supersedes),
            "date": self.date,
            "date_source": self.date_source,
            "note": self.note,
        }


@dataclass(frozen=True)
class ImportResult:
    domain: str
    folder: str
    repository: str
    dry_run: bool
    records: tuple[Imported, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (file, why)
    links: dict[str, int] = field(default_factory=dict)
    refused: tuple[dict[str, str], ...] = ()
    alternatives: dict[str, int] = field(default_factory=dict)
    dates: dict[str, int] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def created(self) -> int:
        return sum(1 for r in self.records if r.action == "created")

    def count(self, action: str) -> int:
        return sum(1 for r in self.records if r.action == action)

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "folder": self.folder,
            "repository": self.repository,
            "dry_run": self.dry_run,
            "found": len(self.records) + len(self.skipped),
            "imported": self.count("created") + self.count("updated"),
            "created": self.count("created"),
            "updated": self.count("updated"),
            "unchanged": self.count("unchanged"),
            "would_create": self.count("would-create"),
            "would_update": self.count("would-update"),
            "skipped": [{"file": f, "why": why} for f, why in self.skipped],
            "links": dict(self.links),
            "refused": list(self.refused),
            "alternatives": dict(self.alternatives),
            "dates": dict(self.dates),
            "records": [r.to_dict() for r in self.records],
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- reading the folder


def _files(folder: Path, recursive: bool) -> list[Path]:
    if not recursive:
        return sorted(p for p in folder.glob("*.md") if p.is_file())
    out = []
    for path in sorted(folder.rglob("*.md")):
        parts = path.relative_to(folder).parts[:-1]
        if any(p.startswith(".") or p.lower() in _SKIP_DIRS for p in parts):
            continue
        if path.is_file():
            out.append(path)
    return out


def read_records(
    folder: Path, recursive: bool = False
) -> tuple[list[Record], list[tuple[str, str]]]:
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder; pass the folder holding the ADR files.")
    records: list[Record] = []
    skipped: list[tuple[str, str]] = []
    for path in _files(folder, recursive):
        rel = path.relative_to(folder).as_posix()
        text = decode_text(path.read_bytes(), str(path))
        why = _not_a_record(path, text)
        if why:
            skipped.append((rel, why))
            continue
        records.append(parse_record(path, rel, text))
    if not records:
        hint = "" if recursive else " (records in sub-folders? add --recursive)"
        raise InvalidInput(f"{folder} holds no .md decision records{hint}; check the path.")
    return records, skipped


def _not_a_record(path: Path, text: str) -> str:
    """Why a file is not a record ("" when it is one), judged by its content."""
    meta, body = read_meta(text, path.name)
    if not drop_comments(body).strip():
        return "empty"
    secs = sections(body)
    title = next((s.title for s in secs if s.level <= 2), "")
    if is_template(meta, title, body, path.stem):
        return "a template (placeholders where a record has its words)"
    listed = is_index(body)
    if listed:
        return f"an index (a list of links to {listed} files)"
    if meta.get("has_children"):
        return "an index (a site's section page, listing its children)"
    if path.stem.lower() in ("readme", "index") and not any(
        re.fullmatch(r"(?i)\W*(status|decision|decision outcome|context.*)\W*", s.title)
        for s in secs
    ):
        return "not a record (no status, context or decision)"
    return ""


# --------------------------------------------------------------------------- dates


def _date_records(records: list[Record], git: dict[Path, str], warnings: list[str]) -> None:
    convention, dmy, mdy = majority_convention([r.date_text for r in records])
    order = "dd/mm" if convention == "dmy" else "mm/dd"
    for record in records:
        found = read_date(record.date_text, convention) if record.date_text else None
        if found:
            record.date, record.date_source = found.iso, "record"
            if found.ambiguous:
                warnings.append(
                    f"{record.rel}: {record.date_text.strip()!r} reads both ways; read as "
                    f"{order} ({found.iso}), as {dmy} dd/mm and {mdy} mm/dd dates in the folder "
                    "that read one way only"
                )
            continue
        if record.date_text:
            warnings.append(f"{record.rel}: date {record.date_text.strip()!r} is unreadable")
        if day := git.get(record.path.resolve()):
            record.date, record.date_source = day, "git"
        elif day := date_in_name(record.name):
            record.date, record.date_source = day, "file-name"
        else:
            record.date, record.date_source = mtime_date(record.path), "mtime"


# --------------------------------------------------------------------------- links


@dataclass
class Links:
    """Resolved links: (old, new) supersession pairs and (from, kind, to) relations."""

    pairs: set[tuple[str, str]] = field(default_factory=set)
    relations: set[tuple[str, str, str]] = field(default_factory=set)
    refused: list[dict[str, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


def _resolve_links(records: list[Record], root: Path, warnings: list[str]) -> Links:
    by_path = {r.path.resolve(): r for r in records}
    resolver = Resolver(list(by_path), {p: r.number for p, r in by_path.items()}, root)
    links = Links()
    superseded_by: dict[str, list[str]] = {}
    for record in records:
        for why, words in record.refused:
            links.refused.append(
                {"file": record.rel, "kind": why, "link": words[:200], "why": _WHY[why]}
            )
        seen: set[tuple[str, str]] = set()
        for stmt in record.statements + record.cites:
            target = resolver.resolve(stmt.ref, record.path)
            if target.path is None:
                if stmt.kind == "cites" and not _looks_like_record(stmt.ref, record):
                    continue  # a plain link to another page, not to a record: not a link at all
                if stmt.ref.startswith("url:") and (
                    stmt.kind == "cites" or not stmt.ref.lower().split("#")[0].endswith(".md")
                ):
                    continue  # a link to a web page, not to a record
                links.refused.append(
                    {
                        "file": record.rel,
                        "kind": stmt.kind,
                        "link": f"{stmt.label} -> {stmt.ref.split(':', 1)[1]}",
                        "why": target.why,
                    }
                )
                continue
            other = by_path[target.path]
            if (stmt.kind, other.rel) in seen:
                continue
            seen.add((stmt.kind, other.rel))
            if stmt.kind == "superseded-by":
                links.pairs.add((record.rel, other.rel))
                superseded_by.setdefault(record.rel, []).append(other.rel)
            elif stmt.kind == "supersedes":
                links.pairs.add((other.rel, record.rel))
            elif stmt.kind.endswith("-by"):
                links.relations.add((other.rel, RELATION_INVERSE[stmt.kind], record.rel))
            elif stmt.kind == "relates-to" and _points_to_replacement(stmt, record, other):
                links.pairs.add((record.rel, other.rel))
                superseded_by.setdefault(record.rel, []).append(other.rel)
            elif stmt.kind == "relates-to":
                a, b = sorted((record.rel, other.rel))
                links.relations.add((a, "relates-to", b))
            else:
                links.relations.add((record.rel, stmt.kind, other.rel))
    # a record that says only part of it was superseded keeps standing: the partial word wins
    partial = {
        frozenset((a, b))
        for a, k, b in links.relations
        if k.startswith("partly-superseded") or k == "partly-supersedes"
    }
    for old, new in list(links.pairs):
        if frozenset((old, new)) in partial:
            links.pairs.discard((old, new))
            superseded_by[old] = [n for n in superseded_by.get(old, []) if n != new]
    # a plain citation where a typed link already joins the two records says nothing more
    typed = {frozenset((a, b)) for a, k, b in links.relations if k != "cites"}
    typed |= {frozenset(p) for p in links.pairs}
    links.relations = {
        (a, k, b) for a, k, b in links.relations if k != "cites" or frozenset((a, b)) not in typed
    }
    cites = {(a, b) for a, k, b in links.relations if k == "cites"}
    links.relations = {
        (a, k, b) for a, k, b in links.relations if k != "cites" or (b, a) not in cites or a < b
    }
    links.counts["supersedes"] = len(links.pairs)
    for _, kind, _ in links.relations:
        links.counts[kind] += 1
    by_rel = {r.rel: r for r in records}
    for old, new in sorted(links.pairs):
        o, n = by_rel[old], by_rel[new]
        if n.date < o.date:
            warnings.append(
                f"{new} ({n.date}) supersedes {old} ({o.date}), which is newer; kept as the "
                "records state it"
            )
    for record in records:
        if record.status == "superseded":
            if superseded_by.get(record.rel) or any(old == record.rel for old, _ in links.pairs):
                record.status = "active"  # superseded is derived from the newer entry
            else:
                record.status = "deprecated"
                warnings.append(
                    f"{record.rel}: says it is superseded but names no record found in the "
                    "folder; imported as deprecated"
                )
    return links


def _points_to_replacement(stmt: Statement, record: Record, other: Record) -> bool:
    """A record no longer in force whose status names a later record, with no word for how
    ("Rejected (see [019](019-Shared-Ingress-Controllers.md))", "Deprecated, see ADR-12",
    "Superseded (see 0031)"), is replaced by it: the status sends the reader there instead. A
    status naming an earlier record ("Rejected: ADR-3 already covers it") says no such thing.
    So is a record whose note under its status says the decision is being left for a later one
    (:func:`llm_wiki.adr.links.status_notes`). A status that says how ("See also", "Related
    to") names a relation, not a replacement."""
    ended = stmt.where == "status-link" and record.status in (
        "rejected",
        "deprecated",
        "superseded",
    )
    if not ended and stmt.where != "status-note":
        return False
    if other.date != record.date:
        return bool(other.date and record.date) and other.date > record.date
    return other.number is not None and record.number is not None and other.number > record.number


def _looks_like_record(ref: str, record: Record) -> bool:
    """A plain link names a record when it points into the record's own folder, or at a file
    named the way records are (a number or a date first)."""
    target = ref.split(":", 1)[1].split("#", 1)[0]
    if "/" not in target.lstrip("./"):
        return True
    return bool(re.match(r"^(?:m?adr[-_]?)?\d", target.rsplit("/", 1)[-1], re.I))


_WHY = {
    "hypothetical": "the sentence only supposes it (if/unless/would …): no link",
    "placeholder": "a template placeholder, not a link",
}


def _oldest_first(
    records: list[Record], replaces: dict[str, set[str]], warnings: list[str]
) -> list[Record]:
    """By date (then path), but every record after the records it replaces."""
    by_rel = {r.rel: r for r in records}
    done: set[str] = set()
    visiting: set[str] = set()
    out: list[Record] = []

    def place(record: Record) -> None:
        if record.rel in done:
            return
        visiting.add(record.rel)
        for old in sorted(replaces[record.rel], key=lambda n: (by_rel[n].date, n)):
            if old in visiting:
                warnings.append(f"{record.rel} and {old} supersede each other; link dropped")
                replaces[record.rel].discard(old)
                continue
            place(by_rel[old])
        visiting.discard(record.rel)
        done.add(record.rel)
        out.append(record)

    for record in sorted(records, key=lambda r: (r.date, r.rel)):
        place(record)
    return out


# --------------------------------------------------------------------------- earlier imports


@dataclass(frozen=True)
class Earlier:
    id: str
    body: str
    supersedes_sources: frozenset[str]  # sources of the records its entry supersedes
    supersedes: frozenset[str]  # the ids its entry supersedes


def _earlier_imports(wiki: Wiki, viewer: Viewer, domain: str, scope: str) -> dict[str, Earlier]:
    """source -> the newest entry imported from it into this domain and scope (old
    ``adr:<file name>`` sources too)."""
    with read_catalog(wiki) as catalog:
        rows = list(catalog.rows(viewer, domain=domain, scope=scope, type="decision"))
    source_of = {r.id: next((s for s in r.sources if s.startswith("adr:")), "") for r in rows}
    newest: dict[str, Any] = {}
    for row in rows:
        source = source_of[row.id]
        if not source:
            continue
        replaced_by_same = any(source_of.get(n) == source for n in row.superseded_by)
        if not replaced_by_same:
            newest[source] = row
    out = {}
    for source, row in newest.items():
        entry, _ = read_entry(wiki, row)
        olds = frozenset(source_of.get(o, "") for o in row.supersedes) - {"", source}
        out[source] = Earlier(row.id, entry.body, olds, frozenset(row.supersedes))
    return out


def _record_text(body: str) -> str:
    return body.split(_CHANGES_MARK, 1)[0].strip("\n")


def _changes(old: str, new: str, links_note: str) -> str:
    lines = [CHANGES_HEADING, ""]
    diff = [
        d
        for d in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
        if d[:1] in "+-" and not d.startswith(("+++", "---")) and d[1:].strip()
    ]
    if diff:
        lines.append("The record changed:")
        lines.append("")
        lines += [f"    {d}" for d in diff[:12]]
        if len(diff) > 12:
            lines.append(f"    … and {len(diff) - 12} more changed lines")
    if links_note:
        lines += ["", links_note]
    return "\n".join(lines)


# --------------------------------------------------------------------------- the run


def import_adr(
    wiki: Wiki,
    folder: str | Path,
    *,
    viewer: Viewer,
    domain: str | None = None,
    scope: str | None = None,
    recursive: bool = False,
    dry_run: bool = False,
) -> ImportResult:
    """Import the records of ``folder`` as decision entries (see the package doc) into ``scope``
    (default: settings.yaml ``default_scope``), which the reader must be allowed to write: a
    refused import writes nothing. ``dry_run``: report what would change, write nothing."""
    folder = Path(folder)
    domain = domain or slugify(folder.resolve().name, 63).strip("-") or "adr"
    if not NAME_RE.match(domain):
        raise InvalidInput(
            f"--domain {domain!r} must be lowercase letters, digits and hyphens, e.g. platform."
        )
    scope = scope or wiki.settings.default_scope
    if not NAME_RE.match(scope):
        raise InvalidInput(
            f"--scope {scope!r} must be lowercase letters, digits and hyphens, e.g. shared."
        )
    require_write(viewer, scope)
    records, skipped = read_records(folder, recursive)
    warnings: list[str] = []
    top = work_tree(folder)
    if top is not None:
        repository, base = remote_name(top), top
        git = git_added(top, folder)
    else:
        base, git = _named_folder(folder.resolve()), {}
        repository = base.name
    _date_records(records, git, warnings)
    links = _resolve_links(records, folder, warnings)
    shared = _shared_aliases(records, warnings)
    source = {
        r.rel: f"adr:{repository}/{r.path.resolve().relative_to(base).as_posix()}" for r in records
    }

    replaces: dict[str, set[str]] = {r.rel: set() for r in records}
    for old, new in links.pairs:
        replaces[new].add(old)
    ordered = _oldest_first(records, replaces, warnings)
    earlier = _earlier_imports(wiki, viewer, domain, scope)
    by_name: dict[str, list[Earlier]] = {}
    for src, got in earlier.items():
        by_name.setdefault(_base(src), []).append(got)

    ids: dict[str, str] = {}
    results: list[Imported] = []
    shown = progress.current()
    shown.task("import-adr", total=len(ordered))
    for record in shown.each(ordered, lambda r: r.rel):
        src = source[record.rel]
        prev = earlier.get(src)
        if prev is None:  # an older import (adr:<file name>), or a copy of the folder elsewhere
            same_text = [
                e
                for e in by_name.get(record.name.lower(), [])
                if _record_text(e.body) == record.text
            ]
            prev = same_text[0] if same_text else None
            if prev is None and f"adr:{record.name}" in earlier:
                prev = earlier[f"adr:{record.name}"]
        old_names = {_base(source[o]) for o in replaces[record.rel]}
        olds = tuple(ids[o] for o in sorted(replaces[record.rel]) if o in ids)
        if prev is not None:
            # Unchanged only if it still replaces what it replaced: the same record names, and
            # the same entries (a replaced record edited since has a new entry, which this
            # record's entry must supersede too, or the edited one would be current again).
            text_same = _record_text(prev.body) == record.text
            if (
                text_same
                and old_names <= {_base(s) for s in prev.supersedes_sources}
                and set(olds) <= prev.supersedes
            ):
                ids[record.rel] = prev.id
                results.append(
                    Imported(record.rel, prev.id, "unchanged", (), record.date, record.date_source)
                )
                continue
        note = ""
        body = record.text
        supersedes = olds
        if prev is not None:
            names = ", ".join(sorted(o for o in replaces[record.rel]))
            links_note = f"It supersedes {names}." if names else ""
            body = (
                record.text
                + _CHANGES_MARK[: -len(CHANGES_HEADING)]
                + _changes(_record_text(prev.body), record.text, links_note)
            )
            supersedes = tuple(dict.fromkeys((prev.id, *olds)))
            note = f"changed since {prev.id}"
        relates = []
        for a, kind, b in sorted(links.relations):
            if a == record.rel and b in ids:
                relates.append(Relation(ids[b], kind))
            elif b == record.rel and a in ids:
                relates.append(Relation(ids[a], RELATION_INVERSE[kind]))
        entry = _entry(record, domain, scope, supersedes, tuple(relates), src, body, shared)
        if dry_run:
            action = "would-update" if prev is not None else "would-create"
            ids[record.rel] = f"(new: {record.rel})"
            results.append(
                Imported(record.rel, "", action, supersedes, record.date, record.date_source, note)
            )
            continue
        written = write_entry(wiki, entry, viewer=viewer, title=record.title)
        ids[record.rel] = written.id
        action = ("updated" if prev is not None else "created") if written.created else "unchanged"
        results.append(
            Imported(
                record.rel, written.id, action, supersedes, record.date, record.date_source, note
            )
        )
    real = sum(len(r.alternatives) - r.placeholders for r in records)
    return ImportResult(
        domain=domain,
        folder=str(folder),
        repository=repository,
        dry_run=dry_run,
        records=tuple(results),
        skipped=tuple(skipped),
        links=dict(sorted(links.counts.items())),
        refused=tuple(links.refused),
        alternatives={"with_reason": real, "placeholder": sum(r.placeholders for r in records)},
        dates=dict(sorted(Counter(r.date_source for r in records).items())),
        warnings=tuple(warnings),
    )


_GENERIC = frozenset(
    "adr adrs decisions decision-records architecture-decision-records architecture-decisions "
    "doc docs madr architecture records".split()
)


def _shared_aliases(records: list[Record], warnings: list[str]) -> set[str]:
    """Aliases two records would both get (a reused number: "ADR-0009" for two files): given
    to neither, since a reader citing one could be sent to the other; each is warned about."""
    holders: dict[str, list[str]] = {}
    for record in records:
        for alias in {a.lower() for a in record.aliases}:
            holders.setdefault(alias, []).append(record.rel)
    shared = {alias for alias, rels in holders.items() if len(rels) > 1}
    numbers = {tuple(sorted(holders[a])) for a in shared}
    for rels in sorted(numbers):
        warnings.append(f"{' and '.join(rels)} share a number: its aliases go to neither")
    return shared


def _named_folder(folder: Path) -> Path:
    """The folder that names records outside git: the first from ``folder`` up whose name says
    whose records they are (``ours/docs/adr`` -> ``ours``, so two teams' ``adr`` differ)."""
    for candidate in (folder, *folder.parents):
        if candidate.name and candidate.name.lower() not in _GENERIC:
            return candidate
    return folder


def _base(source: str) -> str:
    """``adr:github.com/o/r/docs/adr/0001-x.md`` -> ``0001-x.md`` (old ``adr:0001-x.md`` too)."""
    return source.split(":", 1)[-1].rsplit("/", 1)[-1].lower()


def _entry(
    record: Record,
    domain: str,
    scope: str,
    supersedes: tuple[str, ...],
    relates: tuple[Relation, ...],
    source: str,
    body: str,
    shared: AbstractSet[str] = frozenset(),  # aliases two records would share: left out
) -> Entry:
    actors = tuple(dict.fromkeys(name for name, _ in record.roles))
    roles: dict[str, list[str]] = {}
    for name, role in record.roles:
        roles.setdefault(role, [])
        if name not in roles[role]:
            roles[role].append(name)
    return Entry(
        id="",
        type="decision",
        date=record.date,
        date_source=record.date_source,
        summary=summary_of(record, SUMMARY_LIMIT),
        domain=domain,
        status=record.status,
        scope=scope,
        origin="imported",
        actors=actors,
        roles=tuple((role, tuple(names)) for role, names in roles.items()),
        tags=tuple(t for t in (slugify(t, 40) for t in record.tags) if t != "entry"),
        supersedes=supersedes,
        relates=relates,
        alternatives_considered=record.alternatives,
        aliases=tuple(a for a in record.aliases if a.lower() not in shared),
        sources=(source,),
        body=body,
    )

"""What one reader may see of a wiki, gathered once per site build.

The only module of the site that reads the wiki: every other part renders what a :class:`View`
holds, so the walls are applied here, once, by the reader's :class:`~llm_wiki.access.Viewer`.
Rows come from the catalog for that viewer; relations (what supersedes, cites or is cited by what)
are computed among the visible rows only, so a hidden entry looks exactly like an absent one; the
machinery's records (log.md, the LLM call log, verify, failures, archives) are filtered by the
same rules as the commands that print them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import llm_wiki.store as store
from llm_wiki.access import Viewer, split_scopes
from llm_wiki.catalog import Row, read_catalog
from llm_wiki.entries import ID_RE, decode_text, split_frontmatter
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.reads import read_entry, read_entry_bytes
from llm_wiki.verify import verify as verify_wiki
from llm_wiki.wiki import LINT_FINDINGS, Wiki

RAW_SOURCE_RE = re.compile(r"^(raw/[0-9a-f]{64}(?:\.[A-Za-z0-9]+)?)(?:#L(\d+)(?:-L(\d+))?)?\Z")


class LogItem(NamedTuple):
    """One line of log.md the reader may see."""

    time: str
    op: str
    subject: str
    fields: tuple[tuple[str, str], ...]

    @property
    def month(self) -> str:
        return self.time[:7]


@dataclass
class View:
    """One reader's view of one wiki: rows, relations and records, all already filtered."""

    wiki: Wiki
    viewer: Viewer
    rows: list[Row]  # visible, newest first (the catalog's order)
    by_id: dict[str, Row] = field(init=False)
    supersedes: dict[str, tuple[str, ...]] = field(init=False)
    superseded_by: dict[str, tuple[str, ...]] = field(init=False)
    cites: dict[str, tuple[str, ...]] = field(init=False)
    cited_by: dict[str, tuple[str, ...]] = field(init=False)
    # log.md's lines (see :func:`digest`), when the caller already holds them
    lines: list[Line] | None = None
    # entry path -> its file's bytes as this build's verify read them (see HashCache.read): a
    # body is shown from those rather than read again
    preread: dict[str, bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = visible = {r.id: r for r in self.rows}
        # (most rows relate to nothing: the empty tuple is shared, not built per row; one pass,
        # each field read once)
        older: dict[str, tuple[str, ...]] = {}
        newer: dict[str, tuple[str, ...]] = {}
        cites: dict[str, tuple[str, ...]] = {}
        cited: dict[str, list[str]] = {}
        self.supersedes, self.superseded_by, self.cites = older, newer, cites
        for r in self.rows:
            i, olds, news, sources = r.id, r.supersedes, r.superseded_by, r.sources
            older[i] = tuple([o for o in olds if o in visible]) if olds else ()
            newer[i] = tuple([n for n in news if n in visible]) if news else ()
            if sources:
                cites[i] = shown = tuple([s for s in sources if s in visible])
                for s in shown:
                    cited.setdefault(s, []).append(i)
            else:
                cites[i] = ()
        self.cited_by = {k: tuple(sorted(v)) for k, v in cited.items()}

    # -- entries
    def status(self, row: Row) -> str:
        """The effective status among what this reader sees."""
        return "superseded" if self.superseded_by.get(row.id) else row.status

    @functools.cached_property
    def resolved_by(self) -> dict[str, tuple[str, ...]]:
        """Incident id -> the visible non-generated entries whose ``resolves`` name it (what
        closes it: see open_incidents)."""
        out: dict[str, list[str]] = {}
        for r in self.rows:
            if r.resolves and not r.is_generated:
                for i in r.resolves:
                    if i in self.by_id:
                        out.setdefault(i, []).append(r.id)
        return {k: tuple(v) for k, v in out.items()}

    @functools.cached_property
    def open_incidents(self) -> frozenset[str]:
        """Incidents not superseded and not named in a non-generated entry's ``resolves`` (the
        briefing's rule), among the visible entries."""
        resolved = {i for r in self.rows if r.resolves and not r.is_generated for i in r.resolves}
        return frozenset(
            r.id
            for r in self.rows
            if r.type == "incident" and self.status(r) == "active" and r.id not in resolved
        )

    def body(self, row: Row, last: bool = False) -> str:
        """The entry's markdown body, read from its file or archive (frontmatter not parsed:
        the catalog row already holds it); the bytes verify read of it when it did (``last``:
        the last time they are asked for, so they are let go)."""
        data = None
        if not row.archive:
            data = self.preread.pop(row.path, None) if last else self.preread.get(row.path)
        try:
            if data is None:
                data = read_entry_bytes(self.wiki, row.path, row.archive, row.archive_at)
        except FileNotFoundError:  # archived since the row was read
            try:
                return read_entry(self.wiki, row)[0].body
            except WikiError as exc:
                return f"({exc.message})"
        except WikiError as exc:
            return f"({exc.message})"
        try:
            return split_frontmatter(decode_text(data, row.path))[1].strip("\n")
        except InvalidInput:
            return f"({row.path} no longer reads as an entry; run `llm-wiki verify`.)"

    def extra(self, row: Row, key: str) -> Any:
        """One extra frontmatter field (syntheses record their method); parses the file."""
        try:
            return read_entry(self.wiki, row)[0].get_extra(key)
        except WikiError:
            return None

    def raw_text(self, name: str) -> str | None:
        """A raw source's text (``raw/<sha256>.<ext>``), or None if it is not there."""
        try:
            data = (self.wiki.root / name).read_bytes()
        except OSError:
            return None
        return data.decode("utf-8", "replace")

    # -- the machinery
    @functools.cached_property
    def verify(self) -> Any:
        return verify_wiki(self.wiki, self.viewer)

    @functools.cached_property
    def tamper(self) -> dict[str, str]:
        """Entry id -> the kind of verify finding about it (absent: verify holds)."""
        return {f.id: f.kind for f in self.verify.findings if f.id}

    @functools.cached_property
    def log(self) -> list[LogItem]:
        """The lines of log.md this reader may see, oldest first: a line about an entry only
        if the entry is visible (or its logged scope is readable); any other line only if the
        reader may read every scope it names (none named: only a reader who sees everything)."""
        out = []
        lines = self.lines if self.lines is not None else all_lines(self.wiki)
        by_id, sees, everything = self.by_id, self.viewer.sees, self.viewer.sees_all
        match, item = ID_RE.match, LogItem
        if everything:  # the same rule, for a reader who sees every scope: one test a line
            new = tuple.__new__
            for line in lines:
                op, subject = line[1], line[2]
                if (
                    (op == "write" or op == "archive")
                    and subject
                    and not line[4]
                    and subject not in by_id
                    and match(subject)
                ):
                    continue  # an entry that is gone, whose line names no scope
                out.append(new(item, line[:4]))
            return out
        for time, op, subject, fields, scope in lines:
            if (op == "write" or op == "archive") and subject and match(subject):
                row = by_id.get(subject)
                if row is not None:
                    if everything or sees([row.scope]):
                        out.append(item(time, op, subject, fields))
                    continue
                if not scope:
                    continue  # an entry this reader cannot see (or that is gone)
            if everything or sees(split_scopes(scope)):
                out.append(item(time, op, subject, fields))
        return out

    @functools.cached_property
    def llm(self) -> dict[str, Any]:
        from llm_wiki.stats import llm_usage  # deferred: only the inspector shows it

        return llm_usage(self.wiki, self.viewer)

    @functools.cached_property
    def failures(self) -> list[Any]:
        from llm_wiki.failures import failure_records  # deferred: only the inspector shows them

        return [r for r in failure_records(self.wiki) if self.viewer.can_read(r.scope)]

    @functools.cached_property
    def lint_findings(self) -> list[dict[str, Any]]:
        """The latest `llm-wiki lint` findings this reader may see: those of the runs whose
        whole view this reader may read (a finding can rest on any entry of its run's view, see
        lint._save_findings), naming only visible entries; each once, errors first."""
        import json  # deferred: only the inspector shows them

        try:
            data = json.loads(self.wiki.state_path(LINT_FINDINGS).read_text(encoding="utf-8"))
            runs = data["runs"]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        seen: dict[tuple[Any, ...], dict[str, Any]] = {}
        for run in runs.values() if isinstance(runs, dict) else ():
            scopes = run.get("scopes", []) if isinstance(run, dict) else []
            if scopes is None:
                if not self.viewer.sees_all:
                    continue
            elif not isinstance(scopes, list) or not all(
                isinstance(s, str) and self.viewer.can_read(s) for s in scopes
            ):
                continue
            for f in run.get("findings") or ():
                if not isinstance(f, dict) or not isinstance(f.get("ids"), list):
                    continue
                ids = [i for i in f["ids"] if isinstance(i, str)]
                if not all(i in self.by_id for i in ids):
                    continue
                item = {k: str(f.get(k, "")) for k in ("level", "check", "message")}
                seen.setdefault(
                    (item["level"], item["check"], *ids, item["message"]), item | {"ids": ids}
                )
        order = {"error": 0, "warning": 1, "info": 2}
        return [seen[k] for k in sorted(seen, key=lambda k: (order.get(k[0], 3), k))]

    @functools.cached_property
    def domain_states(self) -> list[Any]:
        """Consolidation state of each (scope, domain) this reader may write."""
        from llm_wiki.domain_state import domain_states  # deferred: only the inspector shows them

        try:
            return domain_states(self.wiki, self.viewer, self.rows)
        except WikiError:
            return []

    def archive_size(self, name: str) -> int | None:
        """An archive file's size, only for a reader who sees every scope (a shared archive's
        size would say how much of it is hidden)."""
        if not self.viewer.sees_all:
            return None
        try:
            return (self.wiki.root / name).stat().st_size
        except OSError:
            return None

    @functools.cached_property
    def settings(self) -> list[tuple[str, str]]:
        """settings.yaml in force, flattened to dotted keys; a scope name the reader may not
        read is left out."""
        out: list[tuple[str, str]] = []

        def walk(prefix: str, node: Any) -> None:
            if isinstance(node, dict):
                for key in sorted(node, key=str):
                    walk(f"{prefix}{key}.", node[key])
                return
            if node is None or isinstance(node, bool):  # as YAML writes them
                text = "null" if node is None else str(node).lower()
            else:
                text = str(node)
            out.append((prefix[:-1], text))

        try:
            data = self.wiki.settings.data
        except WikiError:
            data = {}
        walk("", data)
        scope = self.wiki.settings.default_scope if data else ""
        if scope and not self.viewer.can_read(scope):
            out = [(k, v) for k, v in out if k != "default_scope"]
        return out


# A line of log.md as a site build keeps it: time, op, subject, its fields as sorted (key, value)
# pairs, and its scope field ("" when it names none).
Line = tuple[str, str, str, tuple[tuple[str, str], ...], str]


def digest(line: Any) -> Line:
    """A parsed log line (:class:`~llm_wiki.store.LogLine`) as a :data:`Line`."""
    fields = line.fields
    pairs = tuple(sorted((k, str(v)) for k, v in fields.items()))
    return (line.time, line.op, line.subject, pairs, str(fields.get("scope") or ""))


def all_lines(wiki: Wiki, start: int = 0) -> list[Line]:
    """log.md's complete lines from byte ``start``."""
    return [digest(line) for _, line in store.read_log(wiki, start)]


def load_view(wiki: Wiki, viewer: Viewer) -> View:
    with read_catalog(wiki) as catalog:
        rows = catalog.rows(viewer)
    return View(wiki, viewer, rows)


def raw_sources(sources: Iterable[str]) -> Iterator[tuple[str, int | None, int | None]]:
    """(raw name, first line, last line) of each ``raw/…#La-Lb`` source."""
    for source in sources:
        m = RAW_SOURCE_RE.match(source)
        if m:
            first = int(m.group(2)) if m.group(2) else None
            last = int(m.group(3)) if m.group(3) else first
            yield m.group(1), first, last

"""synthesis-failures.md: the append-only record of syntheses that failed their checks.

``llm-wiki consolidate`` appends a record when a domain's synthesis fails its citation checks
twice, or its backend fails (:func:`record_failure`); the previous synthesis stays current and the
domain stays out of date. ``brief`` reports the records of the period, and consolidate reads when
each domain last failed (:func:`failure_records`). With walls, each scope has its own file under
``synthesis-failures/``, since nothing stored may mix scopes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import llm_wiki.clock as clock
import llm_wiki.store as store
from llm_wiki.access import walls_on
from llm_wiki.backends import one_line
from llm_wiki.wiki import Wiki

if TYPE_CHECKING:  # (citations compiles twenty regexes: the site's inspector needs none)
    from llm_wiki.citations import CitationProblem

FAILURES_FILE = "synthesis-failures.md"


def failures_path(wiki: Wiki, scope: str) -> Path:
    """synthesis-failures.md; with walls (access.yaml), one file per scope."""
    if walls_on(wiki):
        return wiki.root / "synthesis-failures" / f"{scope}.md"
    return wiki.root / FAILURES_FILE


_FAILURES_HEAD = """# Synthesis failures

Append-only, written by `llm-wiki consolidate`: each record is a synthesis that failed its checks
(or a backend that failed), with the reason and the offending statement. The previous synthesis
stayed current and the domain stays out of date until a run succeeds.
"""


def record_failure(
    wiki: Wiki,
    scope: str,
    domain: str,
    problems: Sequence[CitationProblem],
    *,
    entries: int,
    fingerprint: str,
    attempts: int,
    method: str,
) -> None:
    """Append one dated record to the failures file (under the write lock): which (scope, domain)
    failed, on how many active entries (``entries``, their ``fingerprint``), after how many
    ``attempts`` with which ``method`` (0 attempts: the backend itself failed), and why."""
    lines = [
        "",
        f"## {clock.stamp()} {scope}/{domain}",
        "",
        f"- scope: {scope}",
        f"- domain: {domain}",
        f"- input: {entries} active entries, fingerprint {fingerprint[:16]}",
        f"- attempts: {attempts} ({method})" if attempts else f"- backend: {method}",
    ]
    for problem in problems[:20]:
        lines.append(f"- reason: {problem.kind}: {one_line(problem.detail, 400)}")
        if problem.statement:
            lines.append(f'  statement: "{one_line(problem.statement, 400)}"')
    if len(problems) > 20:
        lines.append(f"- … and {len(problems) - 20} more")
    path = failures_path(wiki, scope)
    with store.locked(wiki):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if os.fstat(fd).st_size == 0:
                os.write(fd, _FAILURES_HEAD.encode())
            os.write(fd, ("\n".join(lines) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)


_RECORD_RE = re.compile(r"^## (\d{4}-\d\d-\d\dT\S+) (\S+)/(\S+)$", re.M)
_REASON_RE = re.compile(r"^- reason: (.*)$", re.M)


@dataclass(frozen=True)
class FailureRecord:
    """One record of the failures file: when, which (scope, domain), and why."""

    time: str
    scope: str
    domain: str
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "scope": self.scope,
            "domain": self.domain,
            "reasons": list(self.reasons),
        }


def failure_records(wiki: Wiki, scopes: Iterable[str] | None = None) -> list[FailureRecord]:
    """Every recorded failure (of ``scopes`` only, when given), oldest first."""
    paths = [wiki.root / FAILURES_FILE]
    if (wiki.root / "synthesis-failures").is_dir():
        paths += sorted((wiki.root / "synthesis-failures").glob("*.md"))
    wanted = None if scopes is None else set(scopes)
    records = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        heads = list(_RECORD_RE.finditer(text))
        for i, head in enumerate(heads):
            stamp, scope, domain = head.groups()
            if wanted is not None and scope not in wanted:
                continue
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            reasons = tuple(_REASON_RE.findall(text, head.end(), end))
            records.append(FailureRecord(stamp, scope, domain, reasons))
    return sorted(records, key=lambda r: (r.time, r.scope, r.domain))


def last_failures(wiki: Wiki) -> dict[tuple[str, str], str]:
    """(scope, domain) -> the day of its last recorded failure."""
    last: dict[tuple[str, str], str] = {}
    for record in failure_records(wiki):
        key = (record.scope, record.domain)
        last[key] = max(last.get(key, ""), record.time[:10])
    return last

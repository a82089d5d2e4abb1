"""The state of each domain's consolidation: its evidence, its current synthesis, and whether the
synthesis is out of date. Read by the nightly job (:mod:`llm_wiki.consolidate`) and by the site's
inspector, which must not load the job (its backends, chunking and citation checks) to show it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.catalog import Row, read_catalog
from llm_wiki.failures import last_failures
from llm_wiki.reads import read_entry
from llm_wiki.wiki import Wiki

FINGERPRINT_FIELD = "input_fingerprint"
SKIP_OP = "consolidate-skip"


@dataclass(frozen=True)
class DomainState:
    """What the files say about one (scope, domain): its evidence and its current synthesis."""

    scope: str
    domain: str
    evidence: tuple[Row, ...]  # active, not generated; (date, id) order
    current: tuple[Row, ...]  # current consolidated syntheses, newest first
    fingerprint: str
    recorded: str | None  # input_fingerprint of the newest current synthesis
    method: str | None  # its method: llm | extractive
    skipped: str | None  # fingerprint of the last SKIP logged for this domain
    last_attempt: str = ""  # newest of the synthesis date and the last recorded failure

    @property
    def key(self) -> str:
        return f"{self.scope}/{self.domain}"

    def out_of_date(self, *, llm: bool) -> str | None:
        """Why this domain needs work, or None when it is up to date."""
        if self.fingerprint == self.skipped:
            return None  # the LLM saw exactly this input and answered SKIP: asking again costs
        if self.fingerprint == self.recorded:
            if llm and self.method == "extractive":
                return "its synthesis is extractive and an LLM backend is configured"
            return None
        if not self.current:
            return "no synthesis yet"
        if self.recorded is None:
            return f"its synthesis {self.current[0].id} records no input fingerprint"
        return f"its entries changed since {self.current[0].id}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "domain": self.domain,
            "entries": len(self.evidence),
            "synthesis": self.current[0].id if self.current else None,
            "fingerprint": self.fingerprint,
            "recorded": self.recorded,
        }


def fingerprint(rows: Iterable[Row]) -> str:
    """sha256 over the sorted (id, file sha256) of ``rows``: what the inputs are, exactly."""
    digest = hashlib.sha256()
    for entry_id, sha in sorted((r.id, r.sha256) for r in rows):
        digest.update(f"{entry_id} {sha}\n".encode())
    return digest.hexdigest()


def domain_states(
    wiki: Wiki,
    viewer: Viewer,
    rows: Sequence[Row] | None = None,
    skipped: dict[tuple[str, str], str] | None = None,
) -> list[DomainState]:
    """Every (scope, domain) the viewer may write that has evidence or a synthesis.

    ``rows``: the viewer's rows when the caller already holds them (the site), else read here;
    only the active ones count. ``skipped``: the logged skips (:func:`logged_skips`) when the
    caller already follows log.md.
    """
    if rows is None:
        with read_catalog(wiki) as catalog:
            rows = catalog.rows(viewer, status="active")
    else:
        rows = [r for r in rows if r.effective_status == "active" and viewer.can_read(r.scope)]
    evidence: dict[tuple[str, str], list[Row]] = {}
    current: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if not viewer.can_write(row.scope):
            continue
        key = (row.scope, row.domain)
        if row.type == "synthesis" and row.origin == "consolidated":
            current.setdefault(key, []).append(row)
        elif not row.is_generated:
            evidence.setdefault(key, []).append(row)
    if skipped is None:
        skipped = logged_skips(line for _, line in store.read_log(wiki))
    failed = last_failures(wiki)
    states = []
    for key in sorted(set(evidence) | set(current)):
        mine = sorted(evidence.get(key, ()), key=lambda r: (r.date, r.id))
        syntheses = sorted(current.get(key, ()), key=lambda r: (r.date, r.id), reverse=True)
        recorded = method = None
        if syntheses:
            entry, _ = read_entry(wiki, syntheses[0])
            value = entry.get_extra(FINGERPRINT_FIELD)
            recorded = str(value) if value else None
            method = str(entry.get_extra("method") or "") or None
        attempts = [syntheses[0].date if syntheses else "", failed.get(key, "")]
        states.append(
            DomainState(
                scope=key[0],
                domain=key[1],
                evidence=tuple(mine),
                current=tuple(syntheses),
                fingerprint=fingerprint(mine),
                recorded=recorded,
                method=method,
                skipped=skipped.get(key),
                last_attempt=max(attempts),
            )
        )
    return states


def logged_skips(
    lines: Iterable[Any], into: dict[tuple[str, str], str] | None = None
) -> dict[tuple[str, str], str]:
    """(scope, domain) -> the fingerprint of its last logged skip, from log.md's ``lines``
    (folded onto ``into``, for a caller that follows the log)."""
    skips = into if into is not None else {}
    for line in lines:
        op, subject, fields = line[1], line[2], line[3]
        if op == SKIP_OP and subject:
            skips[(fields.get("scope", ""), subject)] = fields.get("fingerprint", "")
    return skips

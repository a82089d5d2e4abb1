"""Counts for one viewer: entries by type, domain, status, scope and origin."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_wiki.access import Viewer, scope_field, split_scopes
from llm_wiki.catalog import Catalog
from llm_wiki.wiki import Wiki


@dataclass(frozen=True)
class Stats:
    entries: int
    by_type: dict[str, int]
    by_domain: dict[str, int]
    by_status: dict[str, int]
    by_scope: dict[str, int]
    by_origin: dict[str, int]
    archived: int
    first: str | None
    latest: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "entries": self.entries,
            "by_type": self.by_type,
            "by_domain": self.by_domain,
            "by_status": self.by_status,
            "by_scope": self.by_scope,
            "by_origin": self.by_origin,
            "archived": self.archived,
            "first": self.first,
            "latest": self.latest,
        }
        data.update(self.extra)
        return data


def entry_stats(wiki: Wiki, catalog: Catalog, viewer: Viewer) -> Stats:
    total, archived, first, latest = catalog.extent(viewer)
    return Stats(
        entries=total,
        by_type=catalog.tally(viewer, "type"),
        by_domain=catalog.tally(viewer, "domain"),
        by_status=catalog.tally(viewer, "status"),
        by_scope=catalog.tally(viewer, "scope"),
        by_origin=catalog.tally(viewer, "origin"),
        archived=archived,
        first=first,
        latest=latest,
    )


def llm_usage(
    wiki: Wiki, viewer: Viewer, *, since: str | None = None, until: str | None = None
) -> dict[str, Any]:
    """LLM calls and tokens from .llm-wiki/llm-calls.jsonl: in total, by purpose, day and scope
    (``since``/``until``: only calls on those days, inclusive, YYYY-MM-DD).

    A call counts for a viewer who may read every scope its prompt held (a call logged without
    a scope: only for a viewer who sees everything). A call whose prompt held entries of several
    scopes (a question by a reader of both) is counted under those scopes together, ``a,b``.
    """
    from llm_wiki.backends import read_calls  # deferred: keeps `show` and `list` (via reads) light

    def bucket() -> dict[str, int]:
        return {"calls": 0, "failed": 0, "tokens_in": 0, "tokens_out": 0}

    total = bucket()
    by_model: dict[str, dict[str, int]] = {}  # with the limits its calls were sent under
    by_purpose: dict[str, dict[str, int]] = {}
    by_day: dict[str, dict[str, int]] = {}
    by_scope: dict[str, dict[str, int]] = {}
    for call in read_calls(wiki):
        scopes = split_scopes(call.get("scope"))
        if not viewer.sees(scopes):
            continue
        purpose = str(call.get("purpose") or "other")
        day = str(call.get("time") or "")[:10] or "unknown"
        if (since and day < since) or (until and day > until):
            continue
        for group in (
            total,
            by_purpose.setdefault(purpose, bucket()),
            by_day.setdefault(day, bucket()),
            by_scope.setdefault(scope_field(scopes) or "-", bucket()),
        ):
            group["calls"] += 1
            group["failed"] += 0 if call.get("ok", True) else 1
            group["tokens_in"] += int(call.get("tokens_in") or 0)
            group["tokens_out"] += int(call.get("tokens_out") or 0)
        model = by_model.setdefault(
            f"{call.get('backend') or '?'}/{call.get('model') or '?'}",
            {**bucket(), "context_window": 0, "max_tokens": 0},
        )
        model["calls"] += 1
        model["failed"] += 0 if call.get("ok", True) else 1
        model["tokens_in"] += int(call.get("tokens_in") or 0)
        model["tokens_out"] += int(call.get("tokens_out") or 0)
        model["context_window"] = int(call.get("context_window") or model["context_window"])
        model["max_tokens"] = max(model["max_tokens"], int(call.get("max_tokens") or 0))
    return {
        **total,
        "by_model": dict(sorted(by_model.items())),
        "by_purpose": dict(sorted(by_purpose.items())),
        "by_day": dict(sorted(by_day.items())),
        "by_scope": dict(sorted(by_scope.items())),
    }

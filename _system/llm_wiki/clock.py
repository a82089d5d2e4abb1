"""The one clock. Everything that depends on "now" calls :func:`now` or :func:`today`;
``LLM_WIKI_NOW`` (an ISO date or datetime) overrides it so every time rule can be tested."""

from __future__ import annotations

import datetime as dt
import os

from llm_wiki.errors import InvalidInput

ENV = "LLM_WIKI_NOW"


def now() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return dt.datetime.now(dt.UTC)
    try:
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{ENV}={raw!r} is not an ISO date or datetime; use e.g. 2026-05-02 or 2026-05-02T09:30:00Z."
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC)


def today() -> dt.date:
    return now().date()


def stamp(moment: dt.datetime | None = None) -> str:
    """UTC time as written into log lines: 2026-05-02T09:30:00Z."""
    return (moment or now()).strftime("%Y-%m-%dT%H:%M:%SZ")

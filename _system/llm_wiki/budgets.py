"""Daily budgets per reader: how many LLM-backed queries one reader may ask the server per day.

``settings.yaml`` ``serve.queries_per_day`` (default :data:`DEFAULT_PER_DAY`; 0 refuses every
LLM query) holds for each reader separately, so one busy reader cannot spend the team's budget.
A day is a UTC day of the wiki's clock. The counts live in ``.llm-wiki/query-budget.json``,
written under a lock, so a restart does not hand out a fresh budget. Offline (extractive)
answers cost nothing and are never counted.
"""

from __future__ import annotations

import datetime as dt
import json

import llm_wiki.store as store
from llm_wiki.clock import now
from llm_wiki.errors import WikiError
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

DEFAULT_PER_DAY = 200
FILE = "query-budget.json"


class BudgetSpent(WikiError):
    """A reader has asked all the LLM queries its day allows."""


def per_day(wiki: Wiki) -> int:
    value = wiki.settings.get("serve.queries_per_day", DEFAULT_PER_DAY)
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        raise WikiError(
            f"{wiki.settings_path}: serve.queries_per_day must be a whole number, e.g. 200."
        ) from None


def charge(wiki: Wiki, reader: str) -> int:
    """Count one LLM query for ``reader`` today, or refuse it (saying when the budget resets).
    Returns how many the reader has left today."""
    limit = per_day(wiki)
    moment = now()
    day = moment.date().isoformat()
    path = wiki.state_path(FILE)
    with store.locked(wiki, "budget"):
        try:
            data = json.loads(path.read_bytes())
            used = data["used"] if isinstance(data, dict) and data.get("date") == day else {}
        except (OSError, ValueError, KeyError):
            used = {}
        spent = int(used.get(reader, 0))
        if spent >= limit:
            reset = dt.datetime.combine(moment.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
            minutes = max(1, int((reset - moment).total_seconds() // 60))
            raise BudgetSpent(
                f"reader {reader!r} has used today's {limit} LLM queries "
                f"(settings.yaml serve.queries_per_day); the budget resets at 00:00 UTC, in "
                f"{minutes // 60} h {minutes % 60} min."
            )
        used[reader] = spent + 1
        atomic_write(path, json.dumps({"date": day, "used": used}, sort_keys=True) + "\n")
    return limit - spent - 1

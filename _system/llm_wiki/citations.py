"""Citation checks shared by every flow that lets an LLM write about entries.

An LLM may only cite what it was shown. These functions find the entry ids a text cites and
check them against the set of entries that were actually put in front of the model; anything
outside that set is reported, never silently kept. Each check is a small pure function over ids
so flows (query, consolidate, ingest) can combine the ones they need.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# An entry id as minted (YYYY-MM-DD-slug-hash) or given with --id, inside [brackets] or bare.
_BRACKETED_RE = re.compile(r"\[([a-z0-9][a-z0-9-]{2,158}[a-z0-9])\]")
_DATED_ID_RE = re.compile(r"(?<![\w/-])(\d{4}-\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*)(?![\w/-])")


def extract_cited(text: str) -> list[str]:
    """Entry ids cited in ``text``, in order of first appearance, each once.

    A citation is an id in square brackets (``[2026-05-02-use-postgres-3f2a]``) or a bare dated
    id (``2026-05-02-use-postgres-3f2a``). Markdown links ``[label](url)`` are not citations.
    """
    found: list[tuple[int, str]] = []
    for match in _BRACKETED_RE.finditer(text):
        if text[match.end() : match.end() + 1] == "(":
            continue  # [label](url)
        found.append((match.start(1), match.group(1)))
    for match in _DATED_ID_RE.finditer(text):
        found.append((match.start(1), match.group(1)))
    out: list[str] = []
    for _, cited in sorted(found):
        if cited not in out:
            out.append(cited)
    return out


@dataclass(frozen=True)
class CitationCheck:
    """The result of checking cited ids against the ids that were opened."""

    cited: tuple[str, ...]  # every id cited, in order
    unknown: tuple[str, ...]  # cited but not among the opened entries

    @property
    def ok(self) -> bool:
        """At least one citation, and every citation among the opened entries."""
        return bool(self.cited) and not self.unknown

    def is_opened(self, entry_id: str) -> bool:
        return entry_id not in self.unknown


def check_cited(cited_ids: Iterable[str], opened_ids: Iterable[str]) -> CitationCheck:
    """Check that every cited id is one of the opened ids.

    ``cited_ids`` keeps its order (duplicates dropped); ids outside ``opened_ids`` come back in
    ``unknown`` so the caller can flag them. An empty citation list is not ``ok``: an answer
    that cites nothing cannot be checked.
    """
    opened = set(opened_ids)
    cited = tuple(dict.fromkeys(cited_ids))
    return CitationCheck(cited=cited, unknown=tuple(c for c in cited if c not in opened))

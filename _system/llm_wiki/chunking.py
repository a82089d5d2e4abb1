"""How the nightly job cuts a large domain into chunks, and caches each chunk's notes.

Entries are taken in (date, id) order; a chunk ends after an entry whose id hash, read
as a number in [0, 1), is below ``tokens(entry) / chunk_tokens``, or before an entry that would
overflow ``chunk_tokens``. Whether an entry ends a chunk depends on that entry alone, not on its
position: with fixed-size packing one back-dated entry would shift every later boundary, and
calendar buckets overflow in a busy month. So an added or superseded entry changes one chunk,
sometimes the next one too, until the boundaries fall into step again (1.65 chunks on average for
an entry inserted mid-domain, against 4.8 for fixed-size packing; an entry dated today changes
only the last chunk). Notes are cached by chunk fingerprint; a chunk whose members all appear in
cached notes (one that lost a superseded member, or was shifted or split) reuses those notes
minus any note citing an entry no longer active, and an entry only such a dropped note covered is
shown whole to the combining call. Only the chunk holding the new entry is read again: one chunk
call plus one combining call. The price: chunks fill about 60% of the budget, so a first run
makes about 1.5 times the calls of perfect packing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from llm_wiki.backends import estimate_tokens
from llm_wiki.citations import Statement
from llm_wiki.files import atomic_write
from llm_wiki.wiki import Wiki

FORMAT = "1"  # part of every chunk fingerprint: bump when a chunk's notes would mean otherwise


def make_chunks(ids: Sequence[str], blocks: dict[str, str], limit: int) -> list[list[str]]:
    """Cut ``ids`` (in (date, id) order) into chunks of at most ``limit`` tokens.

    A chunk ends after an entry whose id hash, read as a number in [0, 1), is below
    ``tokens(entry) / limit``, so whether an entry ends one depends on that entry alone. A chunk
    that would outgrow the limit is cut before the entry that does not fit (the only cut that
    depends on position; the next content-defined end brings the boundaries back into step).
    """
    target = max(1.0, float(limit))
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for entry_id in ids:
        tokens = estimate_tokens(blocks[entry_id])
        if current and size + tokens > limit:
            chunks.append(current)
            current, size = [], 0
        current.append(entry_id)
        size += tokens
        if _unit(entry_id) < tokens / target:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _unit(entry_id: str) -> float:
    return int(hashlib.sha256(entry_id.encode()).hexdigest()[:13], 16) / 16**13


class ChunkCache:
    """Per-chunk notes of one domain, under .llm-wiki/consolidate/<scope>/<domain>.json.

    Keyed by the chunk's fingerprint. A chunk made only of entries that cached notes already
    read (a chunk that lost members, or the old half of a chunk a new entry split) reuses the
    cached notes that cite its members and only active entries; an entry covered before but no
    longer (its notes also cited an entry since superseded) is handed to the combining call
    whole. Only a chunk holding an entry no cached notes have read, or one that would hand over
    more than half its entries, is read again.
    """

    def __init__(self, wiki: Wiki, scope: str, domain: str) -> None:
        self.path = wiki.state_dir / "consolidate" / scope / f"{domain}.json"
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.chunks: dict[str, Any] = data["chunks"] if data.get("format") == FORMAT else {}
        except (OSError, ValueError, KeyError, TypeError):
            self.chunks = {}
        self._holding: dict[str, list[str]] | None = None
        self._unsaved = False

    def find(
        self, key: str, members: Sequence[str], active: set[str], *, keep: bool = True
    ) -> tuple[list[tuple[str, Statement]], list[str]] | None:
        """(notes, entries to hand over whole) for a chunk, or None when it must be read."""
        wanted = set(members)
        if key in self.chunks:
            sources = [self.chunks[key]]
        else:
            holding = self._holders()
            if any(m not in holding for m in members):
                return None  # a new entry: read the chunk
            sources = [
                self.chunks[k] for k in dict.fromkeys(k for m in members for k in holding[m])
            ]
        covered = set().union(*(set(r["covered"]) & wanted for r in sources))
        notes = {
            (n[1].text, n[1].cites): n
            for r in sources
            for n in _notes(r["notes"])
            if set(n[1].cites) <= active and wanted & set(n[1].cites)
        }
        kept = list(notes.values())
        lost = covered - {i for _, s in kept for i in s.cites}
        if 2 * len(lost) > len(members):
            return None
        if keep and key not in self.chunks:
            self.put(key, members, kept, covered=covered, save=False)  # saved with the next
        return kept, sorted(lost)

    def _holders(self) -> dict[str, list[str]]:
        if self._holding is None:
            self._holding = {}
            for key, record in self.chunks.items():
                for member in record["members"]:
                    self._holding.setdefault(member, []).append(key)
        return self._holding

    def put(
        self,
        key: str,
        members: Sequence[str],
        notes: list[tuple[str, Statement]],
        *,
        covered: set[str] | None = None,
        save: bool = True,
    ) -> None:
        """Record a chunk's notes; saved at once (a run stopped by its budget keeps them)."""
        if covered is None:
            covered = {i for _, s in notes for i in s.cites} & set(members)
        self.chunks[key] = {
            "members": list(members),
            "covered": sorted(covered),
            "notes": [{"topic": t, "text": s.text, "cites": list(s.cites)} for t, s in notes],
        }
        self._holding = None
        self._unsaved = True
        if save:
            self._save()

    def flush(self) -> None:
        if self._unsaved:
            self._save()

    def prune(self, keep: set[str]) -> None:
        """Keep only the current chunks' notes (after a synthesis is written)."""
        if set(self.chunks) - keep:
            self.chunks = {k: v for k, v in self.chunks.items() if k in keep}
            self._holding = None
            self._save()

    def _save(self) -> None:
        data = json.dumps({"format": FORMAT, "chunks": self.chunks}, ensure_ascii=False)
        atomic_write(self.path, data)
        self._unsaved = False


def _notes(raw: list[dict[str, Any]]) -> list[tuple[str, Statement]]:
    return [(n.get("topic", ""), Statement(n["text"], tuple(n["cites"]))) for n in raw]

"""What ``llm-wiki index`` (or ``--check``) found and did: a module of its own, since defining
the dataclass costs ~1 ms that a read or a write, which import the catalog package, need not pay."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class IndexResult:
    """What ``llm-wiki index`` (or ``--check``) found and did."""

    entries: int
    parsed: int
    removed: int
    written: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    problems: tuple[tuple[str, str], ...] = field(default=())
    vectors: dict[str, Any] | None = None  # the entry vectors' refresh, when ranking uses them
    unlogged: tuple[tuple[str, str], ...] = ()  # (id, path): bytes no write line logged

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "parsed": self.parsed,
            "removed": self.removed,
            "written": list(self.written),
            "stale": list(self.stale),
            "problems": [{"path": p, "message": m} for p, m in self.problems],
            "vectors": self.vectors,
            "unlogged": [{"id": i, "path": p} for i, p in self.unlogged],
        }

"""Creating a wiki: the templates copied into a new or empty folder, then its first index.

:func:`init_wiki` is ``llm-wiki init``. It lives apart from :mod:`llm_wiki.wiki` because it
builds the catalog, which itself needs the wiki's paths and settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from llm_wiki.catalog import rebuild_index
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.wiki import IGNORABLE, TEMPLATES, Wiki, is_wiki


@dataclass(frozen=True)
class InitResult:
    root: str
    created: bool
    files: tuple[str, ...]


def init_wiki(path: str | os.PathLike[str]) -> InitResult:
    """Create a wiki at ``path`` (new or empty folder). An existing wiki is left untouched."""
    root = Path(path).expanduser().resolve()
    if is_wiki(root):
        return InitResult(str(root), False, ())
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file; choose a folder path for the wiki.")
    if root.is_dir():
        clutter = sorted(p.name for p in root.iterdir() if p.name not in IGNORABLE)
        if clutter:
            raise InvalidInput(
                f"{root} is not empty and is not a wiki (it holds {', '.join(clutter[:3])}"
                f"{', ...' if len(clutter) > 3 else ''}); choose an empty or new folder."
            )
    try:
        root.mkdir(parents=True, exist_ok=True)
        created: list[str] = []
        for src in sorted((TEMPLATES / "wiki").rglob("*")):
            if src.is_dir():
                continue
            rel = src.relative_to(TEMPLATES / "wiki").as_posix()
            rel = {"gitattributes": ".gitattributes", "gitignore": ".gitignore"}.get(rel, rel)
            dest = root / rel
            if dest.exists():
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
            created.append(rel)
        (root / "entries").mkdir(exist_ok=True)
        created.append("entries/")
    except OSError as exc:
        raise WikiError(
            f"cannot create a wiki at {root}: {exc.strerror}; check the path and permissions."
        ) from None
    wiki = Wiki(root)
    rebuild_index(wiki)
    wiki.schema, wiki.settings  # noqa: B018 - parse once now, so the first write need not
    created.append("INDEX.md")
    return InitResult(str(root), True, tuple(created))

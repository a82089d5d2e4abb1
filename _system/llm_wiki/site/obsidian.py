"""Supersession as edges of Obsidian's graph view, without touching an entry.

Obsidian draws an edge from a note to every note it links to. An entry cannot be edited to link to
the one it replaced, and a link in ``index/<domain>.md`` is an edge from the *index file* (every
entry there is already linked from it), so neither can show "B replaced A". What can: one small
generated note per superseding entry, ``graph/<id>.supersedes.md``, holding ``[[<id>]]`` and
``[[<old id>]]``. Obsidian resolves ``[[name]]`` to ``entries/…/<name>.md`` by file name, so the
graph shows ``B — B.supersedes — A``: a two-step edge through a small node named for it (colour the
``path:graph`` group in the graph settings to tell them apart).

The notes live outside ``index/`` so ``llm-wiki index`` (and what the LLM reads) is unchanged. A
note depends only on its entry (its id and ``supersedes``), so it never needs rewriting. Under
walls each scope gets its own folder, ``graph/<scope>/``, as the index files do, and a site build
writes the folders of the scopes its reader may read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from llm_wiki.access import walls_on
from llm_wiki.site.view import View

FOLDER = "graph"
SUFFIX = ".supersedes.md"


def note_text(entry_id: str, replaced: list[str]) -> str:
    olds = ", ".join(f"[[{old}]]" for old in replaced)
    return (
        "---\ngenerated: llm-wiki site (do not edit; rebuilt from the entries)\n---\n"
        f"[[{entry_id}]] supersedes {olds}\n"
    )


def write_graph_notes(view: View, only: set[str] | None = None) -> int:
    """Write (and prune) the graph notes of the scopes this view's reader may read; return how
    many notes that reader's scopes hold. ``only``: the ids whose rows changed since the last
    build that wrote them all (a note depends on its entry's row and on which ids are visible):
    only their notes are written or removed."""
    wiki = view.wiki
    base = wiki.root / FOLDER
    walls = walls_on(wiki)
    wanted: dict[Path, str] = {}
    scopes: set[str] = set()
    by_id = view.by_id
    if only is not None:  # a rebuild: the notes of the changed rows and of rows replacing them
        affected = set(only)
        count = 0
        for row in view.rows:
            if row.supersedes and any(o in by_id for o in row.supersedes):
                count += 1
                if not only.isdisjoint(row.supersedes):
                    affected.add(row.id)
        managed = [base / s for s in sorted({r.scope for r in view.rows})] if walls else [base]
        for entry_id in sorted(affected):
            got = by_id.get(entry_id)
            replaced: list[str] = []
            home = None
            if got is not None:
                replaced = [o for o in got.supersedes if o in by_id]
                home = base / got.scope if walls else base
            for folder in managed:
                path = folder / f"{entry_id}{SUFFIX}"
                if replaced and folder == home:
                    wanted[path] = note_text(entry_id, replaced)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
        _write_notes(wanted)
        return count
    for row in view.rows:
        scopes.add(row.scope)
        if not row.supersedes:
            continue
        replaced = [o for o in row.supersedes if o in by_id]
        if replaced:
            folder = base / row.scope if walls else base
            wanted[folder / f"{row.id}{SUFFIX}"] = note_text(row.id, replaced)
    folders = {base / s for s in scopes} if walls else {base}
    if walls:
        folders.add(base)  # a whole-wiki set left from before the walls mixes scopes: it goes
    for folder in sorted(folders):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(f"*{SUFFIX}")):
            if path not in wanted:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    if not walls and base.is_dir():  # walls came down: the per-scope folders are stale
        for sub in sorted(p for p in base.iterdir() if p.is_dir()):
            for path in sorted(sub.glob(f"*{SUFFIX}")):
                path.unlink()
            with contextlib.suppress(OSError):
                sub.rmdir()
    _write_notes(wanted)
    with contextlib.suppress(OSError):
        if base.is_dir() and not any(base.iterdir()):
            base.rmdir()
    return len(wanted)


def _write_notes(wanted: dict[Path, str]) -> None:
    for path, text in sorted(wanted.items()):
        data = text.encode()
        try:
            if path.read_bytes() == data:
                continue
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)

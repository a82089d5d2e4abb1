"""Reading entries for one viewer: show, list, stats. Hidden entries look exactly like absent ones."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llm_wiki.access import Viewer
from llm_wiki.catalog import Row, read_catalog
from llm_wiki.entries import Entry, decode_text, parse_entry, valid_date
from llm_wiki.errors import InvalidInput, NotFound, WikiError
from llm_wiki.records import Frozen
from llm_wiki.wiki import Wiki

if TYPE_CHECKING:
    from llm_wiki.stats import Stats


class Shown(Frozen):
    """One entry as ``show`` gives it: its catalog row, the parsed entry, the file's text."""

    FIELDS = ("row", "entry", "text")
    __slots__ = FIELDS
    row: Row
    entry: Entry
    text: str

    def __init__(self, row: Row, entry: Entry, text: str) -> None:
        object.__setattr__(self, "row", row)
        object.__setattr__(self, "entry", entry)
        object.__setattr__(self, "text", text)

    def to_dict(self) -> dict[str, Any]:
        data = self.row.to_dict()
        full = self.entry.to_dict()
        for key in ("date_source", "roles", "relates"):  # written only when they hold something
            if key in full:
                data[key] = full[key]
        data["body"] = self.entry.body
        data["text"] = self.text
        return data


def not_found(entry_id: str) -> NotFound:
    """The one message for an id this reader cannot see, whether it exists or not."""
    return NotFound(f"No entry {entry_id!r}; find ids with `llm-wiki list` or `llm-wiki query`.")


def show_entry(wiki: Wiki, entry_id: str, viewer: Viewer) -> Shown:
    with read_catalog(wiki) as catalog:
        row = catalog.get(entry_id, viewer)
    if row is None:
        raise not_found(entry_id)
    return Shown(row, *read_entry(wiki, row))


def read_entry_bytes(
    wiki: Wiki, rel: str, archive: str | None = None, at: str | None = None
) -> bytes:
    """The bytes of one entry, from entries/ or (when ``archive`` is set) its archive file
    (``at``: its locator there, from the catalog)."""
    if archive:
        from llm_wiki.archive_file import read_member  # deferred: tarfile + zstandard

        return read_member(wiki, archive, rel, at)
    with open(wiki.path(rel), "rb") as fh:
        return fh.read()


def read_entry(wiki: Wiki, row: Row) -> tuple[Entry, str]:
    """The entry a catalog row points at, from entries/ or its archive."""
    try:
        data = read_entry_bytes(wiki, row.path, row.archive, row.archive_at)
    except FileNotFoundError:
        with read_catalog(wiki) as catalog:  # archived since the row was read?
            moved = catalog.get(row.id, Viewer.everyone())
        if moved is None or not moved.archive:
            raise NotFound(
                f"{row.path} is listed but missing; run `llm-wiki verify`, then `llm-wiki index`."
            ) from None
        data = read_entry_bytes(wiki, moved.path, moved.archive, moved.archive_at)
    try:
        text = decode_text(data, row.path)
        return parse_entry(text, what=row.path), text
    except InvalidInput:  # not the reader's mistake: the file changed behind the tool's back
        raise WikiError(
            f"{row.path} no longer reads as an entry; run `llm-wiki verify` to see what changed."
        ) from None


class Page(Frozen):
    """One page of ``list``: its rows, how many match in all, where the page starts."""

    FIELDS = ("rows", "total", "offset")
    __slots__ = FIELDS
    rows: tuple[Row, ...]
    total: int
    offset: int

    def __init__(self, rows: tuple[Row, ...], total: int, offset: int) -> None:
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "total", total)
        object.__setattr__(self, "offset", offset)

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "offset": self.offset,
            "entries": [r.to_dict() for r in self.rows],
        }


def list_entries(
    wiki: Wiki, viewer: Viewer, *, limit: int | None = 50, offset: int = 0, **filters: Any
) -> Page:
    """Entries matching ``filters`` (see :meth:`Catalog.rows`), newest first, one page."""
    for key in ("since", "until"):
        value = filters.get(key)
        if value is not None and not valid_date(value):
            raise InvalidInput(
                f"--{key} {value!r} is not an ISO date; use YYYY-MM-DD, e.g. 2026-05-02."
            )
    with read_catalog(wiki) as catalog:
        page = catalog.rows(viewer, limit=limit, offset=offset, **filters)
        total = catalog.count_rows(viewer, **filters)
    return Page(tuple(page), total, offset)


def wiki_stats(wiki: Wiki, viewer: Viewer) -> Stats:
    from llm_wiki.ranking.vectors import describe  # deferred: only `stats` needs it
    from llm_wiki.stats import entry_stats, llm_usage  # deferred: only `stats` needs it

    with read_catalog(wiki) as catalog:
        stats = entry_stats(wiki, catalog, viewer)
        ranking = describe(wiki, catalog, viewer)
    import dataclasses  # deferred: start-up (show and list need none)

    llm = {**llm_usage(wiki, viewer), "limits": configured_limits(wiki)}
    return dataclasses.replace(stats, extra={**stats.extra, "llm": llm, "ranking": ranking})


def configured_limits(wiki: Wiki) -> dict[str, Any] | None:
    """The limits of the model this wiki's jobs would use (settings.yaml, ``LLM_WIKI_*``):
    None offline; a one-line ``error`` when the settings name no usable backend or limits."""
    import llm_wiki.backends as backends  # deferred: keeps `show` and `list` light

    try:
        backend, source = backends.resolve(wiki)
        if not backend.is_llm:
            return None
        fit = backends.limits(wiki, backend)
    except WikiError as exc:
        return {"error": exc.message}
    return {"backend": backend.name, "model": backend.model, **fit.to_dict()}

"""The write flow: validate an entry, mint its id, create its file, log it, catalog it.

:func:`write_entry` validates against schema.md and the reader's scopes, then, under the write
lock, creates the file no-clobber (``files.create_no_clobber``: temp file, fsync, mode 0444,
``os.link``, which never replaces an existing file), appends its log.md line and adds its
catalog row, which brings the index files up to date. An agent that retries an identical write
gets the existing id back; a write that died before its log line is finished by the retry.
"""

from __future__ import annotations

import contextlib
import os
import re

import llm_wiki.clock as clock
import llm_wiki.store as store
from llm_wiki.access import Viewer, require_write
from llm_wiki.catalog import Catalog, add_written, open_catalog, read_catalog
from llm_wiki.entries import (
    ID_RE,
    Entry,
    candidate_ids,
    check_id,
    dump_entry,
    entry_from_mapping,
    replace_fields,
)
from llm_wiki.errors import InvalidInput, WikiError, os_failure, storage_failure
from llm_wiki.files import create_no_clobber, fsync_dir, sweep_temp, sync_folders
from llm_wiki.records import Frozen
from llm_wiki.schema import LIST_SIZED, require_list_sizes, require_valid
from llm_wiki.wiki import STATE_DIR, Wiki


class WriteResult(Frozen):
    """What ``write`` recorded (or, dry run, would record). ``created`` False: identical content
    was already recorded under this id. ``dry_run``: nothing was written; ``text`` is what would
    be."""

    FIELDS = ("id", "path", "sha256", "created", "text", "dry_run")
    __slots__ = FIELDS
    id: str
    path: str
    sha256: str
    created: bool
    text: str
    dry_run: bool

    def __init__(
        self,
        id: str,
        path: str,
        sha256: str,
        created: bool,
        text: str = "",
        dry_run: bool = False,
    ) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "created", created)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "dry_run", dry_run)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "id": self.id,
            "path": self.path,
            "sha256": self.sha256,
            "created": self.created,
        }
        if self.dry_run:
            data.update(dry_run=True, text=self.text)
        return data


# compiled where used (re's cache): most entries have no sources
_SOURCE_RAW = r"^raw/[0-9a-f]{64}(?:\.[A-Za-z0-9]+)?(?:#L\d+(?:-L\d+)?)?\Z"
_SOURCE_KIND = r"^[a-z][a-z0-9_-]*:\S.*\Z"


def write_entry(
    wiki: Wiki,
    entry: Entry,
    *,
    viewer: Viewer,
    explicit_id: str | None = None,
    dry_run: bool = False,
    title: str | None = None,
) -> WriteResult:
    """Validate ``entry`` (its id is ignored) and record it. Nothing is written on any error."""
    # Callers build entries many ways (flags, MCP, LLM proposals, importers); the catalog row is
    # made from this object, so it must be exactly what the file will parse back to.
    require_list_sizes({f: getattr(entry, f) for f in LIST_SIZED}, wiki.schema)
    entry = entry_from_mapping(entry.to_dict())
    if not entry.date:
        entry = replace_fields(entry, date=clock.today().isoformat())
    if not entry.scope:
        entry = replace_fields(entry, scope=wiki.settings.default_scope)
    if explicit_id is not None:
        check_id(explicit_id)
        entry = replace_fields(entry, id=explicit_id)
    else:
        entry = replace_fields(entry, id="")
    require_valid(entry, wiki.schema)
    require_write(viewer, entry.scope)
    if explicit_id is not None and not viewer.sees_all:
        # An id is unique across every scope: "already taken" or a write would say whether an
        # entry this reader may not see holds it.
        raise InvalidInput(
            "--id is only for a reader who may read every scope (an id is unique across all "
            "of them, so choosing one would tell whether a hidden entry holds it); omit --id "
            "to mint one."
        )
    _check_sources_shape(entry)

    if dry_run:
        final = replace_fields(entry, id=explicit_id or next(candidate_ids(entry, title)))
        text = dump_entry(final)
        with read_catalog(wiki) as catalog:
            _check_references(catalog, entry)
        sha = store.sha256_bytes(text.encode())
        return WriteResult(final.id, final.relpath, sha, True, text, dry_run=True)

    _ensure_writable(wiki)
    with store.locked(wiki):
        tmp = wiki.path(STATE_DIR, "tmp")
        sweep_temp(tmp)  # left by writes that were killed
        catalog = open_catalog(wiki)
        try:
            _check_references(catalog, entry)
            ids = [explicit_id] if explicit_id else candidate_ids(entry, title)
            for candidate in ids:
                final = replace_fields(entry, id=candidate)
                text = dump_entry(final)
                data = text.encode()
                sha = store.sha256_bytes(data)
                rel = final.relpath
                known = catalog.sha_of(candidate)
                if known is not None or os.path.exists(wiki.path(rel)):
                    if explicit_id:
                        raise _taken(candidate)
                    if known == sha or (known is None and _same_bytes(wiki.path(rel), data)):
                        if known is None:  # a write that died before its log line: finish it
                            # (it may have died before syncing the file's folders, too)
                            sync_folders(wiki.path(rel))
                            _record(wiki, catalog, final, rel, sha)
                        return WriteResult(candidate, rel, sha, False, text)
                    continue
                try:
                    created = create_no_clobber(wiki.path(rel), data, tmp)
                except OSError as exc:
                    raise os_failure(exc, "nothing was recorded: cannot create the entry") from None
                if not created:
                    if explicit_id:
                        raise _taken(candidate)
                    continue
                _record(wiki, catalog, final, rel, sha, created=True)
                return WriteResult(candidate, rel, sha, True, text)
            raise WikiError("could not mint a free id; this should not happen, please report it.")
        finally:
            catalog.close()


def _taken(entry_id: str) -> InvalidInput:
    """The one message for an explicit id already in use, whichever scope holds it."""
    return InvalidInput(
        f"id {entry_id!r} is already taken; choose another --id, or omit --id to mint one."
    )


def _record(
    wiki: Wiki, catalog: Catalog, entry: Entry, rel: str, sha: str, *, created: bool = False
) -> None:
    """Log the entry, then catalog it. A log line that cannot be appended (a full disk, a
    file-size limit) takes back the file this write created: nothing is half-recorded. Once
    the line is in, the entry is recorded; a catalog that cannot follow says so, and catches up
    at the next read."""
    line = store.format_log_line("write", entry.id, sha256=sha, scope=entry.scope, path=rel)
    try:
        store.append_log(wiki, line)
    except BaseException as exc:
        if created:
            _take_back(wiki.path(rel))
        failure = storage_failure(exc)
        if failure is None:
            raise
        raise WikiError(f"nothing was recorded: {failure.message}") from None
    try:
        add_written(catalog, entry, rel, sha)
    except Exception as exc:
        failure = storage_failure(exc)
        if failure is None:
            raise
        raise WikiError(
            f"recorded {entry.id} (its file and log line are safe), but the index could not be "
            f"updated: {failure.message} Then run `llm-wiki index`."
        ) from None


def _take_back(path: str) -> None:
    """Remove a file this write created but could not log (the write lock is held)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        fsync_dir(os.path.dirname(path))


def _same_bytes(path: str, data: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read() == data
    except OSError:
        return False


def _check_sources_shape(entry: Entry) -> None:
    for source in entry.sources:
        if ID_RE.match(source) or re.match(_SOURCE_RAW, source) or re.match(_SOURCE_KIND, source):
            continue
        raise InvalidInput(
            f"source {source!r} is not an entry id, raw/<sha256>.<ext>#L<a>-L<b>, or kind:name "
            "(e.g. adr:001-use-postgres.md); fix --source."
        )


def _check_references(catalog: Catalog, entry: Entry) -> None:
    """supersedes (and entry-id sources) must name existing entries of the entry's own scope.

    An entry outside the writer's scope reads exactly like one that does not exist.
    """
    scope_of = catalog.scope_of
    for field, ids in (
        ("supersedes", entry.supersedes),
        ("relates", [r.id for r in entry.relates]),
    ):
        for old in ids:  # an entry naming itself: require_valid refused it
            if scope_of(old) != entry.scope:
                raise InvalidInput(
                    f"{field} {old!r}: no such entry in scope {entry.scope!r}; check the id with "
                    "`llm-wiki list`."
                )
    for incident in entry.resolves:
        if scope_of(incident) != entry.scope:
            raise InvalidInput(
                f"resolves {incident!r}: no such entry in scope {entry.scope!r}; check the id "
                "with `llm-wiki list --type incident`."
            )
        if catalog.type_of(incident) != "incident":
            raise InvalidInput(
                f"resolves {incident!r}: it is a {catalog.type_of(incident)}, not an incident; "
                "resolves names the incidents this entry closes."
            )
    for source in entry.sources:
        if ":" in source or source.startswith("raw/"):
            continue
        if scope_of(source) != entry.scope:
            raise InvalidInput(
                f"source {source!r}: no such entry in scope {entry.scope!r}; check the id with "
                "`llm-wiki list`."
            )


def _ensure_writable(wiki: Wiki) -> None:
    for path in (wiki.dir, wiki.path("entries")):
        if os.path.exists(path) and not os.access(path, os.W_OK):  # no entries/ yet: a fresh clone
            raise WikiError(
                f"cannot write to {path}: permission denied; fix its permissions or pass "
                "--wiki with a writable wiki."
            )
    log_path = wiki.path("log.md")
    if os.path.exists(log_path) and not os.access(log_path, os.W_OK):
        raise WikiError(f"cannot append to {log_path}: permission denied; fix its permissions.")

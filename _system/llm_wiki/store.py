"""Append-only storage: entry files, log.md, locks (the file primitives are in ``files``).

An entry file is created once (temp file, fsync, mode 0444, ``os.link`` — which never replaces an
existing file), then one line recording its sha256 is appended to log.md. Nothing here ever
rewrites or removes an entry; the archiver (``archive``) is the only code that retires files,
after it has verified their copies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from llm_wiki import clock
from llm_wiki.access import Viewer, require_write
from llm_wiki.entries import (
    ID_RE,
    Entry,
    candidate_ids,
    check_id,
    dump_entry,
    entry_from_mapping,
    require_valid,
    sha256_hex,
)
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import CRASH_ENV, crashpoint, create_no_clobber
from llm_wiki.wiki import Wiki


def sha256_bytes(data: bytes) -> str:
    return sha256_hex(data)


def iter_entry_months(wiki: Wiki) -> Iterator[tuple[str, list[tuple[str, int, int]]]]:
    """Each ``entries/YYYY/MM/`` folder (in order) with its ``*.md`` files as (name, mtime_ns,
    size), sorted by name."""
    for year, year_path in _sorted_dirs(wiki.entries_dir):
        for month, month_path in _sorted_dirs(year_path):
            files = []
            with os.scandir(month_path) as it:
                for e in it:
                    name = e.name
                    if name[-3:] == ".md" and name[0] != ".":
                        st = e.stat()
                        files.append((name, st.st_mtime_ns, st.st_size))
            files.sort()
            yield f"entries/{year}/{month}/", files


def iter_entry_files(wiki: Wiki) -> Iterator[tuple[str, int, int]]:
    """Every ``entries/YYYY/MM/*.md`` as (path relative to the root, mtime_ns, size), sorted."""
    for prefix, files in iter_entry_months(wiki):
        for name, mtime, size in files:
            yield prefix + name, mtime, size


def _sorted_dirs(path: Path | str) -> list[tuple[str, str]]:
    try:
        with os.scandir(path) as it:
            return sorted((e.name, e.path) for e in it if e.is_dir() and e.name[0] != ".")
    except FileNotFoundError:
        return []


# --------------------------------------------------------------------------- locks


@contextlib.contextmanager
def locked(wiki: Wiki, name: str = "write", *, blocking: bool = True) -> Iterator[bool]:
    """Hold ``.llm-wiki/<name>.lock`` (flock). Non-blocking: yields False if it is held."""
    try:
        path = wiki.state_path(f"{name}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise WikiError(
            f"cannot write to {wiki.state_dir}: {exc.strerror}; check the wiki's permissions."
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                yield False
                return
            raise
        yield True
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- log.md


class LogLine(NamedTuple):
    time: str
    op: str
    subject: str
    fields: dict[str, str]
    raw: str


_FIELD_RE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')
_LINE_RE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (\S+)(?: (.*))?$")


def format_log_line(op: str, subject: str = "", **fields: object) -> str:
    parts = [clock.stamp(), op]
    if subject:
        parts.append(subject)
    for key, value in fields.items():
        text = str(value)
        if not text or any(c.isspace() or c in '"=' for c in text):
            text = json.dumps(text, ensure_ascii=False)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def parse_log_line(line: str) -> LogLine | None:
    match = _LINE_RE.match(line)
    if not match:
        return None
    time, op, rest = match.group(1), match.group(2), match.group(3) or ""
    fields: dict[str, str] = {}
    for key, value in _FIELD_RE.findall(rest):
        fields[key] = json.loads(value) if value.startswith('"') else value
    head = rest.split(" ", 1)[0] if rest else ""
    subject = head if head and "=" not in head else ""
    return LogLine(time, op, subject, fields, line)


def read_log(wiki: Wiki, start: int = 0) -> Iterator[tuple[int, LogLine]]:
    """Complete log lines from byte offset ``start``, each with the offset just past it."""
    try:
        with open(wiki.log_path, "rb") as fh:
            fh.seek(start)
            data = fh.read()
    except FileNotFoundError:
        return
    offset = start
    for raw in data.splitlines(keepends=True):
        offset += len(raw)
        if not raw.endswith(b"\n"):
            break  # a torn last line (a writer died mid-append) is not a line
        parsed = parse_log_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if parsed is not None:
            yield offset, parsed


def append_log(wiki: Wiki, *lines: str) -> None:
    """Append whole lines to log.md. Call with the write lock held.

    A line torn by a writer that died mid-append is cut off first, so the log only ever holds
    whole lines.
    """
    data = "".join(line + "\n" for line in lines).encode()
    fd = os.open(wiki.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            keep, end = 0, size  # back to the last newline, however long the torn line
            while end > 0 and not keep:
                start = max(0, end - 4096)
                cut = os.pread(fd, end - start, start).rfind(b"\n")
                keep, end = (start + cut + 1 if cut >= 0 else 0), start
            os.ftruncate(fd, keep)
        if os.environ.get(CRASH_ENV) == "mid-log":
            os.write(fd, data[: max(1, len(data) // 2)])
            os.fsync(fd)
            crashpoint("mid-log")
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def log_op(wiki: Wiki, op: str, subject: str = "", **fields: object) -> None:
    """Record one operation in log.md (taking the write lock)."""
    with locked(wiki):
        append_log(wiki, format_log_line(op, subject, **fields))


# --------------------------------------------------------------------------- writing entries


@dataclass(frozen=True)
class WriteResult:
    id: str
    path: str
    sha256: str
    created: bool  # False: identical content was already recorded under this id
    text: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "path": self.path, "sha256": self.sha256, "created": self.created}


_SOURCE_RAW_RE = re.compile(r"^raw/[0-9a-f]{64}(?:\.[A-Za-z0-9]+)?(?:#L\d+(?:-L\d+)?)?\Z")
_SOURCE_KIND_RE = re.compile(r"^[a-z][a-z0-9_-]*:\S.*\Z")


def write_entry(
    wiki: Wiki,
    entry: Entry,
    *,
    viewer: Viewer,
    explicit_id: str | None = None,
    dry_run: bool = False,
) -> WriteResult:
    """Validate ``entry`` (its id is ignored) and record it. Nothing is written on any error."""
    from llm_wiki.catalog import open_catalog, read_catalog

    # Callers build entries many ways (flags, MCP, LLM proposals, importers); the catalog row is
    # made from this object, so it must be exactly what the file will parse back to.
    entry = entry_from_mapping(entry.to_dict())
    if not entry.date:
        entry = dataclasses.replace(entry, date=clock.today().isoformat())
    if not entry.scope:
        entry = dataclasses.replace(entry, scope=wiki.settings.default_scope)
    if explicit_id is not None:
        check_id(explicit_id)
        entry = dataclasses.replace(entry, id=explicit_id)
    else:
        entry = dataclasses.replace(entry, id="")
    require_valid(entry, wiki.schema)
    require_write(viewer, entry.scope)
    _check_sources_shape(entry)

    if dry_run:
        final = dataclasses.replace(entry, id=explicit_id or next(candidate_ids(entry)))
        text = dump_entry(final)
        with read_catalog(wiki) as catalog:
            _check_references(catalog, entry)
        return WriteResult(final.id, final.relpath, sha256_bytes(text.encode()), True, text)

    _ensure_writable(wiki)
    with locked(wiki):
        catalog = open_catalog(wiki)
        try:
            _check_references(catalog, entry)
            ids = [explicit_id] if explicit_id else candidate_ids(entry)
            for candidate in ids:
                final = dataclasses.replace(entry, id=candidate)
                text = dump_entry(final)
                data = text.encode()
                sha = sha256_bytes(data)
                rel = final.relpath
                known = catalog.sha_of(candidate)
                if known is not None or (wiki.root / rel).exists():
                    if explicit_id:
                        raise _taken(candidate)
                    if known == sha or (known is None and _same_bytes(wiki.root / rel, data)):
                        if known is None:  # a write that died before its log line: finish it
                            _record(wiki, catalog, final, rel, sha)
                        return WriteResult(candidate, rel, sha, False, text)
                    continue
                if not create_no_clobber(wiki.root / rel, data, wiki.state_dir / "tmp"):
                    if explicit_id:
                        raise _taken(candidate)
                    continue
                _record(wiki, catalog, final, rel, sha)
                return WriteResult(candidate, rel, sha, True, text)
            raise WikiError("could not mint a free id; this should not happen, please report it.")
        finally:
            catalog.close()


def _taken(entry_id: str) -> InvalidInput:
    """The one message for an explicit id already in use, whichever scope holds it."""
    return InvalidInput(
        f"id {entry_id!r} is already taken; choose another --id, or omit --id to mint one."
    )


def _record(wiki: Wiki, catalog: object, entry: Entry, rel: str, sha: str) -> None:
    append_log(
        wiki,
        format_log_line("write", entry.id, sha256=sha, scope=entry.scope, path=rel),
    )
    catalog.add_written(entry, rel, sha)  # type: ignore[attr-defined]


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def _check_sources_shape(entry: Entry) -> None:
    for source in entry.sources:
        if ID_RE.match(source) or _SOURCE_RAW_RE.match(source) or _SOURCE_KIND_RE.match(source):
            continue
        raise InvalidInput(
            f"source {source!r} is not an entry id, raw/<sha256>.<ext>#L<a>-L<b>, or kind:name "
            "(e.g. adr:001-use-postgres.md); fix --source."
        )


def _check_references(catalog: object, entry: Entry) -> None:
    """supersedes (and entry-id sources) must name existing entries of the entry's own scope.

    An entry outside the writer's scope reads exactly like one that does not exist.
    """
    scope_of = catalog.scope_of  # type: ignore[attr-defined]
    for old in entry.supersedes:  # an entry superseding itself: require_valid refused it
        if scope_of(old) != entry.scope:
            raise InvalidInput(
                f"supersedes {old!r}: no such entry in scope {entry.scope!r}; check the id with "
                "`llm-wiki list`."
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
    for path in (wiki.root, wiki.entries_dir):
        if not os.access(path, os.W_OK):
            raise WikiError(
                f"cannot write to {path}: permission denied; fix its permissions or pass "
                "--wiki with a writable wiki."
            )
    if wiki.log_path.exists() and not os.access(wiki.log_path, os.W_OK):
        raise WikiError(
            f"cannot append to {wiki.log_path}: permission denied; fix its permissions."
        )


def read_entry_bytes(
    wiki: Wiki, rel: str, archive: str | None = None, at: str | None = None
) -> bytes:
    """The bytes of one entry, from entries/ or (when ``archive`` is set) its archive file
    (``at``: its locator there, from the catalog)."""
    if archive:
        from llm_wiki.archive import read_member

        return read_member(wiki, archive, rel, at)
    return (wiki.root / rel).read_bytes()

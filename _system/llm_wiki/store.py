"""The wiki's files on disk: listing entry files and archives, locks, and log.md.

Entries are written once (see ``write``, through ``files.create_no_clobber``) and each write
appends one line recording the entry's sha256 to log.md, the append-only record that the catalog
follows and ``verify`` checks. Nothing here rewrites or removes an entry; the archiver
(``archive``) is the only code that retires files, after it has verified their copies.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import llm_wiki.clock as clock
from llm_wiki.entries import sha256_hex
from llm_wiki.errors import WikiError
from llm_wiki.files import CRASH_ENV, crashpoint
from llm_wiki.wiki import Wiki

try:
    import fcntl
except ImportError:  # not Linux or macOS: the package still imports; locking says why it cannot
    fcntl = None  # type: ignore[assignment]


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


def iter_entry_stats(wiki: Wiki) -> Iterator[tuple[str, os.stat_result]]:
    """Every ``entries/YYYY/MM/*.md`` as (path relative to the root, its full stat), sorted."""
    for year, year_path in _sorted_dirs(wiki.entries_dir):
        for month, month_path in _sorted_dirs(year_path):
            with os.scandir(month_path) as it:
                files = sorted(
                    (e.name, e.stat()) for e in it if e.name[-3:] == ".md" and e.name[0] != "."
                )
            prefix = f"entries/{year}/{month}/"
            for name, st in files:
                yield prefix + name, st


def _sorted_dirs(path: Path | str) -> list[tuple[str, str]]:
    try:
        with os.scandir(path) as it:
            return sorted((e.name, e.path) for e in it if e.is_dir() and e.name[0] != ".")
    except FileNotFoundError:
        return []


def archive_names(wiki: Wiki) -> set[str]:
    """``archive/*.tar.zst`` as paths relative to the root."""
    if not wiki.archive_dir.is_dir():
        return set()
    return {f"archive/{p.name}" for p in wiki.archive_dir.glob("*.tar.zst")}


# --------------------------------------------------------------------------- locks


@contextlib.contextmanager
def locked(wiki: Wiki, name: str = "write", *, blocking: bool = True) -> Iterator[bool]:
    """Hold ``.llm-wiki/<name>.lock`` (flock). Non-blocking: yields False if it is held."""
    if fcntl is None:
        raise WikiError(
            "this platform has no flock (fcntl), which llm-wiki needs to write safely; run it on "
            "Linux or macOS."
        )
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

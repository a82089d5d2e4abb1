"""The wiki's files on disk: listing entry files and archives, locks, and log.md.

Entries are written once (see ``write``, through ``files.create_no_clobber``) and each write
appends one line recording the entry's sha256 to log.md, the append-only record that the catalog
follows and ``verify`` checks. Nothing here rewrites or removes an entry; the archiver
(``archive``) is the only code that retires files, after it has verified their copies.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
from collections import namedtuple
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import llm_wiki.clock as clock
from llm_wiki.entries import sha256_hex
from llm_wiki.errors import WikiError
from llm_wiki.files import CRASH_ENV, crashpoint
from llm_wiki.wiki import STATE_DIR, Wiki

if TYPE_CHECKING:
    from pathlib import Path

try:
    import fcntl
except ImportError:  # not Linux or macOS: the package still imports; locking says why it cannot
    fcntl = None  # type: ignore[assignment]


def sha256_bytes(data: bytes) -> str:
    return sha256_hex(data)


def sha256_bulk(data: bytes) -> str:
    """:func:`sha256_bytes` for code that hashes every file (a build, ``verify``): OpenSSL's
    SHA-256 is several times faster per byte, but loading it would cost ``write`` ~2 ms."""
    return openssl_sha256()(data).hexdigest()


@functools.cache
def openssl_sha256() -> Any:
    import hashlib  # deferred: OpenSSL (~2 ms), only for code that hashes every file

    return hashlib.sha256


def iter_entry_months(
    wiki: Wiki, *, stat: bool = True
) -> Iterator[tuple[str, list[tuple[str, int, int]]]]:
    """Each ``entries/YYYY/MM/`` folder (in order) with its ``*.md`` files as (name, mtime_ns,
    size), sorted by name (``stat`` False: mtime and size 0, for a caller that reads them all
    anyway)."""
    for month, path in iter_month_dirs(wiki):
        yield month, month_files(path, stat=stat)


def iter_month_dirs(wiki: Wiki) -> Iterator[tuple[str, str]]:
    """Each ``entries/YYYY/MM/`` folder, in order: (``entries/YYYY/MM/``, its path)."""
    for year, year_path in _sorted_dirs(wiki.entries_dir):
        for month, month_path in _sorted_dirs(year_path):
            yield f"entries/{year}/{month}/", month_path


def month_files(path: str, *, stat: bool = True) -> list[tuple[str, int, int]]:
    """One month folder's ``*.md`` files as (name, mtime_ns, size), sorted by name."""
    files = []
    with os.scandir(path) as it:
        for e in it:
            name = e.name
            if name[-3:] == ".md" and name[0] != ".":
                if stat:
                    st = e.stat()
                    files.append((name, st.st_mtime_ns, st.st_size))
                else:
                    files.append((name, 0, 0))
    files.sort()
    return files


def iter_entry_files(wiki: Wiki, *, stat: bool = True) -> Iterator[tuple[str, int, int]]:
    """Every ``entries/YYYY/MM/*.md`` as (path relative to the root, mtime_ns, size), sorted."""
    for prefix, files in iter_entry_months(wiki, stat=stat):
        for name, mtime, size in files:
            yield prefix + name, mtime, size


def entry_folders(wiki: Wiki) -> Iterator[tuple[str, str]]:
    """Every ``entries/YYYY/MM/`` as (its path relative to the root with a slash, its path)."""
    for year, year_path in _sorted_dirs(wiki.entries_dir):
        for month, month_path in _sorted_dirs(year_path):
            yield f"entries/{year}/{month}/", month_path


def iter_entry_stats(wiki: Wiki) -> Iterator[tuple[str, os.stat_result]]:
    """Every ``entries/YYYY/MM/*.md`` as (path relative to the root, its full stat), sorted
    (:func:`folder_stats` of each month, in order)."""
    for prefix, folder in entry_folders(wiki):
        for name, st in sorted(folder_stats(folder)):
            yield prefix + name, st


# os.stat relative to a folder's descriptor where the platform has it (not Windows)
_STAT_DIR_FD = os.stat in os.supports_dir_fd


def folder_stats(folder: str) -> list[tuple[str, os.stat_result]]:
    """(name, stat) of each ``*.md`` file in one entry folder, in no order; a file gone since
    the folder was listed is left out. Each stat is taken relative to the folder's descriptor:
    one name to look up rather than the whole path (a fifth less kernel time over 10,000 files
    than DirEntry.stat, which stats the joined path)."""
    out: list[tuple[str, os.stat_result]] = []
    if not _STAT_DIR_FD:
        with os.scandir(folder) as it:
            for e in it:
                if e.name[-3:] == ".md" and e.name[0] != ".":
                    with contextlib.suppress(FileNotFoundError):
                        out.append((e.name, e.stat()))
        return out
    stat = os.stat
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in os.listdir(fd):
            if name[-3:] != ".md" or name[0] == ".":
                continue
            try:
                out.append((name, stat(name, dir_fd=fd)))
            except FileNotFoundError:
                continue  # gone since the folder was listed
    finally:
        os.close(fd)
    return out


def _sorted_dirs(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
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
        path = wiki.state_file(f"{name}.lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise WikiError(
            f"cannot write to {wiki.path(STATE_DIR)}: {exc.strerror}; check the wiki's permissions."
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


if TYPE_CHECKING:

    class LogLine(NamedTuple):
        time: str
        op: str
        subject: str
        fields: dict[str, str]
        raw: str

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    LogLine = namedtuple("LogLine", ["time", "op", "subject", "fields", "raw"])


@functools.cache
def _log_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A log line and its fields, compiled when a line is first read (a write reads none)."""
    return (
        re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (\S+)(?: (.*))?$"),
        re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)'),
    )


def format_log_line(op: str, subject: str = "", **fields: object) -> str:
    parts = [clock.stamp(), op]
    if subject:
        parts.append(subject)
    for key, value in fields.items():
        text = str(value)
        if not text or any(c.isspace() or c in '"=' for c in text):
            import json  # deferred: a write's fields (ids, hashes, paths) need no quoting

            text = json.dumps(text, ensure_ascii=False)
        parts.append(f"{key}={text}")
    return " ".join(parts)


def parse_log_line(line: str) -> LogLine | None:
    line_re, field_re = _log_res()
    match = line_re.match(line)
    if not match:
        return None
    time, op, rest = match.group(1), match.group(2), match.group(3) or ""
    fields: dict[str, str] = {}
    for key, value in field_re.findall(rest):
        if value.startswith('"'):
            import json  # deferred: as in format_log_line

            fields[key] = json.loads(value)
        else:
            fields[key] = value
    head = rest.split(" ", 1)[0] if rest else ""
    subject = head if head and "=" not in head else ""
    return LogLine(time, op, subject, fields, line)


def read_log(wiki: Wiki, start: int = 0) -> Iterator[tuple[int, LogLine]]:
    """Complete log lines from byte offset ``start``, each with the offset just past it."""
    for offset, text in log_texts(wiki, start):
        parsed = parse_log_line(text)
        if parsed is not None:
            yield offset, parsed


def log_texts(wiki: Wiki, start: int = 0) -> Iterator[tuple[int, str]]:
    """The text of each complete log line from byte offset ``start`` (line break cut), with
    the offset just past it.

    Streamed, a line at a time (log.md grows by one line per write: ``verify`` of a big wiki
    must not hold it all). Lines end where ``bytes.splitlines`` ends them, and one that does
    not end in a line feed (a torn last line: a writer died mid-append; or a lone CR) ends
    the log, as it did when the whole file was read and split.
    """
    for offset, raw in _log_lines(wiki, start):
        yield offset, raw.decode("utf-8", "replace").rstrip("\r\n")


def _log_lines(wiki: Wiki, start: int = 0) -> Iterator[tuple[int, bytes]]:
    """:func:`log_texts`'s lines as bytes, line break kept."""
    try:
        fh = open(wiki.path("log.md"), "rb")  # noqa: SIM115 (closed below; a missing log is empty)
    except FileNotFoundError:
        return
    with fh:
        fh.seek(start)
        offset = start
        for chunk in fh:  # split at b"\n"; a CR inside splits further, as splitlines does
            for raw in chunk.splitlines(keepends=True) if b"\r" in chunk else (chunk,):
                offset += len(raw)
                if not raw.endswith(b"\n"):
                    return  # a torn last line (a writer died mid-append) is not a line
                yield offset, raw


@functools.cache
def _write_line_re() -> re.Pattern[bytes]:
    """A write line exactly as format_log_line writes one, every field unquoted and printable
    ASCII (no space, ``"`` or ``=``), line feed and all: matched as bytes, so the usual line is
    neither decoded nor split. On such a line parse_log_line reads the same four fields."""
    field = rb"([!#-<>-~]+)"
    return re.compile(
        rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ write "
        + field
        + rb" sha256="
        + field
        + rb" scope="
        + field
        + rb" path="
        + field
        + rb"\n"
    )


def iter_writes(wiki: Wiki) -> Iterator[tuple[str, str, str, str]]:
    """(id, sha256, scope, path) of every write line, in log order, each field "" when the
    line has none: what parse_log_line reads, with the common shape read by one pattern
    (``verify`` reads one line per entry)."""
    match = _write_line_re().fullmatch
    for _, raw in _log_lines(wiki):
        got = match(raw)
        if got is not None:
            entry_id, sha, scope, path = got.groups()
            yield entry_id.decode(), sha.decode(), scope.decode(), path.decode()
            continue
        line = parse_log_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
        if line is not None and line.op == "write" and line.subject:
            f = line.fields
            yield line.subject, f.get("sha256", ""), f.get("scope", ""), f.get("path", "")


def read_whole(path: str) -> bytes:
    """A file's bytes by plain ``os.read`` calls: no file object (``verify`` reads every
    entry, and ``open`` costs more than the read)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        want = os.fstat(fd).st_size + 1  # one byte more: a file that grew is read to its end
        data = os.read(fd, want)
        if len(data) < want:  # a short read of a regular file: its end
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def append_log(wiki: Wiki, *lines: str) -> None:
    """Append whole lines to log.md. Call with the write lock held.

    A line torn by a writer that died mid-append is cut off first, so the log only ever holds
    whole lines.
    """
    data = "".join(line + "\n" for line in lines).encode()
    fd = os.open(wiki.path("log.md"), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            keep, end = 0, size  # back to the last newline, however long the torn line
            while end > 0 and not keep:
                start = max(0, end - 4096)
                cut = os.pread(fd, end - start, start).rfind(b"\n")
                keep, end = (start + cut + 1 if cut >= 0 else 0), start
            os.ftruncate(fd, keep)
            size = keep
        if os.environ.get(CRASH_ENV) == "mid-log":
            os.write(fd, data[: max(1, len(data) // 2)])
            os.fsync(fd)
            crashpoint("mid-log")
        try:
            view = memoryview(data)
            while view:  # a write may be short (a file-size limit): go on until it fails
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except BaseException:
            with contextlib.suppress(OSError):  # no torn line left behind: the lock is held
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def log_op(wiki: Wiki, op: str, subject: str = "", **fields: object) -> None:
    """Record one operation in log.md (taking the write lock)."""
    with locked(wiki):
        append_log(wiki, format_log_line(op, subject, **fields))


# --------------------------------------------------------------------------- the log's anchor


def log_lines(data: bytes) -> set[bytes]:
    """The complete lines of a log.md (a torn last line is none), each without its newline."""
    lines = data.split(b"\n")
    lines.pop()  # what follows the last newline: empty, or a torn line
    return {line.rstrip(b"\r") for line in lines if line.strip()}


def anchor_path(wiki: Wiki) -> Path:
    """log.md as this clone last saw it whole (at its last sync or verify): every line in it must
    stay, byte for byte, in every later log.md."""
    return wiki.state_path("log-seen.md")


def read_anchor(wiki: Wiki) -> set[bytes]:
    try:
        return log_lines(anchor_path(wiki).read_bytes())
    except FileNotFoundError:
        return set()


def describe_line(line: bytes) -> str:
    """A dropped log line, in a few words: ``write 2026-05-02-use-postgres-3f2a``."""
    parsed = parse_log_line(line.decode("utf-8", "replace"))
    if parsed is None:
        return repr(line[:80].decode("utf-8", "replace"))
    return f"{parsed.op} {parsed.subject}".strip() + f" of {parsed.time}"

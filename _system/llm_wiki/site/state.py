"""What a site build leaves for the next one: ``.llm-wiki/site-state/<key>``, one per output
folder (the key is the sha256 of its path). Not in the output folder: the state holds log.md's
lines, which name entries of every scope, and a site holds only what its reader may see.

A full build reads every visible row from the catalog, parses all of log.md and hashes every
entry file. The next build starts from what this one knew instead: the rows, log.md's lines up to
the offset it read to, the sha256 of each entry file with the file's stat key (see
:class:`~llm_wiki.verify.HashCache`), and, per page, the *keys* its context was made from (``e:<id>``
for each entry it names, ``d:``/``t:``/``a:`` for the domain, tag or actor whose members it lists,
``m:`` a search shard's month, ``l:`` a log month, ``r:`` a raw source, ``f:*`` the ADR file
map, ``*`` everything). It follows log.md from the offset, as the catalog's refresh does, re-reads
from the catalog only the rows the new lines and changed files name (and the rows they supersede),
and rebuilds only the pages holding a key those rows touch.

Anything it cannot follow line by line makes the next build a full one: another version of the
code or another reader, a catalog the scan rebuilt (a new ``generation``), log.md changed before
the offset (git merged lines in), a log line of another kind than write, lint, ingest or
consolidate-skip, a changed access.yaml, settings.yaml or schema.md, or a change in archive/.
The file is written with marshal (plain data only: loading 10,000 rows takes a few tens of ms,
where the catalog's rows with their JSON columns take ~0.4 s): its small values, then each BIG
value as marshal bytes of its own, read only when first asked for (:class:`_State`), so that a
rebuild with nothing changed unmarshals the file hashes alone. A build that followed the log does
not write it again: it appends what it changed (the new log lines, rows, keys, page keys and file
hashes; the small values whole) to ``<key>.log`` beside it, one marshal record per build after
its length, and the next build loads the file and replays the records (onto each big value when
it is read). Each record names the file's ``epoch`` (a
random token written with it) and the manifest it starts from and the one it leaves, so a record
of another file, one left by a build that died, or a fork of two racing builds breaks the chain
and the next build is a full one. Once the records hold a quarter of the file's bytes (or
MAX_RECORDS of them), the next build writes the file whole again and drops the log.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import mmap
import operator
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_wiki.catalog import Row
from llm_wiki.catalog.fresh import tail_at
from llm_wiki.entries import Alternative
from llm_wiki.wiki import LINT_FINDINGS, Wiki

FOLDER = "site-state"
VERSION = 6
MAX_RECORDS = 200
# The big values, each kept as marshal bytes of its own inside the file and read back only when
# first asked for (see _State): a rebuild with nothing changed reads few of them, and many small
# loads cost less than one of the whole (marshal's table of shared objects stays small).
BIG = ("rows", "lines", "logged", "keys", "deps", "files")
# The file: the byte length of the small values' marshal, those, then each BIG value's bytes (their
# lengths among the small values); the log: each record as its byte length and its marshal
# (marshal.loads of a slice: marshal.load from a file object reads it a few bytes at a time).
_HEAD = 8
# What a record holds whole (small values); the big ones go as what changed (see append).
SMALL = (
    "code", "reader", "manifest", "generation", "hard", "soft", "raw", "log_offset", "log_tail",
    "skips", "states", "notes", "pages", "entries", "archives", "verify",
)  # fmt: skip
# log.md operations a build can follow line by line; any other one means a full build.
FOLLOWED_OPS = frozenset({"write", "lint", "ingest", "consolidate-skip"})

_FIELDS = tuple(name for name in Row.FIELDS if name != "rowid")
_ALT = _FIELDS.index("alternatives")
_LINE = _FIELDS.index("line")


# Fields whose values repeat from row to row (a type, a date, a domain...): kept as one shared
# string each, which marshal then writes once and reads back as the same object.
_SHARED = tuple(_FIELDS.index(n) for n in ("type", "date", "domain", "scope", "status", "origin"))
_SHARED_TUPLES = tuple(_FIELDS.index(n) for n in ("tags", "actors"))


def row_tuple(row: Row) -> tuple[Any, ...]:
    """A row as plain data (its rendered index line left out: no page shows it)."""
    values = [getattr(row, name) for name in _FIELDS]
    alts = row.alternatives
    # one bytes object, not a pair of strings per alternative: a rebuild reads 10,000 rows back
    # and shows the alternatives of a few (unmarshalling the rows ~14 -> ~9 ms at 10k, a sixth
    # less memory). Marshal version 0 writes no references and no interning flags, so equal
    # alternatives give equal bytes (follow compares row tuples).
    values[_ALT] = (
        marshal.dumps(tuple([(a.id, a.rejected_because) for a in alts]), 0) if alts else ()
    )
    values[_LINE] = ""
    for i in _SHARED:
        if type(values[i]) is str:
            values[i] = sys.intern(values[i])
    for i in _SHARED_TUPLES:
        if values[i]:
            values[i] = tuple([sys.intern(v) if type(v) is str else v for v in values[i]])
    return tuple(values)


class StateRow(tuple, Row):  # type: ignore[misc]
    """A row read back from the state: the row tuple itself, its fields read by index (a rebuild
    makes 10,000 rows: a tuple is ~10x cheaper to make and to free than a row's __dict__). Its
    alternatives stay marshal bytes of (id, reason) pairs until asked for (a rebuild shows those
    of a few; see row_tuple)."""

    __slots__ = ()

    @property  # type: ignore[override]
    def alternatives(self) -> tuple[Alternative, ...]:  # type: ignore[override]
        got = tuple.__getitem__(self, _ALT)
        if type(got) is bytes:
            return tuple([Alternative(a, b) for a, b in marshal.loads(got)])
        return got  # type: ignore[no-any-return]

    @property  # type: ignore[override]
    def rowid(self) -> int:  # type: ignore[override]
        return 0

    __eq__ = Row.__eq__
    __hash__ = Row.__hash__
    __repr__ = Row.__repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple_row, (tuple(self),))


try:  # namedtuple's field reader (C): half the cost of property(itemgetter), read ~10^5 times
    from collections import _tuplegetter  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover (another Python)

    def _tuplegetter(index: int, doc: str) -> Any:
        return property(operator.itemgetter(index), doc=doc)


for _i, _name in enumerate(_FIELDS):
    if _name != "alternatives":
        setattr(StateRow, _name, _tuplegetter(_i, f"Row.{_name}"))
del _i, _name


def tuple_row(values: tuple[Any, ...], _new: Any = tuple.__new__) -> Row:
    """The inverse of :func:`row_tuple` (tuple's own constructor: Row's __init__ is not run)."""
    return _new(StateRow, values)  # type: ignore[no-any-return]


def tuple_rows(tuples: list[tuple[Any, ...]]) -> list[Row]:
    """:func:`tuple_row` of each, tuple's constructor called from C (no Python call per row)."""
    return list(map(functools.partial(tuple.__new__, StateRow), tuples))


def stat_key(path: Path | str) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def hard_stamps(wiki: Wiki) -> list[Any]:
    """What, when it changes, makes the next build a full one: the config files and archive/."""
    out: list[Any] = [stat_key(p) for p in (wiki.access_path, wiki.settings_path, wiki.schema_path)]
    try:
        with os.scandir(wiki.archive_dir) as it:
            out.append(sorted((e.name, *(stat_key(e.path) or ())) for e in it))
    except OSError:
        out.append(None)
    return out


def soft_stamps(wiki: Wiki) -> list[Any]:
    """What only the inspector shows: the LLM call log and the failure records."""
    paths = [
        wiki.state_dir / "llm-calls.jsonl",
        wiki.root / "synthesis-failures.md",
        wiki.state_dir / LINT_FINDINGS,
    ]
    folder = wiki.root / "synthesis-failures"
    out: list[Any] = [stat_key(p) for p in paths]
    try:
        with os.scandir(folder) as it:
            out.append(sorted((e.name, *(stat_key(e.path) or ())) for e in it))
    except OSError:
        out.append(None)
    return out


def raw_listing(wiki: Wiki) -> dict[str, int]:
    """raw/ file name -> size (raw sources are named by their sha256: a name's bytes are fixed,
    so only a file appearing or going changes what a page shows)."""
    try:
        with os.scandir(wiki.raw_dir) as it:
            return {f"raw/{e.name}": e.stat().st_size for e in it if e.is_file()}
    except OSError:
        return {}


def log_tail(wiki: Wiki, offset: int) -> str:
    """The catalog's fingerprint of log.md before ``offset`` (:func:`~llm_wiki.catalog.fresh.tail_at`);
    "" for a log that cannot be read, so the build starts over rather than fails."""
    try:
        return tail_at(wiki, offset)
    except OSError:
        return ""


def state_path(wiki: Wiki, out: Path) -> Path:
    """Where the build state of the site in ``out`` is kept."""
    return wiki.state_dir / FOLDER / hashlib.sha256(str(out).encode()).hexdigest()[:32]


# The state file is mapped rather than read where a mapped file can still be replaced (not Windows).
_MAP = os.name != "nt"


class _State(dict):  # type: ignore[type-arg]
    """The state as loaded: each of the BIG values is read from its bytes when first asked for,
    and the appended records' changes to it applied then, in order."""

    blobs: dict[str, memoryview]
    pending: list[dict[str, Any]]

    def __missing__(self, key: str) -> Any:
        blob = self.blobs.pop(key, None)
        if blob is None:
            raise KeyError(key)
        value = marshal.loads(blob)
        for rec in self.pending:
            _apply(key, value, rec)
        self[key] = value
        return value


def load(path: Path, code: str, reader: str, manifest_sha: str) -> dict[str, Any] | None:
    """The last build's state, if it was written by this code for this reader alongside the
    manifest now in the folder; else None (a full build). The records appended since the file was
    written are replayed onto it; the rows they changed are left in ``rows_delta`` (id -> row
    tuple, or None for a row gone) for the caller to fold into ``rows`` with its own changes, and
    ``log_bytes`` says how much the records hold."""
    try:
        # mapped, not read: a rebuild unmarshals the few big values it asks for from the pages
        # they lie on, without copying the whole file first (~6 ms at 10k entries). The file is
        # only ever replaced (save), never written in place, so the mapping stays what was read.
        base: bytes | mmap.mmap = b""
        if _MAP:
            with open(path, "rb") as fh:
                base = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        else:
            base = path.read_bytes()
        view = memoryview(base)
        size = int.from_bytes(view[:_HEAD], "little")
        top = marshal.loads(view[_HEAD : _HEAD + size])
        if not isinstance(top, dict) or top.get("version") != VERSION:
            return None
        if (top.get("code"), top.get("reader")) != (code, reader):
            return None
        blobs, at = {}, _HEAD + size
        for name, n in zip(BIG, top.pop("sections"), strict=True):
            blobs[name], at = view[at : at + n], at + n
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return None
    if at != len(base):
        return None
    data = _State(top)
    data.blobs = blobs
    data.pending = []
    data["rows_delta"] = {}
    data["records"] = 0
    data["log_bytes"] = 0
    try:
        with open(_log_path(path), "rb") as fh:
            records = fh.read()
    except OSError:
        records = b""
    if records and not _replay(data, records):
        return None
    data["base_bytes"] = len(base)
    data["log_bytes"] = len(records)
    if data.get("manifest") != manifest_sha:
        return None
    return data


def _replay(data: _State, records: bytes) -> bool:
    """Read the appended records in order, each applied to the small values now and kept for
    the big ones (see _State); False if one does not follow from the state before it (or cannot
    be read)."""
    view, at = memoryview(records), 0
    rows = data["rows_delta"]
    while at < len(records):
        size = int.from_bytes(view[at : at + _HEAD], "little")
        at += _HEAD
        if at + size > len(records):
            return False  # torn
        try:
            rec = marshal.loads(view[at : at + size])
        except (EOFError, ValueError, TypeError):
            return False
        at += size
        if not isinstance(rec, dict) or rec.get("epoch") != data.get("epoch"):
            return False
        if rec.get("from") != data.get("manifest") or rec.get("keys_at") != data["keys_len"]:
            return False
        for name in SMALL:
            data[name] = rec[name]
        rows.update(rec["rows"])
        data["keys_len"] += len(rec["keys"])
        data.pending.append(rec)
        data["records"] += 1
    return True


def _apply(name: str, value: Any, rec: dict[str, Any]) -> None:
    """One record's changes to the big value ``name`` (its rows go to ``rows_delta``)."""
    if name in ("lines", "keys"):
        value.extend(rec[name])
    elif name == "logged":
        value.update(rec["logged"])
    elif name in ("deps", "files"):
        value.update(rec[name])
        for gone in rec[f"{name}_gone"]:
            value.pop(gone, None)


def _log_path(path: Path) -> Path:
    return path.with_name(path.name + ".log")


def save(path: Path, make: Callable[[int], dict[str, Any]]) -> None:
    """Write the state atomically: ``make(now_ns)`` gives it, told the file system's current
    time (the new file's mtime), so the hash cache can settle which records to trust. Any records
    appended to the file it replaces go with it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            data = make(os.fstat(fh.fileno()).st_mtime_ns)
            data = {**data, "version": VERSION, "epoch": os.urandom(8).hex()}
            data["keys_len"] = len(data["keys"])
            data["logged"] = dict(data["logged"])  # (a rebuild's is the new lines' over the last)
            blobs = [marshal.dumps(data.pop(name)) for name in BIG]
            data["sections"] = [len(b) for b in blobs]
            head = marshal.dumps(data)
            fh.write(len(head).to_bytes(_HEAD, "little"))
            fh.write(head)
            for blob in blobs:
                fh.write(blob)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    with contextlib.suppress(FileNotFoundError):
        _log_path(path).unlink()


def should_compact(prev: dict[str, Any]) -> bool:
    """Whether the next save should write the whole file rather than append a record."""
    return prev["records"] >= MAX_RECORDS or prev["log_bytes"] * 4 > prev["base_bytes"]


def append(
    path: Path,
    prev: dict[str, Any],
    make: Callable[[int], dict[str, Any]],
    rows: dict[str, Any],
    logged: set[str],
    planned: set[str],
    recorded: set[str],
) -> None:
    """Append to the state what this build changed from ``prev`` (the state it followed):
    ``make(now_ns)`` gives the whole new state as :func:`save` takes it (``now_ns`` the file
    system's time); ``rows`` the row tuples it changed (None: gone), ``logged`` the ids whose
    ``logged`` record it changed, ``planned`` the pages whose keys it made again and
    ``recorded`` the entry files it hashed (every other page's keys and file's record are the
    last build's very tuples: only these are diffed, not ten thousand of each, by strings that
    are equal but not the same objects)."""
    with open(_log_path(path), "ab") as fh:
        os.utime(fh.fileno())  # its mtime: the file system's time now
        new = make(os.fstat(fh.fileno()).st_mtime_ns)
        old_deps, deps = prev["deps"], new["deps"]  # (a build reads these, never changes them)
        old_files, files = prev["files"], new["files"]
        record = {name: new[name] for name in SMALL}
        record.update(
            epoch=prev["epoch"],
            keys_at=len(prev["keys"]),
            rows=rows,
            lines=new["lines"][len(prev["lines"]) :],
            logged={i: new["logged"][i] for i in logged if i in new["logged"]},
            keys=new["keys"][len(prev["keys"]) :],
            deps=_changed(old_deps, deps, planned),
            deps_gone=_gone(old_deps, deps, planned),
            files=_changed(old_files, files, recorded),
            files_gone=_gone(old_files, files, recorded),
        )
        record["from"] = prev["manifest"]
        data = marshal.dumps(record)
        fh.write(len(data).to_bytes(_HEAD, "little") + data)


def _changed(old: dict[str, Any], now: dict[str, Any], made: set[str]) -> dict[str, Any]:
    """The values of ``now`` that are not ``old``'s, all of whose keys are in ``made``."""
    return {k: now[k] for k in sorted(made) if k in now and old.get(k) is not now[k]}


def _gone(old: dict[str, Any], now: dict[str, Any], made: set[str]) -> list[str]:
    """The keys of ``old`` not in ``now``, whose keys are ``old``'s or in ``made``: none when
    ``now`` holds as many of ``old``'s keys as ``old`` has (counted without a pass over them)."""
    added = sum(1 for k in made if k in now and k not in old)
    if len(now) - added == len(old):
        return []
    return sorted(old.keys() - now.keys())


def drop(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    with contextlib.suppress(FileNotFoundError):
        _log_path(path).unlink()

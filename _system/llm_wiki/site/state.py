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
where the catalog's rows with their JSON columns take ~0.4 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_wiki.catalog import Row
from llm_wiki.entries import Alternative
from llm_wiki.wiki import Wiki

FOLDER = "site-state"
VERSION = 3
TAIL_BYTES = 4096
# log.md operations a build can follow line by line; any other one means a full build.
FOLLOWED_OPS = frozenset({"write", "lint", "ingest", "consolidate-skip"})

_FIELDS = tuple(name for name in Row.FIELDS if name != "rowid")
_ALT = _FIELDS.index("alternatives")
_LINE = _FIELDS.index("line")


def row_tuple(row: Row) -> tuple[Any, ...]:
    """A row as plain data (its rendered index line left out: no page shows it)."""
    values = [getattr(row, name) for name in _FIELDS]
    values[_ALT] = tuple((a.id, a.rejected_because) for a in row.alternatives)
    values[_LINE] = ""
    return tuple(values)


def tuple_row(values: tuple[Any, ...], _new: Any = object.__new__) -> Row:
    """The inverse of :func:`row_tuple`, without the per-field __init__."""
    row = _new(Row)
    fields = dict(zip(_FIELDS, values, strict=True))
    alts = values[_ALT]
    fields["alternatives"] = tuple([Alternative(a, b) for a, b in alts]) if alts else ()
    fields["rowid"] = 0
    object.__setattr__(row, "__dict__", fields)
    return row


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
    paths = [wiki.state_dir / "llm-calls.jsonl", wiki.root / "synthesis-failures.md"]
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
    """sha256 of log.md's last TAIL_BYTES before ``offset`` (as the catalog checks it)."""
    if offset <= 0:
        return ""
    try:
        with open(wiki.log_path, "rb") as fh:
            start = max(0, offset - TAIL_BYTES)
            fh.seek(start)
            return hashlib.sha256(fh.read(offset - start)).hexdigest()
    except OSError:
        return ""


def state_path(wiki: Wiki, out: Path) -> Path:
    """Where the build state of the site in ``out`` is kept."""
    return wiki.state_dir / FOLDER / hashlib.sha256(str(out).encode()).hexdigest()[:32]


def load(path: Path, code: str, reader: str, manifest_sha: str) -> dict[str, Any] | None:
    """The last build's state, if it was written by this code for this reader alongside the
    manifest now in the folder; else None (a full build)."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    if (data.get("code"), data.get("reader"), data.get("manifest")) != (code, reader, manifest_sha):
        return None
    return data


def save(path: Path, make: Callable[[int], dict[str, Any]]) -> None:
    """Write the state atomically: ``make(now_ns)`` gives it, told the file system's current
    time (the new file's mtime), so the hash cache can settle which records to trust."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            data = make(os.fstat(fh.fileno()).st_mtime_ns)
            fh.write(marshal.dumps({**data, "version": VERSION}))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def drop(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()

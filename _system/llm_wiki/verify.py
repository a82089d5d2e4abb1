"""The tamper check: every entry against the sha256 that log.md recorded when it was written.

One pass over the entry files, with log.md read once: each logged entry is held as its id and
one short bytes record (flags, the sha256's 32 bytes, the scope), so memory stays small however
big the wiki; a file is parsed only when the catalog holds no row parsed from the very same bytes.
The checks of the history (the anchor, git) compare log.md byte for byte with what was recorded
and fall back to comparing line sets only when it is not a plain extension of it.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.entries import decode_text, parse_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import fsync_dir
from llm_wiki.wiki import Wiki

KINDS = {
    "edited": "its bytes differ from the sha256 logged when it was written",
    "removed": "it was logged but its file is gone (and it is in no archive)",
    "unlogged": "its file has no write line in log.md (a write that died, or added by hand)",
    "unreadable": "its file does not parse as an entry, so every read of it fails",
    "unreadable-archive": "the archive file cannot be read whole",
    "archive-mismatch": "its copy in an archive differs from the logged sha256",
    "dropped-line": "a log.md line that was recorded (committed to git, or seen by this clone) "
    "is gone or rewritten",
    "rewritten": "a git commit changed this entry's file after it was committed (entries are "
    "never edited)",
}


@dataclass(frozen=True)
class Finding:
    kind: str
    id: str
    path: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "id": self.id, "path": self.path, "detail": self.detail}


@dataclass(frozen=True)
class VerifyResult:
    checked: int
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "findings": [f.to_dict() for f in self.findings],
        }


class HashCache:
    """What a site build may skip re-hashing: each entry file's sha256 from the last build, kept
    with the file's (inode, size, mtime_ns, ctime_ns), and each archive's members with the
    archive's. A file whose four values all match a *trusted* record is taken to hold the bytes
    it held then; any other file is read and hashed. The kernel sets ctime to the current time
    on every change to a file's bytes or metadata and no call sets it back (``touch`` and
    ``utime`` set mtime only), so an edit behind the tool's back changes the key even when size
    and mtime are put back. A record is trusted only if the file's ctime is at least ``RACY_NS``
    older than the moment the cache is written (``now_ns``, the file system's clock): a file
    changed in the same tick as it was hashed would otherwise keep an old key (git's "racy"
    index entries); an untrusted record only says which sha256 the file had, so that a file
    hashed again to the same bytes does not count as changed. ``llm-wiki verify`` never uses a
    cache."""

    RACY_NS = 2_000_000_000

    def __init__(
        self,
        files: dict[str, tuple[int, int, int, int, str, bool]] | None = None,
        archives: dict[str, Any] | None = None,
    ) -> None:
        self.old_files = files or {}
        self.old_archives = archives or {}
        self.files: dict[str, tuple[int, int, int, int, str, bool]] = {}
        self.archives: dict[str, Any] = {}
        self.changed: set[str] = set()  # entry paths whose bytes differ from the last record
        # entry paths recorded by this build (hashed); every other record in ``files`` is the
        # very tuple of ``old_files`` (a trusted one kept), so what changed is among these
        self.recorded: set[str] = set()
        # entry path -> the bytes just read to hash it: the site shows those, without reading
        # the file again (see View.body); up to KEEP bytes in all, so a build of a big archive
        # holds a bounded share of it (a file past that is read again for its page)
        self.read: dict[str, bytes] = {}
        self.kept = 0

    @staticmethod
    def key(st: os.stat_result) -> tuple[int, int, int, int]:
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    @staticmethod
    def holds(
        record: tuple[int, int, int, int, str, bool] | None, st: os.stat_result
    ) -> TypeGuard[tuple[int, int, int, int, str, bool]]:
        """Whether ``record`` is trusted and still that of the file ``st`` describes (inode,
        size, mtime and ctime), so its sha256 stands without reading the file."""
        return (
            record is not None
            and record[5]
            and record[2] == st.st_mtime_ns
            and record[3] == st.st_ctime_ns
            and record[1] == st.st_size
            and record[0] == st.st_ino
        )

    KEEP = 64 << 20

    def sha_of(self, path: str, rel: str, st: os.stat_result) -> str:
        old = self.old_files.get(rel)
        if self.holds(old, st):
            self.files[rel] = old
            return old[4]
        data = store.read_whole(path)
        self.keep(rel, data)
        return self.record(rel, st, store.sha256_bulk(data))

    def keep(self, rel: str, data: bytes) -> None:
        """Keep the bytes read of ``rel`` for its page, while the kept total is under KEEP."""
        if self.kept + len(data) <= self.KEEP:
            self.read[rel] = data
            self.kept += len(data)

    def record(self, rel: str, st: os.stat_result, sha: str) -> str:
        """Remember the sha256 just hashed of the file at ``rel`` (trust is settled later)."""
        old = self.old_files.get(rel)
        self.files[rel] = (*self.key(st), sha, False)
        self.recorded.add(rel)
        if old is None or old[4] != sha:
            self.changed.add(rel)
        return sha

    def finish(self, now_ns: int) -> None:
        """Settle trust: only records of files unchanged for RACY_NS before ``now_ns``."""
        limit = now_ns - self.RACY_NS
        files = self.files
        for rel in [k for k, v in files.items() if not v[5] and v[3] < limit]:
            files[rel] = (*files[rel][:5], True)
        self.archives = {k: v for k, v in self.archives.items() if v[0][3] < limit}


def logged_entries(lines: Any, into: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """Entry id -> [sha256, path, scope, archive] as log.md's ``lines`` record them (folded
    onto ``into``, for a caller that follows the log)."""
    logged = into if into is not None else {}
    for line in lines:
        op, subject, fields = line[1], line[2], line[3]
        if op == "write" and subject:
            logged[subject] = [
                fields.get("sha256", ""),
                fields.get("path", ""),
                fields.get("scope", ""),
                "",
            ]
        elif op == "archive" and subject in logged:
            logged[subject][3] = fields.get("archive", "")
    return logged


# A logged entry's flags (in _Log.flags, one byte per record).
_SEEN = 1  # its file (or an archive member) was found
_PARSED = 2  # the catalog holds a row parsed from the logged bytes
_NO_SHA = b"-" * 32  # stands for a logged sha256 that is not one: no digest is this
# The usual write line exactly as format_log_line writes it, every field unquoted printable
# ASCII (no space, ``"`` or ``=``) and the sha256 64 lowercase hex digits, line feed and all:
# found by one regex scan of a chunk of log.md, so the usual line is neither decoded nor split.
# On such a line parse_log_line reads the same subject, sha256 and scope (a property test
# compares them); the lines between two matches go to parse_log_line.
_WRITE = re.compile(
    rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ write ([!#-<>-~]+) sha256=([0-9a-f]{64})"
    rb" scope=([!#-<>-~]+) path=[!#-<>-~]+\n",
    re.MULTILINE,
)
LOG_CHUNK = 1 << 18  # bytes of log.md read at a time


def _digest(sha: str) -> bytes:
    try:
        digest = bytes.fromhex(sha)
    except ValueError:
        return _NO_SHA
    if len(digest) != 32 or digest.hex() != sha:
        return _NO_SHA  # not a sha256 as hexdigest writes it: no file matches it
    return digest


class _Log:
    """Each entry's last write line in log.md: its sha256 and scope, and flags.

    Memory is what verify of a big wiki is bounded by, so the records are one sorted list of
    bytes, ``id NUL seq(4) sha256(32) scope`` (no dict, no per-entry object beyond the one
    bytes), and one flags byte each; files are looked up by bisection, from a cursor that the
    files' own order (by month, then id) keeps right most of the time. Lines read after the
    list is sealed (a write in progress), and ids holding a NUL, are kept in ``extra``."""

    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki
        self.items: list[bytes] = []
        self.flags = bytearray()
        self.extra: dict[bytes, bytearray] = {}  # id -> flags, sha256, scope
        self.offset = 0
        self.sealed = False
        self._at = 0

    def add(self, entry_id: bytes, digest: bytes, scope: bytes) -> None:
        if not self.sealed and b"\x00" not in entry_id:
            self.items.append(
                entry_id + b"\x00" + len(self.items).to_bytes(4, "big") + digest + scope
            )
            return
        old = self.extra.get(entry_id)
        if old is not None:
            seen = old[0] & _SEEN
        else:
            i = self.find(entry_id) if self.sealed else -1
            seen = self.flags[i] & _SEEN if i >= 0 else 0
        self.extra[entry_id] = bytearray(bytes((seen,)) + digest + scope)

    def seal(self) -> None:
        """Sort the records and keep each id's last line (the highest seq)."""
        items = self.items
        items.sort()
        last = len(items) - 1
        dropped = False
        for i in range(last):
            a = items[i]
            cut = a.index(0) + 1
            if items[i + 1][:cut] == a[:cut]:
                items[i] = b""  # an earlier line of the same id
                dropped = True
        if dropped:
            self.items = items = [item for item in items if item]
        self.flags = bytearray(len(items))
        self.sealed = True

    def find(self, key: bytes) -> int:
        """The index of ``key``'s record in ``items``, or -1."""
        items = self.items
        probe = key + b"\x00"
        i = self._at
        if i < len(items) and items[i].startswith(probe):
            self._at = i + 1
            return i
        i = bisect.bisect_left(items, probe)
        if i < len(items) and items[i].startswith(probe):
            self._at = i + 1
            return i
        return -1

    def get(self, key: bytes) -> tuple[int, bytes, bytes] | None:
        """(flags, sha256 digest, scope) of ``key``'s record, or None."""
        if self.extra:
            got = self.extra.get(key)
            if got is not None:
                return got[0], bytes(got[1:33]), bytes(got[33:])
        i = self.find(key)
        if i < 0:
            return None
        item, p = self.items[i], len(key)
        return self.flags[i], item[p + 5 : p + 37], item[p + 37 :]

    def mark(self, key: bytes, flag: int = _SEEN) -> None:
        got = self.extra.get(key) if self.extra else None
        if got is not None:
            got[0] |= flag
            return
        i = self.find(key)
        if i >= 0:
            self.flags[i] |= flag

    def unseen(self) -> Iterator[tuple[str, bytes]]:
        """(id, scope) of every record whose file was not found."""
        flags = self.flags
        for i, item in enumerate(self.items):
            if not flags[i] & _SEEN:
                p = item.index(0)
                if item[:p] not in self.extra:
                    yield item[:p].decode(), item[p + 37 :]
        for key, got in self.extra.items():
            if not got[0] & _SEEN:
                yield key.decode(), bytes(got[33:])

    def follow(self) -> None:
        """Read the write lines from ``offset`` on.

        Lines end as :func:`store.log_texts` ends them: at a line feed; a line with a CR in it
        is split as ``bytes.splitlines`` splits it, and a piece that does not end in a line feed
        (a torn last line, a lone CR) ends the log."""
        try:
            fh = open(self.wiki.log_path, "rb")  # noqa: SIM115 (closed below)
        except FileNotFoundError:
            return
        fast = not self.sealed
        items = self.items
        add = self.add
        with fh:
            fh.seek(self.offset)
            base = self.offset  # of buf
            tail = b""
            while chunk := fh.read(LOG_CHUNK):
                buf = tail + chunk if tail else chunk
                cut = buf.rfind(b"\n") + 1
                tail = buf[cut:]
                if not cut:
                    continue
                pos = 0
                for m in _WRITE.finditer(buf, 0, cut):
                    start = m.start()
                    if start != pos:
                        read = self._others(buf[pos:start])
                        if read != start - pos:
                            self.offset = base + pos + read
                            return
                    if fast:
                        items.append(
                            m.group(1)
                            + b"\x00"
                            + len(items).to_bytes(4, "big")
                            + bytes.fromhex(m.group(2).decode())
                            + m.group(3)
                        )
                    else:
                        add(m.group(1), bytes.fromhex(m.group(2).decode()), m.group(3))
                    pos = m.end()
                if pos != cut:
                    read = self._others(buf[pos:cut])
                    if read != cut - pos:
                        self.offset = base + pos + read
                        return
                base += cut
            self.offset = base

    def _others(self, lines: bytes) -> int:
        """Whole lines of other shapes, through parse_log_line. Returns how many bytes of
        ``lines`` were read: all, unless a piece without a line feed (a lone CR) ends the log."""
        done = 0
        for piece in lines.splitlines(keepends=True):
            if not piece.endswith(b"\n"):
                return done
            done += len(piece)
            line = store.parse_log_line(piece.decode("utf-8", "replace").rstrip("\r\n"))
            if line is not None and line.op == "write" and line.subject:
                fields = line.fields
                self.add(
                    line.subject.encode(),
                    _digest(fields.get("sha256", "")),
                    fields.get("scope", "").encode(),
                )
        return done

    def paths(self, ids: set[str]) -> dict[str, str]:
        """The path each of ``ids`` was written to (its last write line): a second pass, for
        the few entries verify reports removed."""
        paths: dict[str, str] = {}
        for _, line in store.read_log(self.wiki):
            if line.op == "write" and line.subject in ids:
                paths[line.subject] = line.fields.get("path", "")
        return paths


def verify(
    wiki: Wiki,
    viewer: Viewer,
    *,
    lock_held: bool = False,
    logged: Mapping[str, list[str]] | None = None,
    logged_to: int = 0,
    hashes: HashCache | None = None,
) -> VerifyResult:
    """Find entries edited, removed or added behind the tool's back, and broken archives.

    Beyond the files and log.md, it checks what this clone can prove from its own record: every
    line of log.md it has seen whole (``store.anchor_path``) and, in a git repository, every
    line any commit held are still in log.md, and no commit rewrote an entry. Findings about
    entries the viewer may not read are left out: hidden looks like absent.

    ``logged`` (from :func:`logged_entries`, of log.md up to byte ``logged_to``) saves reading
    log.md; ``hashes`` lets a site build skip files unchanged since its last build (see
    :class:`HashCache`).
    """
    checked, findings, anchored = _verify(wiki, viewer, lock_held, logged, logged_to, hashes)
    if not findings and viewer.sees_all:
        _save_anchor(wiki, anchored)
    return VerifyResult(checked, tuple(findings))


def _verify(
    wiki: Wiki,
    viewer: Viewer,
    lock_held: bool,
    logged: Mapping[str, list[str]] | None,
    logged_to: int,
    hashes: HashCache | None,
    only: set[str] | None = None,
    stats: list[tuple[str, os.stat_result]] | None = None,
) -> tuple[int, list[Finding], int | None]:
    """:func:`verify` as (checked, findings in order, how much of the anchor log.md begins
    with), the anchor not saved. ``only`` (with ``stats``, the entry files whose id is in it,
    and ``logged`` holding only those ids): the check of those entries alone, archives left
    out (see :func:`verify_since`)."""
    from llm_wiki.catalog import each_parsed_sha  # deferred: only verify reads it

    log = _Log(wiki)
    if logged is None:
        log.follow()
    else:
        for entry_id, (sha, _, in_scope, _) in logged.items():
            log.add(entry_id.encode(), _digest(sha), in_scope.encode())
        log.offset = logged_to
    log.seal()
    items, flags, extra, find = log.items, log.flags, log.extra, log.find
    n = len(items)
    at = 0  # a cursor into items: the catalog's rows by id, and the files, come in their order
    for parsed_id, sha in each_parsed_sha(wiki, only):  # bytes the catalog parsed: no reparse
        key = parsed_id.encode()
        probe = key + b"\x00"
        i = at if at < n and items[at].startswith(probe) else find(key)
        if i >= 0:
            at = i + 1
            p = len(probe) + 4
            if items[i][p : p + 32].hex() == sha:
                flags[i] |= _PARSED
        elif extra:
            record = extra.get(key)
            if record is not None and record[1:33].hex() == sha:
                record[0] |= _PARSED
    findings: list[Finding] = []
    found: set[bytes] = set()  # files (or members) with no record when they were found: few
    checked = 0
    sees_all = viewer.sees_all
    scope: bytes | str
    seen: dict[bytes | str, bool] = {}

    def visible(scope: bytes | str) -> bool:
        got = seen.get(scope)
        if got is None:
            text = scope.decode() if isinstance(scope, bytes) else scope
            got = seen[scope] = viewer.sees([text])
        return got

    sha256 = store.openssl_sha256()
    read = store.read_whole
    root = str(wiki.root) + os.sep
    unlogged: list[tuple[bytes, str, bytes, os.stat_result | None]] = []
    if hashes is None:
        for rel, _, _ in store.iter_entry_files(wiki, stat=False):
            try:
                data = read(root + rel)
            except FileNotFoundError:
                continue  # archived (or a write taken back) since the folder was listed
            key = rel[rel.rindex("/") + 1 : -3].encode()
            probe = key + b"\x00"
            if extra and key in extra:
                i = -1
            elif at < n and items[at].startswith(probe):
                i = at
            else:
                i = find(key)
            if i < 0:
                got = log.get(key)
                if got is None:
                    unlogged.append((key, rel, data, None))
                    continue
                log.mark(key)
                state, digest, scope = got
            else:
                at = i + 1
                item, p = items[i], len(probe) + 4
                state = flags[i]
                flags[i] = state | _SEEN
                digest = item[p : p + 32]
                scope = item[p + 32 :] if not sees_all else b""
            if not sees_all and not visible(scope):
                continue
            checked += 1
            if digest != sha256(data).digest():
                findings.append(Finding("edited", key.decode(), rel, KINDS["edited"]))
            elif not state & _PARSED and not _parses(data, rel):
                findings.append(Finding("unreadable", key.decode(), rel, KINDS["unreadable"]))
    else:
        for rel, st in store.iter_entry_stats(wiki) if stats is None else stats:
            path = root + rel
            key = rel[rel.rindex("/") + 1 : -3].encode()
            probe = key + b"\x00"
            if extra and key in extra:
                i = -1
            elif at < n and items[at].startswith(probe):
                i = at
            else:
                i = find(key)
            if i < 0:
                got = log.get(key)
                if got is None:
                    try:
                        data = read(path)
                    except FileNotFoundError:
                        continue
                    unlogged.append((key, rel, data, st))
                    continue
                state, digest, scope = got
            else:
                at = i + 1
                item, p = items[i], len(probe) + 4
                state = flags[i]
                digest = item[p : p + 32]
                scope = item[p + 32 :]
            if not sees_all and not visible(scope):
                log.mark(key)
                continue
            try:
                sha = hashes.sha_of(path, rel, st)
            except FileNotFoundError:
                continue  # archived since the folder was listed
            if i >= 0:
                flags[i] = state | _SEEN
            else:
                log.mark(key)
            checked += 1
            if digest.hex() != sha:
                findings.append(Finding("edited", key.decode(), rel, KINDS["edited"]))
            elif not state & _PARSED:
                got_data = hashes.read.get(rel)
                try:
                    data = read(path) if got_data is None else got_data
                except FileNotFoundError:
                    continue
                if not _parses(data, rel):
                    findings.append(Finding("unreadable", key.decode(), rel, KINDS["unreadable"]))
    if unlogged:
        # A write links its file, then appends its line: a file seen before its line is a write
        # in progress. Read the lines written since; for what is left, wait for the write lock
        # (no write is then half-done) and read once more.
        log.follow()
        if any(log.get(key) is None for key, _, _, _ in unlogged):
            with contextlib.nullcontext() if lock_held else store.locked(wiki):
                log.follow()
                gone = {k for k, rel, _, _ in unlogged if not os.path.exists(root + rel)}
        else:
            gone = set()
        for key, rel, data, stat in unlogged:
            if key in gone:
                continue
            got = log.get(key)
            if got is None:
                found.add(key)
            else:
                log.mark(key)
            if not visible(got[2] if got is not None else _scope_of(data, rel)):
                continue
            checked += 1
            digest = sha256(data).digest()
            if hashes is not None and stat is not None:  # its page is named by its sha256
                hashes.record(rel, stat, digest.hex())
                hashes.keep(rel, data)
            if got is None:
                findings.append(Finding("unlogged", key.decode(), rel, KINDS["unlogged"]))
            elif got[1] != digest:
                findings.append(Finding("edited", key.decode(), rel, KINDS["edited"]))
            elif not _parses(data, rel):
                findings.append(Finding("unreadable", key.decode(), rel, KINDS["unreadable"]))
    for name in sorted(store.archive_names(wiki)) if only is None else ():
        for rel, sha, member_scope in _archive_members(wiki, name, hashes):
            if rel is None:  # unreadable from here on
                if sees_all:
                    findings.append(
                        Finding("unreadable-archive", "", name, KINDS["unreadable-archive"])
                    )
                break
            entry_id = os.path.basename(rel)[:-3]
            key = entry_id.encode()
            got = log.get(key)
            if got is not None:
                if got[0] & _SEEN:
                    continue
                scope = got[2]
            elif key in found:
                continue
            elif isinstance(member_scope, bytes):
                scope = _scope_of(member_scope, rel)
            else:
                scope = member_scope
            if not visible(scope):
                continue
            checked += 1
            where = f"{name}:{rel}"
            if got is None:
                found.add(key)
                findings.append(Finding("unlogged", entry_id, where, KINDS["unlogged"]))
                continue
            log.mark(key)
            if got[1].hex() != sha:
                findings.append(
                    Finding("archive-mismatch", entry_id, where, KINDS["archive-mismatch"])
                )
    gone_ids = {entry_id for entry_id, scope in log.unseen() if visible(scope)}
    if gone_ids:
        if logged is not None:
            paths = {i: logged[i][1] for i in gone_ids if i in logged}
            missing = gone_ids - set(paths)
            if missing:
                paths.update(log.paths(missing))
        else:
            paths = log.paths(gone_ids)
        for entry_id in gone_ids:
            checked += 1
            findings.append(Finding("removed", entry_id, paths.get(entry_id, ""), KINDS["removed"]))
    anchored = None
    if sees_all:  # log lines and commits carry every scope: an admin's check
        history, anchored = _history(wiki, None)
        findings += history
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    return checked, findings, anchored


# Findings about log.md's history rather than one entry's file: every check makes them again.
_HISTORY = frozenset({"dropped-line", "rewritten"})


def verify_since(
    wiki: Wiki,
    viewer: Viewer,
    last: VerifyResult,
    *,
    logged: Mapping[str, list[str]],
    logged_to: int,
    hashes: HashCache,
    named: set[str],
) -> VerifyResult | None:
    """What :func:`verify` would find now, from what it found at the last site build (``last``,
    with ``hashes`` holding that build's records): only the entries whose file may differ are
    checked again. Every entry file is still looked at (one stat each), and an entry is checked
    again when its file's (inode, size, mtime_ns, ctime_ns) is not that of a trusted record (see
    :class:`HashCache`: any change to a file's bytes sets its ctime), its file came or went, or
    it is in ``named`` (the ids of log.md's lines since). The others' findings are the last
    ones; log.md's history is checked whole again. None when it cannot say (a file of an id not
    in log.md, an archive that changed or holds an entry checked again): the caller runs
    :func:`verify`."""
    old, files = hashes.old_files, hashes.files
    changed = set(named)
    changed_files = {i + ".md" for i in changed}  # (their file names: no slice per file)
    again: list[tuple[str, os.stat_result]] = []  # the files of the changed ids
    recorded = 0  # how many of those the last build had a record of
    root = str(wiki.root) + os.sep
    for prefix, folder in store.entry_folders(wiki):  # (as iter_entry_stats, in no order)
        for name, st in store.folder_stats(folder):
            rel = prefix + name
            o = old.get(rel)
            if o is None:
                changed.add(name[:-3])
                changed_files.add(name)
                again.append((rel, st))
                continue
            if (  # HashCache.holds, inline: ten thousand files
                o[2] == st.st_mtime_ns
                and o[3] == st.st_ctime_ns
                and o[1] == st.st_size
                and o[0] == st.st_ino
                and name not in changed_files
                and (o[5] or _same_bytes(hashes, root, rel, st, o[4]))
            ):
                if o[5]:  # (else _same_bytes made its record again)
                    files[rel] = o
                continue
            if not HashCache.holds(o, st):
                changed.add(name[:-3])
                changed_files.add(name)
            again.append((rel, st))
            recorded += 1
    # the records of files not found: every one is kept in files or a file in again, unless the
    # counts say otherwise (files holds only records of old's files)
    gone = []
    if len(old) - len(files) - recorded:
        gone = sorted(old.keys() - files.keys() - {rel for rel, _ in again})
    changed.update(rel[rel.rindex("/") + 1 : -3] for rel in gone)
    extra = changed - named
    if extra:  # an id changed after a file of it was passed: that file goes again
        back = [rel for rel in files if rel[rel.rindex("/") + 1 : -3] in extra]
        for rel in back:
            del files[rel]
            try:
                again.append((rel, os.stat(wiki.root / rel)))
            except OSError:
                return None
    again.sort()
    if any(rel[rel.rindex("/") + 1 : -3] not in logged for rel, _ in again):
        return None  # an unlogged file: the full check waits for a write in progress
    names = sorted(store.archive_names(wiki))
    if set(names) != set(hashes.old_archives):
        return None
    for name in names:
        kept = hashes.old_archives[name]
        try:
            st = os.stat(wiki.root / name)
        except OSError:
            return None
        if tuple(kept[0]) != HashCache.key(st):
            return None
        if any(m[0] and os.path.basename(m[0])[:-3] in changed for m in kept[1]):
            return None
        hashes.archives[name] = kept
    counted = sum(1 for rel, _ in again if rel in old) + len(gone)
    counted += sum(1 for f in last.findings if f.kind == "removed" and f.id in changed)
    checked, found, anchored = _verify(
        wiki,
        viewer,
        False,
        {i: logged[i] for i in changed if i in logged},
        logged_to,
        hashes,
        only=changed,
        stats=again,
    )
    findings = [f for f in last.findings if f.id not in changed and f.kind not in _HISTORY]
    findings += found
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    if not findings and viewer.sees_all:
        _save_anchor(wiki, anchored)
    return VerifyResult(last.checked - counted + checked, tuple(findings))


def _same_bytes(hashes: HashCache, root: str, rel: str, st: os.stat_result, sha: str) -> bool:
    """Whether the file at ``rel``, whose stat is that of its record but whose record is not
    trusted (it was hashed in the clock tick it last changed in), holds the bytes it held: it
    is read and hashed again here, and its record made again (see :class:`HashCache`), so an
    entry whose last write came just before the last build is not checked again as if changed
    (nor log.md's records of every entry read to check it)."""
    try:
        data = store.read_whole(root + rel)
    except OSError:
        return False
    got = store.sha256_bulk(data)
    if got != sha:
        return False
    hashes.keep(rel, data)
    hashes.record(rel, st, got)
    return True


def _archive_members(
    wiki: Wiki, name: str, hashes: HashCache | None
) -> Iterator[tuple[Any, str, str | bytes]]:
    """(member path, sha256, its scope or its bytes) of each entry in one archive, streamed in
    order; a last (None, "", "") when the archive cannot be read whole (what precedes the break
    is checked, what follows it is missing). Cached by the archive's stat key in ``hashes``."""
    from llm_wiki.archive_file import iter_members  # deferred: tarfile + zstandard

    st = None
    if hashes is not None:
        try:
            st = os.stat(wiki.root / name)
        except OSError:
            st = None
        old = hashes.old_archives.get(name)
        if st is not None and old is not None and tuple(old[0]) == HashCache.key(st):
            hashes.archives[name] = old
            for member in old[1]:
                yield tuple(member)  # type: ignore[misc]
            return
    kept: list[tuple[Any, str, str]] = []
    try:
        for rel, data, _ in iter_members(wiki, name):
            sha = store.sha256_bulk(data)
            if hashes is not None:
                kept.append((rel, sha, _scope_of(data, rel)))
            yield rel, sha, data
    except WikiError:
        kept.append((None, "", ""))
        yield None, "", ""
    if hashes is not None and st is not None:
        hashes.archives[name] = (HashCache.key(st), kept)


def history_findings(wiki: Wiki, log: bytes | None = None) -> list[Finding]:
    """Log lines this clone or its git history recorded that ``log`` (log.md by default) lost,
    and entry files a commit rewrote."""
    return _history(wiki, log)[0]


_CHUNK = 1 << 20


def _whole_lines(path: os.PathLike[str] | str) -> int:
    """How many bytes of the file at ``path`` are whole lines (up to its last line feed)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return 0
    try:
        end = os.fstat(fd).st_size
        while end > 0:
            start = max(0, end - 65536)
            cut = os.pread(fd, end - start, start).rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            end = start
        return 0
    finally:
        os.close(fd)


def _starts_log(wiki: Wiki, log: bytes | None, prefix: bytes | os.PathLike[str], n: int) -> bool:
    """Whether log.md (or ``log``) begins with the first ``n`` bytes of ``prefix`` (bytes or a
    file), compared a chunk at a time."""
    if n == 0:
        return True
    if log is not None:
        if isinstance(prefix, bytes):
            return log.startswith(prefix[:n])
        with open(prefix, "rb") as fh:
            return all(
                log[i : i + _CHUNK] == fh.read(min(_CHUNK, n - i)) for i in range(0, n, _CHUNK)
            )
    try:
        fh_log = open(wiki.log_path, "rb")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        return False
    with (
        fh_log,
        contextlib.nullcontext(None) if isinstance(prefix, bytes) else open(prefix, "rb") as fh,
    ):
        for i in range(0, n, _CHUNK):
            want = min(_CHUNK, n - i)
            theirs = fh.read(want) if fh is not None else prefix[i : i + want]  # type: ignore[index]
            if fh_log.read(want) != theirs:
                return False
    return True


def _history(wiki: Wiki, log: bytes | None) -> tuple[list[Finding], int | None]:
    """:func:`history_findings`, and how many bytes of the anchor are whole lines when log.md
    begins with them (None: it does not, or there is no anchor)."""
    current_lines: set[bytes] | None = None

    def current() -> set[bytes]:
        nonlocal current_lines
        if current_lines is None:
            if log is not None:
                current_lines = store.log_lines(log)
            else:
                try:
                    current_lines = store.log_lines(wiki.log_path.read_bytes())
                except FileNotFoundError:
                    current_lines = set()
        return current_lines

    dropped: dict[bytes, str] = {}
    anchor = store.anchor_path(wiki)
    anchor_len = _whole_lines(anchor)
    anchored: int | None = None
    if _starts_log(wiki, log, anchor, anchor_len):
        anchored = anchor_len if anchor.exists() else None
    else:
        for line in store.read_anchor(wiki) - current():
            dropped[line] = "this clone's last sync or verify"
    rewritten: dict[str, str] = {}
    if _in_git(wiki):
        head = _git_out(wiki, "show", "HEAD:log.md") or b""
        head_len = head.rfind(b"\n") + 1
        if not _starts_log(wiki, log, head, head_len):
            for line in store.log_lines(head) - current():
                dropped.setdefault(line, "the last commit (HEAD)")
        del head
        # Every line a commit removed from log.md (against each parent, merges included) must
        # be back: union merges and the tool only ever add lines.
        commit = ""
        for raw in _git_lines(
            wiki,
            "log",
            "-p",
            "-m",
            "-U0",
            "--no-color",
            "--no-renames",
            "--format=%x00%H",
            "--",
            "log.md",
        ):
            if raw.startswith(b"\x00"):
                commit = raw[1:].decode()[:12]
            elif raw.startswith(b"-") and not raw.startswith(b"---"):
                line = raw[1:].rstrip(b"\r")
                if line.strip() and line not in current():
                    dropped.setdefault(line, f"commit {commit}")
        commit = ""
        for raw in _git_lines(
            wiki,
            "log",
            "-m",
            "--no-renames",
            "--diff-filter=M",
            "--name-only",
            "--format=%x00%H",
            "--",
            "entries",
        ):
            name = raw.decode("utf-8", "replace")
            if name.startswith("\x00"):
                commit = name[1:][:12]
            elif name.endswith(".md"):
                rewritten.setdefault(name, commit)
    findings = []
    for line, where in sorted(dropped.items()):
        parsed = store.parse_log_line(line.decode("utf-8", "replace"))
        subject = parsed.subject if parsed else ""
        findings.append(
            Finding(
                "dropped-line",
                subject,
                "log.md",
                f"{KINDS['dropped-line']}: {store.describe_line(line)}, recorded by {where}",
            )
        )
    for rel, commit in sorted(rewritten.items()):
        entry_id = os.path.basename(rel)[:-3]
        findings.append(
            Finding("rewritten", entry_id, rel, f"{KINDS['rewritten']} (commit {commit})")
        )
    return findings, anchored


def _save_anchor(wiki: Wiki, anchored: int | None) -> None:
    """Remember log.md as seen whole and clean, so a line dropped later is noticed.

    ``anchored``: how many bytes of the anchor log.md is known to begin with. Then only what
    log.md gained is appended (a torn append leaves a prefix of log.md, which the next verify
    extends); else the anchor is replaced whole (a temp file, fsync, rename), copied by the
    kernel without holding log.md in memory."""
    path = store.anchor_path(wiki)
    end = _whole_lines(wiki.log_path)
    if anchored is not None and anchored == end and _whole_lines(path) == os.path.getsize(path):
        return
    with contextlib.suppress(OSError):  # a read-only wiki can still be verified
        src = os.open(wiki.log_path, os.O_RDONLY)
        try:
            if anchored is not None and anchored <= end:
                dst = os.open(path, os.O_WRONLY)
                try:
                    os.ftruncate(dst, anchored)
                    _copy(src, dst, anchored, end)
                    os.fsync(dst)
                finally:
                    os.close(dst)
                return
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                try:
                    _copy(src, dst, 0, end)
                    os.fsync(dst)
                finally:
                    os.close(dst)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            fsync_dir(path.parent)
        finally:
            os.close(src)


def _copy(src: int, dst: int, start: int, end: int) -> None:
    """Bytes ``start``..``end`` of ``src`` to the same offsets of ``dst``."""
    offset = start
    while offset < end:
        data = os.pread(src, min(_CHUNK, end - offset), offset)
        if not data:
            break
        os.pwrite(dst, data, offset)
        offset += len(data)


# The variables that can put a folder with no .git above it in a repository (git(1)); the others
# (GIT_AUTHOR_NAME, GIT_SSL_CAINFO, ... often set for good) cannot, and need no git run to ask.
_GIT_LOCATES = ("GIT_DIR", "GIT_WORK_TREE")


def _in_git(wiki: Wiki) -> bool:
    if not any(k in os.environ for k in _GIT_LOCATES) and not any(
        os.path.exists(os.path.join(folder, ".git"))
        for folder in (wiki.root.resolve(), *wiki.root.resolve().parents)
    ):
        return False  # git finds a repository only through a .git up the tree (or GIT_DIR)
    out = _git_out(wiki, "rev-parse", "--is-inside-work-tree")
    return out is not None and out.strip() == b"true"


def _git_out(wiki: Wiki, *args: str) -> bytes | None:
    """git's stdout in the wiki, or None (no git, not a repository, no such object)."""
    import subprocess  # deferred: only a wiki in a git repository runs git (~3 ms to import)

    try:
        proc = subprocess.run(
            ["git", "-C", str(wiki.root), *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


def _git_lines(wiki: Wiki, *args: str) -> Iterator[bytes]:
    """git's stdout in the wiki, a line at a time (line feed cut); nothing when git fails."""
    import subprocess  # deferred: only a wiki in a git repository runs git (~3 ms to import)

    try:
        proc = subprocess.Popen(
            ["git", "-C", str(wiki.root), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            yield raw[:-1] if raw.endswith(b"\n") else raw
        proc.stdout.close()


def _parses(data: bytes, rel: str) -> bool:
    try:
        parse_entry(decode_text(data, rel), what=rel)
    except (InvalidInput, WikiError):
        return False
    return True


def _scope_of(data: bytes, rel: str) -> str:
    try:
        return parse_entry(decode_text(data, rel), what=rel).scope
    except (InvalidInput, WikiError):
        return ""

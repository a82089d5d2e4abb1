"""The tamper check: every entry against the sha256 that log.md recorded when it was written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.entries import decode_text, parse_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.wiki import Wiki

KINDS = {
    "edited": "its bytes differ from the sha256 logged when it was written",
    "removed": "it was logged but its file is gone (and it is in no archive)",
    "unlogged": "its file has no write line in log.md (a write that died, or added by hand)",
    "unreadable-archive": "the archive file cannot be read whole",
    "archive-mismatch": "its copy in an archive differs from the logged sha256",
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

    @staticmethod
    def key(st: os.stat_result) -> tuple[int, int, int, int]:
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def sha_of(self, path: str, rel: str, st: os.stat_result) -> str:
        old = self.old_files.get(rel)
        if (
            old is not None
            and old[5]
            and old[2] == st.st_mtime_ns
            and old[3] == st.st_ctime_ns
            and old[1] == st.st_size
            and old[0] == st.st_ino
        ):
            self.files[rel] = old
            return old[4]
        with open(path, "rb") as fh:
            data = fh.read()
        return self.record(rel, st, store.sha256_bytes(data))

    def record(self, rel: str, st: os.stat_result, sha: str) -> str:
        """Remember the sha256 just hashed of the file at ``rel`` (trust is settled later)."""
        old = self.old_files.get(rel)
        self.files[rel] = (*self.key(st), sha, False)
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


def verify(
    wiki: Wiki,
    viewer: Viewer,
    *,
    logged: dict[str, list[str]] | None = None,
    hashes: HashCache | None = None,
) -> VerifyResult:
    """Find entries edited, removed or added behind the tool's back, and broken archives.

    Findings about entries the viewer may not read are left out: hidden looks like absent.
    ``logged`` (from :func:`logged_entries`) saves reading log.md; ``hashes`` lets a site build
    skip files unchanged since its last build (see :class:`HashCache`).
    """
    if logged is None:
        logged = logged_entries((line.time, line.op, line.subject, line.fields)
                                for _, line in store.read_log(wiki))  # fmt: skip
    findings: list[Finding] = []
    present: set[str] = set()
    checked = 0

    seen: dict[str, bool] = {}

    def visible(scope: str) -> bool:
        got = seen.get(scope)
        if got is None:
            got = seen[scope] = viewer.sees([scope])
        return got

    root = str(wiki.root) + os.sep
    for rel, st in store.iter_entry_stats(wiki):
        path = root + rel
        entry_id = rel[rel.rindex("/") + 1 : -3]
        present.add(entry_id)
        record = logged.get(entry_id)
        if record is None:
            with open(path, "rb") as fh:
                data = fh.read()
            if not visible(_scope_of(data, rel)):
                continue
            checked += 1
            if hashes is not None:  # what its page shows: named by its bytes' sha256
                hashes.record(rel, st, store.sha256_bytes(data))
            findings.append(Finding("unlogged", entry_id, rel, KINDS["unlogged"]))
            continue
        if not visible(record[2]):
            continue
        checked += 1
        if hashes is not None:
            sha = hashes.sha_of(path, rel, st)
        else:
            with open(path, "rb") as fh:
                sha = store.sha256_bytes(fh.read())
        if record[0] != sha:
            findings.append(Finding("edited", entry_id, rel, KINDS["edited"]))
    for name in sorted(store.archive_names(wiki)):
        for rel, sha, member_scope in _archive_members(wiki, name, hashes):
            if rel is None:  # unreadable from here on
                if viewer.sees_all:
                    findings.append(
                        Finding("unreadable-archive", "", name, KINDS["unreadable-archive"])
                    )
                break
            entry_id = os.path.basename(rel)[:-3]
            record = logged.get(entry_id)
            if record:
                scope = record[2]
            elif isinstance(member_scope, bytes):
                scope = _scope_of(member_scope, rel)
            else:
                scope = member_scope
            if entry_id in present or not visible(scope):
                continue
            present.add(entry_id)
            checked += 1
            if record is None:
                findings.append(Finding("unlogged", entry_id, f"{name}:{rel}", KINDS["unlogged"]))
            elif record[0] != sha:
                findings.append(
                    Finding(
                        "archive-mismatch", entry_id, f"{name}:{rel}", KINDS["archive-mismatch"]
                    )
                )
    for entry_id, record in sorted(logged.items()):
        if entry_id not in present and visible(record[2]):
            checked += 1
            findings.append(Finding("removed", entry_id, record[1], KINDS["removed"]))
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    return VerifyResult(checked, tuple(findings))


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
            sha = store.sha256_bytes(data)
            if hashes is not None:
                kept.append((rel, sha, _scope_of(data, rel)))
            yield rel, sha, data
    except WikiError:
        kept.append((None, "", ""))
        yield None, "", ""
    if hashes is not None and st is not None:
        hashes.archives[name] = (HashCache.key(st), kept)


def _scope_of(data: bytes, rel: str) -> str:
    try:
        return parse_entry(decode_text(data, rel), what=rel).scope
    except (InvalidInput, WikiError):
        return ""

"""The tamper check: every entry against the sha256 that log.md recorded when it was written."""

from __future__ import annotations

import os
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


_NO_SHA = b"-" * 32  # stands for a logged sha256 that is not one: no digest is this
_SEEN = b"\x01"  # first byte of a record whose entry was found (else b"\x00")


def verify(wiki: Wiki, viewer: Viewer) -> VerifyResult:
    """Find entries edited, removed or added behind the tool's back, and broken archives.

    Findings about entries the viewer may not read are left out: hidden looks like absent.
    Memory stays small however big the wiki: the log is streamed, each logged entry is held as
    its id and one short bytes record (found yet, the sha256's 32 bytes, the scope), and files
    are read one at a time.
    """
    logged: dict[str, bytes] = {}  # id -> found flag + sha256 digest + scope, of its last write
    for subject, sha, scope, _ in store.iter_writes(wiki):
        try:
            digest = bytes.fromhex(sha)
        except ValueError:
            digest = _NO_SHA
        if len(digest) != 32 or digest.hex() != sha:
            digest = _NO_SHA  # not a sha256 as hexdigest writes it: no file matches it
        logged[subject] = b"\x00" + digest + scope.encode()
    findings: list[Finding] = []
    unlogged: set[str] = set()  # ids of files with no write line (few)
    checked = 0

    def visible(scope: str) -> bool:
        return viewer.sees([scope])

    def seen(entry_id: str) -> bool:
        record = logged.get(entry_id)
        return entry_id in unlogged if record is None else record[:1] == _SEEN

    sees_all = viewer.sees_all
    root = str(wiki.root)
    sha256 = store.openssl_sha256()
    read = store.read_whole
    for month, files in store.iter_entry_months(wiki, stat=False):
        for name, _, _ in files:
            rel = month + name
            data = read(f"{root}/{rel}")
            entry_id = name[:-3]
            record = logged.get(entry_id)
            if record is None:
                unlogged.add(entry_id)
                if sees_all or visible(_scope_of(data, rel)):
                    checked += 1
                    findings.append(Finding("unlogged", entry_id, rel, KINDS["unlogged"]))
                continue
            if record[:1] != _SEEN:
                logged[entry_id] = _SEEN + record[1:]
            if not sees_all and not visible(record[33:].decode()):
                continue
            checked += 1
            if record[1:33] != sha256(data).digest():
                findings.append(Finding("edited", entry_id, rel, KINDS["edited"]))
    for name in sorted(store.archive_names(wiki)):
        from llm_wiki.archive_file import iter_members  # deferred: tarfile + zstandard

        try:  # streamed: what precedes a break is checked, what follows it is missing
            for rel, data, _ in iter_members(wiki, name):
                entry_id = os.path.basename(rel)[:-3]
                record = logged.get(entry_id)
                scope = _scope_of(data, rel) if record is None else record[33:].decode()
                if seen(entry_id) or not visible(scope):
                    continue
                checked += 1
                if record is None:
                    unlogged.add(entry_id)
                    findings.append(
                        Finding("unlogged", entry_id, f"{name}:{rel}", KINDS["unlogged"])
                    )
                    continue
                logged[entry_id] = _SEEN + record[1:]
                if record[1:33] != sha256(data).digest():
                    findings.append(
                        Finding(
                            "archive-mismatch", entry_id, f"{name}:{rel}", KINDS["archive-mismatch"]
                        )
                    )
        except WikiError:
            if viewer.sees_all:
                findings.append(
                    Finding("unreadable-archive", "", name, KINDS["unreadable-archive"])
                )
    gone = [
        entry_id
        for entry_id, record in logged.items()
        if record[:1] != _SEEN and visible(record[33:].decode())
    ]
    if gone:  # their paths: a second pass over the log, for these few only
        paths = _logged_paths(wiki, set(gone))
        for entry_id in gone:
            checked += 1
            findings.append(Finding("removed", entry_id, paths.get(entry_id, ""), KINDS["removed"]))
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    return VerifyResult(checked, tuple(findings))


def _logged_paths(wiki: Wiki, ids: set[str]) -> dict[str, str]:
    """The path of each of ``ids`` on its last write line."""
    paths: dict[str, str] = {}
    for subject, _, _, path in store.iter_writes(wiki):
        if subject in ids:
            paths[subject] = path
    return paths


def _scope_of(data: bytes, rel: str) -> str:
    try:
        return parse_entry(decode_text(data, rel), what=rel).scope
    except (InvalidInput, WikiError):
        return ""

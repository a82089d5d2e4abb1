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
    "unreadable": "its file does not parse as an entry, so every read of it fails",
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


@dataclass
class _Logged:
    sha: str
    path: str
    scope: str
    archive: str = ""


def verify(wiki: Wiki, viewer: Viewer) -> VerifyResult:
    """Find entries edited, removed or added behind the tool's back, and broken archives.

    Findings about entries the viewer may not read are left out: hidden looks like absent.
    """
    logged: dict[str, _Logged] = {}
    offset = _follow_log(wiki, logged, 0)
    findings: list[Finding] = []
    present: set[str] = set()
    checked = 0

    def visible(scope: str) -> bool:
        return viewer.sees([scope])

    unlogged: list[tuple[str, str, bytes]] = []
    for rel, _, _ in store.iter_entry_files(wiki):
        try:
            data = (wiki.root / rel).read_bytes()
        except FileNotFoundError:
            continue  # archived (or a write taken back) since the folder was listed
        entry_id = os.path.basename(rel)[:-3]
        present.add(entry_id)
        record = logged.get(entry_id)
        if record is None:
            unlogged.append((entry_id, rel, data))
            continue
        if not visible(record.scope):
            continue
        checked += 1
        if record.sha != store.sha256_bytes(data):
            findings.append(Finding("edited", entry_id, rel, KINDS["edited"]))
        elif not _parses(data, rel):
            findings.append(Finding("unreadable", entry_id, rel, KINDS["unreadable"]))
    if unlogged:
        # A write links its file, then appends its line: a file seen before its line is a write
        # in progress. Read the lines written since; for what is left, wait for the write lock
        # (no write is then half-done) and read once more.
        offset = _follow_log(wiki, logged, offset)
        if any(entry_id not in logged for entry_id, _, _ in unlogged):
            with store.locked(wiki):
                offset = _follow_log(wiki, logged, offset)
                gone = {e for e, rel, _ in unlogged if not (wiki.root / rel).exists()}
        else:
            gone = set()
        for entry_id, rel, data in unlogged:
            if entry_id in gone:
                present.discard(entry_id)
                continue
            record = logged.get(entry_id)
            scope = record.scope if record else _scope_of(data, rel)
            if not visible(scope):
                continue
            checked += 1
            if record is None:
                findings.append(Finding("unlogged", entry_id, rel, KINDS["unlogged"]))
            elif record.sha != store.sha256_bytes(data):
                findings.append(Finding("edited", entry_id, rel, KINDS["edited"]))
            elif not _parses(data, rel):
                findings.append(Finding("unreadable", entry_id, rel, KINDS["unreadable"]))
    for name in sorted(store.archive_names(wiki)):
        from llm_wiki.archive_file import iter_members  # deferred: tarfile + zstandard

        try:  # streamed: what precedes a break is checked, what follows it is missing
            for rel, data, _ in iter_members(wiki, name):
                entry_id = os.path.basename(rel)[:-3]
                record = logged.get(entry_id)
                scope = record.scope if record else _scope_of(data, rel)
                if entry_id in present or not visible(scope):
                    continue
                present.add(entry_id)
                checked += 1
                if record is None:
                    findings.append(
                        Finding("unlogged", entry_id, f"{name}:{rel}", KINDS["unlogged"])
                    )
                elif record.sha != store.sha256_bytes(data):
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
    for entry_id, record in sorted(logged.items()):
        if entry_id not in present and visible(record.scope):
            checked += 1
            findings.append(Finding("removed", entry_id, record.path, KINDS["removed"]))
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    return VerifyResult(checked, tuple(findings))


def _follow_log(wiki: Wiki, logged: dict[str, _Logged], start: int) -> int:
    """Read log.md's write and archive lines from byte ``start``; return where it stopped."""
    offset = start
    for end, line in store.read_log(wiki, start):
        offset = end
        if line.op == "write" and line.subject:
            logged[line.subject] = _Logged(
                line.fields.get("sha256", ""),
                line.fields.get("path", ""),
                line.fields.get("scope", ""),
            )
        elif line.op == "archive" and line.subject in logged:
            logged[line.subject].archive = line.fields.get("archive", "")
    return offset


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

"""The tamper check: every entry against the sha256 that log.md recorded when it was written."""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from typing import Any

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.entries import decode_text, parse_entry
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
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


@dataclass
class _Logged:
    sha: str
    path: str
    scope: str
    archive: str = ""


def verify(wiki: Wiki, viewer: Viewer, *, lock_held: bool = False) -> VerifyResult:
    """Find entries edited, removed or added behind the tool's back, and broken archives.

    Beyond the files and log.md, it checks what this clone can prove from its own record: every
    line of log.md it has seen whole (``store.anchor_path``) and, in a git repository, every
    line any commit held are still in log.md, and no commit rewrote an entry. Findings about
    entries the viewer may not read are left out: hidden looks like absent.
    """
    from llm_wiki.catalog import parsed_shas  # deferred: only verify reads it

    logged: dict[str, _Logged] = {}
    offset = _follow_log(wiki, logged, 0)
    parsed = parsed_shas(wiki)  # bytes the catalog already parsed need no second parse
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
        elif parsed.get(entry_id) != record.sha and not _parses(data, rel):
            findings.append(Finding("unreadable", entry_id, rel, KINDS["unreadable"]))
    if unlogged:
        # A write links its file, then appends its line: a file seen before its line is a write
        # in progress. Read the lines written since; for what is left, wait for the write lock
        # (no write is then half-done) and read once more.
        offset = _follow_log(wiki, logged, offset)
        if any(entry_id not in logged for entry_id, _, _ in unlogged):
            with contextlib.nullcontext() if lock_held else store.locked(wiki):
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
    if viewer.sees_all:  # log lines and commits carry every scope: an admin's check
        findings += history_findings(wiki)
    findings.sort(key=lambda f: (f.kind, f.id, f.path))
    if not findings and viewer.sees_all:
        _save_anchor(wiki)
    return VerifyResult(checked, tuple(findings))


def history_findings(wiki: Wiki, log: bytes | None = None) -> list[Finding]:
    """Log lines this clone or its git history recorded that ``log`` (log.md by default) lost,
    and entry files a commit rewrote."""
    if log is None:
        try:
            log = wiki.log_path.read_bytes()
        except FileNotFoundError:
            log = b""
    current = store.log_lines(log)
    dropped: dict[bytes, str] = {
        line: "this clone's last sync or verify" for line in store.read_anchor(wiki) - current
    }
    rewritten: dict[str, str] = {}
    if _in_git(wiki):
        head = _git_out(wiki, "show", "HEAD:log.md")
        for line in store.log_lines(head or b"") - current:
            dropped.setdefault(line, "the last commit (HEAD)")
        # Every line a commit removed from log.md (against each parent, merges included) must
        # be back: union merges and the tool only ever add lines.
        out = _git_out(
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
        )
        commit = ""
        for raw in (out or b"").split(b"\n"):
            if raw.startswith(b"\x00"):
                commit = raw[1:].decode()[:12]
            elif raw.startswith(b"-") and not raw.startswith(b"---"):
                line = raw[1:].rstrip(b"\r")
                if line.strip() and line not in current:
                    dropped.setdefault(line, f"commit {commit}")
        out = _git_out(
            wiki,
            "log",
            "-m",
            "--no-renames",
            "--diff-filter=M",
            "--name-only",
            "--format=%x00%H",
            "--",
            "entries",
        )
        commit = ""
        for name in (out or b"").decode("utf-8", "replace").splitlines():
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
    return findings


def _save_anchor(wiki: Wiki) -> None:
    """Remember log.md as seen whole and clean, so a line dropped later is noticed."""
    try:
        log = wiki.log_path.read_bytes()
    except FileNotFoundError:
        return
    end = log.rfind(b"\n") + 1
    with contextlib.suppress(OSError):  # a read-only wiki can still be verified
        atomic_write(store.anchor_path(wiki), log[:end])


def _in_git(wiki: Wiki) -> bool:
    out = _git_out(wiki, "rev-parse", "--is-inside-work-tree")
    return out is not None and out.strip() == b"true"


def _git_out(wiki: Wiki, *args: str) -> bytes | None:
    """git's stdout in the wiki, or None (no git, not a repository, no such object)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(wiki.root), *args],
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    except OSError:
        return None
    return proc.stdout if proc.returncode == 0 else None


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

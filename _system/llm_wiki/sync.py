"""Replicating a wiki across machines through git: ``llm-wiki sync``.

Entries are immutable files with unique ids and archives are content-addressed (the same members
give the same bytes and name), so git replicates them without conflicts; log.md only grows and
merges as a union (``log.md merge=union`` in .gitattributes). INDEX.md, index/ and .llm-wiki/ are
views each clone regenerates from the files: .gitignore keeps them out of git, so they are never
merged (and if a repository tracks them anyway, .gitattributes resolves them to one side, to be
regenerated).

A sync, holding the write lock while it touches the working tree: commit what the tool wrote
(entries/, raw/, archive/, log.md and the two git files), pull with rebase, refresh the catalog
(it notices the merged log and rescans), then push — again if someone pushed meanwhile.
"""

from __future__ import annotations

import os
import socket
import subprocess
from dataclasses import dataclass
from typing import Any

import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.catalog import open_catalog
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.verify import verify
from llm_wiki.wiki import Wiki

SYNCED = ("entries", "raw", "archive", "log.md", ".gitattributes", ".gitignore")
PUSH_ATTEMPTS = 3


@dataclass(frozen=True)
class SyncResult:
    committed: int  # files in this clone's new commit (0: nothing new here)
    commit: str | None  # that commit
    pulled: int  # commits that came from the remote
    pushed: bool
    remote: str | None  # e.g. origin/main; None: no remote, committed locally only
    entries: int  # entries in the catalog afterwards

    def to_dict(self) -> dict[str, Any]:
        return {
            "committed": self.committed,
            "commit": self.commit,
            "pulled": self.pulled,
            "pushed": self.pushed,
            "remote": self.remote,
            "entries": self.entries,
        }


def sync_wiki(wiki: Wiki, *, remote: str | None = None, push: bool = True) -> SyncResult:
    """``llm-wiki sync``: commit, pull --rebase, refresh the catalog, push."""

    _check_repository(wiki)
    branch = _git(wiki, "symbolic-ref", "--quiet", "--short", "HEAD", what="find the branch")
    target = _target(wiki, remote, branch)
    committed, commit, pulled, pushed = 0, None, 0, False
    for attempt in range(PUSH_ATTEMPTS):
        with store.locked(wiki):
            if attempt == 0:
                committed, commit = _commit(wiki)
            if target is not None:
                try:
                    pulled += _pull(wiki, *target)
                except WikiError as exc:
                    if not commit or "commit is kept" in exc.message:
                        raise
                    raise WikiError(
                        f"{exc.message} (This sync committed {commit[:12]} locally; it is kept.)"
                    ) from None
            catalog = open_catalog(wiki)  # a merged log.md makes it rescan
            entries = catalog.count(Viewer.everyone())
            catalog.close()
        if target is None or not push:
            break
        name, ref = target
        proc = _git(wiki, "push", "--quiet", name, f"HEAD:refs/heads/{ref}", check=False)
        if proc.returncode == 0:
            pushed = True
            if _run(wiki, "rev-parse", "--abbrev-ref", "@{u}").returncode != 0:
                _git(wiki, "branch", "--quiet", f"--set-upstream-to={name}/{ref}", check=False)
            break
        if attempt == PUSH_ATTEMPTS - 1 or "rejected" not in proc.stderr:
            raise WikiError(
                f"git push to {name} failed: {_first_line(proc.stderr)}; your commit is kept, "
                "run `llm-wiki sync` again."
            )
    log = wiki.log_path.read_bytes() if wiki.log_path.exists() else b""
    atomic_write(store.anchor_path(wiki), log[: log.rfind(b"\n") + 1])
    return SyncResult(
        committed,
        commit,
        pulled,
        pushed,
        f"{target[0]}/{target[1]}" if target else None,
        entries,
    )


# --------------------------------------------------------------------------- steps


def _check_repository(wiki: Wiki) -> None:
    if _run(wiki, "rev-parse", "--show-toplevel").returncode != 0:
        raise WikiError(
            f"{wiki.root} is not in a git repository; run `git init` there (and `git remote add "
            "origin URL`), or clone the team's wiki, then sync."
        )
    attr = _git(wiki, "check-attr", "merge", "--", "log.md", what="read .gitattributes")
    if not attr.strip().endswith(": union"):
        raise WikiError(
            "log.md must merge as a union: add the line `log.md merge=union` to "
            f"{wiki.root / '.gitattributes'} (llm-wiki init writes it), then sync."
        )
    # log.md holds the sha256 of each entry, raw source and archive as written: git must not
    # turn their line endings (core.autocrlf, a global `* text=auto`) on commit or checkout.
    probes = ("entries/x.md", "raw/x.txt", "archive/x.tar.zst")
    attrs = _git(wiki, "check-attr", "text", "--", *probes, what="read .gitattributes")
    if any(not line.endswith(": unset") for line in attrs.splitlines()):
        raise WikiError(
            "git may rewrite line endings of entries: add the lines `entries/** -text`, "
            f"`raw/** -text` and `archive/** -text` to {wiki.root / '.gitattributes'} "
            "(llm-wiki init writes them), then sync."
        )
    if _rebase_in_progress(wiki):
        raise WikiError(
            f"a git rebase is in progress in {wiki.root}; finish it (`git rebase --continue`) "
            "or abort it (`git rebase --abort`), then sync."
        )
    if not _git(wiki, "ls-files", "--", "schema.md", what="list files"):
        raise WikiError(
            "the wiki is not in git yet: commit it once (`git add -A && git commit -m "
            "'Start the wiki'`), then sync."
        )


def _target(wiki: Wiki, remote: str | None, branch: str) -> tuple[str, str] | None:
    """(remote, branch) to pull from and push to; None when the repository has no remote."""
    remotes = _git(wiki, "remote", what="list remotes").split()
    if remote is not None:
        if remote not in remotes:
            raise InvalidInput(
                f"no git remote {remote!r}; choose one of: {', '.join(remotes) or '(none)'}."
            )
        return remote, branch
    upstream = _run(wiki, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}")
    if upstream.returncode == 0 and "/" in upstream.stdout:
        name, ref = upstream.stdout.strip().split("/", 1)
        if name in remotes:
            return name, ref
    if not remotes:
        return None
    if len(remotes) > 1 and "origin" not in remotes:
        raise InvalidInput(f"several git remotes ({', '.join(remotes)}); choose one with --remote.")
    return ("origin" if "origin" in remotes else remotes[0]), branch


def _commit(wiki: Wiki) -> tuple[int, str | None]:
    """Commit what the tool wrote; (files, commit) or (0, None) when nothing is new."""
    store.append_log(wiki)  # cuts a line torn by a writer that died mid-append
    _require_intact(wiki, "refusing to commit")
    paths = [p for p in SYNCED if (wiki.root / p).exists() or _tracked(wiki, p)]
    _git(wiki, "add", "-A", "--", *paths, what="stage the new files")
    status = _git(
        wiki,
        "diff",
        "--cached",
        "--relative",
        "--no-renames",
        "--name-status",
        "--",
        *paths,
        what="diff",
    )
    changes = [line.split("\t", 1) for line in status.splitlines() if "\t" in line]
    if not changes:
        return 0, None
    _git(
        wiki,
        "commit",
        "--quiet",
        "--no-verify",
        "-m",
        _message(changes),
        "--",
        *paths,
        what="commit",
    )
    return len(changes), _git(wiki, "rev-parse", "HEAD", what="read the commit")


def _message(changes: list[list[str]]) -> str:
    added = sum(1 for s, p in changes if s == "A" and p.startswith("entries/"))
    archived = sum(1 for s, p in changes if s == "D" and p.startswith("entries/"))
    archives = sum(1 for s, p in changes if s == "A" and p.startswith("archive/"))
    raw = sum(1 for s, p in changes if s == "A" and p.startswith("raw/"))
    parts = [
        f"{n} {one if n == 1 else many}"
        for n, one, many in (
            (added, "new entry", "new entries"),
            (raw, "raw source", "raw sources"),
            (archives, "archive", "archives"),
            (archived, "entry archived", "entries archived"),
        )
        if n
    ]
    return f"llm-wiki sync from {socket.gethostname()}: " + (", ".join(parts) or "log.md")


def _pull(wiki: Wiki, name: str, ref: str) -> int:
    """Rebase onto the remote branch; return how many commits came in."""
    before_head = _git(wiki, "rev-parse", "HEAD", what="read HEAD")
    if not _git(wiki, "ls-remote", "--heads", name, ref, what=f"reach {name}"):
        return 0  # the remote branch does not exist yet: the push creates it
    seen_remote = _run(wiki, "rev-parse", "--verify", "--quiet", f"refs/remotes/{name}/{ref}")
    # An archived entry's removal next to a new entry looks like a rename to git, and two clones'
    # "renames" of one file conflict; entries are never renamed, so rename detection is off.
    # merge-ort ignores that before git 2.50; "recursive" (merge-recursive before 2.50, ort
    # from then on) heeds it everywhere.
    seen = store.log_lines(_show(wiki, "HEAD:log.md")) | store.read_anchor(wiki)
    if seen_remote.returncode == 0:
        seen |= store.log_lines(_show(wiki, f"{seen_remote.stdout.strip()}:log.md"))
    proc = _run(
        wiki,
        "-c",
        "merge.renames=false",
        "pull",
        "--quiet",
        "--rebase",
        "--autostash",
        "--strategy=recursive",
        "--strategy-option=no-renames",
        name,
        ref,
    )
    if proc.returncode != 0:
        if _rebase_in_progress(wiki):
            _run(wiki, "rebase", "--abort")
        raise WikiError(
            f"git pull from {name} stopped: {_first_line(proc.stderr or proc.stdout)}; nothing "
            "was lost (your commit is kept), merge by hand with `git pull --rebase -s recursive -X "
            "no-renames` (an archived entry beside a new one looks like a rename), then sync."
        )
    after = _git(wiki, "rev-parse", f"refs/remotes/{name}/{ref}", what="read the remote branch")
    span = f"{seen_remote.stdout.strip()}..{after}" if seen_remote.returncode == 0 else after
    pulled = int(_git(wiki, "rev-list", "--count", span, what="count commits") or 0)
    if pulled:
        lost = seen - store.log_lines(wiki.log_path.read_bytes())
        try:
            if lost:
                first = store.describe_line(sorted(lost)[0])
                raise WikiError(
                    f"refusing what {name}/{ref} holds: its history drops or rewrites "
                    f"{len(lost)} log.md line(s) this clone holds (first: {first}), which means "
                    f"entries were removed or changed; nothing was taken in. Find who changed "
                    f"it: git log -p {name}/{ref} -- log.md"
                )
            _require_intact(wiki, f"refusing what {name}/{ref} holds", pulled_from=f"{name}/{ref}")
        except WikiError:
            _git(wiki, "reset", "--quiet", "--keep", before_head, what="undo the pull")
            raise
    # Files git checked out are 0644; entries are read-only (0444) everywhere.
    added = _git(
        wiki,
        "diff",
        "--name-only",
        "--relative",
        "--no-renames",
        "--diff-filter=A",
        before_head,
        "HEAD",
        "--",
        "entries",
        what="list new entries",
    )
    for rel in added.splitlines():
        path = wiki.root / rel
        if path.is_file():
            os.chmod(path, 0o444)
    return pulled


# --------------------------------------------------------------------------- git


def _run(wiki: Wiki, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-C", str(wiki.root), *args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise WikiError("git is not installed; install git to use `llm-wiki sync`.") from None


def _git(wiki: Wiki, *args: str, what: str = "", check: bool = True) -> Any:
    """Run git in the wiki; its stdout stripped (or the process when ``check`` is False)."""
    proc = _run(wiki, *args)
    if not check:
        return proc
    if proc.returncode != 0:
        raise WikiError(
            f"git could not {what or args[0]}: {_first_line(proc.stderr or proc.stdout)}; "
            "fix the repository and sync again."
        )
    return proc.stdout.strip()


def _show(wiki: Wiki, spec: str) -> bytes:
    """A file as git holds it (``HEAD:log.md``); b"" when there is none."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(wiki.root), "show", spec],
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise WikiError("git is not installed; install git to use `llm-wiki sync`.") from None
    return proc.stdout if proc.returncode == 0 else b""


def _require_intact(wiki: Wiki, doing: str, *, pulled_from: str = "") -> None:
    """Refuse to commit, or to take in a pull, while the record is not intact: an entry whose
    bytes differ from its logged sha256, a logged entry gone, a file with no log line, or a log
    line (committed, or seen by this clone) dropped or rewritten. Says which."""
    findings = verify(wiki, Viewer.everyone(), lock_held=True).findings  # sync holds it
    if not findings:
        return
    names = ", ".join(f"{f.kind}: {f.id or f.path}" for f in findings[:3])
    more = f" and {len(findings) - 3} more" if len(findings) > 3 else ""
    if pulled_from:
        raise WikiError(
            f"{doing}: its entries do not match their log ({names}{more}); nothing was taken "
            f"in. Find who changed them: git log -p {pulled_from} -- entries log.md"
        )
    raise WikiError(
        f"{doing}: the record is not intact ({names}{more}); see `llm-wiki verify`, restore "
        "what was changed from git (git checkout HEAD -- log.md entries), then sync."
    )


def _rebase_in_progress(wiki: Wiki) -> bool:
    """git gives --git-path relative to the directory it ran in (-C: the wiki), not to ours."""
    for name in ("rebase-merge", "rebase-apply"):
        rel = _git(wiki, "rev-parse", "--git-path", name, what="find the rebase state")
        if (wiki.root / rel).exists():  # an absolute rel replaces wiki.root
            return True
    return False


def _tracked(wiki: Wiki, path: str) -> bool:
    return bool(_git(wiki, "ls-files", "--", path, what="list files"))


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in lines:
        if line.lower().startswith(("error", "fatal", "conflict", "!")):
            return line
    return lines[0] if lines else "no output"

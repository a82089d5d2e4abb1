"""The monthly job: long-superseded entries rolled into ``archive/YYYY-MM-<hash>.tar.zst``.

The file format (frames, members, locators, deterministic bytes) is :mod:`llm_wiki.archive_file`.

A run, in the one order that never loses an entry (SIGKILL-tested at each step):

1. under the write lock, pick the loose entries superseded more than N days ago (by the one
   clock; the superseding entry's date counts);
2. stream them into a temp file — each file checked against the sha256 log.md recorded — fsync,
   reopen and check every member against log.md again;
3. link it into archive/ (never replacing a file; an identical archive already there is kept);
4. under the write lock, log one ``archive`` line per entry, and only then remove the originals
   and update the catalog.

A re-run finishes what a killed run started: logged entries whose originals remain are removed
once their archive copy checks out; the others are archived again, into the same bytes. This is
the only code that removes an entry file.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llm_wiki.clock as clock
import llm_wiki.progress as progress
import llm_wiki.store as store
from llm_wiki.access import Viewer
from llm_wiki.archive_file import READ_ERRORS, Writer, iter_members, iter_path
from llm_wiki.catalog import Catalog, open_catalog, record_archived
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import crashpoint, fsync_dir
from llm_wiki.wiki import Wiki

DEFAULT_DAYS = 90


@dataclass(frozen=True)
class ArchiveResult:
    archive: str | None  # the archive this run wrote (or found already there), if any
    ids: tuple[str, ...]  # entries archived by this run
    finished: tuple[str, ...]  # archived by an interrupted run; their originals removed now
    skipped: tuple[tuple[str, str], ...]  # (id, why) left loose
    older_than_days: int
    cutoff: str  # superseded before this date
    dry_run: bool = False
    size: int = 0  # bytes of the archive
    entry_bytes: int = 0  # bytes of the entry files in it

    def to_dict(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "archived": list(self.ids),
            "finished": list(self.finished),
            "skipped": [{"id": i, "reason": r} for i, r in self.skipped],
            "older_than_days": self.older_than_days,
            "cutoff": self.cutoff,
            "dry_run": self.dry_run,
            "bytes": self.size,
            "entry_bytes": self.entry_bytes,
        }


@dataclass(frozen=True)
class _Item:
    id: str
    rel: str
    sha: str
    date: str


def parse_age(text: str) -> int:
    """``90d`` or ``90`` -> 90 (days)."""
    raw = text.strip().lower()
    number = raw[:-1] if raw.endswith("d") else raw
    if not number.isdigit():
        raise InvalidInput(f"--older-than {text!r}: give a number of days, e.g. 90d.")
    return int(number)


def archive_entries(
    wiki: Wiki, *, older_than_days: int | None = None, dry_run: bool = False
) -> ArchiveResult:
    """``llm-wiki archive``: roll entries superseded more than N days ago into one archive."""
    days = older_than_days
    if days is None:
        days = wiki.settings.get("archive.older_than_days", DEFAULT_DAYS)
    if not isinstance(days, int) or isinstance(days, bool) or days < 0:
        raise InvalidInput(
            f"archive age {days!r} must be a whole number of days (settings.yaml "
            "archive.older_than_days, or --older-than 90d)."
        )
    cutoff = (clock.today() - dt.timedelta(days=days)).isoformat()
    month = clock.today().strftime("%Y-%m")
    # One run at a time; writers are held up only while lines are logged and files removed.
    with store.locked(wiki, "archive"):
        with store.locked(wiki):
            catalog = open_catalog(wiki)
            try:
                shas, logged = _read_log(wiki)
                pending = _pending(wiki, catalog, logged, shas, store.archive_names(wiki))
                due = _due(catalog, cutoff, shas)
            finally:
                catalog.close()
        # Archived by an interrupted run, original still here: finish when the copy checks out
        # (archives never change, so no lock is needed to read them); else archive it again.
        finished = _check_pending(wiki, pending)
        done = {p.id for p, _, _ in finished}
        due = [i for i in due if i.id not in done]
        skipped = [(i.id, "it has no write line in log.md") for i in due if not i.sha]
        due = [i for i in due if i.sha]
        if dry_run:
            return ArchiveResult(
                None,
                tuple(i.id for i in due),
                tuple(p.id for p, _, _ in finished),
                tuple(skipped),
                days,
                cutoff,
                dry_run=True,
            )
        _clean_tmp(wiki)
        built = _build(wiki, due, month) if due else _Built("", {}, 0, 0, ())
        skipped += built.skipped
        archived = [i for i in due if i.id in built.located]
        if archived or finished:
            _retire(wiki, built, archived, finished)
    return ArchiveResult(
        built.name or None,
        tuple(i.id for i in archived),
        tuple(p.id for p, _, _ in finished),
        tuple(skipped),
        days,
        cutoff,
        size=built.size,
        entry_bytes=built.entry_bytes,
    )


def _retire(
    wiki: Wiki,
    built: _Built,
    archived: list[_Item],
    finished: list[tuple[_Item, str, str | None]],
) -> None:
    """Log the new archive's entries, then remove the originals and update the catalog."""
    with store.locked(wiki):
        catalog = open_catalog(wiki)
        try:
            if archived:
                store.append_log(
                    wiki,
                    *(
                        store.format_log_line("archive", i.id, archive=built.name, sha256=i.sha)
                        for i in archived
                    ),
                )
                crashpoint("archive-after-log")
            done: list[tuple[str, str, str, str | None]] = [
                (p.rel, p.id, name, at) for p, name, at in finished
            ]
            done += [(i.rel, i.id, built.name, built.located[i.id]) for i in archived]
            for count, (rel, *_) in enumerate(done):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(wiki.root / rel)
                if count == 0:
                    crashpoint("archive-between-removals")
            _prune_dirs(wiki, (rel for rel, *_ in done))
            record_archived(catalog, [(i, name, at) for _, i, name, at in done])
        finally:
            catalog.close()


def _read_log(wiki: Wiki) -> tuple[dict[str, str], dict[str, list[str]]]:
    """From log.md: id -> logged sha256; id -> the archives it was logged into."""
    shas: dict[str, str] = {}
    logged: dict[str, list[str]] = {}
    for _, line in store.read_log(wiki):
        if line.op == "write" and line.subject:
            shas[line.subject] = line.fields.get("sha256", "")
        elif line.op == "archive" and line.subject and line.fields.get("archive"):
            logged.setdefault(line.subject, []).append(line.fields["archive"])
    return shas, logged


def _due(catalog: Catalog, cutoff: str, shas: dict[str, str]) -> list[_Item]:
    """Loose entries whose earliest superseding entry (same scope) is dated before ``cutoff``."""
    return [
        _Item(r.id, r.path, shas.get(r.id, ""), r.date) for r in catalog.superseded_before(cutoff)
    ]


def _pending(
    wiki: Wiki,
    catalog: Catalog,
    logged: dict[str, list[str]],
    shas: dict[str, str],
    on_disk: set[str],
) -> list[tuple[_Item, list[str]]]:
    """Entries logged as archived (into an archive that exists) whose original is still here."""
    out = []
    for entry_id, names in sorted(logged.items()):
        names = [n for n in names if n in on_disk]
        row = catalog.get(entry_id, Viewer.everyone())
        if not names or row is None or not (wiki.root / row.path).exists():
            continue
        out.append((_Item(entry_id, row.path, shas.get(entry_id, ""), row.date), names))
    return out


def _check_pending(
    wiki: Wiki, pending: list[tuple[_Item, list[str]]]
) -> list[tuple[_Item, str, str | None]]:
    """The pending originals whose archive copy matches log.md: (item, archive, locator)."""
    wanted: dict[str, dict[str, _Item]] = {}
    for item, names in pending:
        for name in names:
            wanted.setdefault(name, {})[item.rel] = item
    good: dict[str, tuple[_Item, str, str | None]] = {}
    for name in sorted(wanted):
        with contextlib.suppress(WikiError):
            for member in iter_members(wiki, name):
                found = wanted[name].get(member.rel)
                if found and found.id not in good and store.sha256_bytes(member.data) == found.sha:
                    good[found.id] = (found, name, member.at)
    return [good[i] for i in sorted(good)]


@dataclass(frozen=True)
class _Built:
    name: str  # archive/<file>, "" when nothing was written
    located: dict[str, str]  # id -> locator, for every entry in it
    size: int
    entry_bytes: int
    skipped: tuple[tuple[str, str], ...]


def _build(wiki: Wiki, due: list[_Item], month: str) -> _Built:
    """Write, check and place the archive of ``due``; return its name and what it holds."""
    tmp_dir = wiki.state_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, prefix="archive.", suffix=".tmp")
    tmp = Path(tmp_name)
    located: dict[str, str] = {}
    expected: dict[str, str] = {}
    tampered: list[tuple[str, str]] = []
    entry_bytes = 0
    try:
        with os.fdopen(fd, "wb") as fh:
            writer = Writer(fh)
            shown = progress.current()
            shown.task(f"archive {month}", total=len(due))
            for item in shown.each(due, lambda i: i.id):
                try:
                    data = (wiki.root / item.rel).read_bytes()
                except FileNotFoundError:  # removed since it was picked (a sync brought that)
                    tampered.append((item.id, "its file is gone; run `llm-wiki verify`"))
                    continue
                if store.sha256_bytes(data) != item.sha:
                    tampered.append(
                        (
                            item.id,
                            "its file differs from the sha256 in log.md; run `llm-wiki verify`",
                        )
                    )
                    continue
                located[item.id] = writer.add(item.rel, data, item.date)
                expected[item.rel] = item.sha
                entry_bytes += len(data)
            if not located:
                return _Built("", {}, 0, 0, tuple(tampered))
            writer.finish()
            fh.flush()
            os.fsync(fh.fileno())
        seen = {}
        for member in iter_path(tmp):
            seen[member.rel] = store.sha256_bytes(member.data)
        if seen != expected:
            raise WikiError(
                "the new archive did not read back intact; nothing was removed. Check the disk "
                "and run `llm-wiki archive` again."
            )
        name = f"archive/{month}-{writer.sha.hexdigest()[:12]}.tar.zst"
        crashpoint("archive-before-rename")
        os.chmod(tmp, 0o444)
        wiki.archive_dir.mkdir(exist_ok=True)
        try:
            os.link(tmp, wiki.root / name)
        except FileExistsError:  # an earlier, interrupted run placed the very same bytes
            if _file_sha(wiki.root / name) != writer.sha.hexdigest():
                raise WikiError(
                    f"{name} exists with other contents; move it aside and run `llm-wiki "
                    "archive` again."
                ) from None
        fsync_dir(wiki.archive_dir)
        crashpoint("archive-after-rename")
        return _Built(name, located, writer.size, entry_bytes, tuple(tampered))
    except OSError as exc:
        raise WikiError(
            f"cannot write the archive: {exc}; nothing was removed. Free space or fix the "
            "permissions, then run `llm-wiki archive` again."
        ) from None
    except READ_ERRORS as exc:
        raise WikiError(
            f"the new archive did not read back ({exc}); nothing was removed. Check the disk "
            "and run `llm-wiki archive` again."
        ) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _file_sha(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _clean_tmp(wiki: Wiki) -> None:
    """Temp archives left by killed runs (we hold the archive lock: none is being written)."""
    for path in (wiki.state_dir / "tmp").glob("archive.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _prune_dirs(wiki: Wiki, rels: Iterable[str]) -> None:
    """Remove month and year folders that archiving emptied (write lock held)."""
    months = {(wiki.root / rel).parent for rel in rels}
    for folder in sorted(months | {m.parent for m in months}, reverse=True):
        if folder.is_relative_to(wiki.entries_dir) and folder != wiki.entries_dir:
            with contextlib.suppress(OSError):
                folder.rmdir()

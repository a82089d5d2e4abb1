"""A record's date: what the record says, else the commit that added its file, else a date in its
file name, else the file's mtime (``date_source``: record, git, file-name, mtime).

Spellings read: ``2021-12-31``, ``31/12/2021``, ``12/31/2021``, ``31.12.21``, ``31 December 2021``,
``Dec 31, 2021``. A day/month date that reads both ways (``03/04/2022``) takes the convention
most of the folder's unambiguous ones use (dd/mm when none tell), and the import says so.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MONTHS = (
    "january february march april may june july august september october november december"
).split()

_ISO_RE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_SLASH_RE = re.compile(r"(?<![\d/.])(\d{1,2})[/.](\d{1,2})[/.](\d{4}|\d{2})(?![\d/])")
_DAY_MONTH_RE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]{3,})\.?,?\s+(\d{4})\b")
_MONTH_DAY_RE = re.compile(r"\b([A-Za-z]{3,})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b")
_NAME_DATE_RE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})(?!\d)")


@dataclass(frozen=True)
class ReadDate:
    """A date read from text: ``iso``, and for a day/month one the order it was read in."""

    iso: str
    order: str = ""  # "dmy" | "mdy" when written with slashes or dots; "" otherwise
    ambiguous: bool = False  # both orders give a real day (and different ones)


def _month(word: str) -> int | None:
    word = word.lower()
    for number, name in enumerate(_MONTHS, 1):
        if len(word) >= 3 and name.startswith(word):
            return number
    return None


def _day(year: int, month: int, day: int) -> str | None:
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def read_date(value: Any, convention: str = "dmy") -> ReadDate | None:
    """The first date in ``value``; an ambiguous day/month one is read by ``convention``."""
    if isinstance(value, dt.datetime):
        return ReadDate(value.date().isoformat())
    if isinstance(value, dt.date):
        return ReadDate(value.isoformat())
    text = str(value or "").strip()
    if m := _ISO_RE.search(text):
        iso = _day(int(m[1]), int(m[2]), int(m[3]))
        return ReadDate(iso) if iso else None
    if m := _SLASH_RE.search(text):
        a, b, year = int(m[1]), int(m[2]), int(m[3])
        year += 2000 if len(m[3]) == 2 else 0
        dmy, mdy = _day(year, b, a), _day(year, a, b)
        if dmy and mdy and dmy != mdy:
            return ReadDate(dmy if convention == "dmy" else mdy, convention, True)
        if dmy:
            return ReadDate(dmy, "dmy" if a > 12 else "")
        if mdy:
            return ReadDate(mdy, "mdy")
        return None
    if m := _DAY_MONTH_RE.search(text):
        month = _month(m[2])
        if month and (iso := _day(int(m[3]), month, int(m[1]))):
            return ReadDate(iso)
    if m := _MONTH_DAY_RE.search(text):
        month = _month(m[1])
        if month and (iso := _day(int(m[3]), month, int(m[2]))):
            return ReadDate(iso)
    return None


def parse_date(value: Any, convention: str = "dmy") -> str | None:
    """A record's date in any of its usual spellings, as YYYY-MM-DD (None if unreadable)."""
    found = read_date(value, convention)
    return found.iso if found else None


def majority_convention(texts: list[str]) -> tuple[str, int, int]:
    """("dmy" | "mdy", dd/mm evidence, mm/dd evidence) from the dates that read one way only."""
    dmy = mdy = 0
    for text in texts:
        found = read_date(text)
        if found and not found.ambiguous:
            dmy += found.order == "dmy"
            mdy += found.order == "mdy"
    return ("mdy" if mdy > dmy else "dmy"), dmy, mdy


def date_in_name(name: str) -> str | None:
    """``20201016-use-slugs.md`` / ``2020-10-16-…`` -> 2020-10-16 (a real day, else None)."""
    match = _NAME_DATE_RE.match(Path(name).name)
    if not match:
        return None
    year = int(match[1])
    if not 1970 <= year <= 2100:
        return None
    return _day(year, int(match[2]), int(match[3]))


def mtime_date(path: Path) -> str:
    stamp = path.stat().st_mtime
    return dt.datetime.fromtimestamp(stamp, dt.UTC).date().isoformat()


def work_tree(folder: Path) -> Path | None:
    """The top of the git work tree holding ``folder`` (None: not in one, or no git)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    top = out.stdout.strip()
    return Path(top) if out.returncode == 0 and top else None


def git_added(top: Path, folder: Path) -> dict[Path, str]:
    """file -> the day of the earliest commit that added it (following renames inside
    ``folder``), from one ``git log`` over the folder."""
    try:
        out = subprocess.run(
            ["git", "-C", str(top), "log", "-M", "--diff-filter=AR", "--name-status"]
            + ["--format=%x00%as", "--", str(folder.resolve())],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    if out.returncode != 0:
        return {}
    dates: dict[str, str] = {}
    alias: dict[str, str] = {}  # an older path -> the path the file has now
    day = ""
    for line in out.stdout.splitlines():  # newest commit first
        if line.startswith("\x00"):
            day = line[1:].strip()
            continue
        parts = line.split("\t")
        if len(parts) < 2 or not day:
            continue
        if parts[0].startswith("A"):
            path = parts[1]
            dates[alias.get(path, path)] = day
        elif parts[0].startswith("R") and len(parts) >= 3:
            old, new = parts[1], parts[2]
            key = alias.get(new, new)
            dates[key] = day
            alias[old] = key
    return {(top / rel).resolve(): day for rel, day in dates.items()}


def remote_name(top: Path) -> str:
    """The repository's name for sources: its origin URL as host/owner/name, else the work
    tree's folder name."""
    try:
        out = subprocess.run(
            ["git", "-C", str(top), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        url = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        url = ""
    if not url:
        return top.name
    url = re.sub(r"^[a-z+]+://", "", url)
    url = re.sub(r"^[^@/]+@", "", url)  # user@ of ssh and https URLs
    url = url.replace(":", "/", 1) if re.match(r"^[^/]+:[^/]", url) else url
    url = re.sub(r"\.git/?$", "", url).rstrip("/")
    return url or top.name

"""Importing architecture decision records (Nygard, MADR, or with YAML frontmatter).

Each record becomes one ``decision`` entry with ``origin: imported``, taking only what the record
says:

- ``summary``: the title, then the first sentence of its decision ("Title: decision.").
- ``date``: from frontmatter or a ``Date:`` / ``**Date:**`` line (ISO, dd/mm/yyyy, dd/mm/yy, or
  "5 March 2021"). A record without any date takes the date of the record numbered just before
  it (or after it), and says so in a ``date_note`` field; a folder without any date is refused.
- ``status``: from frontmatter or the ``Status`` section/line. Accepted (and the like) is
  ``active``; Proposed/Draft/Incomplete ``proposed``; Rejected ``rejected``; Deprecated
  ``deprecated``. "Superseded by X" stays ``active`` on the old record and becomes
  ``supersedes`` on X (superseded is derived); if X cannot be found the record is ``deprecated``.
- ``supersedes``: from frontmatter, or prose on either side ("supersedes [0008 ...](...)",
  "superseded by [036 ...](...)"), resolved by file name, else by the record's number.
- ``alternatives_considered``: the options of an "Options considered" / "Considered Options" /
  "Other options considered" section (sub-headings, or list items), minus the chosen one (named
  by "Chosen option", "Option N", or clearly the most mentioned in the decision). The reason is
  the option's own disadvantages or text. A record without such a section keeps an empty list;
  if the chosen option cannot be told apart, the list stays empty too: nothing is invented.
- the whole text as the body; ``sources: ["adr:<file name>"]``.

Records are written oldest first (a superseded record always before the one that replaces it).
Re-importing adds nothing: a record whose ``adr:<file name>`` source already exists in the same
domain and scope is skipped and its entry reused.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_wiki.access import Viewer, require_write
from llm_wiki.catalog import read_catalog
from llm_wiki.entries import (
    NAME_RE,
    Alternative,
    Entry,
    decode_text,
    load_yaml,
    slugify,
    split_frontmatter,
)
from llm_wiki.errors import InvalidInput
from llm_wiki.wiki import Wiki
from llm_wiki.write import write_entry

SKIP_STEMS = frozenset({"readme", "index", "template", "adr-template", "0000-template"})
SUMMARY_LIMIT = 280
REASON_LIMIT = 300


# --------------------------------------------------------------------------- markdown sections


@dataclass(frozen=True)
class Section:
    level: int
    title: str
    body: str  # everything up to the next heading of the same or a higher level


_HEADING_RE = re.compile(r"^(#{1,6})\s*(.*?)\s*#*\s*$")


def _lines_outside_fences(text: str) -> list[tuple[str, bool]]:
    """Each line with whether it lies inside a ``` fence."""
    out = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            out.append((line, True))
            fenced = not fenced
            continue
        out.append((line, fenced))
    return out


def sections(text: str) -> list[Section]:
    lines = _lines_outside_fences(text)
    heads = []
    for i, (line, fenced) in enumerate(lines):
        if fenced:
            continue
        match = _HEADING_RE.match(line)
        if match and match.group(2):
            heads.append((i, len(match.group(1)), match.group(2)))
    out = []
    for n, (i, level, title) in enumerate(heads):
        end = len(lines)
        for j, other_level, _ in heads[n + 1 :]:
            if other_level <= level:
                end = j
                break
        body = "\n".join(line for line, _ in lines[i + 1 : end]).strip("\n")
        out.append(Section(level, title, body))
    return out


def _find(secs: list[Section], *patterns: str) -> Section | None:
    for pattern in patterns:
        for sec in secs:
            if re.fullmatch(pattern, _plain_title(sec.title), re.I):
                return sec
    return None


def _plain_title(title: str) -> str:
    title = re.sub(r"[*_`]", "", title)
    return re.sub(r"^\s*(?:\d+[.)]?\s*)", "", title).strip().rstrip(":").strip()


def _strip_md(text: str) -> str:
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # images
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # inline links
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # reference links
    text = re.sub(r"(\*\*|__|`)", "", text)
    text = re.sub(r"(?<!\w)[*_](\S[^*_]*?)[*_](?!\w)", r"\1", text)
    return " ".join(text.split())


def _paragraphs(body: str) -> list[str]:
    """Prose paragraphs and list items of a section, sub-headings and fences left out."""
    out: list[str] = []
    current: list[str] = []
    for line, fenced in _lines_outside_fences(body):
        stripped = line.strip()
        if fenced or not stripped or _HEADING_RE.match(stripped) or stripped.startswith("|"):
            if current:
                out.append(" ".join(current))
                current = []
            continue
        if re.match(r"^\[[^\]]+\]:\s*\S+", stripped):  # a link reference definition
            continue
        if re.match(r"^([-*+]|\d+[.)])\s+", stripped) and current:
            out.append(" ".join(current))
            current = []
        current.append(stripped)
    if current:
        out.append(" ".join(current))
    return [p for p in (_strip_md(p) for p in out) if p]


def _first_sentence(text: str, limit: int) -> str:
    text = re.sub(r"^([-*+]|\d+[.)])\s+", "", text.strip())
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text)
    if match:
        text = text[: match.start()]
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text


# --------------------------------------------------------------------------- fields


_DATE_LINE_RE = re.compile(r"^\s*(?:[-*+]\s*)?\**\s*date\s*\**\s*[:\-]?\s*\**\s*:?\s*(.+)$", re.I)
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
}


def parse_date(value: Any) -> str | None:
    """A record's date in any of its usual spellings, as YYYY-MM-DD (None if unreadable)."""
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value or "").strip()
    candidates: list[tuple[int, int, int]] = []
    if m := re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", text):
        candidates.append((int(m[1]), int(m[2]), int(m[3])))
    elif m := re.search(r"\b(\d{1,2})[/.](\d{1,2})[/.](\d{4}|\d{2})\b", text):
        year = int(m[3]) + (2000 if len(m[3]) == 2 else 0)
        candidates.append((year, int(m[2]), int(m[1])))  # day first (dd/mm/yyyy)
    elif m := re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+([A-Za-z]+)\s+(\d{4})\b", text):
        month = _month(m[2])
        if month:
            candidates.append((int(m[3]), month, int(m[1])))
    elif m := re.search(r"\b([A-Za-z]+)\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", text):
        month = _month(m[1])
        if month:
            candidates.append((int(m[3]), month, int(m[2])))
    for year, month, day in candidates:
        try:
            return dt.date(year, month, day).isoformat()
        except ValueError:
            return None
    return None


def _month(word: str) -> int | None:
    word = word.lower()
    for name, number in _MONTHS.items():
        if len(word) >= 3 and name.startswith(word):
            return number
    return None


_STATUS_WORDS = (
    ("superseded", "superseded"),
    ("accepted", "active"),
    ("approved", "active"),
    ("adopted", "active"),
    ("agreed", "active"),
    ("decided", "active"),
    ("implemented", "active"),
    ("done", "active"),
    ("active", "active"),
    ("proposed", "proposed"),
    ("proposal", "proposed"),
    ("draft", "proposed"),
    ("incomplete", "proposed"),
    ("pending", "proposed"),
    ("open", "proposed"),
    ("review", "proposed"),
    ("rejected", "rejected"),
    ("declined", "rejected"),
    ("deprecated", "deprecated"),
    ("retired", "deprecated"),
    ("withdrawn", "deprecated"),
    ("obsolete", "deprecated"),
)


def parse_status(text: str) -> str | None:
    """The first status word of a status line, mapped to active/proposed/rejected/deprecated
    (or "superseded", which the importer turns into a supersession)."""
    words = re.findall(r"[a-z]+", text.lower())
    for word in words[:4]:
        for key, status in _STATUS_WORDS:
            if word == key:
                return status
    return None


# --------------------------------------------------------------------------- one record


@dataclass
class Record:
    """One parsed ADR file, before it becomes an entry."""

    name: str  # file name
    number: int | None
    title: str
    date: str | None
    status: str  # active | proposed | rejected | deprecated | superseded
    decision: str
    alternatives: tuple[Alternative, ...]
    supersedes_refs: list[str] = field(default_factory=list)  # refs to records this replaces
    superseded_by_refs: list[str] = field(default_factory=list)  # refs to records replacing it
    tags: tuple[str, ...] = ()
    text: str = ""
    date_note: str = ""


_NUMBER_RE = re.compile(r"^(?:adr[-_ ]?)?(\d+)", re.I)


def _number(name: str) -> int | None:
    match = _NUMBER_RE.match(name)
    return int(match.group(1)) if match else None


def parse_record(name: str, text: str) -> Record:
    meta: dict[str, Any] = {}
    body = text
    if text.lstrip("\ufeff").startswith("---"):
        try:
            head, body = split_frontmatter(text)
            loaded = load_yaml(head, name)
            meta = loaded if isinstance(loaded, dict) else {}
        except InvalidInput:
            meta, body = {}, text
    secs = sections(body)
    title = str(meta.get("title") or "").strip()
    if not title:
        for sec in secs:
            if sec.level <= 2:
                title = sec.title
                break
    title = _strip_md(re.sub(r"^\s*(?:adr[-_ ]?)?\d+[.:)]?\s*[-–—:]?\s*", "", title, flags=re.I))
    if not title:
        title = re.sub(r"^\d+[-_ ]*", "", Path(name).stem).replace("-", " ").replace("_", " ")
        title = title.strip().capitalize() or Path(name).stem

    date = parse_date(meta["date"]) if meta.get("date") else None
    head_lines = [line for line, fenced in _lines_outside_fences(body)[:40] if not fenced]
    if date is None:
        for line in head_lines:
            match = _DATE_LINE_RE.match(line)
            if match and (date := parse_date(match.group(1))):
                break

    status_text = str(meta.get("status") or "")
    status_sec = _find(secs, r"status")
    if not status_text and status_sec is not None:
        status_text = next((ln for ln in status_sec.body.splitlines() if ln.strip()), "")
    if not status_text:
        for line in head_lines:
            match = re.match(r"^\s*(?:[-*+]\s*)?\**\s*status\s*\**\s*:\s*\**\s*(.+)$", line, re.I)
            if match:
                status_text = match.group(1)
                break
    status = parse_status(status_text) or "active"

    decision_sec = _find(
        secs,
        r"decision",
        r"decision outcome",
        r"the decision",
        r"decisions?",
        r"what.s proposed",
        r"proposal",
        r"the existing decision",
        r"outcome",
    )
    decision = ""
    if decision_sec is not None:
        paras = _paragraphs(decision_sec.body)
        decision = paras[0] if paras else ""
        if decision.endswith(":") and len(paras) > 1:  # "We have decided to:" + its first item
            decision += " " + re.sub(r"^([-*+]|\d+[.)])\s+", "", paras[1])
        chosen = re.match(r'^chosen option:?\s*"?([^",]+)"?', decision, re.I)
        if chosen:
            decision = f"Chosen option: {chosen.group(1).strip()}"

    supersedes_refs, superseded_by_refs = _supersession_refs(body, meta)
    if status_text and "superseded" in status_text.lower() and not superseded_by_refs:
        superseded_by_refs = _refs(status_text)
    tags = meta.get("tags")
    return Record(
        name=name,
        number=_number(name),
        title=title,
        date=date,
        status=status,
        decision=decision,
        alternatives=_alternatives(secs, decision_sec),
        supersedes_refs=supersedes_refs,
        superseded_by_refs=superseded_by_refs,
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        text=text.strip("\n"),
    )


_LINK_RE = re.compile(r"\[([^\]]*)\]\(([^)\s]+)[^)]*\)")


def _refs(text: str) -> list[str]:
    """Record references in a piece of text: link targets, else 'ADR 12' / a leading number."""
    refs = [target for _, target in _LINK_RE.findall(text)]
    if refs:
        return refs
    found = re.findall(r"\b(?:adr|decision|record)[-\s#:]*0*(\d{1,4})\b", text, re.I)
    if not found:
        found = re.findall(r"^\W*0*(\d{1,4})\b", text)
    return [f"#{n}" for n in found]


def _supersession_refs(body: str, meta: dict[str, Any]) -> tuple[list[str], list[str]]:
    supersedes: list[str] = []
    superseded_by: list[str] = []
    for key, out in (("supersedes", supersedes), ("superseded_by", superseded_by)):
        value = meta.get(key) or meta.get(key.replace("_", "-"))
        if isinstance(value, (str, int)):
            value = [value]
        for item in value or ():
            out.extend(_refs(str(item)) or [str(item)])
    for line, fenced in _lines_outside_fences(body):
        if fenced:
            continue
        for match in re.finditer(r"supersed(?:ed|es)\b(\s+by)?", line, re.I):
            rest = line[match.end() :]
            rest = re.split(r"(?i)\bsupersed", rest)[0]
            by = bool(match.group(1))
            if match.group(0).lower().startswith("superseded") and not by:
                continue  # "was superseded." names nothing
            refs = _refs(rest.lstrip(" :*_-–—"))
            (superseded_by if by else supersedes).extend(refs)
    return supersedes, superseded_by


_OPTION_SECTION = (
    r"(?:other\s+)?(?:options|alternatives)(?:\s+considered)?(?:\s+for\b.*)?",
    r"considered\s+(?:options|alternatives)",
)


def _alternatives(secs: list[Section], decision_sec: Section | None) -> tuple[Alternative, ...]:
    """Options a record considered and did not choose, with its own words on why."""
    out: list[Alternative] = []
    decision_text = "\n\n".join(_paragraphs(decision_sec.body)) if decision_sec else ""
    for sec in secs:
        title = _plain_title(sec.title)
        if not _is_option_section(title):
            continue
        others_only = title.lower().startswith("other")
        rejected: list[tuple[str, str]] = []
        for options in _options(sec):
            if others_only:
                rejected += options
                continue
            chosen = _chosen(options, decision_text)
            if chosen is not None:  # else: cannot tell which one won, so invent nothing
                rejected += [o for i, o in enumerate(options) if i != chosen]
        for name, reason in rejected:
            alt_id = slugify(name, 60)
            if any(a.id == alt_id for a in out):
                continue
            out.append(Alternative(alt_id, reason or "not chosen (see the record's decision)"))
    return tuple(out)


def _options(sec: Section) -> list[list[tuple[str, str]]]:
    """Groups of (name, reason), one per choice: the section's sub-headings, else a list that
    opens the section.

    A sub-heading "Options for X" starts a new group (one choice each); a list after prose
    ("not adopted because: - ...") holds reasons, not options.
    """
    level = min_level(sec.body)
    subs = [s for s in sections(sec.body) if s.level == level]
    if subs:
        groups: list[list[tuple[str, str]]] = [[]]
        for sub in subs:
            if _is_option_section(sub.title):
                groups.append([])  # "Options for X" heads the siblings that follow it
            elif name := _option_name(sub.title):
                groups[-1].append((name, _option_reason(sub.body)))
        return [g for g in groups if g]
    paras = _paragraphs(sec.body)
    options: list[tuple[str, str]] = []
    for para in paras:
        match = re.match(r"^(?:[-*+]|\d+[.)])\s+(.*)$", para)
        if not match:
            if options or para is not paras[0]:
                break
            return []
        item = match.group(1)
        name, reason = item, ""
        split = re.match(r"^(.{2,80}?)(?:\s*:\s+|\s+[-–—]\s+)(.+)$", item)
        if split:
            name, reason = split.group(1), split.group(2)
        options.append((_option_name(name), _first_sentence(reason, REASON_LIMIT)))
    options = [o for o in options if o[0]]
    return [options] if options else []


def _is_option_section(title: str) -> bool:
    return any(re.fullmatch(p, _plain_title(title), re.I) for p in _OPTION_SECTION)


def min_level(body: str) -> int:
    levels = [s.level for s in sections(body)]
    return min(levels) if levels else 0


def _option_name(title: str) -> str:
    title = re.sub(r"\[([^\]]+)\]", r"\1", _strip_md(title))
    title = re.sub(r"^\s*option\s*\d*\s*[:.)\-–—]?\s*", "", title, flags=re.I)
    title = re.sub(r"\(\s*https?://\S+\s*\)", "", title)
    return title.strip(" :.-–—")


def _option_reason(body: str) -> str:
    cons = _find(sections(body), r"disadvantages?", r"cons", r"issues?", r"drawbacks?", r"bad")
    if cons is not None:
        items = [re.sub(r"^([-*+]|\d+[.)])\s+", "", p) for p in _paragraphs(cons.body)]
        text = "; ".join(i.rstrip(".;, ") for i in items if i)
        if text:
            return _first_sentence(text, REASON_LIMIT) if len(text) > REASON_LIMIT else text
    for para in _paragraphs(body):
        if re.match(r"(?i)^(bad|con)s?,?\s+because", para):
            return _first_sentence(para, REASON_LIMIT)
    paras = _paragraphs(body)
    return _first_sentence(paras[0], REASON_LIMIT) if paras else ""


def _chosen(options: list[tuple[str, str]], decision: str) -> int | None:
    """Which option the decision picked, or None when the record does not make it clear.

    In order: "Chosen option: X" or "Option N" in the decision's opening; the first option named
    right after a choice verb ("decided to use X", "we chose X", "Use X"); else an option named at
    least twice as often as any other in the decision.
    """
    if not decision:
        return None
    opening = decision.split("\n\n", 1)[0][:400]
    if m := re.search(r'chosen option:?\s*"?([^",.]+)', opening, re.I):
        wanted = m.group(1).strip().lower()
        for i, (name, _) in enumerate(options):
            if name.lower() == wanted or wanted in name.lower():
                return i
    if m := re.search(r"\b(?:on\s+|^|chose\s+|chosen\s+|use\s+)option\s+(\d+)\b", opening, re.I):
        n = int(m.group(1)) - 1
        if 0 <= n < len(options):
            return n
    words = [set(re.findall(r"[a-z0-9]{3,}", name.lower())) - _COMMON for name, _ in options]
    distinctive = [
        own - set().union(*(w for j, w in enumerate(words) if j != i))
        for i, own in enumerate(words)
    ]

    def first_named(text: str) -> int | None:
        """The option whose words come first in ``text`` (None: none, or a tie)."""
        where = []
        for i, own in enumerate(distinctive):
            found = [m.start() for w in own if (m := re.search(rf"\b{re.escape(w)}", text))]
            if found:
                where.append((min(found), i))
        where.sort()
        if not where or (len(where) > 1 and where[0][0] == where[1][0]):
            return None
        return where[0][1]

    lowered = decision.lower()
    for m in _CHOICE_RE.finditer(lowered):
        hit = first_named(m.group(1))
        if hit is not None:
            return hit
    counts = [
        sum(len(re.findall(rf"\b{re.escape(w)}", lowered)) for w in own) for own in distinctive
    ]
    ranked = sorted(counts, reverse=True)
    if ranked and ranked[0] >= 2 and (len(ranked) == 1 or ranked[0] >= 2 * ranked[1]):
        return counts.index(ranked[0])
    return None


_CHOICE_RE = re.compile(
    r"(?:^\s*(?:we will |we'll )?(?:use|adopt|go with|choose|keep)\b|"
    r"\b(?:decided|decision) to (?:use|go with|adopt|move to|implement)|"
    r"\bdecided on|\b(?:we|to) (?:chose|choose|use|adopt|select|implement|go with)|"
    r"\bwent with|\bwill use|\bselected)\s+(.{0,60})",
    re.M,
)


_COMMON = frozenset(
    ("use", "using", "the", "and", "for", "with", "from", "into", "our", "new", "existing")
    + ("current", "keep", "option", "approach", "only", "all", "via", "per")
)


# --------------------------------------------------------------------------- the import


@dataclass(frozen=True)
class Imported:
    name: str
    id: str
    created: bool
    supersedes: tuple[str, ...]
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.name,
            "id": self.id,
            "created": self.created,
            "supersedes": list(self.supersedes),
            "note": self.note,
        }


@dataclass(frozen=True)
class ImportResult:
    domain: str
    records: tuple[Imported, ...]
    warnings: tuple[str, ...] = ()

    @property
    def created(self) -> int:
        return sum(1 for r in self.records if r.created)

    def to_dict(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "created": self.created,
            "skipped": len(self.records) - self.created,
            "records": [r.to_dict() for r in self.records],
            "warnings": list(self.warnings),
        }


def read_records(folder: Path) -> list[Record]:
    if not folder.is_dir():
        raise InvalidInput(f"{folder} is not a folder; pass the folder holding the ADR files.")
    records = []
    for path in sorted(folder.glob("*.md")):
        if path.stem.lower() in SKIP_STEMS or not path.is_file():
            continue
        text = decode_text(path.read_bytes(), str(path))
        if not text.strip():
            continue
        records.append(parse_record(path.name, text))
    if not records:
        raise InvalidInput(f"{folder} holds no .md decision records; check the path.")
    return records


def _fill_missing_dates(records: list[Record]) -> None:
    dated = [r for r in records if r.date]
    if not dated:
        raise InvalidInput(
            "none of the records has a date (a 'Date:' line or frontmatter date); add dates "
            "first, the import refuses to invent them."
        )
    order = sorted(records, key=lambda r: (r.number if r.number is not None else 1 << 30, r.name))
    for i, record in enumerate(order):
        if record.date:
            continue
        before = next((r for r in reversed(order[:i]) if r.date), None)
        after = next((r for r in order[i + 1 :] if r.date), None)
        source = before or after
        assert source is not None and source.date
        record.date = source.date
        which = "previous" if before else "next"
        record.date_note = (
            f"the record has no date; this is the date of the {which} record, {source.name}"
        )


def _resolver(records: list[Record]) -> Any:
    by_name = {r.name.lower(): r for r in records}
    by_stem = {Path(r.name).stem.lower(): r for r in records}
    by_number: dict[int, list[Record]] = {}
    for r in records:
        if r.number is not None:
            by_number.setdefault(r.number, []).append(r)

    def resolve(ref: str) -> Record | None:
        ref = ref.strip()
        if ref.startswith("#"):
            hits = by_number.get(int(ref[1:]), [])
            return hits[0] if len(hits) == 1 else None
        base = ref.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].lower()
        if base in by_name:
            return by_name[base]
        if base in by_stem:
            return by_stem[base]
        number = _number(base)
        if number is not None:
            hits = by_number.get(number, [])
            if len(hits) == 1:
                return hits[0]
        return None

    return resolve


def import_adr(
    wiki: Wiki,
    folder: str | Path,
    *,
    viewer: Viewer,
    domain: str | None = None,
    scope: str | None = None,
) -> ImportResult:
    """Import every ``*.md`` record in ``folder`` as a decision entry (see the module doc), into
    ``scope`` (default: settings.yaml ``default_scope``), which the reader must be allowed to
    write: a refused import writes nothing."""

    folder = Path(folder)
    domain = domain or slugify(folder.resolve().name, 63).strip("-") or "adr"
    if not NAME_RE.match(domain):
        raise InvalidInput(
            f"--domain {domain!r} must be lowercase letters, digits and hyphens, e.g. platform."
        )
    scope = scope or wiki.settings.default_scope
    if not NAME_RE.match(scope):
        raise InvalidInput(
            f"--scope {scope!r} must be lowercase letters, digits and hyphens, e.g. shared."
        )
    require_write(viewer, scope)
    records = read_records(folder)
    _fill_missing_dates(records)
    resolve = _resolver(records)
    warnings: list[str] = []

    # old name -> new names, from either side of the link
    replaces: dict[str, set[str]] = {r.name: set() for r in records}
    for record in records:
        for ref in record.supersedes_refs:
            old = resolve(ref)
            if old is None or old is record:
                warnings.append(f"{record.name}: supersedes {ref!r}, which is not in the folder")
                continue
            replaces[record.name].add(old.name)
        unresolved = []
        for ref in record.superseded_by_refs:
            new = resolve(ref)
            if new is None or new is record:
                unresolved.append(ref)
                continue
            replaces[new.name].add(record.name)
        if record.status == "superseded":
            record.status = (
                "active" if record.superseded_by_refs and not unresolved else "deprecated"
            )
        for ref in unresolved:
            warnings.append(f"{record.name}: superseded by {ref!r}, which is not in the folder")

    ordered = _oldest_first(records, replaces, warnings)
    existing = _existing_imports(wiki, viewer, domain, scope)
    ids: dict[str, str] = {}
    results: list[Imported] = []
    for record in ordered:
        olds = tuple(ids[o] for o in sorted(replaces[record.name]) if o in ids)
        if record.name in existing:
            ids[record.name] = existing[record.name]
            results.append(
                Imported(record.name, existing[record.name], False, olds, "already imported")
            )
            continue
        entry = record_entry(record, domain=domain, scope=scope, supersedes=olds)
        written = write_entry(wiki, entry, viewer=viewer)
        ids[record.name] = written.id
        results.append(Imported(record.name, written.id, written.created, olds, record.date_note))
    return ImportResult(domain, tuple(results), tuple(warnings))


def record_entry(
    record: Record, *, domain: str, scope: str, supersedes: tuple[str, ...] = ()
) -> Entry:
    summary = record.title
    if record.decision:
        decision = _first_sentence(record.decision, SUMMARY_LIMIT)
        if decision.lower().rstrip(".") != summary.lower().rstrip("."):
            summary = f"{summary.rstrip('.:')}: {decision}"
    if len(summary) > SUMMARY_LIMIT:
        summary = summary[: SUMMARY_LIMIT - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    extra: tuple[tuple[str, Any], ...] = ()
    if record.date_note:
        extra = (("date_note", record.date_note),)
    assert record.date
    return Entry(
        id="",
        type="decision",
        date=record.date,
        summary=summary,
        domain=domain,
        status=record.status,
        scope=scope,
        origin="imported",
        tags=tuple(slugify(t, 40) for t in record.tags),
        supersedes=supersedes,
        alternatives_considered=record.alternatives,
        sources=(f"adr:{record.name}",),
        extra=extra,
        body=record.text,
    )


def _oldest_first(
    records: list[Record], replaces: dict[str, set[str]], warnings: list[str]
) -> list[Record]:
    """By date (then file name), but every record after the records it replaces."""
    by_name = {r.name: r for r in records}
    pending = sorted(records, key=lambda r: (r.date or "", r.name))
    done: set[str] = set()
    out: list[Record] = []
    visiting: set[str] = set()

    def place(record: Record) -> None:
        if record.name in done:
            return
        visiting.add(record.name)
        for old in sorted(replaces[record.name], key=lambda n: (by_name[n].date or "", n)):
            if old in visiting:
                warnings.append(f"{record.name} and {old} supersede each other; link dropped")
                replaces[record.name].discard(old)
                continue
            place(by_name[old])
        visiting.discard(record.name)
        done.add(record.name)
        out.append(record)

    for record in pending:
        place(record)
    return out


def _existing_imports(wiki: Wiki, viewer: Viewer, domain: str, scope: str) -> dict[str, str]:
    """adr file name -> entry id, for records already imported into this domain and scope."""

    found: dict[str, str] = {}
    with read_catalog(wiki) as catalog:
        rows: Iterable[Any] = catalog.rows(viewer, domain=domain, scope=scope, type="decision")
        for row in rows:
            for source in row.sources:
                if source.startswith("adr:"):
                    found.setdefault(source[4:], row.id)
    return found

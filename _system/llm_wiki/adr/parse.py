"""One ADR file to a :class:`Record`: its title, number, status, date text, people, decision,
options and the links it states, as the record writes them (nothing resolved yet)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_wiki.adr.links import Statement, record_statements, reference_definitions, status_notes
from llm_wiki.adr.markdown import (
    ATTRIBUTES_RE,
    HEADING_RE,
    drop_comments,
    find_section,
    first_sentence,
    lines_outside_fences,
    paragraphs,
    prose_lines,
    sections,
    strip_md,
)
from llm_wiki.adr.options import alternatives, chosen_name, named_choice
from llm_wiki.entries import Alternative, split_frontmatter
from llm_wiki.errors import InvalidInput
from llm_wiki.yaml_input import load_yaml

_STATUS_WORDS = (
    ("superseded", "superseded"),
    ("superceded", "superseded"),
    ("replaced", "superseded"),
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
    ("hold", "proposed"),
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
    words = re.findall(r"[a-z]+", strip_md(text).lower())
    if re.match(r"\W*(?:partly|partially|in\s+part)\s+super", strip_md(text), re.I):
        return "active"  # part of it still holds; the partial link is kept as a relation
    for word in words[:4]:
        for key, status in _STATUS_WORDS:
            if word == key:
                return status
    return None


_NUMBER_RE = re.compile(r"^(?:m?adr[-_ ]?)?(\d{1,5})(?!\d)", re.I)
_ROLE_KEYS = {
    "decision-makers": "decider",
    "decision_makers": "decider",
    "decision-maker": "decider",
    "deciders": "decider",
    "decider": "decider",
    "consulted": "consulted",
    "informed": "informed",
}
_ROLE_LINE_RE = re.compile(
    r"^\s*(?:[-*+]\s*)?\**\s*(deciders?|decision[- ]makers?|consulted|informed)\s*\**\s*:\s*\**"
    r"\s*(.+)$",
    re.I,
)
_DATE_LINE_RE = re.compile(
    r"^\s*(?:[-*+]\s*)?(?:\*\*|__)?\s*date\s*(?:\*\*|__)?\s*[:\-]?\s*(?:\*\*|__)?\s*:?\s*(.+)$",
    re.I,
)
_STATUS_LINE_RE = re.compile(
    r"^\s*(?:[-*+]\s*)?(?:\*\*|__)?\s*status\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.+)$", re.I
)
_DECISION_SECTIONS = (
    r"decision",
    r"decision outcome",
    r"the decision",
    r"decisions?",
    r"what.s proposed",
    r"proposal",
    r"the existing decision",
    r"outcome",
)


def file_number(name: str) -> tuple[int | None, str]:
    """The record's number and its digits as the file name writes them (``036``)."""
    match = _NUMBER_RE.match(Path(name).name)
    return (int(match.group(1)), match.group(1)) if match else (None, "")


@dataclass
class Record:
    """One parsed ADR file, before it becomes an entry."""

    path: Path
    rel: str  # the path inside the folder being imported
    number: int | None
    digits: str
    title: str
    status: str  # active | proposed | rejected | deprecated | superseded
    status_text: str
    date_text: str
    decision: str
    decision_text: str
    alternatives: tuple[Alternative, ...]
    placeholders: int  # alternatives given the placeholder reason
    statements: list[Statement] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (why, words)
    cites: list[Statement] = field(default_factory=list)
    roles: list[tuple[str, str]] = field(default_factory=list)  # (name, role)
    tags: tuple[str, ...] = ()
    text: str = ""
    date: str = ""
    date_source: str = ""

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def aliases(self) -> tuple[str, ...]:
        """How people cite the record: its file name's stem and its number (``ADR-0005``,
        ``0005``, ``adr-0005``)."""
        out = [self.path.stem]
        if self.number is not None:
            for digits in dict.fromkeys((self.digits, f"{self.number:04d}")):
                out += [f"ADR-{digits}", digits, f"adr-{digits}"]
        return tuple(dict.fromkeys(out))


def read_meta(text: str, what: str) -> tuple[dict[str, Any], str]:
    if not text.lstrip("\ufeff").startswith("---"):
        return {}, text
    try:
        head, body = split_frontmatter(text)
        loaded = load_yaml(head, what)
    except InvalidInput:
        return {}, text
    return (loaded if isinstance(loaded, dict) else {}), body


_TITLE_LINK_PREFIX_RE = re.compile(r"^\s*\[(?:[^\[\]]|\[[^\]]*\]\([^)]*\))*\]\s*")


def clean_title(raw: str) -> str:
    title = ATTRIBUTES_RE.sub("", raw)  # "Use PSR-16 {#adr_0001}": the site's anchor
    if re.match(r"^\s*\[[^\]]*supers", title, re.I):  # "[Superseded by [ADR-0019](…)] Title"
        title = _TITLE_LINK_PREFIX_RE.sub("", title)
    title = strip_md(title)
    title = re.sub(r"^\s*(?:m?adr[-_ ]?)?#?\d+[.:)]?\s*[-–—:]?\s*", "", title, flags=re.I)
    return title.strip()


# What templates write where a record has its words. A number: "N)", "NNNN.", "ADRXXX:",
# "NUMBER."; a title: "Title", "TITLE", "Title (short noun phrase)", "[short title of solved
# problem and solution]", "{short title …}"; a date: "YYYY-MM-DD", "DATE"; a status listing
# every status there is ("proposed, accepted, rejected, deprecated, superseded, ...").
_NUMBER_HOLE = r"(?:m?adr[-_ ]?)?(?:n{1,4}|x{2,4}|number|#+|\d+)"
_TITLE_HOLE_RE = re.compile(
    rf"^(?:{_NUMBER_HOLE}\s*[.:)\-–—]?\s+)?(?:\{{.*\}}|\[.*\]|<.*>|title(?:\s*\(.*\))?|"
    r"short\s+title.*|.*\bnoun\s+phrase\b.*|.*\bsolved\s+problem\b.*)$",
    re.I,
)
# (``\W*+`` takes the colon and spaces: ``\W*:?\s*`` split a padded line every way, 18 s a record)
_DATE_HOLE_RE = re.compile(r"(?im)^\W*+date\W*+(?:yyyy-mm-dd|dd/mm/yyyy|date|\[?date\]?)\s*$")
_STATUS_HOLE_RE = re.compile(
    r"(?i)\b(?:proposed|accepted|rejected|deprecated|superseded)\b(?:\s*(?:[,|/]|\bor\b)\s*"
    r"\[?\w*\s*\b(?:proposed|accepted|rejected|deprecated|superseded)\b\]?){2,}"
)
_TEMPLATE_NAME_RE = re.compile(r"(?i)(?:^|[-_. ])template$|^template\b")


def is_template(meta: dict[str, Any], title: str, text: str, stem: str = "") -> bool:
    """A template, by its content: a placeholder for a title (``{short title …}``, ``ADRXXX:
    Title``, ``N) Title (short noun phrase)``), or a file named template (``template.md``,
    ``NNNN-adr-template.md``) with one placeholder of any kind (for a date, a status listing
    every status, ``{holes}``)."""
    if "template" in str(meta.get("title") or "").lower():
        return True
    t = strip_md(ATTRIBUTES_RE.sub("", title)).strip()
    if _TITLE_HOLE_RE.match(t) or re.search(r"(?i)x{3}|\bn{4}\b|:\s*title$", t):
        return True
    prose = "\n".join(prose_lines(text))
    holes = set(re.findall(r"\{[a-z][^{}\n]*\s[^{}\n]*\}", prose, re.I))  # {short title of …}
    signs = (
        len(holes) >= 2,
        bool(_DATE_HOLE_RE.search(prose)),
        bool(_STATUS_HOLE_RE.search(prose)),
        bool(re.match(rf"(?i)^{_NUMBER_HOLE}\s*[.:)]", t)) and not re.match(r"^\d", t),
    )
    return bool(_TEMPLATE_NAME_RE.search(stem)) and any(signs) or sum(signs) >= 2


def is_index(text: str) -> int:
    """How many other records a file lists, when it is a list of links and little else, with no
    status or date of its own (0: it is not an index)."""
    if re.search(r"(?im)^\W*(?:status|date)\W*:|^#+\s*status\b", text):
        return 0
    lines = [ln.strip() for ln in prose_lines(text) if ln.strip() and not ln.startswith("#")]
    linked = [ln for ln in lines if re.search(r"\]\([^)]*\.md\b", ln)]
    if len(linked) >= 3 and len(linked) >= 0.5 * len(lines):
        return len(linked)
    return 0


def parse_record(path: Path, rel: str, text: str) -> Record:
    meta, body = read_meta(text, rel)
    secs = sections(body)
    lines = [ln for ln, fenced in lines_outside_fences(drop_comments(body)) if not fenced]
    title_line = ""
    raw_title = str(meta.get("title") or "").strip()
    for ln in lines:
        m = HEADING_RE.match(ln)
        if m and m.group(2) and len(m.group(1)) <= 2:
            title_line = ln
            raw_title = raw_title or m.group(2)
            break
    header_end = len(lines)
    seen_title = not title_line
    for i, ln in enumerate(lines):
        if ln == title_line and not seen_title:
            seen_title = True
            continue
        if seen_title and HEADING_RE.match(ln):
            header_end = i
            break
    title = clean_title(raw_title)
    if not title:
        stem = re.sub(r"^\d+[-_ ]*", "", path.stem).replace("-", " ").replace("_", " ")
        title = stem.strip().capitalize() or path.stem
    head_lines = lines[: min(len(lines), 60)]

    date_text = str(meta["date"]) if meta.get("date") else ""
    if not date_text:
        for ln in head_lines:
            m = _DATE_LINE_RE.match(ln)
            if m and re.search(r"\d", m.group(1)) and not re.search(r"yyyy", m.group(1), re.I):
                date_text = m.group(1)
                break

    status_text = str(meta.get("status") or "")
    status_sec = find_section(secs, r"status")
    where_status = "frontmatter" if status_text else ""
    if not status_text and status_sec is not None:
        paras = [p for p in drop_comments(status_sec.body).split("\n\n") if p.strip()]
        status_text = " ".join(paras[0].split()) if paras else ""
    if not status_text:
        for ln in head_lines:
            if m := _STATUS_LINE_RE.match(ln):
                status_text = m.group(1)
                break
    status = parse_status(status_text) or "active"

    decision_sec = find_section(secs, *_DECISION_SECTIONS)
    decision = decision_text = ""
    if decision_sec is not None:
        paras = paragraphs(decision_sec.body)
        decision_text = "\n\n".join(paras)
        decision = paras[0] if paras else ""
        if decision.endswith(":") and len(paras) > 1:  # "We have decided to:" + its first item
            decision += " " + re.sub(r"^([-*+]|\d+[.)])\s+", "", paras[1])
        if name := chosen_name(decision):
            decision = f"Chosen option: {name}"
        elif named := named_choice(secs, decision):
            decision = named  # "Option 4." says which, not what
    alts, placeholders = alternatives(secs, decision_text, body)

    statements, refused, cites = record_statements(
        body, meta, title_line, "" if where_status == "frontmatter" else status_text, header_end
    )
    if status_sec is not None and where_status != "frontmatter":
        notes = [p for p in drop_comments(status_sec.body).split("\n\n") if p.strip()][1:]
        statements += status_notes(notes, reference_definitions(body))
    roles: list[tuple[str, str]] = []
    for key, role in _ROLE_KEYS.items():
        value = meta.get(key)
        if value:
            for name in _names(value):
                roles.append((name, role))
    for ln in lines[:header_end]:
        if m := _ROLE_LINE_RE.match(ln):
            word = m.group(1).lower()
            role = "decider" if word.startswith("decid") or "maker" in word else word
            roles += [(name, role) for name in _names(m.group(2))]
    tags = meta.get("tags")
    number, digits = file_number(path.name)
    return Record(
        path=path,
        rel=rel,
        number=number,
        digits=digits,
        title=title,
        status=status,
        status_text=status_text,
        date_text=date_text,
        decision=decision,
        decision_text=decision_text,
        alternatives=tuple(alts),
        placeholders=placeholders,
        statements=statements,
        refused=refused,
        cites=cites,
        roles=list(dict.fromkeys(roles)),
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        text=text.strip("\n"),
    )


def _names(value: Any) -> list[str]:
    items = value if isinstance(value, list) else re.split(r",|;|\band\b|&", str(value))
    out = []
    for item in items:
        name = strip_md(str(item)).strip(" .*_")
        if not name or re.search(r"[{}\[\]]|list everyone|^\W+$", name, re.I):
            continue
        out.append(name)
    return out


def summary_of(record: Record, limit: int) -> str:
    """ "Title: decision's first sentence." (the title alone when there is no decision)."""
    summary = record.title
    if record.decision:
        decision = first_sentence(record.decision, limit)
        if decision.lower().rstrip(".") != summary.lower().rstrip("."):
            summary = f"{summary.rstrip('.:')}: {decision}"
    if len(summary) > limit:
        summary = summary[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return summary

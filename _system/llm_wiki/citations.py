"""Statement-local evidence: the checks every LLM writer runs before anything it wrote is kept.

An LLM's output is a list of :class:`Statement` (text plus the ids it cites). The checks fail
closed and say which statement broke which rule:

- every statement cites at least one entry (``uncited``);
- every cited id was among the entries the model was given (``unknown-id``: invented, or not
  shown), is evidence rather than generated text (``generated``: ``origin: consolidated`` or
  ``answer``), and is of the same scope (``other-scope``);
- every number, date and quoted string in a statement occurs in one of the entries it cites
  (``unsupported-number``, ``unsupported-date``, ``unsupported-quote``).

A verbatim quote said to come from some lines of a raw source can be checked with
:func:`find_quote` / :func:`check_quote` (``raw/<sha256>.<ext>#L10-L24``).

What counts as "occurs": numbers are compared by value (``10,000`` = ``10000``, ``5.0`` = ``5``;
a unit or plural suffix is ignored: ``90d``, ``429s``); tokens that start with a letter and hold a
digit (``S3``, ``v2``, ``p99``) must occur as tokens; a date must match a date of the evidence at
the precision it is written (``2026-03-04``, ``4 March 2026``, ``March 2026``, or a bare year);
quotes (``"..."``, curly quotes, ``«...»``, backticks) must occur after case and whitespace are
folded. Numbers written as words are not checked.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from llm_wiki.entries import GENERATED_ORIGINS, Entry


@dataclass(frozen=True)
class Statement:
    """One generated sentence and the entry ids it rests on."""

    text: str
    cites: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "cites": list(self.cites)}


@dataclass(frozen=True)
class Evidence:
    """What a cited id stands for: its scope, origin and searchable text."""

    id: str
    scope: str
    origin: str
    text: str

    @property
    def is_generated(self) -> bool:
        return self.origin in GENERATED_ORIGINS

    @functools.cached_property
    def facts(self) -> Facts:
        return extract_facts(self.text, strip=(self.id,))

    @functools.cached_property
    def folded(self) -> str:
        return fold(self.text)


def evidence_from_entry(entry: Entry) -> Evidence:
    """An entry as evidence: every field a statement may draw on, and its body."""
    parts = [
        entry.date,
        entry.type,
        entry.domain,
        entry.summary,
        " ".join(entry.tags),
        " ".join(entry.actors),
        *entry.aliases,
        *entry.questions,
        *(f"{a.id}: {a.rejected_because}" for a in entry.alternatives_considered),
        entry.body,
    ]
    return Evidence(entry.id, entry.scope, entry.origin, "\n".join(p for p in parts if p))


@dataclass(frozen=True)
class CitationProblem:
    """One rule one statement broke. ``statement`` is the offending text."""

    kind: str
    statement: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "statement": self.statement, "detail": self.detail}

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


KINDS = {
    "empty": "a statement has no text",
    "uncited": "a statement cites no entry",
    "unknown-id": "a cited id was not among the entries given",
    "generated": "a cited entry is generated text (consolidated or answer), not evidence",
    "other-scope": "a cited entry belongs to another scope",
    "unsupported-number": "a number does not occur in the cited entries",
    "unsupported-date": "a date does not occur in the cited entries",
    "unsupported-quote": "a quoted string does not occur in the cited entries",
    "quote-not-found": "a verbatim quote is not in the cited lines of its source",
}


def check_statements(
    statements: Iterable[Statement],
    evidence: Mapping[str, Evidence],
    *,
    scope: str,
) -> list[CitationProblem]:
    """Every rule each statement breaks (empty: all pass).

    ``evidence`` holds every entry the model was given, keyed by id (context that must not be
    cited, such as a previous synthesis, belongs in it too, so that citing it reads as
    ``generated`` rather than ``unknown-id``).
    """
    problems: list[CitationProblem] = []
    known_ids = set(evidence)
    for statement in statements:
        text = statement.text.strip()
        if not text:
            problems.append(CitationProblem("empty", "", KINDS["empty"]))
            continue
        problems.extend(check_ids(statement, evidence, scope=scope))
        usable = [
            evidence[i]
            for i in statement.cites
            if i in evidence and not evidence[i].is_generated and evidence[i].scope == scope
        ]
        if usable:
            problems.extend(check_facts(text, usable, strip=known_ids.union(statement.cites)))
    return problems


def check_ids(
    statement: Statement, evidence: Mapping[str, Evidence], *, scope: str
) -> list[CitationProblem]:
    """The citation rules alone: cites something; every id given, evidence, same scope."""
    if not statement.cites:
        return [CitationProblem("uncited", statement.text, KINDS["uncited"])]
    problems = []
    for cited in dict.fromkeys(statement.cites):
        item = evidence.get(cited)
        if item is None:
            problems.append(
                CitationProblem(
                    "unknown-id",
                    statement.text,
                    f"cites {cited!r}, which was not among the entries given",
                )
            )
        elif item.is_generated:
            problems.append(
                CitationProblem(
                    "generated",
                    statement.text,
                    f"cites {cited}, which is generated text (origin: {item.origin}), not evidence",
                )
            )
        elif item.scope != scope:
            # Say no more than "not given": the other scope's name is not for this reader.
            problems.append(
                CitationProblem(
                    "other-scope",
                    statement.text,
                    f"cites {cited!r}, which is not an entry of scope {scope!r}",
                )
            )
    return problems


def check_facts(
    text: str, cited: Sequence[Evidence], *, strip: Collection[str] = ()
) -> list[CitationProblem]:
    """Numbers, dates and quoted strings of ``text`` that occur in none of ``cited``.

    ``strip`` lists ids to remove from ``text`` first (an id mentioned in a sentence is not a
    date).
    """
    facts = extract_facts(text, strip=strip)
    if not (facts.numbers or facts.tokens or facts.dates or facts.quotes):
        return []
    numbers: set[str] = set()
    tokens: set[str] = set()
    dates: set[tuple[int, int, int]] = set()
    for item in cited:
        numbers |= item.facts.numbers
        tokens |= item.facts.tokens
        for candidates in item.facts.dates.values():
            dates.update(candidates)
    problems = []
    for number in sorted(facts.numbers):
        if number not in numbers:
            problems.append(
                CitationProblem(
                    "unsupported-number",
                    text,
                    f"the number {number} occurs in none of the cited entries",
                )
            )
    for token in sorted(facts.tokens):
        if token not in tokens:
            problems.append(
                CitationProblem(
                    "unsupported-number",
                    text,
                    f"{token!r} occurs in none of the cited entries",
                )
            )
    for raw, candidates in facts.dates.items():
        if not any(_date_supported(c, dates) for c in candidates):
            problems.append(
                CitationProblem(
                    "unsupported-date",
                    text,
                    f"the date {raw!r} occurs in none of the cited entries",
                )
            )
    for quote in facts.quotes:
        if not any(fold(quote) in item.folded for item in cited):
            problems.append(
                CitationProblem(
                    "unsupported-quote",
                    text,
                    f"the quoted {quote!r} occurs in none of the cited entries",
                )
            )
    return problems


def _date_supported(want: tuple[int, int, int], dates: set[tuple[int, int, int]]) -> bool:
    year, month, day = want
    if not month:  # a bare year: any date in that year
        return any(d[0] == year for d in dates)
    if not day:
        return any(d[0] == year and d[1] == month for d in dates)
    return want in dates


def cited_ids(statements: Iterable[Statement]) -> list[str]:
    """Every id cited by ``statements``, once each, in first-cited order."""
    return list(dict.fromkeys(i for s in statements for i in s.cites))


# --------------------------------------------------------------------------- facts


@dataclass(frozen=True)
class Facts:
    """What a text asserts that can be checked against evidence."""

    numbers: frozenset[str]  # normalised values: "10000", "1.5", "1.2.3"
    tokens: frozenset[str]  # letter-led tokens holding a digit, lowercased: "s3", "v2"
    dates: dict[
        str, tuple[tuple[int, int, int], ...]
    ]  # as written -> (y, m, d) readings; 0 = absent
    quotes: tuple[str, ...]


_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20|21)\d\d)"
_DATE_RES = (
    # 2026-03-04, 2026/03/04, 2026.03.04
    ("ymd", re.compile(r"(?<![\w.])(?P<year>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?![\w])")),
    # 04/03/2026 or 03/04/2026 (either reading), 04/03/26, 04.03.2026
    ("dmy", re.compile(r"(?<![\w./])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\w/])")),
    ("dmy", re.compile(r"(?<![\w./])(?P<a>\d{1,2})\.(?P<b>\d{1,2})\.(?P<y>\d{4})(?![\w.])")),
    # 4 March 2026, 4th of March, 2026
    ("dMy", re.compile(rf"(?i)\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")),
    # March 4, 2026
    ("Mdy", re.compile(rf"(?i)\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")),
    # March 2026
    ("My", re.compile(rf"(?i)\b{_MONTH},?\s+{_YEAR}\b")),
    # 2026-03
    ("ym", re.compile(r"(?<![\w.-])(?P<year>\d{4})-(?P<m>\d{2})(?![\w-])")),
)
_QUOTE_RES = (  # (a character the quote needs, its pattern)
    ('"', re.compile(r'"([^"\n]{2,400})"')),
    ("“", re.compile(r"“([^”\n]{2,400})”")),
    ("„", re.compile(r"„([^“”\n]{2,400})[“”]")),
    ("«", re.compile(r"«\s?([^»\n]{2,400}?)\s?»")),
    ("`", re.compile(r"`([^`\n]{2,400})`")),
)
_MONTH_KINDS = ("dMy", "Mdy", "My")
_MONTH_HINT_RE = re.compile(r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")
_ID_LIKE_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")
_DIGIT_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]*\d[A-Za-z0-9]*(?:[.,]\d+)*")
_NUMBER_HEAD_RE = re.compile(r"^\d+(?:[.,]\d+)*")
_THOUSANDS_RE = re.compile(r"^\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_DIGIT_RE = re.compile(r"\d")


def extract_facts(text: str, *, strip: Collection[str] = ()) -> Facts:
    """The numbers, letter-led tokens with digits, dates and quoted strings of ``text``."""
    if strip:
        ids = strip if isinstance(strip, (set, frozenset)) else set(strip)
        text = _ID_LIKE_RE.sub(lambda m: " " if m.group(0) in ids else m.group(0), text)
    quotes: list[str] = []

    def quoted(match: re.Match[str]) -> str:
        quote = match.group(1).strip()
        if quote:
            quotes.append(quote)
        return " "

    for mark, pattern in _QUOTE_RES:
        if mark in text:
            text = pattern.sub(quoted, text)
    dates: dict[str, tuple[tuple[int, int, int], ...]] = {}
    numbers: set[str] = set()
    tokens: set[str] = set()
    if not _DIGIT_RE.search(text):
        return Facts(frozenset(), frozenset(), dates, tuple(quotes))
    months = _MONTH_HINT_RE.search(text) is not None
    for kind, pattern in _DATE_RES:
        if kind in _MONTH_KINDS and not months:
            continue

        def dated(match: re.Match[str], kind: str = kind) -> str:
            readings = _date_readings(kind, match)
            if not readings:
                return match.group(0)
            dates[match.group(0)] = readings
            return " "

        text = pattern.sub(dated, text)
    for match in _DIGIT_TOKEN_RE.finditer(text):
        token = match.group(0)
        head = _NUMBER_HEAD_RE.match(token)
        if head is None:
            tokens.add(token.lower())
            continue
        number = normalise_number(head.group(0))
        year = int(number) if number.isdigit() and len(number) == 4 else 0
        if 1900 <= year < 2200 and head.group(0) == token:
            dates.setdefault(token, ((year, 0, 0),))  # a bare year: checked as a date
            continue
        numbers.add(number)
    return Facts(frozenset(numbers), frozenset(tokens), dates, tuple(quotes))


def _date_readings(kind: str, match: re.Match[str]) -> tuple[tuple[int, int, int], ...]:
    g = match.groupdict()
    if kind == "ymd":
        cand = [(int(g["year"]), int(g["m"]), int(g["d"]))]
    elif kind == "ym":
        cand = [(int(g["year"]), int(g["m"]), 0)]
    elif kind == "dmy":
        year = int(g["y"]) + (2000 if len(g["y"]) == 2 else 0)
        a, b = int(g["a"]), int(g["b"])
        cand = [(year, b, a), (year, a, b)]
    else:
        month = _MONTHS[g["mon"].lower()]
        day = int(g["day"]) if g.get("day") else 0
        cand = [(int(g["year"]), month, day)]
    return tuple(c for c in dict.fromkeys(cand) if _valid(c))


def _valid(date: tuple[int, int, int]) -> bool:
    _, month, day = date
    return 1 <= month <= 12 and 0 <= day <= 31 if month else True


def normalise_number(text: str) -> str:
    """``10,000`` -> ``10000``; ``5.50`` -> ``5.5``; ``007`` -> ``7``; ``1.2.3`` stays."""
    if _THOUSANDS_RE.match(text):
        text = text.replace(",", "")
    text = text.replace(",", ".") if text.count(",") == 1 and "." not in text else text
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        try:
            value = Decimal(text).normalize()
        except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
            return text
        return format(value, "f")
    return text


def fold(text: str) -> str:
    """Text for "occurs in" comparisons: NFKC, casefolded, one kind of quote, one space."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = text.translate(_QUOTE_FOLD)
    return " ".join(text.split())


_QUOTE_FOLD = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})


# --------------------------------------------------------------------------- ids in free text


# An entry id as minted (YYYY-MM-DD-slug-hash) or given with --id, inside [brackets] or bare.
_BRACKETED_RE = re.compile(r"\[([a-z0-9][a-z0-9-]{2,158}[a-z0-9])\]")
_DATED_ID_RE = re.compile(r"(?<![\w/-])(\d{4}-\d{2}-\d{2}-[a-z0-9]+(?:-[a-z0-9]+)*)(?![\w/-])")


def extract_cited(text: str) -> list[str]:
    """Entry ids cited in free text (an answer), in order of first appearance, each once.

    A citation is an id in square brackets (``[2026-05-02-use-postgres-3f2a]``) or a bare dated
    id (``2026-05-02-use-postgres-3f2a``). Markdown links ``[label](url)`` are not citations.
    """
    found: list[tuple[int, str]] = []
    for match in _BRACKETED_RE.finditer(text):
        if text[match.end() : match.end() + 1] == "(":
            continue  # [label](url)
        found.append((match.start(1), match.group(1)))
    for match in _DATED_ID_RE.finditer(text):
        found.append((match.start(1), match.group(1)))
    out: list[str] = []
    for _, cited in sorted(found):
        if cited not in out:
            out.append(cited)
    return out


# --------------------------------------------------------------------------- raw sources


_LINE_REF_RE = re.compile(r"^(?P<path>[^#]+)(?:#L(?P<start>\d+)(?:-L(?P<end>\d+))?)?$")


def parse_line_ref(ref: str) -> tuple[str, int | None, int | None]:
    """``raw/<sha>.md#L10-L24`` -> (``raw/<sha>.md``, 10, 24); ``#L7`` -> (path, 7, 7)."""
    match = _LINE_REF_RE.match(ref.strip())
    if match is None:
        return ref, None, None
    start = int(match.group("start")) if match.group("start") else None
    end = int(match.group("end")) if match.group("end") else start
    return match.group("path"), start, end


def find_quote(quote: str, text: str, start: int | None = None, end: int | None = None) -> bool:
    """True when ``quote`` occurs in lines ``start``..``end`` (1-based, inclusive) of ``text``.

    Case and whitespace are folded (a quote may span wrapped lines); without a range, the whole
    text is searched.
    """
    if start is not None:
        lines = text.splitlines()
        first = max(start, 1) - 1
        last = len(lines) if end is None else min(end, len(lines))
        if first >= last:
            return False
        text = "\n".join(lines[first:last])
    needle = fold(quote)
    return bool(needle) and needle in fold(text)


def check_quote(quote: str, ref: str, text: str) -> CitationProblem | None:
    """A problem when ``quote`` is not found within the lines ``ref`` names of ``text``."""
    path, start, end = parse_line_ref(ref)
    if find_quote(quote, text, start, end):
        return None
    where = f"lines {start}-{end} of {path}" if start is not None else path
    return CitationProblem("quote-not-found", quote, f"the quote is not in {where}")

"""Links between records, of every kind and spelling, and where each one points.

A *statement* is what a record says about another: ``superseded-by`` / ``supersedes`` (also
adr-tools' "Superceded"/"Supercedes", "replaced by", "obsoletes"), partial supersession, and the
typed relations of :data:`llm_wiki.entries.RELATION_INVERSE` (adr-tools' "Amends"/"Amended by",
MADR's "Refines"/"Extends"/"Related to", "Supplemented by", "reverses"), plus ``cites`` for a
plain link in the text to another record. They are read from the frontmatter, the title, the
status line or section, the list header under the title and the text, never from code fences or
HTML comments. A sentence that only supposes one ("unless this ADR is superseded by …") and a
template placeholder (``[xxx](yyyymmdd-xxx.md)``, ``[ accepted | superseded by …]``) state none.

Resolving (:class:`Resolver`): a link names a file, and only that file counts; a file that is
not there is reported, never matched by its number instead. A bare reference (``ADR-0045``,
``MADR 093``, ``adr0008``) is matched by number, in the record's own folder first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from llm_wiki.adr.markdown import HEADING_RE, LIST_ITEM_RE, drop_comments, lines_outside_fences

SUPERSESSION = ("superseded-by", "supersedes")


@dataclass(frozen=True)
class Statement:
    kind: str  # superseded-by | supersedes | a relation kind | cites
    ref: str  # "file:<target>", "url:<url>" or "num:<n>"
    label: str  # the link's text, or the words naming the record
    where: str  # frontmatter | title | status | status-link | status-note | header | text


_SPELL = r"super[sc]ee?d"  # supersed(e), superced(e) (adr-tools), superseed
_KINDS = (
    ("partly-superseded-by", rf"(?:partly|partially|in\s+part)\s+{_SPELL}ed(?:\s+by)?"),
    (
        "partly-supersedes",
        rf"{_SPELL}es\s+(?:parts?\s+of|partly|partially)|(?:partly|partially|in\s+part)\s+{_SPELL}es\b",
    ),
    ("superseded-by", rf"{_SPELL}ed\s+by|replaced\s+by|obsoleted\s+by"),
    ("supersedes", rf"{_SPELL}es\b|{_SPELL}e\s*:|replaces\b|obsoletes\b"),
    ("amended-by", r"amended\s+by"),
    ("amends", r"amends\b"),
    ("refined-by", r"refined\s+by"),
    ("refines", r"refines\b"),
    ("extended-by", r"extended\s+by"),
    ("extends", r"extends\b"),
    ("supplemented-by", r"supplemented\s+by"),
    ("supplements", r"supplements\b"),
    ("reversed-by", r"reversed\s+by|reverted\s+by"),
    ("reverses", r"reverses\b|reverts\b"),
    (
        "relates-to",
        r"relates?\s+to\b|related\s+to\b|related\s+(?:adrs?|records?|decisions?)\s*:|see\s+also\b",
    ),
)
# The lookahead holds the first two letters any kind can start with: it only rejects positions
# no alternative could match, but saves trying each of them at every character (3.9x less CPU
# over the corpora's 30.5k lines, the same 158 matches).
_VERB_RE = re.compile(
    "(?=[aeioprs][abemnux])(?:"
    + "|".join(f"(?P<{k.replace('-', '_')}>{p})" for k, p in _KINDS)
    + ")",
    re.I,
)
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:unless|if|until|whether|would|could|might|may|should|can|once|when|in\s+case)\b", re.I
)
_MD_LINK_RE = re.compile(r"\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?[^)]*\)")
_REF_LINK_RE = re.compile(r"\[([^\]]+)\](?:\[([^\]]*)\])?(?!\()")
_URL_RE = re.compile(r"https?://[^\s)>\]]+\.md\b")
_NUMBER_REF_RE = re.compile(r"\b(?:m?adr|decision|record)\s*[-#:]?\s*#?0*(\d{1,5})\b", re.I)
_PLACEHOLDER_RE = re.compile(
    r"x{3}|y{4}|n{4}|link\s+to\s+adr|link\s+type|\{[^}]*\}|<[^>]*>|todo|tbc|tbd", re.I
)
_REF_DEF_RE = re.compile(r"^\s*\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+.*)?$")


def reference_definitions(text: str) -> dict[str, str]:
    """``[label]: target`` lines, by lower-cased label."""
    out = {}
    for line, fenced in lines_outside_fences(text):
        if not fenced and (m := _REF_DEF_RE.match(line)):
            out[m.group(1).strip().lower()] = m.group(2)
    return out


def refs_in(text: str, defs: dict[str, str]) -> tuple[list[tuple[str, str]], bool]:
    """(ref, label) pairs named in ``text``, and whether it holds a template placeholder."""
    refs: list[tuple[str, str]] = []
    placeholder = False
    rest = text
    for m in _MD_LINK_RE.finditer(text):
        label, target = m.group(1), m.group(2)
        inner = _MD_LINK_RE.search(label)  # [Superseded by [ADR-0019](…)]: the inner link
        if inner:
            label, target = inner.group(1), inner.group(2)
        if _PLACEHOLDER_RE.search(target) or _PLACEHOLDER_RE.search(label) and not target:
            placeholder = True
            continue
        if not target:
            continue
        kind = "url" if re.match(r"^[a-z]+://", target) else "file"
        refs.append((f"{kind}:{target}", label))
    rest = _MD_LINK_RE.sub(" ", rest)
    for m in _REF_LINK_RE.finditer(rest):
        key = (m.group(2) or m.group(1)).strip().lower()
        if key in defs:
            target = defs[key]
            kind = "url" if re.match(r"^[a-z]+://", target) else "file"
            refs.append((f"{kind}:{target}", m.group(1)))
    rest = _REF_LINK_RE.sub(
        lambda m: " " if (m.group(2) or m.group(1)).lower() in defs else m.group(0), rest
    )
    for m in _URL_RE.finditer(rest):
        refs.append((f"url:{m.group(0)}", m.group(0)))
    rest = _URL_RE.sub(" ", rest)
    if "|" in rest and re.search(r"\[[^\]]*\|[^\]]*\]", text):  # [ accepted | superseded by …]
        return [], True
    for m in _NUMBER_REF_RE.finditer(rest):
        refs.append((f"num:{int(m.group(1))}", m.group(0)))
    return refs, placeholder


def _may_be_record(ref: str) -> bool:
    """A web page (``https://…`` not ending in .md) is never a record."""
    if not ref.startswith("url:"):
        return True
    return ref.split("#", 1)[0].split("?", 1)[0].lower().endswith(".md")


def _last_sentence(text: str) -> str:
    """The last sentence of ``text`` (a link's "." never ends one)."""
    masked = _MD_LINK_RE.sub(lambda x: "L" * len(x.group(0)), text)
    cuts = [m.end() for m in re.finditer(r"(?<=[.!?])\s+", masked)]
    return text[cuts[-1] :] if cuts else text


_SELF_RE = re.compile(
    r"\b(?:this|the\s+present)\s+(?:m?adr|decision|record|document)\b|\bwe\b", re.I
)


def _another_record_is_subject(subject: str, defs: dict[str, str]) -> bool:
    """Whether the words before a verb name another record as what does it: a record named
    there ("[0035] also covers … and supersedes ADR 0026"), and no "this ADR" / "we" opening the
    sentence or after it ("This ADR, unlike [0002], supersedes …", "Like [0002], this ADR
    supersedes …" are still this record's)."""
    refs = [r for r, _ in refs_in(subject, defs)[0] if _may_be_record(r)]
    if not refs:
        return False
    masked = _MD_LINK_RE.sub(lambda x: "L" * len(x.group(0)), subject)
    last = max((m.end() for m in _MD_LINK_RE.finditer(subject)), default=0)
    last = max([last] + [m.end() for m in _NUMBER_REF_RE.finditer(masked)])
    opening = re.sub(r"^[\s>*_+-]*(?:note:\s*)?", "", subject, flags=re.I)
    return not (_SELF_RE.match(opening) or _SELF_RE.search(subject[last:]))


def statements_in_line(
    line: str,
    where: str,
    defs: dict[str, str],
    following: Sequence[str] = (),
    preceding: str = "",
) -> tuple[list[Statement], list[tuple[str, str]]]:
    """The statements of one line, and the (kind, words) of those it refused to make
    (hypothetical, placeholder).

    ``preceding``: the lines before it of the same paragraph or list item, where its first
    sentence may have begun. A sentence whose subject is another record ("[0035] … supersedes
    ADR 0026": a record named before the verb) says nothing of this record's own links: it is
    a ``relates-to``, never this record's supersession.
    """
    out: list[Statement] = []
    refused: list[tuple[str, str]] = []
    matches = list(_VERB_RE.finditer(line))
    for n, m in enumerate(matches):
        kind = (m.lastgroup or "").replace("_", "-")
        end = matches[n + 1].start() if n + 1 < len(matches) else len(line)
        obj = line[m.end() : end]
        masked = _MD_LINK_RE.sub(lambda x: "L" * len(x.group(0)), obj)  # "[036. Multi-…](…)"
        if cut := re.search(r"(?<=[.!?])\s+(?=[A-Z])", masked):
            obj = obj[: cut.start()]
        refs, placeholder = refs_in(obj, defs)
        refs = [r for r in refs if _may_be_record(r[0])]
        if (
            not refs
            and not placeholder
            and re.fullmatch(r"[\s:*_>-]*(?:decisions?|adrs?|records?)?[\s:*_]*", obj, re.I)
        ):
            for nxt in following:  # "superseded by decision:" and the link on the next line
                refs, placeholder = refs_in(nxt, defs)
                refs = [r for r in refs if _may_be_record(r[0])]
                if refs or placeholder:
                    break
        if placeholder and not refs:
            refused.append(("placeholder", line.strip()))
            continue
        if not refs:
            continue
        before = line[: m.start()]
        sentence = re.split(r"(?<=[.!?])\s+", before)[-1]
        if _HYPOTHETICAL_RE.search(sentence):
            refused.append(("hypothetical", line.strip()))
            continue
        if kind != "relates-to" and _another_record_is_subject(
            _last_sentence(f"{preceding} {before}" if preceding else before), defs
        ):
            kind = "relates-to"
        for ref, label in refs:
            out.append(Statement(kind, ref, label, where))
    return out, refused


def record_statements(
    body: str, meta: dict[str, Any], title_line: str, status_text: str, header_end: int
) -> tuple[list[Statement], list[tuple[str, str]], list[Statement]]:
    """(typed statements, refused, plain citations) of a record.

    ``header_end``: the index of the body line where the list header under the title ends.
    """
    defs = reference_definitions(body)
    out: list[Statement] = []
    refused: list[tuple[str, str]] = []
    for key in ("supersedes", "superseded_by", "superseded-by", "supercedes", "superceded_by"):
        value = meta.get(key)
        if isinstance(value, (str, int)):
            value = [value]
        for item in value or ():
            text = str(item)
            refs, _ = refs_in(text, defs)
            if not refs and re.fullmatch(r"\s*\d{1,5}\s*", text):
                refs = [(f"num:{int(text)}", text)]
            if not refs and text.strip():
                refs = [(f"file:{text.strip()}", text.strip())]
            kind = "supersedes" if key.startswith(("supersedes", "supercedes")) else "superseded-by"
            out += [Statement(kind, r, label, "frontmatter") for r, label in refs]
    if isinstance(meta.get("status"), str):
        got, bad = statements_in_line(meta["status"], "frontmatter", defs)
        out += got
        refused += bad
    if title_line:
        got, _ = statements_in_line(title_line, "title", defs)
        out += got
    if status_text:
        got, bad = statements_in_line(status_text, "status", defs)
        out += got
        refused += bad
        named = {s.ref for s in got}
        if not bad:  # "Rejected (see [019](…))": the status points at a record
            refs, _ = refs_in(status_text, defs)
            out += [  # (no word for how: "status-link", which the importer may make more)
                Statement("relates-to", r, label, "status-link")
                for r, label in refs
                if r not in named and _may_be_record(r)
            ]
    cites: list[Statement] = []
    lines = [line for line, fenced in lines_outside_fences(drop_comments(body)) if not fenced]
    for i, line in enumerate(lines):
        if not line.strip() or line.strip() == title_line.strip():
            continue
        if status_text and line.strip() in status_text:
            continue
        where = "header" if i < header_end else "text"
        following = [ln for ln in lines[i + 1 : i + 4] if ln.strip()][:2]
        got, bad = statements_in_line(line, where, defs, following, _block_before(lines, i))
        out += got
        refused += bad
        named = {s.ref for s in got}
        refs, _ = refs_in(line, defs)
        for ref, label in refs:
            target = ref.split("#", 1)[0]
            if ref.startswith("file:") and ref not in named and target.lower().endswith(".md"):
                cites.append(Statement("cites", ref, label, where))
    return out, refused, cites


def _block_before(lines: Sequence[str], i: int) -> str:
    """The lines before ``lines[i]`` of its paragraph or list item ("" when it starts one)."""
    out: list[str] = []
    j = i
    while j > 0 and not _starts_block(lines[j]) and lines[j - 1].strip():
        j -= 1
        if HEADING_RE.match(lines[j]):
            break
        out.append(lines[j])
    return " ".join(reversed(out))


def _starts_block(line: str) -> bool:
    text = line.lstrip()
    return bool(LIST_ITEM_RE.match(text) or HEADING_RE.match(text) or text.startswith(">"))


# "We're looking to move on from this ADR decision … - see [021-Multi-cluster](…)": a note
# under the status that the decision is being left, naming where to look instead.
_LEAVING_RE = re.compile(
    r"\bmov(?:e|ed|ing)\s+(?:on|away)\s+from\s+this\b|\bno\s+longer\s+(?:applies|holds|"
    r"stands|valid|in\s+(?:use|effect|force))\b|\bthis\s+(?:adr|decision|record)\s+(?:has\s+been|"
    r"was|is)\s+(?:revisited|overturned|reversed|retired|withdrawn|dropped|abandoned)\b",
    re.I,
)


def status_notes(paragraphs: Sequence[str], defs: dict[str, str]) -> list[Statement]:
    """The records named by a note under a record's status (a paragraph of its Status section
    after the status itself) that says the decision is being left for them ("May 2021 Update:
    we're looking to move on from this ADR decision … - see 021-Multi-cluster"). Each is a
    ``relates-to`` at ``status-note``; the importer makes it a replacement when the record it
    names is later (see ``adr.run``)."""
    out: list[Statement] = []
    for para in paragraphs:
        for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z*])", " ".join(para.split())):
            sentence = re.sub(r"^\*\*[^*]+\*\*:?\s*", "", sentence)  # "**May 2021 Update**"
            leaving = _LEAVING_RE.search(sentence)
            if not leaving or _HYPOTHETICAL_RE.search(sentence[: leaving.start()]):
                continue
            refs, _ = refs_in(sentence, defs)
            out += [
                Statement("relates-to", r, label, "status-note")
                for r, label in refs
                if _may_be_record(r)
            ]
    return out


# --------------------------------------------------------------------------- resolving


@dataclass(frozen=True)
class Target:
    path: Path | None  # the record it names (None: refused)
    why: str = ""  # why it was refused


class Resolver:
    """Finds the record a reference names, among the records being imported."""

    def __init__(self, paths: list[Path], numbers: dict[Path, int | None], root: Path) -> None:
        self.root = root.resolve()
        self.paths = {p.resolve() for p in paths}
        self.by_name: dict[str, list[Path]] = {}
        for p in self.paths:
            self.by_name.setdefault(p.name.lower(), []).append(p)
        self.numbers = {p.resolve(): n for p, n in numbers.items()}

    def resolve(self, ref: str, source: Path) -> Target:
        kind, _, value = ref.partition(":")
        source = source.resolve()
        if kind == "num":
            return self._by_number(int(value), source)
        if kind == "url":
            parsed = urlparse(value)
            name = unquote(parsed.path).rstrip("/").rsplit("/", 1)[-1]
            hits = self.by_name.get(name.lower(), [])
            if len(hits) == 1:
                return self._not_self(hits[0], source)
            if len(hits) > 1:
                same = [h for h in hits if h.parent == source.parent]
                if len(same) == 1:
                    return self._not_self(same[0], source)
                return Target(None, f"{value} names {name}, which more than one folder holds")
            return Target(None, f"{value} is outside the folder")
        target = unquote(value.split("#", 1)[0].split("?", 1)[0])
        if not target:
            return Target(None, "the link names no file")
        if target.startswith("/"):
            return Target(None, f"{target} is an absolute path; not matched by its number")
        path = (source.parent / target).resolve()
        if path in self.paths:
            return self._not_self(path, source)
        if not path.exists() and target.startswith("../"):
            # log4brains writes links between packages from the project's root: the same path
            # under a folder further up, inside what is being imported (a path, not a number)
            tail = re.sub(r"^(?:\.\./)+", "", target)
            for parent in source.parents:
                candidate = (parent / tail).resolve()
                if candidate in self.paths:
                    return self._not_self(candidate, source)
                if parent == self.root:
                    break
        if path.exists():
            return Target(None, f"{target} is not a record being imported")
        return Target(None, f"{target} is not there (never matched by its number instead)")

    def _by_number(self, number: int, source: Path) -> Target:
        hits = [p for p, n in self.numbers.items() if n == number]
        same = [p for p in hits if p.parent == source.parent]
        pool = same or hits
        if len(pool) == 1:
            return self._not_self(pool[0], source)
        if not pool:
            return Target(None, f"no record is numbered {number}")
        names = ", ".join(sorted(p.name for p in pool))
        return Target(None, f"{len(pool)} records are numbered {number} ({names})")

    @staticmethod
    def _not_self(path: Path, source: Path) -> Target:
        if path == source:
            return Target(None, "it links to the record itself")
        return Target(path)

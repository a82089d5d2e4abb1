"""Offline answers that answer: sentences quoted from the opened entries, chosen by what the
question asks and by how the entries are built, never generated.

What a question asks is read from its shape (:func:`question_kind`):

- ``why`` ("why …", "what was the reason …"): the decision, then the sentences of its body that
  carry a reason (a causal word, the question's own words, a section that argues: Decision,
  Context, Decision Drivers, Consequences, Pros and Cons);
- ``why-not`` ("why not X", "why didn't we X", "… instead of X"): the alternative the question
  names, with its ``rejected_because``, and the body's sentences about X; then the decision and
  its reasons;
- ``alternatives`` ("what did we consider", "which options"): every rejected alternative with its
  reason, then the decision;
- ``current`` ("still", "now", "currently"): the current decision first, what it replaced and
  when, and anything newer still proposed;
- ``when``: the date, where it came from when the record had none, and the entry;
- otherwise the decision and its reasons.

Every sentence is verbatim (markdown marks dropped) and ends with the id it comes from; the whole
answer stays within :data:`ANSWER_TOKENS`. Nothing here depends on words of one question set:
the cues are the question's grammar and the records' structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llm_wiki.adr.markdown import (
    HEADING_RE,
    LIST_ITEM_RE,
    paragraphs,
    plain_title,
    sentences,
    strip_md,
)
from llm_wiki.backends import estimate_tokens
from llm_wiki.entries import PLACEHOLDER_REASON, Entry

ANSWER_TOKENS = 320  # the answer's cap (about 1,200 characters)
REASON_SENTENCES = 4

_CAUSAL = re.compile(
    r"\b(?:because|since|so that|in order to|as a result|therefore|thus|hence|reasons?|due to|"
    r"allows?|enables?|means|need(?:s|ed)?|requires?|required|requirement|ensure|avoid|"
    r"benefits?|advantages?|drawbacks?|disadvantages?|risks?|cost|cheaper|easier|simpler|"
    r"faster|better|worse|limited|lack|immature|problems?|issues?|difficult|complex|"
    r"no longer|instead|rather than|fits?|choice|prefer(?:red)?|supports?|why)\b",
    re.I,
)
_ARGUING = re.compile(
    r"decision|outcome|drivers?|rationale|reasons?|context|problem|consequences?|pros|cons|"
    r"why|justification|motivation|considered|options?|alternatives?|summary|proposal",
    re.I,
)
_NEGATIVE = re.compile(
    r"\b(?:not|no|never|rejected|discarded|instead|however|but|problems?|drawbacks?|"
    r"downsides?|risks?|because|too|lacks?|without|cannot|can't|won't|wouldn't|prevents?)\b",
    re.I,
)
_WHY_NOT = re.compile(
    r"\bwhy\s+(?:not|no)\b|\bwhy\s+(?:didn'?t|did\s+not|don'?t|do\s+not|doesn'?t|does\s+not|"
    r"aren'?t|isn'?t|wasn'?t|weren'?t|won'?t|shouldn'?t|can'?t)\b|\binstead\s+of\b|"
    r"\brather\s+than\b|\bover\s+(?:using\s+)?(?=\w)|\bwhat\s+(?:was|is)\s+wrong\s+with\b|"
    r"\bagainst\b|\bruled?\s+out\b|\breject(?:ed)?\b",
    re.I,
)
_ALTERNATIVES = re.compile(
    r"\b(?:alternatives?|options?|considered|consider|other\s+(?:approaches|choices|tools|ways)|"
    r"what\s+else|candidates?|compared|evaluated|weighed)\b",
    re.I,
)
_CURRENT = re.compile(
    r"\b(?:still|now|currently|current|today|these\s+days|at\s+the\s+moment|any\s*more|"
    r"nowadays|latest|presently)\b",
    re.I,
)
_WHEN = re.compile(
    r"^\s*(?:when|since\s+when|on\s+what\s+date|what\s+date)\b|\bwhat\s+date\b", re.I
)
_WHY = re.compile(
    r"\bwhy\b|\breasons?\b|\brationale\b|\bhow\s+come\b|\bwhat\s+for\b|\bmotivat", re.I
)


_TURN = re.compile(
    r"(?i)^(?:however|but|this|that|it|these|unfortunately|the\s+problem|instead|sadly)\b"
)


def question_kind(text: str) -> str:
    """why | why-not | alternatives | current | when | what, from the question's wording."""
    if _WHEN.search(text):
        return "when"
    if _WHY_NOT.search(text):
        return "why-not"
    if _ALTERNATIVES.search(text) and not _WHY.search(text):
        return "alternatives"
    if _CURRENT.search(text):
        return "current"
    if _WHY.search(text):
        return "why"
    return "what"


@dataclass(frozen=True)
class Opened:
    """An entry the answer may quote, with what the catalog knows about it."""

    entry: Entry
    status: str  # effective: superseded when a later entry replaced it
    superseded_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Composed:
    text: str
    kind: str
    cited: tuple[str, ...]


def compose(question: str, terms: Sequence[str], opened: Sequence[Opened]) -> Composed:
    """The extractive answer to ``question`` from ``opened`` (best first; a current entry ahead
    of what it replaced), within :data:`ANSWER_TOKENS`."""
    kind = question_kind(question)
    if not opened:
        return Composed("", kind, ())
    stems = [_stem(t) for t in terms]
    lead = opened[0]
    lines: list[tuple[str, str]] = []  # (text, id)
    if kind == "when":
        lines += _when(lead, opened)
    elif kind == "current":
        lines += _current(opened, stems)
    elif kind == "alternatives":
        lines += _alternatives(lead, stems)
        lines += [_decision(lead)] + _reasons(lead, stems, 2)
    elif kind == "why-not":
        lines += _why_not(question, opened, stems)
        lines += [_decision(lead)] + _reasons(lead, stems, 2)
    else:
        lines += [_decision(lead)] + _reasons(lead, stems, REASON_SENTENCES)
        lines += _replaced_reasons(lead, opened, stems)
    return _fit(lines, kind)


def _replaced_reasons(
    lead: Opened, opened: Sequence[Opened], stems: Sequence[str]
) -> list[tuple[str, str]]:
    """The reasons of the decisions the lead one replaced (what still holds is often said
    there: "Still Postgres" refers back to why Postgres)."""
    out: list[tuple[str, str]] = []
    for other in opened[1:]:
        if other.entry.id in lead.entry.supersedes:
            o = other.entry
            out.append((f"It replaced the decision of {o.date}: {o.summary}", o.id))
            out += _reasons(other, stems, 2)
    return out


# --------------------------------------------------------------------------- the parts


def _decision(item: Opened) -> tuple[str, str]:
    e = item.entry
    state = "" if item.status == "active" else f", {item.status}"
    return f"{e.summary} ({e.date}{state})", e.id


def _when(lead: Opened, opened: Sequence[Opened]) -> list[tuple[str, str]]:
    e = lead.entry
    where = {
        "git": "the record has no date; this is the day of the commit that added it",
        "file-name": "the record has no date; this is the date in its file name",
        "mtime": "the record has no date; this is its file's modification day",
    }.get(e.date_source, "")
    out = [(f"{e.date}: {e.summary}" + (f" ({where})" if where else ""), e.id)]
    if lead.superseded_by:
        later = {o.entry.id: o.entry for o in opened}
        for new in lead.superseded_by:
            if new in later:
                out.append((f"Superseded on {later[new].date} by: {later[new].summary}", new))
    dated = _dated_sentences(e)
    out += [(s, e.id) for s in dated[:1]]
    return out


def _dated_sentences(e: Entry) -> list[str]:
    """Sentences of the body that give a date (e.g. "The actual decision was made earlier …")."""
    return [
        s
        for _, s in body_sentences(e.body)
        if re.search(r"\b(?:19|20)\d\d\b|\b(?:january|february|march|april|may|june|july|"
                     r"august|september|october|november|december)\b", s, re.I)
        and re.search(r"\b(?:decided|decision|made|agreed|accepted|since|earlier|later)\b", s, re.I)
    ]  # fmt: skip


def _current(opened: Sequence[Opened], stems: Sequence[str]) -> list[tuple[str, str]]:
    active = [o for o in opened if o.status not in ("superseded",)]
    current = active[0] if active else opened[0]
    e = current.entry
    out = [(f"Current decision: {e.summary} ({e.date}, {current.status})", e.id)]
    out += _reasons(current, stems, 2)
    by_id = {o.entry.id: o for o in opened}
    for old in e.supersedes:
        if old in by_id:
            was = by_id[old].entry
            out.append(
                (f"It replaced, on {e.date}, the decision of {was.date}: {was.summary}", was.id)
            )
    for item in opened:
        other = item.entry
        if (
            other.id != e.id
            and item.status == "proposed"
            and other.date >= e.date
            and other.domain == e.domain
        ):
            out.append((f"Newer and still proposed ({other.date}): {other.summary}", other.id))
    return out


def _alternatives(lead: Opened, stems: Sequence[str]) -> list[tuple[str, str]]:
    e = lead.entry
    out = []
    for alt in e.alternatives_considered:
        name = alt.id.replace("-", " ")
        reason = alt.rejected_because
        if reason == PLACEHOLDER_REASON:
            out.append((f"Considered and not chosen: {name} (the record gives no reason)", e.id))
        else:
            out.append((f"Considered and not chosen: {name}, {reason}", e.id))
    if not out:  # the options are in the prose only
        out += [
            (s, e.id)
            for s in _matching(e, stems, 3, lambda t, s: bool(_ALTERNATIVES.search(s)) or t > 0)
        ]
    return out


def _why_not(
    question: str, opened: Sequence[Opened], stems: Sequence[str]
) -> list[tuple[str, str]]:
    """The alternative the question names (best word overlap with its id and reason), with the
    record's reason, and the body's sentences about it."""
    named = _named_part(question)
    named_stems = [_stem(w) for w in re.findall(r"[A-Za-z0-9]+", named) if len(w) > 2] or list(
        stems
    )
    best: tuple[float, Opened | None, str, str] = (0.0, None, "", "")
    for item in opened:
        for alt in item.entry.alternatives_considered:
            words = {_stem(w) for w in re.findall(r"[a-z0-9]+", alt.id) if len(w) > 2}
            if not words:
                continue
            hits = sum(1 for s in named_stems if s in words)
            score = hits / max(1, min(len(words), len(named_stems)))
            if hits and score > best[0]:
                best = (score, item, alt.id, alt.rejected_because)
    out: list[tuple[str, str]] = []
    if best[1] is not None:
        item, alt_id, reason = best[1], best[2], best[3]
        name = alt_id.replace("-", " ")
        if reason == PLACEHOLDER_REASON:
            out.append((f"Not chosen: {name} (the record gives no reason)", item.entry.id))
        else:
            out.append((f"Not chosen: {name}, {reason}", item.entry.id))
    lead = best[1] or opened[0]
    key = [s for s in dict.fromkeys(stems) if s in named_stems] or named_stems
    about = _about(lead.entry, key)
    out += [(s, lead.entry.id) for s in about if not any(s in text for text, _ in out)]
    return out


def _named_part(question: str) -> str:
    """The words naming the rejected option: after "instead of", "rather than", "why not", …"""
    for pattern in (
        r"\binstead\s+of\s+(.+)$",
        r"\brather\s+than\s+(.+)$",
        r"\bover\s+(.+)$",
        r"\bwhy\s+(?:not|no)\s+(.+)$",
        r"\bwhy\s+(?:didn'?t|did\s+not|don'?t|do\s+not|doesn'?t|does\s+not|aren'?t|isn'?t|"
        r"wasn'?t|weren'?t|won'?t|shouldn'?t|can'?t)\s+(?:we|they|you|it|the\s+\w+)?\s*(.+)$",
    ):
        if m := re.search(pattern, question, re.I):
            return m.group(1)
    return question


def _about(e: Entry, named_stems: Sequence[str]) -> list[str]:
    """Sentences naming the option, each with the one after it when that one goes on about it
    (However / But / This / It …)."""
    found = body_sentences(e.body)
    scored = []
    for i, (section, s) in enumerate(found):
        hits = _hits(s, named_stems)
        if hits >= max(1, round(0.4 * len(set(named_stems)))):
            turn = i + 1 < len(found) and bool(_TURN.match(found[i + 1][1]))
            against = bool(_NEGATIVE.search(s)) or turn
            chosen = bool(re.search(r"(?i)^(?:decision|outcome|consequences?)", section))
            scored.append((hits + (1.5 if against else 0) - (1.0 if chosen else 0), i))
    scored.sort(key=lambda x: (-x[0], x[1]))
    keep: list[int] = []
    for _, i in scored[:2]:
        keep.append(i)
        if i + 1 >= len(found):
            continue
        label = len(found[i][1].split()) <= 6 or found[i][1].endswith(":")
        if label:  # an option's name as a list item: what follows is about it
            keep += [j for j in (i + 1, i + 2) if j < len(found) and found[j][0] == found[i][0]]
        elif _TURN.match(found[i + 1][1]):
            keep.append(i + 1)
    return [found[i][1] for i in sorted(dict.fromkeys(keep))]


def _reasons(item: Opened, stems: Sequence[str], n: int) -> list[tuple[str, str]]:
    e = item.entry
    return [(s, e.id) for s in _matching(e, stems, n, None)]


def _matching(e: Entry, stems: Sequence[str], n: int, keep: object) -> list[str]:
    """The ``n`` body sentences that best carry a reason about the question, in body order."""
    found3 = _sentences_with_intro(e.body)
    found = [(section, s) for section, s, _ in found3]
    summary = e.summary.lower()
    short = len(found) <= 3  # a body of a few sentences is the decision's own account
    scored = []
    for i, (section, s) in enumerate(found):
        intro = found3[i][2]
        if len(s) < 20 or len(s) > 500 or s.lower() in summary:
            continue
        if re.match(r"(?i)^(?:status|date|deciders?|decision-makers|technical story|tags)\b", s):
            continue
        hits = _hits(s, stems)
        if callable(keep) and not keep(hits, s):
            continue
        score = min(hits, 2) + (1.0 if _CAUSAL.search(s) else 0.0)
        score += 0.75 if _ARGUING.search(section) else 0.0
        score += 0.5 if re.search(r"(?i)\bchosen option\b.*\bbecause\b", s) else 0.0
        score += 1.0 if short else 0.0
        score += 2.5 if intro and _CAUSAL.search(intro) else 0.0  # a list of reasons
        score -= 0.002 * i  # earlier sentences state the decision
        if score > 0.9:
            scored.append((score, i))
    top = sorted(scored, key=lambda x: -x[0])[:n]
    return [found[i][1] for _, i in sorted(top, key=lambda x: x[1])]


def body_sentences(body: str) -> list[tuple[str, str]]:
    """(section title, sentence) of a body in order: prose and list items, no code, tables,
    frontmatter or the importer's change notes."""
    return [(section, s) for section, s, _ in _sentences_with_intro(body)]


def _sentences_with_intro(body: str) -> list[tuple[str, str, str]]:
    """(section, sentence, intro): a list item's intro is the prose line ending in ":" that
    opens its list ("there are some problems with them, and some benefits to rspec:")."""
    if body.startswith("---\n"):
        end = body.find("\n---", 4)
        if end != -1:
            body = body[end + 4 :]
    body = body.split("\n---\n\n## Changes since the earlier import", 1)[0]
    out: list[tuple[str, str, str]] = []
    section = ""
    chunk: list[str] = []

    def flush() -> None:
        intro = ""
        for para in paragraphs("\n".join(chunk)):
            item = bool(LIST_ITEM_RE.match(para))
            if not item:
                intro = para if para.rstrip().endswith(":") else ""
            for s in sentences(para):
                if s and not re.fullmatch(r"[\W\d_]+", s):
                    out.append((section, s, intro if item else ""))
        chunk.clear()

    for line in body.splitlines():
        m = HEADING_RE.match(line)
        if m and m.group(2):
            flush()
            section = plain_title(strip_md(m.group(2)))
            continue
        chunk.append(line)
    flush()
    return out


def _stem(word: str) -> str:
    return word.lower()[:5]


def _hits(sentence: str, stems: Sequence[str]) -> int:
    words = {w[:5] for w in re.findall(r"[a-z0-9]+", sentence.lower()) if len(w) > 1}
    return sum(1 for s in dict.fromkeys(stems) if s in words)


def _fit(lines: list[tuple[str, str]], kind: str) -> Composed:
    out: list[str] = []
    cited: list[str] = []
    seen: set[str] = set()
    used = 0
    for text, entry_id in lines:
        text = " ".join(text.split())
        if not text or text in seen:
            continue
        line = f"- {text.rstrip()} [{entry_id}]"
        cost = estimate_tokens(line + "\n")
        if used + cost > ANSWER_TOKENS:
            if out:
                continue
            line = line[: ANSWER_TOKENS * 3].rsplit(" ", 1)[0] + f" … [{entry_id}]"
            cost = ANSWER_TOKENS
        seen.add(text)
        out.append(line)
        used += cost
        if entry_id not in cited:
            cited.append(entry_id)
    return Composed("\n".join(out), kind, tuple(cited))

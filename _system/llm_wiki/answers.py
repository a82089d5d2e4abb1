"""Offline answers that answer: sentences quoted from the opened entries, chosen by what the
question asks and by how the records are built, never generated.

A record is read as a reader reads it (:func:`read_record`): each sentence keeps the headings
above it, so it has a *role* — the decision (Decision, Decision Outcome, Chosen option, Design,
Solution), a good consequence (Positive Consequences, Pros, Benefits, "Good, because …"), a bad
one (Negative Consequences, Cons, Drawbacks, "Bad, because …"), a plain consequence (Nygard's
Consequences), a driver, the context, the options — and, inside "Pros and Cons of the Options"
or an "Option …" heading, the *option* it is about. The option the decision names ("Chosen
option: X", "we decided to proceed with X") is the chosen one; the rest were rejected.

What a question asks is read from its shape (:func:`question_kind`):

- ``why``: the decision stated in full (a "Chosen option: X, because …" sentence with its
  because-clause or its list of reasons), then the reasons: the decision's own causal
  sentences, its good consequences and the chosen option's pros, the consequences, then the
  context's causal sentences; the question's words only break ties. A sentence gives a reason
  by saying so ("because", "so that", "in order to", "to avoid", "the main reason", "this
  allows", "due to", …), less surely by weighing ("mature", "burden", "lock-in", …), by being
  a point of a list the record opens as reasons ("… because:", "the downsides …:", "… as:"),
  whole when short, or by the context turning to the problem ("However, …"); the decision's
  other sentences that give no reason say what, not why, and wait;
- ``why-not`` ("why not X", "what was wrong with X"): the option the question names, with its
  cons and the sentences that argue against it; then the decision and its reasons;
- ``alternatives``: each rejected option with its first con (else the record's reason), then the
  decision;
- ``current``: the current decision first, what it replaced and when, anything newer proposed;
- ``past`` ("what did we do before", "originally"): the replaced decision, then what replaced it;
- ``when``: the date, where it came from when the record had none, and the entry;
- otherwise (what was decided, how): the decision stated in full and the decision's sentences.

Every sentence is verbatim (markdown marks dropped) and ends with the id it comes from; the whole
answer stays within :data:`ANSWER_TOKENS`. Nothing here depends on words of one question set:
the cues are the question's grammar and the records' structure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from llm_wiki.adr.markdown import (
    HEADING_RE,
    LIST_ITEM_RE,
    drop_comments,
    lines_outside_fences,
    paragraphs,
    plain_title,
    sentences,
    strip_md,
)
from llm_wiki.backends import estimate_tokens
from llm_wiki.entries import PLACEHOLDER_REASON, Entry
from llm_wiki.records import record


class _lazy:  # noqa: N801  (used like re.compile)
    """A pattern compiled on first use: an answer uses a few of this module's patterns, and
    compiling all of them was a tenth of an offline query's start-up."""

    __slots__ = ("_args", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._pattern: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._pattern is None:
            self._pattern = re.compile(*self._args)
        return getattr(self._pattern, name)


ANSWER_TOKENS = 320  # the answer's cap (about 1,200 characters)
REASON_SENTENCES = 4
REASON_LIST_MAX = 6  # a record's own list of reasons is quoted whole up to this many points

_CAUSAL = _lazy(
    r"\b(?:because|since|so that|in order to|as a result|therefore|thus|hence|reasons?|due to|"
    r"allows?|enables?|means|need(?:s|ed)?|requires?|required|requirement|ensure|avoid|"
    r"benefits?|advantages?|drawbacks?|disadvantages?|risks?|cost|cheaper|easier|simpler|"
    r"faster|better|worse|limited|lack|immature|problems?|issues?|difficult|complex|"
    r"no longer|instead|rather than|fits?|choice|prefer(?:red)?|supports?|why)\b",
    re.I,
)
# A sentence that gives a cause or a purpose in so many words (stronger than _CAUSAL's words).
_CAUSE = _lazy(
    r"\b(?:because|since\s+(?!when\b)|so\s+that|in\s+order\s+(?:to|for)|so\s+as\s+to|"
    r"to\s+(?:avoid|prevent|reduce|simplify|ensure|remove|keep|allow|enable|make\s+sure)|"
    r"due\s+to|owing\s+to|thanks\s+to|as\s+a\s+result|therefore|thus|hence|consequently|"
    r"the\s+(?:main\s+|primary\s+|key\s+|original\s+)?reasons?|motivat\w*|"
    r"(?:this|that|which|it)\s+(?:\w+\s+)?(?:allows?|enables?|means|gives|lets|helps|makes|"
    r"removes?|reduces?|avoids?|ensures?|simplifies|saves?)\b|advantages?|benefits?|"
    r"outweighs?|otherwise|best\s+practice|principles?|we\s+want(?:ed)?\s+to|"
    r"(?:is|are|was|were)\s+(?:no\s+longer\s+)?(?:needed|required)\s+(?:to|for))",
    re.I,
)
# Words that weigh an option (a reason, if a weaker sign of one than _CAUSE).
_WEIGHS = _lazy(
    r"\b(?:standard|mature|immature|popular|proven|widely|community|reliab\w*|stable|unstable|"
    r"compelling|attractive|flexib\w*|maintenance|burden|lock-?in|secur\w*|expensive|cheap\w*|"
    r"simple|simplif\w*|complexity|overhead|effort|experience[ds]?|painful|fragile|brittle|"
    r"anti-?pattern|confus\w*|slow(?:er)?|quick(?:er|ly)?|useful|useless|valuable|sufficient|"
    r"unnecessar\w*|consistent|inconsistent|duplicat\w*|trust\w*|safe(?:ly|r)?|risk\w*)\b",
    re.I,
)
_NEGATIVE = _lazy(
    r"\b(?:not|no|never|rejected|discarded|instead|however|but|problems?|drawbacks?|"
    r"downsides?|risks?|because|too|lacks?|without|cannot|can't|won't|wouldn't|prevents?|"
    r"hard|harder|difficult|complex|expensive|slow|limited|only|unsure|doubts?|concerns?|"
    r"worr(?:y|ied))\b",
    re.I,
)
_WHY_NOT_LEAD = (
    r"\bwhy\s+(?:not|no)\b|\bwhy\s+(?:didn'?t|did\s+not|don'?t|do\s+not|doesn'?t|does\s+not|"
    r"aren'?t|isn'?t|wasn'?t|weren'?t|won'?t|shouldn'?t|can'?t|couldn'?t|wouldn'?t)\b"
)
_WHY_NOT = _lazy(
    _WHY_NOT_LEAD + r"|\binstead\s+of\b|"
    r"\brather\s+than\b|\bover\s+(?:using\s+)?(?=\w)|\bwhat\s+(?:was|is)\s+wrong\s+with\b|"
    r"\bagainst\b|\bruled?\s+out\b|\breject(?:ed)?\b|\b(?:drawbacks?|downsides?|"
    r"disadvantages?|problems?|cons)\s+(?:of|with)\b|\bheld?\s+\w+\s+back\b",
    re.I,
)
_ALTERNATIVES = _lazy(
    r"\b(?:alternatives?|options?|considered|consider|other\s+(?:approaches|choices|tools|ways)|"
    r"what\s+else|candidates?|compared|evaluated|weighed|ways\s+of)\b",
    re.I,
)
_CURRENT = _lazy(
    r"\b(?:still|now|currently|current|today|these\s+days|at\s+the\s+moment|any\s*more|"
    r"nowadays|latest|presently|(?:what|which)\s+\w*\s*(?:replaced|superseded))\b",
    re.I,
)
_PAST = _lazy(
    r"\b(?:before|previously|previous|originally|original|used\s+to|earlier|initially|at\s+first|"
    r"formerly|former|prior|old|older|in\s+the\s+past|first\s+(?:decide|decided|choose|chose|"
    r"pick|picked|go|went|use|used|do|did|approach|decision|choice|plan|design|version)|"
    r"was\s+replaced|were\s+replaced|did\s+.+\s+(?:replace|supersede))\b",
    re.I,
)
_WHEN = _lazy(r"^\s*(?:when|since\s+when|on\s+what\s+date|what\s+date)\b|\bwhat\s+date\b", re.I)
_WHY = _lazy(r"\bwhy\b|\breasons?\b|\brationale\b|\bhow\s+come\b|\bwhat\s+for\b|\bmotivat", re.I)
_TURN = _lazy(
    r"(?i)^(?:however|but|this|that|it|these|unfortunately|the\s+problem|instead|sadly|"
    r"rejected|discarded|dropped|ruled\s+out|not\s+chosen)\b"
)

# Section roles, from a heading's words (checked innermost heading first, in this order).
_ROLE_HEADINGS = (
    ("status", _lazy(r"(?i)^(?:status|date|deciders?|decision[- ]makers|tags|links?|"
                          r"references?|see also|notes?)\b")),
    ("driver", _lazy(r"(?i)\b(?:drivers?|forces|criteria|requirements|goals|"
                          r"constraints|driving)\b")),
    ("options", _lazy(r"(?i)\bpros\s+and\s+cons\b|\bconsidered\b|\boptions?\b|"
                           r"\balternatives?\b")),
    ("con", _lazy(r"(?i)\b(?:negative|cons|drawbacks?|disadvantages?|downsides?|"
                       r"weakness(?:es)?|trade-?offs?|risks?|bad|issues|limitations)\b")),
    ("pro", _lazy(r"(?i)\b(?:positive|pros|benefits?|advantages?|strengths?|good)\b")),
    ("outcome", _lazy(r"(?i)^(?:the\s+)?(?:decision|decisions\b|outcome|chosen|resolution|"
                           r"solution|design|proposal|proposed|what.s\s+proposed|we\s+decided|"
                           r"agreed|conclusion|approach)|\bdecision\s+(?:outcome|summary)\b")),
    ("consequence", _lazy(r"(?i)\b(?:consequences?|implications?|results?|impact|"
                               r"outcomes?)\b")),
    ("context", _lazy(r"(?i)\b(?:context|problem|background|motivation|introduction|"
                           r"summary|overview|why|rationale|justification)\b")),
)  # fmt: skip
_LABEL_ITEM = _lazy(r"(?i)^(?:good|bad|pros?|cons?|neutral)\b")
_PRO_ITEM = _lazy(r"(?i)^(?:good|pro|\+)\b\s*[,:]?")
_CON_ITEM = _lazy(r"(?i)^(?:bad|con|-)\b\s*[,:]?")
_PRO_INTRO = _lazy(r"(?i)^(?:pros?|strengths?|advantages?|benefits?|good)\b")
_CON_INTRO = _lazy(r"(?i)^(?:cons?|weakness(?:es)?|disadvantages?|drawbacks?|bad)\b")
_CHOSEN = _lazy(
    r"(?i)\bchosen\s+option\s*:?\s*(.+?)(?:,?\s+(?:because|since|as)\b.*)?$|"
    r"\b(?:decided|decide|opted|choose|chose|pick|picked|select|selected)\s+(?:to\s+)?"
    r"(?:proceed\s+with\s+|pursue\s+|go\s+with\s+|use\s+|adopt\s+|for\s+)?(.+?)(?:[.,;]|$)"
)
_STOP = frozenset(
    "the a an of to for in on and or with we our us do did does was were is are be been it its "
    "this that these those what which why how when who not no use used using instead rather than "
    "over into from by at as about any some there their they them can could would should will "
    "plain own each just".split()
)


def question_kind(text: str) -> str:
    """why | why-not | alternatives | past | current | when | what, from the question's
    wording."""
    if _WHEN.search(text):
        return "when"
    if _WHY_NOT.search(text):
        return "why-not"
    if _ALTERNATIVES.search(text) and not _WHY.search(text):
        return "alternatives"
    if _WHY.search(text):
        return "why"
    if _PAST.search(text):
        return "past"
    if _CURRENT.search(text):
        return "current"
    return "what"


@record
class Opened:
    """An entry the answer may quote, with what the catalog knows about it."""

    entry: Entry
    status: str  # effective: superseded when a later entry replaced it
    superseded_by: tuple[str, ...] = ()


@record
class Composed:
    text: str
    kind: str
    cited: tuple[str, ...]


# --------------------------------------------------------------------------- reading a record


@record
class Sentence:
    """A sentence of a record with where it stands: the headings above it (outermost first),
    the line that opens its list (an item's intro, "Chosen option: X, because"), its role and
    the option it is about ("" when none)."""

    text: str
    path: tuple[str, ...]
    intro: str
    item: bool
    role: str
    option: str
    index: int
    lead: bool = True  # the first sentence of its paragraph or list item


@record
class Record:
    sentences: tuple[Sentence, ...]
    chosen: str  # the option the decision names ("" when it names none)

    def option_names(self) -> list[str]:
        return list(dict.fromkeys(s.option for s in self.sentences if s.option))


def read_record(body: str) -> Record:
    """The sentences of a body in order, each with its headings, intro, role and option: prose
    and list items, no code, tables, frontmatter or the importer's change notes."""
    if body.startswith("---\n"):
        end = body.find("\n---", 4)
        if end != -1:
            body = body[end + 4 :]
    body = body.split("\n---\n\n## Changes since the earlier import", 1)[0]
    raw: list[tuple[tuple[str, ...], str, str, bool, bool]] = []  # path, text, intro, item, lead
    stack: list[tuple[int, str]] = []
    chunk: list[str] = []
    seen_text = False

    def flush() -> None:
        path = tuple(t for _, t in stack)
        intro = ""
        text = "\n".join(chunk)
        paras = paragraphs(text)
        depths = iter(_item_depths(text, sum(1 for p in paras if LIST_ITEM_RE.match(p))))
        top = -1
        for para in paras:
            item = bool(LIST_ITEM_RE.match(para))
            depth = next(depths, 0) if item else -1
            top = depth if top < 0 or depth < top else top
            opens = para.rstrip().endswith((":", "because"))
            if not item:
                intro = para if opens else ""
            elif _LABEL_ITEM.match(LIST_ITEM_RE.sub("", para)):
                intro = ""  # "Good, …" / "Bad, …": a sibling of the last list's opener
            for n, s in enumerate(sentences(para)):
                if s and not re.fullmatch(r"[\W\d_]+", s):
                    # a sub-item goes on about its parent: not a point of its own
                    raw.append((path, s, intro if item else "", item, n == 0 and depth <= top))
            if item and opens:
                intro = LIST_ITEM_RE.sub("", para)  # an item opening a list ("Bad, because:")
        chunk.clear()

    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else HEADING_RE.match(line)
        if m and m.group(2):
            flush()
            level = len(m.group(1))
            title = plain_title(strip_md(m.group(2)))
            if not seen_text and not stack and level == 1:
                seen_text = True  # the record's title: not a section
                continue
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            continue
        if line.strip():
            seen_text = True
        chunk.append(line)
    flush()

    out = []
    for i, (path, text, intro, item, lead) in enumerate(raw):
        role, option = _role(path, text, intro, item)
        out.append(Sentence(text, path, intro, item, role, option, i, lead))
    chosen = ""
    for s in out:
        m = _CHOSEN.search(s.text)
        if m and (s.role == "outcome" or re.match(r"(?i)chosen\s+option", s.text)):
            chosen = _option_name((m.group(1) or m.group(2) or "").strip(" \"'*"))
            if chosen:
                break
    return Record(tuple(out), chosen)


def _item_depths(text: str, count: int) -> list[int]:
    """The indentation of each list item of ``text``, in order (as :func:`paragraphs` finds
    them); all 0 when the two disagree on how many there are."""
    depths = [
        len(line) - len(line.lstrip())
        for line, fenced in lines_outside_fences(drop_comments(text))
        if not fenced and LIST_ITEM_RE.match(re.sub(r"^>\s?", "", line.strip()))
    ]
    return depths if len(depths) == count else [0] * count


def _role(path: tuple[str, ...], text: str, intro: str, item: bool) -> tuple[str, str]:
    role = "other"
    option = ""
    roles = [_heading_role(t) for t in path]
    for i in range(len(path) - 1, -1, -1):
        if roles[i] != "other":
            role = roles[i]
            break
    # the option a sentence is about: a heading under an options heading, or "Option …"
    for i, title in enumerate(path):
        if re.match(r"(?i)^option\b", title):
            option = _option_name(title)
        elif i > 0 and roles[i - 1] == "options" and roles[i] in ("other", "outcome"):
            option = title
    if option and role in ("options", "outcome", "other"):
        role = "option"
    if item and (_PRO_ITEM.match(text) or _PRO_INTRO.match(intro)):
        role = "pro"
    elif item and (re.match(r"(?i)^(?:bad|con)\b", text) or _CON_INTRO.match(intro)):
        role = "con"
    return role, option


def _option_name(text: str) -> str:
    """ "Option 2: listeners array" and "Option 2 (listeners array)" → "listeners array"; a bare
    "Option 2" stays as it is."""
    name = re.sub(r"(?i)^option\s*\w{0,3}\s*[:.)-]?\s*", "", text).strip()
    if m := re.fullmatch(r"\((.+)\)", name):
        name = m.group(1)
    return name.strip(" \"'*") or text


def _heading_role(title: str) -> str:
    for role, pattern in _ROLE_HEADINGS:
        if pattern.search(title):
            return role
    return "other"


def body_sentences(body: str) -> list[tuple[str, str]]:
    """(innermost section title, sentence) of a body in order."""
    return [(s.path[-1] if s.path else "", s.text) for s in read_record(body).sentences]


# --------------------------------------------------------------------------- composing


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
    elif kind == "past":
        lines += _past(opened, stems)
    elif kind == "alternatives":
        named = _named_option(question, opened)
        if named is not None:
            lines += _against(named, stems)
        lines += _alternatives(lead, stems)
        lines += _decision(lead) + _reasons(lead, stems, 1)
    elif kind == "why-not":
        named = _named_option(question, opened)
        lines += (
            _against(named, stems) if named is not None else _why_not_prose(question, opened, stems)
        )
        lines += _decision(lead) + _reasons(lead, stems, 2)
    elif kind == "why":
        lines += _decision(lead)
        named = _named_option(question, opened, 0.5 if _has_against(question) else 1.2)
        if named is not None:
            lines += _against(named, stems)[1:3]
        lines += _reasons(lead, stems, REASON_SENTENCES)
        lines += _replaced_reasons(lead, opened, stems)
    else:
        lines += _decision(lead) + _outcome(lead, stems, 3) + _reasons(lead, stems, 2)
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


def _decision(item: Opened) -> list[tuple[str, str]]:
    """The entry's summary with its date, then the decision as the record states it when the
    summary cut it short (a because-clause, the list of reasons after "because:")."""
    e = item.entry
    state = "" if item.status == "active" else f", {item.status}"
    out = [(f"{e.summary} ({e.date}{state})", e.id)]
    out += [(s, e.id) for s in _statement(e)]
    return out


def _statement(e: Entry) -> list[str]:
    """The decision's first sentence, in full, unless the summary already holds all of it; with
    the first two items of a list it opens ("Chosen option: X, because" + reasons)."""
    record = read_record(e.body)
    found = list(record.sentences)
    first = next((s for s in found if s.role == "outcome" and len(s.text) > 12), None)
    if first is None:
        return []
    summary = _norm(e.summary)
    out = []
    if _norm(first.text) not in summary:
        out.append(first.text)
    if first.text.rstrip().endswith((":", "because")) or re.search(
        r"(?i)\bbecause\s*:?$", first.text
    ):
        out += [s.text for s in found[first.index + 1 : first.index + 3] if s.item]
    return out


def _outcome(item: Opened, stems: Sequence[str], n: int) -> list[tuple[str, str]]:
    """The decision's own sentences (what was decided, how), best about the question first."""
    e = item.entry
    record = read_record(e.body)
    said = set(_statement(e))
    scored = []
    for s in record.sentences:
        if s.role != "outcome" or s.text in said or len(s.text) < 20 or s.text.endswith("?"):
            continue
        score = 1.0 + 0.4 * min(_hits(s.text, stems), 3) - 0.01 * s.index
        score -= 0.5 if len(s.text) > 300 else 0.0
        scored.append((score, s))
    top = sorted(scored, key=lambda x: -x[0])[:n]
    return [(s.text, e.id) for _, s in sorted(top, key=lambda x: x[1].index)]


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
    # what holds now: the best match not replaced, rejected or deprecated (a rejected record is
    # not what we do now)
    gone = ("superseded", "rejected", "deprecated")
    best = next((o for o in opened if o.status not in gone), opened[0])
    held = next(
        (o for o in opened if o.entry.type == "decision" and o.status not in (*gone, "proposed")),
        None,
    )
    # "Current decision" only for a decision in force. The best match leads when it is a
    # decision (a proposal told as one) or an incident (what the question is about); a
    # reflection or a synthesis ranked first gives way to the best decision in force opened
    current = best if best.entry.type in ("decision", "incident") or held is None else held
    e = current.entry
    out = [(f"{_holding_label(current)}: {e.summary} ({e.date}, {current.status})", e.id)]
    out += [(s, e.id) for s in _statement(e)]
    by_id = {o.entry.id: o for o in opened}
    told: set[str] = set()
    for old in e.supersedes:
        if old in by_id:
            was = by_id[old].entry
            if was.status in ("rejected", "deprecated"):  # replaced, but never (or no longer) held
                out.append((f"{was.status.capitalize()} ({was.date}): {was.summary}", was.id))
                told.add(was.id)
                continue
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
    # then what else it says and why: after what it replaced and what is proposed, which the
    # answer's cap must keep
    out += _outcome(current, stems, 2) + _reasons(current, stems, 1)
    # a rejected or deprecated record among the first two, or replaced by one of them (written
    # so: "Rejected (see 019)" makes 019 its replacement, opened right before it)
    for item in opened[:2]:
        replaced = [by_id[i] for i in item.entry.supersedes if i in by_id]
        for one in (item, *replaced):
            other = one.entry
            status = one.status if one.status != "superseded" else other.status
            if other.id not in (e.id, *told) and status in ("rejected", "deprecated"):
                told.add(other.id)
                out.append((f"{status.capitalize()} ({other.date}): {other.summary}", other.id))
    return out


def _holding_label(item: Opened) -> str:
    """What the answer to a question about now calls the entry it leads with."""
    kind = item.entry.type
    if kind == "decision":
        return "Proposed, not yet decided" if item.status == "proposed" else "Current decision"
    if kind == "incident":
        return "Incident"
    return f"No decision in force among the entries opened; the closest {kind}"


def _past(opened: Sequence[Opened], stems: Sequence[str]) -> list[tuple[str, str]]:
    """The decision that was replaced (the one the best current match replaced, else the best
    superseded match), then what replaced it; with no replaced one among the opened, the
    best match as for "what was decided"."""
    by_id = {o.entry.id: o for o in opened}
    old: Opened | None = None
    for item in opened:
        if item.status != "superseded":
            old = next((by_id[i] for i in item.entry.supersedes if i in by_id), None)
            break  # the best current match
    if old is None:
        old = next((o for o in opened if o.status == "superseded" or o.superseded_by), None)
    if old is None:
        lead = opened[0]
        return _decision(lead) + _outcome(lead, stems, 2) + _reasons(lead, stems, 1)
    out = _decision(old) + _outcome(old, stems, 2) + _reasons(old, stems, 1)
    for new in old.superseded_by:
        if new in by_id:
            n = by_id[new].entry
            out.insert(1, (f"Replaced on {n.date} by: {n.summary}", n.id))
    return out


def _alternatives(lead: Opened, stems: Sequence[str]) -> list[tuple[str, str]]:
    """Each rejected option with its first con from the record's own options section, else
    with the reason the import kept."""
    e = lead.entry
    record = read_record(e.body)
    out = []
    for name in record.option_names():
        if _same_option(name, record.chosen):
            continue
        cons = [s for s in record.sentences if s.option == name and s.role == "con"]
        if cons:
            out.append((f"Considered and not chosen: {name}: {cons[0].text}", e.id))
    for alt in e.alternatives_considered:
        name = alt.id.replace("-", " ")
        if any(_same_option(name, n) for n in record.option_names() if n):
            continue
        reason = alt.rejected_because
        if reason == PLACEHOLDER_REASON:
            out.append((f"Considered and not chosen: {name} (the record gives no reason)", e.id))
        else:
            out.append((f"Considered and not chosen: {name}, {reason}", e.id))
    if not out:  # the options are in the prose only
        scored = [
            (_hits(s.text, stems) + (1.0 if s.role in ("options", "option", "con") else 0.0), s)
            for s in record.sentences
            if len(s.text) >= 20 and s.role not in ("status",)
        ]
        top = sorted((x for x in scored if x[0] > 0.9), key=lambda x: -x[0])[:3]
        out += [(s.text, e.id) for _, s in sorted(top, key=lambda x: x[1].index)]
    return out


@record
class _Named:
    item: Opened
    name: str  # the option's name as the record (or the import) gives it
    words: frozenset[str]
    reason: str = ""  # the import's rejected_because, when the option came from there


def _named_part(question: str) -> str:
    """The words naming the rejected option: "why not X (instead of Y)", "X rather than Y" →
    Y, "what was wrong with X", "drawbacks of X", …"""
    if m := re.search(
        "(?:" + _WHY_NOT_LEAD + r")\s*(?:we|they|you|it|the\s+\w+)?\s*(.+)$", question, re.I
    ):
        return re.split(r"(?i)\b(?:instead\s+of|rather\s+than)\b", m.group(1))[0]
    for pattern in (
        r"\binstead\s+of\s+(.+)$",
        r"\brather\s+than\s+(.+)$",
        r"\bover\s+(.+)$",
        r"\bwrong\s+with\s+(.+)$",
        r"\b(?:drawbacks?|downsides?|disadvantages?|problems?|cons)\s+(?:of|with)\s+(.+)$",
        r"\bfrom\s+(?:staying\s+on|using|keeping)\s+(.+)$",
        r"\bwhy\s+not\s+(.+)$",
    ):
        if m := re.search(pattern, question, re.I):
            return m.group(1)
    return question


def _has_against(question: str) -> bool:
    return bool(re.search(r"(?i)\b(?:instead\s+of|rather\s+than|over)\b", question))


def _words(text: str) -> frozenset[str]:
    return frozenset(
        w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP and len(w) > 1
    )


def _overlap(a: frozenset[str], b: frozenset[str]) -> int:
    """How many words of ``a`` are in ``b``, a word matching another that shares all but its
    last two letters with it ("proxy" ~ "proxies", "warn" ~ "warning", not "kubelogin" ~
    "kubehook")."""
    return sum(1 for x in a if any(_alike(x, y) for y in b))


def _alike(x: str, y: str) -> bool:
    if x == y:
        return True
    n = 0
    for cx, cy in zip(x, y, strict=False):  # the common prefix
        if cx != cy:
            break
        n += 1
    return n >= max(4, min(len(x), len(y)) - 2)


def _named_option(question: str, opened: Sequence[Opened], threshold: float = 0.5) -> _Named | None:
    """The option the question names: the best word overlap of the named part of the question
    with an option's name (a heading in the record's options, or an alternative the import
    kept), never the chosen one. Words of the record's title name its topic, not an option
    ("default directory" in "Use JNA to Determine Default Directory"): an option matched by a
    word of its own goes first ("AppDirs" before "Swing's FileChooser to Determine Default
    Directory" for "why not AppDirs to pick the default directory")."""
    asked = _words(_named_part(question))
    if not asked:
        return None
    best: tuple[float, float, _Named | None] = (0.0, 0.0, None)
    for rank, item in enumerate(opened[:3]):
        record = read_record(item.entry.body)
        topic = {w.rstrip("s") for w in _words(item.entry.summary.split(":", 1)[0])}
        names = [(n, "") for n in record.option_names()]
        names += [
            (a.id.replace("-", " "), a.rejected_because) for a in item.entry.alternatives_considered
        ]
        for name, reason in names:
            if record.chosen and _same_option(name, record.chosen):
                continue
            words = _words(name)
            hits = _overlap(words, asked)
            if not hits:
                continue
            score = hits / len(words) + hits / len(asked) - 0.05 * rank
            own = frozenset(w for w in words if w.rstrip("s") not in topic)
            own_hits = _overlap(own, asked)
            distinct = own_hits / len(own) - 0.05 * rank if own_hits else 0.0
            if score >= threshold and (distinct, score) > best[:2]:
                best = (distinct, score, _Named(item, name, words, reason))
    return best[2]


def _against(named: _Named, stems: Sequence[str]) -> list[tuple[str, str]]:
    """What the record holds against the named option: its cons (or, when its section marks
    none, its section's own lines), the sentences about it that argue ("rejected because",
    "but …"), an item naming it with the items under it; else the reason the import kept."""
    e = named.item.entry
    record = read_record(e.body)
    found = list(record.sentences)
    mine = [s for s in found if s.option and _same_option(s.option, named.name)]
    cons = [s for s in mine if s.role == "con"]
    if not cons and not any(s.role == "pro" for s in mine):  # a section of bare lines
        cons = sorted(
            (s for s in mine if not re.fullmatch(r"<?https?://\S+>?", s.text)),
            key=lambda s: (not _NEGATIVE.search(s.text), s.index),
        )
    need = max(1, (len(named.words) + 1) // 2)
    scored = [(5.0 - 0.01 * i, s) for i, s in enumerate(cons[:3])]
    names = record.option_names()
    for s in found:
        if s in mine or _overlap(named.words, _words(s.text)) < need:
            continue
        if any(_same_option(s.text, n) for n in names):
            continue  # an option's name alone says nothing against it
        if record.chosen and _norm_name(record.chosen) in _norm_name(s.text):
            continue  # about the chosen option: the decision, quoted after
        nxt = found[s.index + 1] if s.index + 1 < len(found) else None
        names_it = s.item and (len(s.text.split()) <= 8 or s.text.endswith(":"))
        if not (_NEGATIVE.search(s.text) or names_it or (nxt and _TURN.match(nxt.text))):
            continue
        score = 1.5 + _overlap(named.words, _words(s.text)) * 0.3
        score += 0.8 if re.search(r"(?i)\b(?:rejected|not\s+chosen|but|however)\b", s.text) else 0
        score -= 0.8 if s.role == "pro" or s.role == "outcome" else 0
        scored.append((score, s))
    keep: list[Sentence] = []
    for _, s in sorted(scored, key=lambda x: (-x[0], x[1].index))[:3]:
        keep.append(s)
        if s in cons:
            continue
        keep += _follow(s, found)
    label = f"Not chosen: {named.name}"
    reason = named.reason
    if not reason:
        reason = next(
            (a.rejected_because for a in e.alternatives_considered
             if _same_option(a.id.replace("-", " "), named.name)),
            "",
        )  # fmt: skip
    out: list[tuple[str, str]] = []
    if reason and reason != PLACEHOLDER_REASON and not keep:
        out.append((f"{label}, {reason}", e.id))
    elif not keep:
        out.append((f"{label} (the record gives no reason)", e.id))
    else:
        out.append((label, e.id))
    out += [(s.text, e.id) for s in dict.fromkeys(keep)]  # the strongest first
    return out


def _why_not_prose(
    question: str, opened: Sequence[Opened], stems: Sequence[str]
) -> list[tuple[str, str]]:
    """No option of the record matches the question's: the lead's sentences naming the
    question's words that argue against something."""
    e = opened[0].entry
    asked = _words(_named_part(question))
    # the words naming what was not chosen, not the record's topic ("Docker Swarm", not
    # "orchestrating containers" in a record titled "Container Orchestration")
    topic = _words(e.summary.split(":", 1)[0])
    named = frozenset(w for w in asked if not any(_alike(w, t) for t in topic)) or asked
    found = list(read_record(e.body).sentences)
    scored = []
    for s in found:
        words = _words(s.text)
        hits = _overlap(named, words) + 0.5 * _overlap(asked - named, words)
        # an item that is a name the question uses ("- kubelogin"), with what is listed under it
        label = s.item and 0 < len(words) <= 4 and _overlap(words, asked) == len(words)
        if label and _follow(s, found):
            scored.append((4.0 + hits, s))
        elif _overlap(named, words) >= max(1, round(0.4 * len(named))):
            nxt = found[s.index + 1].text if s.index + 1 < len(found) else ""
            against = bool(_NEGATIVE.search(s.text)) or bool(_TURN.match(nxt))
            score = hits + (1.5 if against else 0) - (1.0 if s.role == "outcome" else 0)
            score += 1.0 if _REJECTED.search(s.text + " " + nxt[:40]) else 0.0
            score += 1.0 if _CONSIDERED.search(s.text) else 0.0
            score += 0.5 if s.role in ("options", "option", "con") else 0.0
            scored.append((score, s))
    keep: list[Sentence] = []
    for _, s in sorted(scored, key=lambda x: (-x[0], x[1].index))[:2]:
        keep.append(s)
        keep += _follow(s, found)
    lines = [(s.text, e.id) for s in sorted(dict.fromkeys(keep), key=lambda s: s.index)]
    # an alternative the entry was written with (``--alt rabbitmq: we would run and patch the
    # brokers ourselves``) whose name and reason say what the question asks about
    need = max(1, round(0.4 * len(named)))
    alts = [
        (_overlap(named, words) + 0.5 * _overlap(asked - named, words), n, a)
        for n, a in enumerate(e.alternatives_considered)
        if a.rejected_because and a.rejected_because.lower() not in e.body.lower()
        for words in [_words(f"{a.id.replace('-', ' ')} {a.rejected_because}")]
        if _overlap(named, words) >= need
    ]
    if alts:
        _, _, a = max(alts, key=lambda t: (t[0], -t[1]))
        lines.insert(0, (f"Not chosen: {a.id}, {a.rejected_because}", e.id))
    return lines


def _follow(s: Sentence, found: Sequence[Sentence]) -> list[Sentence]:
    """What goes on about the thing ``s`` names: the items under it when it is a short item (an
    option's name; items longer than a sibling option's name), the items of a list it opens
    ("… but:"), or the next sentence when that one turns on it (However / But / This …)."""
    after = [t for t in found[s.index + 1 : s.index + 3] if t.path == s.path]
    if s.item and (len(s.text.split()) <= 4 or s.text.endswith(":")):
        return [t for t in after if t.item and len(t.text.split()) >= 6]
    near = [t for t in found[s.index + 1 : s.index + 7] if t.path == s.path]
    opened = [t for t in near if t.item and t.intro and s.text in t.intro][:2]
    if opened:
        return opened
    if after and _TURN.match(after[0].text):
        return after[:1]
    return []


_CONSIDERED = _lazy(
    r"(?i)\b(?:alternatives?|considered|looked\s+(?:at|into)|evaluated|also\s+tried)\b"
)
_REJECTED = _lazy(r"(?i)\b(?:rejected|not\s+chosen|ruled\s+out|discarded|dropped)\b")

# The weight of a sentence's role as a reason for the decision.
_REASON_ROLE = {
    "outcome": 2.0,
    "pro": 2.5,
    "consequence": 2.2,
    "driver": 1.2,
    "context": 1.0,
    "other": 0.8,
    "option": 0.4,
    "options": 0.4,
    "con": 0.5,
    "status": -9.0,
}


# The trouble a record's context reports (what the decision set out to fix).
_PROBLEM = _lazy(
    r"(?i)\b(?:(?:experienced|had|have|ran\s+into|hit|encountered|caused?|causing)\s+(?:\w+\s+)?"
    r"(?:problems?|issues?|incidents?|outages?|downtime|failures?|pain)|unstable|instability|"
    r"breakages?|incidents|outages?|downtime|painful|error-prone|unreliable|"
    r"does\s+not\s+(?:support|scale|work)|doesn't\s+(?:support|scale|work)|no\s+way\s+to)\b"
)
_PROBLEM_TURN = _lazy(
    r"(?i)^(?:however|but|unfortunately|sadly|in\s+practice|the\s+(?:main\s+)?(?:problem|issue|"
    r"difficulty|challenge|downside|drawback)\b|this\s+(?:is|was|causes|caused|leads|led)\s+"
    r"(?:\w+\s+)?(?:problem|issue|confusion|anti-?pattern|difficult|hard|slow|expensive))"
)
_REASON_INTRO = _lazy(
    r"(?i)\b(?:because|reasons?|since|why|benefits?|advantages?|downsides?|drawbacks?|"
    r"disadvantages?|shortcomings?|limitations?|concerns?|(?:problems?|issues?)\s+(?:with|of)|"
    r"anti-?pattern)\b|\bas\s*:\s*$"
)


def reason_scores(e: Entry, stems: Sequence[str] = ()) -> list[tuple[float, Sentence]]:
    """Each sentence of ``e`` that may carry a reason, with how strongly (see :func:`_reasons`)."""
    record = read_record(e.body)
    found = list(record.sentences)
    summary = _norm(e.summary)
    said = {_norm(s) for s in _statement(e)}
    short = len(found) <= 3  # a body of a few sentences is the decision's own account
    scored: list[tuple[float, Sentence]] = []
    for s in found:
        text = s.text
        if len(text) < 20 or _norm(text) in summary or _norm(text) in said:
            continue
        if re.match(r"(?i)^(?:status|date|deciders?|decision-makers|technical story|tags)\b", text):
            continue
        role = s.role
        score = _REASON_ROLE.get(role, 0.8)
        if s.option:
            chosen = bool(record.chosen) and _same_option(s.option, record.chosen)
            if role == "pro":
                score = 2.5 if chosen else 0.3
            elif role == "con":
                score = 0.4 if chosen else 1.0  # against a rejected option: a reason too
        listed = bool(s.intro) and bool(_REASON_INTRO.search(s.intro))
        if listed and s.lead:
            score += 2.0  # an item of a list of reasons: the list says it is one, cue or none
        elif role in ("context", "driver") and _PROBLEM.search(text):
            score += 1.5  # the trouble that moved the decision
        elif _CAUSE.search(text):
            score += 1.0
        elif _CAUSAL.search(text) or _WEIGHS.search(text):
            score += 0.5
        elif role == "outcome" and not s.option:
            score -= 0.8  # what was decided, not why: the statement above says it already
        if listed and not s.lead:
            score += 0.5  # what an item of a list of reasons goes on to say
        if role in ("context", "driver") and _PROBLEM_TURN.match(text):
            score += 0.7  # the context turning to the problem the decision answers
        score += 0.35 * min(_hits(text, stems), 3)
        score += 1.0 if short else 0.0
        score -= 1.5 if text.endswith("?") else 0.0
        score -= 0.5 if len(text) > 320 else 0.0
        score -= 0.002 * s.index
        if score > 0.9:
            scored.append((score, s))
    return scored


def _reasons(item: Opened, stems: Sequence[str], n: int) -> list[tuple[str, str]]:
    """The ``n`` sentences that best carry the decision's reasons, in body order: by the role
    of their section first (the decision's causal sentences and its list of reasons, its good
    consequences and the chosen option's pros, the consequences, then drivers and context),
    the question's words breaking ties; no two from one section while others remain."""
    e = item.entry
    scored = reason_scores(e, stems)
    picked: list[Sentence] = []
    while scored and len(picked) < n:
        scored.sort(key=lambda x: -x[0])
        _, s = scored.pop(0)
        picked.append(s)
        if len(picked) == 1 and n > 1 and s.lead and s.intro and _REASON_INTRO.search(s.intro):
            # the best is a point of the record's own list of reasons: the whole list, when short
            points = [o for _, o in scored if o.lead and o.intro == s.intro and o.path == s.path]
            n = max(n, min(len(points) + 1, REASON_LIST_MAX))
        listed = bool(s.intro) and bool(_REASON_INTRO.search(s.intro))
        scored = [  # one section at a time (a list of reasons aside)
            (score - 0.75, o)
            if o.path == s.path and not (listed and o.intro == s.intro)
            else (score, o)
            for score, o in scored
        ]
    return [(s.text, e.id) for s in sorted(picked, key=lambda s: s.index)]


def _same_option(a: str, b: str) -> bool:
    """Whether two option names name the same option ("Doobie + Quill" ~ "Doobie+Quill")."""
    if not a or not b:
        return False
    na, nb = _norm_name(a), _norm_name(b)
    if na == nb:
        return True
    wa, wb = _words(a), _words(b)
    return bool(wa and wb) and len(wa & wb) / len(wa | wb) >= 0.75


def _norm_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[*_`\"“”]", "", text.rstrip("…").rstrip(".")).lower().split())


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

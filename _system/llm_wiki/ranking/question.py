"""A question as the ranker reads it: its key terms, and what it asks about time.

**Key terms** are the question's words minus stop words and words about deciding ("decide",
"choose", "options", ...); FTS5's porter tokenizer stems both sides. The ranker adds each pair
of adjacent key terms written as one word where entries hold it ("work queue" ->
"workqueue", :meth:`Ranker._with_compounds`).

**Intent** (:attr:`Question.intent`) decides how supersession and dates order the results:

- ``present``: the question asks about the state of things now: "still", "now",
  "currently", "any more", "these days", "nowadays", "at the moment", "at this point", "in
  effect", "in place", "no longer", "what do we use for…", "which X do we run", "the X we
  use", "what replaced…", "has that changed", "going forward", "our current X", "the latest
  on…". The replacing decision comes first. "Current" alone is not enough ("why did we replace
  it with the current one?" asks about the past), and a "why do we use…?" asks for a reason,
  not for what holds now, unless it says "still", "now"...
- ``past``: the question asks about an earlier design: "originally", "at first", "back when",
  "back in", "initially", "used to", "early on", "in the first place", "the first X",
  "earlier", "the old/previous X", "why did we first/once…", "before we moved to…", "before
  GitHub Actions", "prior to Karpenter". The replaced decision comes first.
- ``""``: neither; relevance alone orders the results (a replaced decision still brings its
  replacement into what is opened, right after it).

**Dates** (:attr:`Question.period`): a year or a month named in the question ("in 2021",
"March 2022", "2021-03") restricts nothing but puts the entries of that period first among
the leading candidates. "The latest…", "the most recent…" decision asks for the newest
(intent ``present``); "when did we first…" for the oldest (``past``).
"""

from __future__ import annotations

import os
import re

from llm_wiki.records import record

WORD_RE = re.compile(r"[^\W_]+")  # as FTS5's unicode61 tokenizer splits


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = _words(
    """a an the and or of to in on for with without from by at as is are was were be been
    being do does did done doing have has had having it its it's this that these those there
    here we our ours us you your yours they them their he she his her i me my what which who
    whom whose why how when where whether if then than so such not no nor but also just only
    very can could should would will shall may might must about into over under again further
    once any all each few more most other some own same too s t don didn doesn isn aren wasn
    weren haven hasn hadn won wouldn shouldn couldn ve re ll d m get got gets make made
    one ones something anything thing things way ways lot"""
)
# How people ask about decisions, not what the decision is about.
FRAME = _words(
    """decide decided decides deciding decision decisions choose chose chosen choosing choice
    pick picked picking agree agreed agreeing settle settled settling go went going
    option options alternative alternatives consider considered considering weigh weighed
    look looked looking instead rather reason reasons why use uses used using"""
)  # ("use" in every form stems to "us" under the porter tokenizer: it matched the pronoun)
# Words that only say when: they are intent, not subject.
TIME_WORDS = _words(
    """now currently nowadays today still anymore presently originally initially previously
    formerly"""
)

_PRESENT_RE = re.compile(
    r"\b(?:still(?!\s+(?:image|images|photo|photos|life)\b)|now|nowadays|currently|presently|"
    r"these\s+days|any\s?more|any\s+longer|no\s+longer|at\s+the\s+moment|at\s+present|today|"
    r"right\s+now|at\s+this\s+point|as\s+(?:things|it)\s+stands?|going\s+forward|in\s+force|"
    r"in\s+effect|in\s+place|(?:has|have)\s+(?:that|this|it|the\s+\w+|our\s+\w+)(?:\s+\w+)?\s+"
    r"changed|changed\s+since|what\s+(?:has\s+)?(?:replaced|superseded)|"
    r"(?:our|the)\s+(?:current|present)\s+(?!one\b|ones\b)[a-z]\w*|"
    r"what\s+(?:do|does|are|is)\s+(?:we|our\s+\w+|the\s+\w+)\s+(?:use|using|run|running)\b|"
    r"what\s+do\s+we\s+do\s+(?:for|about)\b|"
    r"(?:which|what)\s+\w+(?:\s+\w+)?\s+(?:do|does|are|is)\s+(?:we|teams?|the\s+team)\s+"
    r"(?:use|using|run|running)\b|the\s+\w+\s+we\s+(?:use|run)\b|"
    r"the\s+(?:latest|most\s+recent|newest)\s+(?:on|about|decision|word|thinking|plan|"
    r"position|policy|approach|choice|change|record|adr)\b)",
    re.I,
)
_PAST_RE = re.compile(
    r"\b(?:originally|original|initially|at\s+first|back\s+when|back\s+then|back\s+in|"
    r"used\s+to|in\s+the\s+first\s+place|from\s+the\s+start|at\s+the\s+time|previously|"
    r"formerly|early\s+on|in\s+the\s+early\s+days|(?:did|do|had|have)\s+we\s+(?:first|once)|"
    r"when\s+we\s+first|the\s+first\b|earlier|(?:the|our)\s+(?:old|previous|former)\b|"
    r"(?:before|prior\s+to)\s+(?:we|it|they|that|the\s+move|the\s+switch|the\s+migration)\b|"
    r"before\s+(?:we|it|they|that)\s+(?:moved|switched|changed|migrated|replaced|turned))\b",
    re.I,
)
# "before GitHub Actions", "prior to Karpenter": a named thing that came later.
_BEFORE_NAME_RE = re.compile(r"\b(?:[Bb]efore|[Pp]rior\s+to)\s+(?:the\s+)?[A-Z]\w*")
# "Why do we use X?" asks for the reason behind a choice, not what holds now.
_WHY_USE_RE = re.compile(
    r"^\W*(?:why|how\s+come)\b(?!.*\b(?:still|now|currently|these\s+days|any\s?more|nowadays)\b)",
    re.I,
)
_WHEN_RE = re.compile(r"^\W*when\s+(?:did|was|were|do|does|is|are|have|has|had)\b", re.I)
_MONTHS = {
    m: n + 1
    for n, names in enumerate(
        "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august|"
        "sep sept september|oct october|nov november|dec december".split("|")
    )
    for m in names.split()
}
# Capitalised because they are dates, not names ("in April", "on Monday").
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_CALENDAR = frozenset([*_MONTHS, *_DAYS, *(d + "s" for d in _DAYS)])
_YEAR_RE = re.compile(r"(?<![\w-])((?:19|20)\d\d)(?:-(0[1-9]|1[0-2]))?(?![\w-])")
_MONTH_YEAR_RE = re.compile(
    r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?\s+((?:19|20)\d\d)\b", re.I
)


@record
class Question:
    text: str
    terms: tuple[str, ...]  # key terms, in order, each once
    intent: str = ""  # "present" | "past" | ""
    when: bool = False  # asks for a date ("When did we ...?")
    period: str = ""  # "YYYY" or "YYYY-MM" the question names, else ""
    only_period: bool = False  # the period is all it names ("What did we decide in 2021?")

    @property
    def present(self) -> bool:
        return self.intent == "present"

    @property
    def match(self) -> str:
        """The FTS5 query: any key term."""
        return " OR ".join(quote(t) for t in self.terms)


def quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def intent_of(text: str) -> str:
    """``present``, ``past`` or ``""`` (see the module doc). When a question names both ("we
    used to…; is that still so?"), it asks about now."""
    if _PRESENT_RE.search(text) and not _WHY_USE_RE.search(text):
        return "present"
    if _PAST_RE.search(text) or _BEFORE_NAME_RE.search(text):
        return "past"
    return ""


def period_of(text: str) -> str:
    got = _MONTH_YEAR_RE.search(text)
    if got:
        return f"{got.group(2)}-{_MONTHS[got.group(1).lower()]:02d}"
    got = _YEAR_RE.search(text)
    if got:
        return got.group(1) + (f"-{got.group(2)}" if got.group(2) else "")
    return ""


def _without_period(text: str) -> str:
    """``text`` less the period it names ("April 2021", "2021-03", "in 2021"): the period ranks
    by date (:attr:`Question.period`), and as words it would ask for entries that write it out."""
    got = _MONTH_YEAR_RE.search(text) or _YEAR_RE.search(text)
    return text if got is None else f"{text[: got.start()]} {text[got.end() :]}"


def parse_question(text: str) -> Question:
    period = period_of(text)
    words = [w.lower() for w in WORD_RE.findall(_without_period(text))]
    only_period = bool(period) and not any(
        w not in STOP and w not in FRAME and w not in TIME_WORDS for w in words
    )
    terms = tuple(
        dict.fromkeys(
            w
            for w in words
            if w not in STOP
            and w not in FRAME
            and w not in TIME_WORDS
            and (len(w) > 1 or w.isdigit())
        )
    )
    return Question(
        text=" ".join(text.split()),
        terms=terms,
        intent=intent_of(text),
        when=bool(_WHEN_RE.search(text)),
        period=period,
        only_period=only_period,
    )


_TOKEN_RE = re.compile(r"[^\W_]+(?:[.\-'’][^\W_]+)*")
_SENTENCE_START = ".?!:;\"'“‘(["


def names(text: str) -> list[tuple[str, ...]]:
    """The things a question names, each as its words: runs of words that are written like
    names (an inner capital or digit, "MkDocs", "BSD3", "WCAG"; or a capital not at the start of
    a sentence, "Istio", "Cloud Foundry")."""
    runs: list[list[str]] = []
    current: list[str] = []
    last_end = 0
    for m in _TOKEN_RE.finditer(text):
        word = m.group(0)
        before = text[: m.start()].rstrip()
        first = not before or before[-1] in _SENTENCE_START
        named = word.lower() not in _CALENDAR and (
            any(c.isupper() for c in word[1:])
            or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word))
            or (word[0].isupper() and not first and word != "I")
        )
        if named and current and not text[last_end : m.start()].strip():
            current.append(word)
        elif named:
            if current:
                runs.append(current)
            current = [word]
        elif current:
            runs.append(current)
            current = []
        last_end = m.end()
    if current:
        runs.append(current)
    return [tuple(run) for run in runs]


_VOCAB: frozenset[str] | None = None
_SUFFIXES = (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""),
             ("ed", "e"), ("er", ""), ("ers", ""), ("ly", ""), ("ment", ""), ("ness", ""))  # fmt: skip


def everyday(word: str) -> bool:
    """Whether ``word`` is an everyday English word: one of the ~23,700 whole words of BERT's
    uncased vocabulary (shipped with the package for the semantic model), after taking off a
    plain suffix ("labelling" -> "label"). Numbers and words of three letters or fewer count as
    everyday: they name little."""
    global _VOCAB
    if len(word) <= 3 or word.isdigit():
        return True
    if _VOCAB is None:
        # (os.path, not pathlib: an offline query loads no pathlib)
        path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "data", "minilm-vocab.txt")
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        _VOCAB = frozenset(t for t in lines if t and not t.startswith(("##", "[")))
    if word in _VOCAB:
        return True
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            stem = word[: -len(suffix)]
            if stem + replacement in _VOCAB:
                return True
            if len(stem) > 3 and stem[-1] == stem[-2] and stem[:-1] in _VOCAB:  # labell -> label
                return True
    return False

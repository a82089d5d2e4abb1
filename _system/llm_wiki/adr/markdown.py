"""Reading an ADR's markdown: headings and their sections, prose paragraphs, sentences, plain text.

Nothing here knows about decisions; it only takes markdown apart the way a reader sees it: code
fences and HTML comments are not text, a heading owns everything up to the next heading of its
level or higher.
"""

from __future__ import annotations

import re

from llm_wiki.records import record


@record
class Section:
    level: int
    title: str
    body: str  # everything up to the next heading of the same or a higher level


# A heading's text leaves out a closing ``#`` run and a kramdown / Pandoc attribute list
# (``{#adr_0001}``, ``{#id .class}``, ``{: .no_toc}``): markup for the site, not the title.
# Possessive runs (``*+``): with the lazy title before them, plain ``\s*`` tried every split of a
# run of spaces, and a heading of ``# 1. Use X`` + 600 spaces took minutes to import.
HEADING_RE = re.compile(r"^(#{1,6})\s*+(.*?)\s*+(?:\{[#.:][^{}]*\})?\s*+#*+\s*+$")
ATTRIBUTES_RE = re.compile(r"\s*\{[#.:][^{}]*\}\s*$")
_BREAK_RE = re.compile(r"^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")


def is_break(line: str) -> bool:
    """A thematic break (``---``, ``***``, ``___``): a line between parts, never words."""
    return bool(_BREAK_RE.match(line))


LIST_ITEM_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


def drop_comments(text: str) -> str:
    """HTML comments (``<!-- optional -->``, template hints) are not the record's words."""
    return _COMMENT_RE.sub("", text)


def lines_outside_fences(text: str) -> list[tuple[str, bool]]:
    """Each line with whether it lies inside a ``` fence (the fence lines count as inside)."""
    out = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            out.append((line, True))
            fenced = not fenced
            continue
        out.append((line, fenced))
    return out


def prose_lines(text: str) -> list[str]:
    """The lines a reader reads as text: no fences, no comments."""
    return [line for line, fenced in lines_outside_fences(drop_comments(text)) if not fenced]


def sections(text: str) -> list[Section]:
    lines = lines_outside_fences(text)
    heads = []
    for i, (line, fenced) in enumerate(lines):
        if fenced:
            continue
        match = HEADING_RE.match(drop_comments(line))
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


def find_section(secs: list[Section], *patterns: str) -> Section | None:
    for pattern in patterns:
        for sec in secs:
            if re.fullmatch(pattern, plain_title(sec.title), re.I):
                return sec
    return None


def plain_title(title: str) -> str:
    title = re.sub(r"[*_`]", "", title)
    return re.sub(r"^\s*(?:\d+[.)]?\s*)", "", title).strip().rstrip(":").strip()


def strip_md(text: str) -> str:
    """Markdown to the words a reader sees: links become their text, emphasis and code marks go."""
    text = drop_comments(text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", text)  # images
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # inline links
    text = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", text)  # reference links
    text = re.sub(r"(\*\*|__|`)", "", text)
    text = re.sub(r"(?<!\w)[*_](\S[^*_]*?)[*_](?!\w)", r"\1", text)
    text = re.sub(r"~~(.*?)~~", r"\1", text)
    return " ".join(text.split())


def paragraphs(body: str) -> list[str]:
    """Prose paragraphs and list items of a section (plain text), sub-headings, tables and fences
    left out."""
    out: list[str] = []
    current: list[str] = []
    for line, fenced in lines_outside_fences(drop_comments(body)):
        stripped = line.strip()
        if (
            fenced
            or not stripped
            or HEADING_RE.match(stripped)
            or stripped.startswith("|")
            or is_break(stripped)
        ):
            if current:
                out.append(" ".join(current))
                current = []
            continue
        if re.match(r"^\[[^\]]+\]:\s*\S+", stripped):  # a link reference definition
            continue
        stripped = re.sub(r"^>\s?", "", stripped)
        if LIST_ITEM_RE.match(stripped) and current:
            out.append(" ".join(current))
            current = []
        current.append(stripped)
    if current:
        out.append(" ".join(current))
    return [p for p in (strip_md(p) for p in out) if p]


_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(“‘*_`\[])")
_ABBREVIATIONS = ("e.g.", "i.e.", "a.k.a.", "etc.", "vs.", "cf.", "approx.", "incl.", "ie.", "eg.")


def sentences(text: str) -> list[str]:
    """A paragraph's sentences (a list item's marker dropped), not split after "e.g." and the like."""
    text = LIST_ITEM_RE.sub("", text.strip())
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END_RE.finditer(text):
        piece = text[start : match.start()]
        if piece.lower().endswith(_ABBREVIATIONS):
            continue
        out.append(piece.strip())
        start = match.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def first_sentence(text: str, limit: int) -> str:
    found = sentences(text)
    text = found[0] if found else ""
    if len(text) > limit:
        text = text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text


def min_level(body: str) -> int:
    levels = [s.level for s in sections(body)]
    return min(levels) if levels else 0

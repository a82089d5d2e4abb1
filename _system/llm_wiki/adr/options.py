"""The options a record considered and did not choose, each with the record's own reason.

Where options are listed: a "Considered Options" / "Options considered" / "Alternatives" section
(list items, or one sub-heading per option), "Other options considered" (all of them rejected),
and MADR's "Pros and Cons of the Options" (one sub-heading per option). Which one won: "Chosen
option: <name>" (the name whole, whatever quotes or periods it holds), "Option N", the first
option named after a choice verb, else one named twice as often as any other in the decision.

An option's reason, in order: its cons in the pros-and-cons part (``Bad, because …``, ``Bad: …``,
``Con: …``, `` `Bad` …``, a "Cons"/"Disadvantages" list), its own text where the options are
listed (``Name: reason``, a sub-heading's body), the decision's sentences that name it. Only
when the record gives none does it get :data:`PLACEHOLDER`, which ``lint`` counts.

The pros-and-cons sub-headings often rename the options they argue ("Own parser" for
"Self-written parser"): :func:`pair_headings` pairs them by name, then by place when both lists
are as long and agree on every pair named, else by the heading's own words, and leaves an
option unpaired rather than guess. Ids are distinct within a record (:func:`option_ids`).
"""

from __future__ import annotations

import re

from llm_wiki.adr.markdown import (
    LIST_ITEM_RE,
    Section,
    drop_comments,
    lines_outside_fences,
    min_level,
    paragraphs,
    plain_title,
    sections,
    sentences,
    strip_md,
)
from llm_wiki.entries import PLACEHOLDER_REASON, Alternative
from llm_wiki.slugs import slugify

PLACEHOLDER = PLACEHOLDER_REASON
REASON_LIMIT = 400

_OPTION_SECTION = (
    r"(?:other\s+)?(?:options|alternatives)(?:\s+considered)?(?:\s+for\b.*)?",
    r"considered\s+(?:options|alternatives)",
    r"(?:options|alternatives)\s+(?:that\s+were\s+)?(?:considered|explored|evaluated)",
)
_PROS_CONS = r"pros\s+and\s+cons(?:\s+of\s+the\s+(?:options|alternatives))?"
_BAD_LABEL = re.compile(
    r"^(?:[-*+]\s+)?(?:\*\*|__|`)?\s*(?:bad|cons?|negatives?|disadvantages?|drawbacks?|"
    r"downsides?|against|risks?|issues?|problems?|concerns?|negative\s+consequences?)\s*(?:\*\*|__|`)?\s*(?:[,:]\s*|\s+(?=because)|$)",
    re.I,
)
_GOOD_LABEL = re.compile(
    r"^(?:[-*+]\s+)?(?:\*\*|__|`)?\s*(?:good|pros?|positives?|advantages?|benefits?|neutral|"
    r"for)\s*(?:\*\*|__|`)?\s*(?:[,:]\s*|\s+(?=because)|$)",
    re.I,
)
_QUOTES = "\"'“”‘’`"


def is_option_section(title: str) -> bool:
    return any(re.fullmatch(p, plain_title(title), re.I) for p in _OPTION_SECTION)


def option_name(title: str) -> str:
    title = re.sub(r"\[([^\]]+)\]", r"\1", strip_md(title))
    title = re.sub(r"^\s*option\s*\d*\s*[:.)\-–—]\s*", "", title, flags=re.I)
    title = re.sub(r"^\s*option\s+\d+\s*$", lambda m: m.group(0), title, flags=re.I)
    title = re.sub(r"\(\s*https?://\S+\s*\)", "", title)
    return title.strip(" :-–—").rstrip(".").strip()


def _norm(name: str) -> str:
    """An option's name for matching: no quotes, marks, option numbers or punctuation."""
    name = re.sub(r"^\s*option\s*\d*\s*[:.)\-–—]?\s*", "", strip_md(name), flags=re.I)
    return " ".join(re.findall(r"[a-z0-9]+", name.lower()))


def chosen_name(decision: str) -> str:
    """The name after "Chosen option:", whole: ``"Option 2: Lunr.js"`` keeps its colon and period,
    ``"Include in section 'More Information'"`` and ``"Option 2: an "ADR link resolver" in the
    domain"`` their inner quotes. A quoted name ends at the first closing quote followed by
    punctuation, "because" or the end; an unquoted one at ", because" or the sentence's end."""
    match = re.search(r"chosen\s+(?:option|alternative)s?\s*:?\s*", decision, re.I)
    if not match:
        return ""
    rest = decision[match.end() :].strip().lstrip("*_ ")
    if numbered := re.match(r"^(\d{1,2})\s*[-–—:.)]\s+\S", rest):  # "3 - "Enforce TTL …""
        return numbered.group(1) + " - " + rest[numbered.end() - 1 :]
    if rest and rest[0] in _QUOTES:
        opener = rest[0]
        closer = {"“": "”", "‘": "’"}.get(opener, opener)
        body = rest[1:]
        if body.startswith(opener):  # ""name"" (a doubled quote)
            body = body[1:]
        for m in re.finditer(re.escape(closer), body):
            if re.match(r"\s*(?:[,.;:)!*]|because\b|$)", body[m.end() :]):
                name = body[: m.start()].strip()
                if name.endswith(closer) and name.count(closer) % 2:  # ""name""
                    name = name[:-1]
                return name.strip()
        return body.split(",")[0].strip().strip(_QUOTES)
    name = re.split(r",\s*because\b|\s+because\b|[,;]\s|\.\s|\.$", rest, maxsplit=1)[0]
    return name.strip().strip(_QUOTES + "*_").strip()


def alternatives(
    secs: list[Section], decision_text: str, body: str = ""
) -> tuple[list[Alternative], int]:
    """The rejected options (each with a reason) and how many of them got the placeholder."""
    pros_cons = _pros_and_cons(secs)
    elsewhere = _Elsewhere(secs, body)
    out: list[Alternative] = []
    names: list[str] = []
    listed = False
    for sec in secs:
        title = plain_title(sec.title)
        if not is_option_section(title):
            continue
        listed = True
        others_only = title.lower().startswith("other")
        for options in _options(sec):
            if others_only:
                rejected = list(enumerate(options))
            else:
                chosen = _chosen_all(options, decision_text)
                if not chosen:
                    continue  # cannot tell which one won: invent nothing
                rejected = [(i, o) for i, o in enumerate(options) if i not in chosen]
            paired = pair_headings([n for n, _ in options], list(pros_cons))
            ids = option_ids([n for n, _ in options])
            for i, (name, reason) in rejected:
                names.append(name)
                cons = pros_cons[paired[i]] if i in paired else ""
                reason = _option_n_in(decision_text, i + 1) or reason
                out.append(_alternative(ids[i], name, cons, reason, decision_text, elsewhere))
    if not listed and pros_cons:  # options only under "Pros and Cons of the Options"
        options = [(name, "") for name in pros_cons]
        chosen_set = _chosen_all(options, decision_text)
        if chosen_set:
            ids = option_ids(list(pros_cons))
            for i, (name, cons) in enumerate(pros_cons.items()):
                if i not in chosen_set:
                    out.append(_alternative(ids[i], name, cons, "", decision_text, elsewhere))
    seen: set[str] = set()
    unique = []
    for alt in out:
        if alt.id in seen or not alt.id:
            continue
        seen.add(alt.id)
        unique.append(alt)
    return unique, sum(1 for a in unique if a.rejected_because == PLACEHOLDER)


OPTION_ID_LIMIT = 60


def option_ids(names: list[str]) -> list[str]:
    """An id for each option of one list, distinct within it and the same on every import: the
    name's slug (within :data:`OPTION_ID_LIMIT` characters). An id cut short that equals another
    option's id, or is the first words of one, takes its name's next words until it is neither
    (and does not end on "and", "of" …), so long names alike in their first words keep apart;
    options whose whole names slug alike are numbered by their place in the list."""
    full = [slugify(n, 200) for n in names]
    ids = [slugify(n, OPTION_ID_LIMIT) for n in names]
    grown = [False] * len(names)

    def next_word(i: int) -> bool:
        if not full[i].startswith(ids[i] + "-"):
            return False  # whole (or its first word alone was too long to cut)
        ids[i] += "-" + full[i][len(ids[i]) + 1 :].split("-", 1)[0]
        grown[i] = True
        return True

    changed = True
    while changed:
        changed = False
        for i, own in enumerate(ids):
            others = ids[:i] + ids[i + 1 :]
            clash = any(o == own or o.startswith(own + "-") for o in others)
            dangling = grown[i] and own.rsplit("-", 1)[-1] in _DANGLING
            if (clash or dangling) and next_word(i):
                changed = True
    return [f"{s}-{i + 1}" if ids.count(s) > 1 else s for i, s in enumerate(ids)]


_DANGLING = frozenset("a an and as at by for from if in into of on or the to with".split())


def pair_headings(options: list[str], headings: list[str]) -> dict[int, str]:
    """Which "Pros and Cons" sub-heading argues each option (option index -> heading), one
    heading per option. By name first (equal, then one containing the other, then most words
    alike); "Option N" headings by number. The options left then take the heading in their place
    when both lists are as long and every pair found so far is in the same place (the headings
    renamed: "Self-written parser" under "Own parser"), else the one heading whose own words
    (those no other heading has) they share and that is most like them; otherwise none."""
    pairs: dict[int, int] = {}
    free = set(range(len(headings)))
    norms = [_norm(h) for h in headings]
    wanted = [_norm(o) for o in options]

    def claim(i: int, j: int) -> None:
        pairs[i] = j
        free.discard(j)

    if len(options) > 1:
        for j, h in enumerate(headings):
            if (m := re.fullmatch(r"\s*option\s*(\d+)\s*", strip_md(h), re.I)) and j in free:
                i = int(m.group(1)) - 1
                if 0 <= i < len(options) and i not in pairs:
                    claim(i, j)
    own = _own_words(headings)
    tests = (
        lambda w, j: w == norms[j],
        lambda w, j: bool(w and norms[j]) and (w in norms[j] or norms[j] in w),
        lambda w, j: (
            bool(w and norms[j])
            and _overlap(_stems(norms[j]), _stems(w)) >= 0.75
            and (len(headings) == 1 or bool(own[j] & _words(w)))
        ),
    )
    for test in tests:
        for i, w in enumerate(wanted):
            if i in pairs:
                continue
            hits = sorted((j for j in free if test(w, j)), key=lambda j: -len(norms[j]))
            if len(hits) > 1 and test is tests[1] and len(norms[hits[0]]) > len(norms[hits[1]]):
                hits = hits[:1]  # "PaddleOCR-VL model via llama.cpp" before "llama.cpp"
            if len(hits) == 1 or (hits and test is tests[0]):
                claim(i, hits[0])
    left = [i for i in range(len(options)) if i not in pairs]
    if left and len(options) == len(headings) and all(i == j for i, j in pairs.items()):
        for i in left:
            claim(i, i)
    elif left:
        for i in left:
            scored = sorted(
                (
                    (_overlap(_stems(norms[j]), _stems(wanted[i])), j)
                    for j in free
                    if own[j] & _words(wanted[i])
                ),
                reverse=True,
            )
            if scored and scored[0][0] >= 0.5 and (len(scored) == 1 or scored[1][0] < scored[0][0]):
                claim(i, scored[0][1])
    return {i: headings[j] for i, j in pairs.items()}


def _words(norm: str) -> set[str]:
    """A name's words that tell it apart (stems of three letters or more, not the common ones)."""
    return {w.rstrip("s")[:5] for w in norm.split() if len(w) >= 3 and w not in _COMMON}


def _own_words(headings: list[str]) -> list[set[str]]:
    """Each heading's words that no other heading has."""
    words = [_words(_norm(h)) for h in headings]
    return [
        w - set().union(*(o for k, o in enumerate(words) if k != j)) for j, w in enumerate(words)
    ]


class _Elsewhere:
    """Where else a record argues about an option: a section named after it (its cons, or its
    sentences that turn against it), or a sentence of the text that names it and says why not
    ("Kafka Stream was also considered but …")."""

    def __init__(self, secs: list[Section], body: str) -> None:
        self.secs = secs
        self.sentences = [s for p in paragraphs(body) for s in sentences(p)] if body else []

    def reason(self, name: str) -> str:
        wanted = _norm(name)
        for sec in self.secs:
            title = _norm(option_name(sec.title))
            if (
                wanted
                and title
                and (title == wanted or _overlap(_stems(title), _stems(wanted)) >= 0.75)
            ):
                if cons := cons_of(sec.body):
                    return cons
                against = [
                    s
                    for p in paragraphs(sec.body)
                    for s in sentences(p)
                    if re.search(
                        r"\b(?:but|however|cannot|can't|not|too|lacks?|drawbacks?)\b", s, re.I
                    )
                ]
                if against:
                    return " ".join(against[:2])
        words = set(re.findall(r"[a-z]{3,}", wanted)) - _COMMON - _VERBS
        if not words:
            return ""
        for s in self.sentences:
            low = s.lower()
            hits = sum(1 for w in words if re.search(rf"\b{re.escape(w)}", low))
            if hits >= max(1, (len(words) + 1) // 2) and re.search(
                r"\b(?:considered|looked\s+at|evaluated|rejected|discarded)\b.*\b(?:but|however|"
                r"not|because|as|since)\b|\b(?:rejected|discarded|ruled\s+out)\b",
                low,
            ):
                return s
        return ""


def _alternative(
    option_id: str,
    name: str,
    cons: str,
    reason: str,
    decision: str,
    elsewhere: _Elsewhere | None = None,
) -> Alternative:
    """A rejected option with its reason: its cons (from the pros-and-cons heading paired with
    it), else its own text, else the decision's or another section's words about it."""
    if reason and _restates(reason, name):
        reason = ""  # "Option 2: <its name again>" says what it is, not why it lost
    text = cons or reason or _named_in_decision(name, decision)
    text = text or (elsewhere.reason(name) if elsewhere else "") or PLACEHOLDER
    return Alternative(option_id, _cap(text))


def _restates(reason: str, name: str) -> bool:
    """The text is the option's own name again, or the decision's choice (not a reason)."""
    if re.search(r"(?i)\bchosen\s+option\b", reason):
        return True
    got, wanted = _norm(reason), _norm(name)
    return bool(wanted) and (got == wanted or got.startswith(wanted))


def _cap(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= REASON_LIMIT:
        return text
    cut = text[: REASON_LIMIT - 1]
    for mark in ("; ", ". "):
        if mark in cut[REASON_LIMIT // 3 :]:
            return cut[: cut.rindex(mark) + 1].rstrip("; ") + " …"
    return cut.rsplit(" ", 1)[0].rstrip(",;:") + " …"


def _pros_and_cons(secs: list[Section]) -> dict[str, str]:
    """option name -> its cons (joined), from a "Pros and Cons of the Options" section."""
    out: dict[str, str] = {}
    for sec in secs:
        if not re.fullmatch(_PROS_CONS, plain_title(sec.title), re.I):
            continue
        level = min_level(sec.body)
        for sub in sections(sec.body):
            if sub.level != level:
                continue
            name = option_name(sub.title)
            if name:
                # no Good/Bad labels at all ("- Slow searching"): its points are the reasons
                out[name] = cons_of(sub.body) or _unlabelled_points(sub.body)
    return out


def _unlabelled_points(body: str) -> str:
    items = [p for p in _items(body) if LIST_ITEM_RE.match(p.strip())]
    if not items or any(
        _GOOD_LABEL.match(strip_md(i)) or _BAD_LABEL.match(strip_md(i)) for i in items
    ):
        return ""
    return "; ".join(strip_md(LIST_ITEM_RE.sub("", i.strip())).rstrip(".;, ") for i in items)


_AGAINST = re.compile(
    r"\b(?:but|however|cannot|can't|not|too|lacks?|drawbacks?|downsides?|risks?|no\s+good)\b", re.I
)


def _objections(body: str) -> str:
    """Unlabelled points under an option that argue against it ("- but how many …?", "- We
    investigated this …, but found …"), not those that only describe it or list its variants."""
    points = _unlabelled_points(body).split("; ")
    return "; ".join(p for p in points if p and _AGAINST.search(p))


def cons_of(body: str) -> str:
    """The record's reasons against an option: its Bad/Con items, or a Cons/Disadvantages list."""
    items: list[str] = []
    mode = ""
    for para in _items(body):
        text = para.strip()
        head = re.match(r"^(#{1,6})\s*(.*)$", text)
        label = head.group(2) if head else text
        bad, good = _BAD_LABEL.match(strip_md(label)), _GOOD_LABEL.match(strip_md(label))
        plain = strip_md(LIST_ITEM_RE.sub("", text))
        if bad:
            rest = strip_md(label)[bad.end() :].strip()
            if rest and not head:
                items.append(rest)
                mode = "" if LIST_ITEM_RE.match(text) else "bad"
            else:
                mode = "bad"
            continue
        if good:
            mode = "good"
            continue
        if head:
            mode = ""
            continue
        if mode == "bad" and plain:
            items.append(plain)
    return "; ".join(i.rstrip(".;, ") for i in items if i)


def _items(body: str) -> list[str]:
    """Lines of a body as paragraphs and list items, headings kept (to switch Pros/Cons)."""
    out: list[str] = []
    current: list[str] = []
    fenced = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        new_item = (
            not stripped
            or stripped.startswith("#")
            or LIST_ITEM_RE.match(stripped)
            or _BAD_LABEL.match(strip_md(stripped))
            or _GOOD_LABEL.match(strip_md(stripped))
        )
        if new_item and current:
            out.append(" ".join(current))
            current = []
        if stripped:
            current.append(stripped)
            if stripped.startswith("#"):
                out.append(" ".join(current))
                current = []
    if current:
        out.append(" ".join(current))
    return out


def _options(sec: Section) -> list[list[tuple[str, str]]]:
    """Groups of (name, reason), one per choice: the section's sub-headings, else a list that
    opens the section. A sub-heading "Options for X" starts a new group; a list after prose
    ("not adopted because: - ...") holds reasons, not options."""
    level = min_level(sec.body)
    subs = [s for s in sections(sec.body) if s.level == level]
    if subs:
        groups: list[list[tuple[str, str]]] = [[]]
        for sub in subs:
            if is_option_section(sub.title):
                groups.append([])
            elif name := option_name(sub.title):
                groups[-1].append((name, _option_reason(sub.body)))
        return [g for g in groups if g]
    return [options] if (options := _list_options(sec.body)) else []


def _list_options(body: str) -> list[tuple[str, str]]:
    """A list that opens a section: each top-level item an option; a ``Name: reason`` item or
    the items nested under it (Good/Bad, Pro/Con) give its reason. A list after prose holds
    reasons, not options."""
    items: list[tuple[str, list[str]]] = []
    indent = None
    prose_first = False
    for line, fenced in lines_outside_fences(drop_comments(body)):
        if fenced or not line.strip():
            continue
        stripped = line.strip()
        depth = len(line) - len(line.lstrip())
        if LIST_ITEM_RE.match(stripped):
            if indent is None:
                indent = depth
            if depth <= indent:
                items.append((LIST_ITEM_RE.sub("", stripped), []))
                continue
        if not items:
            if stripped.startswith("#") or stripped.startswith("|"):
                break
            prose_first = True
            break
        if depth == 0 and not LIST_ITEM_RE.match(stripped) and not items[-1][1]:
            if stripped.startswith("#"):
                break
            items[-1] = (items[-1][0] + " " + stripped, items[-1][1])  # a wrapped item
            continue
        items[-1][1].append(line)
    if prose_first:
        return []
    options: list[tuple[str, str]] = []
    for item, nested in items:
        item = strip_md(item)
        name, reason = item, ""
        split = re.match(r"^(.{2,80}?)(?:\s*:\s+|\s+[-–—]\s+)(.+)$", item)
        if split and not _quoted_colon(split.group(1), []):
            name, reason = split.group(1), split.group(2)
        if nested:
            reason = cons_of("\n".join(nested)) or reason or _objections("\n".join(nested))
        if name := option_name(name):
            options.append((name, reason))
    return options


def _quoted_colon(head: str, raw_items: list[str]) -> bool:
    """``"Option 2: Lunr.js"`` is one name, not a name and a reason."""
    return bool(re.match(r"^\s*option\s*\d+\s*$", head, re.I)) or head.count('"') % 2 == 1


def _option_reason(body: str) -> str:
    cons = cons_of(body)
    if cons:
        return cons
    paras = paragraphs(body)
    return paras[0] if paras else ""


def _option_n_in(decision: str, n: int) -> str:
    """A decision's sentence about "option N" that says why it lost ("option 3 is too
    restrictive")."""
    for para in decision.split("\n\n"):
        for sentence in sentences(para):
            named = re.search(rf"(?i)\boption\s+{n}\b", sentence)
            against = re.search(
                r"(?i)\b(?:not|too|because|but|however|lacks?|cannot|can't|rejected)\b", sentence
            )
            if named and against and "chosen option" not in sentence.lower():
                return sentence
    return ""


def _named_in_decision(name: str, decision: str) -> str:
    """The decision's sentences that name a rejected option and say why (a negation or a cause)."""
    words = set(re.findall(r"[a-z]{3,}", _norm(name))) - _COMMON - _VERBS
    if not words or not decision:
        return ""
    found = []
    for para in decision.split("\n\n"):
        for sentence in sentences(para):
            low = sentence.lower()
            if "chosen option" in low:
                continue  # the sentence about the winner
            hits = sum(1 for w in words if re.search(rf"\b{re.escape(w)}", low))
            if hits >= max(1, (len(words) + 1) // 2) and re.search(
                r"\b(?:not|no|because|since|as|due|too|instead|rather|other|however|but|"
                r"rejected|discarded|drawback|downside|lacks?|without)\b",
                low,
            ):
                found.append(sentence)
    return " ".join(found[:2])


def _chosen_all(options: list[tuple[str, str]], decision: str) -> set[int]:
    """The options the decision picked: one, or several ("Chosen option: option 1 and option 2")."""
    name = chosen_name(decision.split("\n\n", 1)[0][:600])
    numbers = re.findall(r"\boption\s+(\d+)\b", name, re.I)
    if len(numbers) > 1 and re.search(r"\band\b|&|,", name):
        return {int(n) - 1 for n in numbers if 0 < int(n) <= len(options)}
    parts = [_norm(p) for p in re.split(r"\s+&\s+|\s+and\s+|;\s+", name) if p.strip()]
    norms = [_norm(n) for n, _ in options]
    if len(parts) > 1 and all(p in norms for p in parts):  # "Chosen option: A & B"
        return {norms.index(p) for p in parts}
    one = _chosen(options, decision)
    return set() if one is None else {one}


def _chosen(options: list[tuple[str, str]], decision: str) -> int | None:
    """Which option the decision picked, or None when the record does not make it clear."""
    if not decision:
        return None
    opening = decision.split("\n\n", 1)[0][:600]
    if name := chosen_name(opening):
        if m := re.match(r"^(\d{1,2})(?:$|\s*[-–—:.)]\s)", name.strip()):  # "2 because", "3 - …"
            n = int(m.group(1)) - 1
            return n if 0 <= n < len(options) else None
        wanted = _norm(name)
        norms = [_norm(n) for n, _ in options]
        for i, got in enumerate(norms):
            if got == wanted:
                return i
        if m := re.match(r"^\s*option\s+(\d+)\b", strip_md(name), re.I):
            n = int(m.group(1)) - 1
            if 0 <= n < len(options):
                return n
        hits = [i for i, got in enumerate(norms) if got and (got in wanted or wanted in got)]
        if len(hits) == 1:
            return hits[0]
        scored = sorted(((_overlap(wanted, got), i) for i, got in enumerate(norms)), reverse=True)
        if scored and scored[0][0] >= 0.6 and (len(scored) == 1 or scored[1][0] < scored[0][0]):
            return scored[0][1]
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


def _stems(text: str) -> str:
    """Words cut to five letters, so "tool"/"tools" and "only `convert`"/"convert command" meet."""
    return " ".join(
        w.rstrip("s")[:5] for w in text.split() if w not in ("the", "a", "an", "in", "of")
    )


def _overlap(a: str, b: str) -> float:
    wa, wb = set(a.split()), set(b.split())
    return len(wa & wb) / max(1, len(wa | wb))


_CHOICE_RE = re.compile(
    r"(?:^\s*(?:we will |we'll )?(?:use|adopt|go with|choose|keep)\b|"
    r"\b(?:decided|decision) to (?:use|go with|adopt|move to|implement)|"
    r"\bdecided on|\b(?:we|to) (?:chose|choose|use|adopt|select|implement|go with)|"
    r"\bwent with|\bwill use|\bselected)\s+(.{0,60})",
    re.M,
)

_VERBS = frozenset("include add adopt create make build write run set introduce".split())
_COMMON = frozenset(
    ("use", "using", "the", "and", "for", "with", "from", "into", "our", "new", "existing")
    + ("current", "keep", "option", "approach", "only", "all", "via", "per")
)

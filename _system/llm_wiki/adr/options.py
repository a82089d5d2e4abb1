"""The options a record considered and did not choose, each with the record's own reason.

Where options are listed: a section whose heading names them ("Considered Options", "Options
considered", "Alternatives", "Approaches", "Considered Actions", "Possible solutions"; list
items, a list a line introduces, or one sub-heading per option at whatever depth they start),
"Other options considered" / "Rejected alternatives" (all of them rejected),
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
    is_break,
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

# A heading that lists the options: a word for them ("Options", "Alternatives", "Approaches",
# or, said to be weighed, "Considered Actions", "Possible solutions", "Proposals evaluated"),
# with words for how they were weighed before or after it, and "… for <what>".
_WEIGHED = r"(?:considered|explored|evaluated|discussed|examined|investigated|weighed|rejected)"
_OPTION_SECTION = (
    r"(?:(?:other|alternative|rejected|discarded)\s+)?(?:options|alternatives|approaches)"
    rf"(?:\s+(?:that\s+were\s+|we\s+)?{_WEIGHED})?(?:\s+for\b.*)?",
    r"(?:(?:other|alternative|rejected|discarded)\s+)?(?:considered|possible|potential|candidate)"
    r"\s+(?:options|alternatives|approaches|actions|proposals|solutions|choices|designs)"
    r"(?:\s+for\b.*)?",
    r"(?:(?:other|alternative)\s+)?(?:options|alternatives|approaches|actions|proposals|solutions"
    rf"|choices|designs)\s+(?:that\s+were\s+|we\s+)?{_WEIGHED}(?:\s+for\b.*)?",
    r"reasons?\s+against\s+(?:the\s+)?(?:other\s+)?(?:options|alternatives|approaches).*",
)
# A section of the options that lost (or only of reasons against them): each is rejected,
# but the one the decision names ("Alternatives" that list the winner too).
_LOSERS_SECTION = re.compile(
    r"(?:alternatives?|rejected|discarded)\b.*|reasons?\s+against\b.*", re.I
)
# What an option's heading or item is called before its name: "Option 2:", "Approach 1b:",
# "Action 2A -", "[option 3] -", "II.", "1 –", "#### 3." (the label, kept to resolve "option 1b").
_LABEL_RE = re.compile(
    r"^\s*\[?\s*(?:(?:option|approach|alternative|action|proposal|solution|choice)\s*#?\s*"
    r"(?P<named>\d{1,2}[a-z]?|[a-h]|[ivx]{1,4})?|(?P<bare>\d{1,2}[a-z]?|[ivx]{1,4}|[IVX]{1,4}))"
    r"\s*\]?\s*(?:[:.)]|\s[-–—]|[-–—]\s|$)\s*",
    re.I,
)
_REF = r"(?:option|approach|alternative|proposal|solution|action)\s+#?(\d{1,2}[a-z]?|[a-h]|[ivx]{1,4})\b"
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth")
_ROMAN = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9}
_PROS_CONS = r"pros\s+and\s+cons(?:\s+of\s+the\s+(?:options|alternatives))?"
# GitHub/Docusaurus emoji used as a point's sign: ":no_entry: Steep learning curve".
_BAD_SIGN = r"(?::no_entry(?:_sign)?:|:x:|:-1:|:thumbsdown:|:heavy_minus_sign:|[❌⛔👎➖])\s*"
_GOOD_SIGN = r"(?::white_check_mark:|:heavy_check_mark:|:\+1:|:thumbsup:|:heavy_plus_sign:|[✅✔👍➕]\ufe0f?)\s*"
_BAD_LABEL = re.compile(
    rf"^(?:[-*+]\s+)?{_BAD_SIGN}|"
    r"^(?:[-*+]\s+)?(?:\*\*|__|`)?\s*(?:bad|cons?|negatives?|disadvantages?|drawbacks?|"
    r"downsides?|against|risks?|issues?|problems?|concerns?|negative\s+consequences?)\s*(?:\*\*|__|`)?\s*(?:[,:]\s*|\s+(?=because)|$)",
    re.I,
)
_GOOD_LABEL = re.compile(
    rf"^(?:[-*+]\s+)?{_GOOD_SIGN}|"
    r"^(?:[-*+]\s+)?(?:\*\*|__|`)?\s*(?:good|pros?|positives?|advantages?|benefits?|neutral|"
    r"for)\s*(?:\*\*|__|`)?\s*(?:[,:]\s*|\s+(?=because)|$)",
    re.I,
)
_QUOTES = "\"'“”‘’`"


def is_option_section(title: str) -> bool:
    return any(re.fullmatch(p, plain_title(title), re.I) for p in _OPTION_SECTION)


def option_label(title: str) -> str:
    """The label an option's heading gives it ("2", "1b", "ii" -> "2"), "" if none."""
    m = _LABEL_RE.match(strip_md(title))
    label = ((m.group("named") or m.group("bare") or "") if m else "").lower()
    return str(_ROMAN[label]) if label in _ROMAN and label not in ("v", "x") else label


def option_name(title: str) -> str:
    title = re.sub(r"\[([^\]]+)\]", r"\1", strip_md(title))
    if (m := _LABEL_RE.match(title)) and title[m.end() :].strip(" :-–—."):
        title = title[m.end() :]  # "Option 2: Lunr.js" -> "Lunr.js"; "Option 2" stays
    title = re.sub(r"\(\s*https?://\S+\s*\)", "", title)
    return title.strip(" :-–—").rstrip(".").strip()


def _norm(name: str) -> str:
    """An option's name for matching: no quotes, marks, option numbers or punctuation."""
    name = _LABEL_RE.sub("", strip_md(name), count=1)
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


_BARE_CHOICE_RE = re.compile(
    rf"^\W*{_REF}\s*(?:(?:is|was|has\s+been)\s+(?:chosen|selected|accepted|adopted|preferred)"
    r"\s*)?(?:\.(?:\s+|$)|$)",
    re.I,
)


def named_choice(secs: list[Section], decision: str) -> str:
    """A decision that only names its option by label ("Option 4.", "Option 2 is chosen."),
    with the option's own name: "Option 4: Use EC2 Image Builder." ("" when it says more, or
    no option has that label)."""
    m = _BARE_CHOICE_RE.match(decision)
    if not m:
        return ""
    for sec in secs:
        if not is_option_section(sec.title):
            continue
        for group in _options(sec):
            n = _by_label(m.group(1), [label for *_, label in group], len(group))
            if n is not None:
                name = group[n][0].rstrip(".")
                rest = decision[m.end() :].strip()
                return f"Option {m.group(1)}: {name}." + (f" {rest}" if rest else "")
    return ""


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
        losers = bool(_LOSERS_SECTION.fullmatch(title))
        groups = _options(sec)
        told = not groups  # in prose: each alternative's words are its own reason
        if told and (others_only or losers):
            groups = [_prose_alternatives(sec.body)]
        for group in groups:
            options = [(name, reason) for name, reason, _ in group]
            labels = [label for _, _, label in group]
            if others_only or told:  # alternatives told in prose were not taken
                rejected = list(enumerate(options))
            elif losers:
                chosen = _chosen_all(options, decision_text, labels)
                rejected = [(i, o) for i, o in enumerate(options) if i not in chosen]
            else:
                chosen = _chosen_all(options, decision_text, labels)
                if not chosen:
                    continue  # cannot tell which one won: invent nothing
                rejected = [(i, o) for i, o in enumerate(options) if i not in chosen]
            paired = pair_headings([n for n, _ in options], list(pros_cons))
            ids = option_ids([n for n, _ in options])
            for i, (name, reason) in rejected:
                names.append(name)
                cons = pros_cons[paired[i]] if i in paired else ""
                reason = _option_n_in(decision_text, labels[i] or str(i + 1)) or reason
                out.append(_alternative(ids[i], name, cons, reason, decision_text, elsewhere, told))
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
    told: bool = False,
) -> Alternative:
    """A rejected option with its reason: its cons (from the pros-and-cons heading paired with
    it), else its own text, else the decision's or another section's words about it.
    ``told``: an alternative told in prose, named by its own first sentence, which its reason
    starts with."""
    if reason and not told and _restates(reason, name):
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


_AGAINST_HEAD = (
    r"\b(?:downsides?|drawbacks?|disadvantages?|cons|limitations?|problems?|issues?|caveats?)"
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
        if is_break(stripped):  # "---" between two options: never a reason's words
            stripped = ""
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


def _options(sec: Section) -> list[list[tuple[str, str, str]]]:
    """Groups of (name, reason, label), one per choice: the section's sub-headings at whatever
    depth they start ("### Option 1", "#### 1."), else a list that opens the section or follows
    a line that says it lists them ("We considered two options:"). A sub-heading "Options for X"
    starts a new group; a list after other prose ("not adopted because: - ...") holds
    reasons, not options."""
    level = min_level(sec.body)
    subs = [s for s in sections(sec.body) if s.level == level]
    if subs:
        groups: list[list[tuple[str, str, str]]] = [[]]
        for sub in subs:
            if is_option_section(sub.title):
                groups.append([])
            elif not _is_hole(sub.title) and (name := option_name(sub.title)):
                groups[-1].append((name, _option_reason(sub.body), option_label(sub.title)))
        return [g for g in groups if g]
    return [options] if (options := _list_options(sec.body)) else []


_INTRO_RE = re.compile(
    r"(?i)\b(?:options?|alternatives?|approaches|solutions|choices|possibilities|candidates|ways)"
    r"\b.*:$"
)


# Docusaurus / VuePress admonitions: ":::note", ":::tip Title", closed by ":::".
_ADMONITION_RE = re.compile(r"^\s*:::(?:\s*[a-z][\w-]*.*)?\s*$", re.I)
_LINK_DEF_RE = re.compile(r"^\s*\[[^\]]+\]:\s*\S+")


def _is_hole(text: str) -> bool:
    """A template's placeholder where an option's name goes: "[option 1]", "{title of option 2}",
    "…" (left in real records that kept the template's residue)."""
    return bool(re.fullmatch(r"\s*(?:\[[^\]]*\]|\{[^}]*\}|[.…\s]*)\s*", strip_md(text)))


def _list_options(body: str) -> list[tuple[str, str, str]]:
    """A list that opens a section, or follows a line saying it lists the options ("We
    considered two options:"): each top-level item an option; a ``Name: reason`` item, the
    items nested under it (Good/Bad, Pro/Con) or the paragraphs between it and the next item
    give its reason. A list after other prose holds reasons, not options."""
    items: list[tuple[str, list[str]]] = []
    indent = None
    prose_first = False
    blank = False
    between: list[str] = []  # paragraphs after an item: its own if another item follows
    aside = False
    for line, fenced in lines_outside_fences(drop_comments(body)):
        if not fenced and _ADMONITION_RE.match(line):
            aside = not aside if line.strip() == ":::" else True  # ":::" closes, ":::note" opens
            continue
        if aside:  # a ":::note … :::" block is an aside: neither prose before the list nor an item
            continue
        if fenced or not line.strip() or is_break(line) or _LINK_DEF_RE.match(line):
            blank = blank or bool(items)
            continue
        stripped = line.strip()
        depth = len(line) - len(line.lstrip())
        if LIST_ITEM_RE.match(stripped):
            if indent is None:
                indent = depth
            if depth <= indent:
                if items and between:
                    items[-1][1].extend(between)
                between, blank = [], False
                items.append((LIST_ITEM_RE.sub("", stripped), []))
                continue
        if not items:
            if stripped.startswith("#") or stripped.startswith("|"):
                break
            if _INTRO_RE.search(strip_md(stripped)):
                continue  # "We considered two options:" introduces the list
            prose_first = True
            break
        if stripped.startswith("#"):
            break
        if depth == 0 and not LIST_ITEM_RE.match(stripped) and (blank or between):
            between.append(stripped)  # a paragraph after the item, not inside it
            continue
        if not LIST_ITEM_RE.match(stripped) and not items[-1][1] and not blank and not between:
            # a wrapped item, its next line indented or not (CommonMark's lazy continuation):
            # the item goes on to the next item, a blank line or a heading
            items[-1] = (items[-1][0] + " " + stripped, items[-1][1])
            continue
        items[-1][1].append(line)
    if prose_first:
        return []
    options: list[tuple[str, str, str]] = []
    firsts = [_first_sentence(strip_md(item)) for item, _ in items]
    taken = [option_name(f) for f in firsts] + [option_name(strip_md(i)) for i, _ in items]
    for (item, nested), first in zip(items, firsts, strict=True):
        item = strip_md(item)
        name, reason = item, ""
        split = re.match(r"^(.{2,80}?)(?:\s*:\s+|\s+(?:--?|[–—])\s+)(.+)$", item)
        if split and not _quoted_colon(split.group(1), []):
            name, reason = split.group(1), split.group(2)
        elif first and taken.count(option_name(first)) == 1:  # "Indexes avoid X. However …"
            name, reason = first, item[len(first) :].strip()
        if nested:
            text = "\n".join(nested)
            prose = [p for p in paragraphs(text) if not LIST_ITEM_RE.match(p)]
            against = re.search(
                rf"{_AGAINST_HEAD}\W*:$", item, re.I
            )  # "suffers from these downsides:"
            reason = (
                cons_of(text)
                or reason
                or (_unlabelled_points(text) if against else "")
                or _objections(text)
                or (prose[0] if prose else "")
            )
        label = option_label(item)
        if not _is_hole(item) and (name := option_name(name)):
            options.append((name, reason, label))
    return options


# A paragraph that goes on about the alternative before it ("Yet, such a move …", "However, …").
_GOES_ON_RE = re.compile(
    r"^(?:yet|however|but|this|that|these|those|such|with\s+such|doing\s+so|also|furthermore|"
    r"moreover|see|note|to\s+be\s+noted|while|indeed|unfortunately|as\s+such|it|they|all\s+this|"
    r"hence|thus|therefore)\b",
    re.I,
)


def _prose_alternatives(body: str) -> list[tuple[str, str, str]]:
    """Alternatives told in prose, no list or heading naming them (Nygard's "## Alternatives":
    "Similar functionalities can be implemented by relying on finalize. Yet, such a move should
    not be done: - Longer GC pauses …"): each paragraph that does not go on about the one
    before is one, named by its first sentence, its words and points the reason. A lone sentence
    that argues nothing against anything is an aside, not an alternative."""
    groups: list[list[str]] = []
    for para in paragraphs(body):
        item = LIST_ITEM_RE.match(para)
        if groups and (item or _GOES_ON_RE.match(para)):
            groups[-1].append(para)
        elif not item:
            groups.append([para])
    out: list[tuple[str, str, str]] = []
    for first, *rest in groups:
        said = sentences(first)
        if not said or (len(said) == 1 and not rest and not _AGAINST.search(first)):
            continue  # one sentence that argues nothing ("Users can still …"): an aside
        reason = first
        for para in rest:
            item = LIST_ITEM_RE.match(para)
            text = LIST_ITEM_RE.sub("", para).strip()
            reason += ("; " if item and not reason.endswith(":") else " ") + text
        if not _is_hole(said[0]) and (name := option_name(said[0])):
            out.append((name, reason, ""))
    return out


def _first_sentence(item: str) -> str:
    """An item's first sentence when more follow and it can be a name (short, no open
    parenthesis or quote): "Indexes avoid X." of "Indexes avoid X. However they …"."""
    said = sentences(item)
    first = said[0] if len(said) > 1 else ""
    if not first or len(first) > 120 or first.count("(") != first.count(")"):
        return ""
    if sum(first.count(q) for q in '"“”') % 2 or not item.startswith(first):
        return ""
    return first


def _quoted_colon(head: str, raw_items: list[str]) -> bool:
    """``"Option 2: Lunr.js"`` is one name, not a name and a reason."""
    return bool(re.match(r"^\s*option\s*\d+\s*$", head, re.I)) or head.count('"') % 2 == 1


def _option_reason(body: str) -> str:
    cons = cons_of(body)
    if cons:
        return cons
    paras = paragraphs(body)
    return paras[0] if paras else ""


def _option_n_in(decision: str, n: str) -> str:
    """A decision's sentence about "option N" that says why it lost ("option 3 is too
    restrictive", "Option 1b was rejected")."""
    for para in decision.split("\n\n"):
        for sentence in sentences(para):
            named = re.search(
                rf"(?i)\b(?:option|approach|alternative)\s+{re.escape(n)}\b", sentence
            )
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


def _by_label(ref: str, labels: list[str] | None, count: int) -> int | None:
    """The option an "option 1b" / "option 2" / "option II" reference names: by the label its
    heading gives it, else by its place; None when it names none, or several ("option 1" when
    there are "1a" and "1b")."""
    ref = ref.lower()
    ref = str(_ROMAN[ref]) if ref in _ROMAN and not ref.isdigit() else ref
    labels = labels or [""] * count
    if ref in labels:
        return labels.index(ref)
    if any(label.startswith(ref) for label in labels) or not ref.isdigit():
        return None
    n = int(ref) - 1
    return n if 0 <= n < count else None


def _picked(decision: str, labels: list[str] | None, count: int) -> set[int]:
    """Options the decision takes by label, in any of its sentences ("We will do action 3",
    "we chose option 1b"), not those it says it will not take ("and therefore not action 2")."""
    out = set()
    verbs = r"(?:do|use|choose|chose|chosen|go\s+with|adopt|implement|pick|take|select|selected)"
    for para in decision.split("\n\n"):
        for sentence in sentences(para):
            for m in re.finditer(rf"(?i)\b{verbs}\s+(?:the\s+)?{_REF}", sentence):
                if re.search(r"(?i)\b(?:not|never|against)\b", sentence[: m.start()]):
                    continue
                if (n := _by_label(m.group(1), labels, count)) is not None:
                    out.add(n)
    return out


def _declined(options: list[tuple[str, str]], decision: str) -> set[int]:
    """Options the decision says it will not take ("… is recommended, but it will not be
    implemented", "we decided against X"): the sentence names most of the option's own words."""
    words = _distinctive(options)
    out = set()
    for para in decision.split("\n\n"):
        for sentence in sentences(para):
            low = sentence.lower()
            if not _DECLINE_RE.search(low):
                continue
            for i, own in enumerate(words):
                hits = sum(1 for w in own if re.search(rf"\b{re.escape(w)}", low))
                if own and hits >= max(2, (len(own) + 1) // 2):
                    out.add(i)
    return out


_DECLINE_RE = re.compile(
    r"\b(?:will|would|should|shall|is|are|was|were)\s+not\s+be\s+(?:implemented|adopted|used|"
    r"pursued|taken|done|enabled)\b|\bdecided\s+against\b|\bwas\s+rejected\b|\bwon't\s+be\b"
)


def _chosen_all(
    options: list[tuple[str, str]], decision: str, labels: list[str] | None = None
) -> set[int]:
    """The options the decision picked: one, or several ("Chosen option: option 1 and option 2")."""
    name = chosen_name(decision.split("\n\n", 1)[0][:600])
    numbers = re.findall(r"\boption\s+(\d+)\b", name, re.I)
    if len(numbers) > 1 and re.search(r"\band\b|&|,", name):
        return {int(n) - 1 for n in numbers if 0 < int(n) <= len(options)}
    parts = [_norm(p) for p in re.split(r"\s+&\s+|\s+and\s+|;\s+", name) if p.strip()]
    norms = [_norm(n) for n, _ in options]
    if len(parts) > 1 and all(p in norms for p in parts):  # "Chosen option: A & B"
        return {norms.index(p) for p in parts}
    picked = _picked(decision, labels, len(options))
    if len(picked) > 1:  # "We will do action 3 …" and, later, "We will do action 4 …"
        return picked
    one = _chosen(options, decision, labels)
    declined = _declined(options, decision)
    if one is not None and one in declined:
        one = None  # named most, but the decision says it will not be taken
    if one is None and declined and len(options) - len(declined) == 1:
        one = next(i for i in range(len(options)) if i not in declined)  # the one not declined
    return set() if one is None else {one}


def _chosen(
    options: list[tuple[str, str]], decision: str, labels: list[str] | None = None
) -> int | None:
    """Which option the decision picked, or None when the record does not make it clear."""
    if not decision:
        return None
    opening = decision.split("\n\n", 1)[0][:600]
    first = (sentences(opening) or [""])[0]
    if name := chosen_name(opening):
        if m := re.match(r"^(\d{1,2})(?:$|\s*[-–—:.)]\s)", name.strip()):  # "2 because", "3 - …"
            n = int(m.group(1)) - 1
            return n if 0 <= n < len(options) else None
        wanted = _norm(name)
        norms = [_norm(n) for n, _ in options]
        for i, got in enumerate(norms):
            if got and got == wanted:
                return i
        m = re.match(rf"^\s*{_REF}", strip_md(name), re.I)
        if m and (at := _by_label(m.group(1), labels, len(options))) is not None:
            return at
        hits = [i for i, got in enumerate(norms) if got and (got in wanted or wanted in got)]
        if len(hits) == 1:
            return hits[0]
        scored = sorted(((_overlap(wanted, got), i) for i, got in enumerate(norms)), reverse=True)
        if scored and scored[0][0] >= 0.6 and (len(scored) == 1 or scored[1][0] < scored[0][0]):
            return scored[0][1]
    m = re.search(
        rf"\b(?:on\s+|^|chose\s+|choose\s+|chosen\s+|use\s+|with\s+){_REF}", opening, re.I
    )
    if m and (at := _by_label(m.group(1), labels, len(options))) is not None:
        return at
    # "We decided to go with the second option", "the second option … is the better solution"
    ordinals = set(
        re.findall(rf"\b({'|'.join(_ORDINALS)})\s+(?:option|approach|alternative)\b", first, re.I)
    )
    if len(ordinals) == 1 and not re.search(r"(?i)\b(?:not|against|reject\w*)\b", first):
        n = _ORDINALS.index(ordinals.pop().lower())
        if n < len(options):
            return n
    distinctive = _distinctive(options)

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
    # "We will take Entra ID into service": what the decision's first words will do, verb and all
    if m := _WILL_RE.match(first.lower()):
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


def _distinctive(options: list[tuple[str, str]]) -> list[set[str]]:
    """Each option's words (three letters or more, not the common ones) no other option has."""
    words = [set(re.findall(r"[a-z0-9]{3,}", name.lower())) - _COMMON for name, _ in options]
    return [
        own - set().union(*(w for j, w in enumerate(words) if j != i))
        for i, own in enumerate(words)
    ]


_WILL_RE = re.compile(
    r"^\W*we\s+(?:will|shall|are\s+going\s+to|have\s+decided\s+to|decided\s+to)\s+"
    r"(?!not\b|never\b|no\b)(.{0,80})"
)


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

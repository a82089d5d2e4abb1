"""Pictures drawn at build time as inline SVG: no chart library runs in the browser.

Each is designed for a phone (a 360-unit-wide viewBox that scales up to the page's width) and
reads without colour: a mark's *shape* says its status, every row and bar is labelled in text, and
each mark carries a ``<title>`` (the tooltip, and what a screen reader says). Inputs are the plain
data of a page's context, so a picture is a pure function of what the page fingerprints.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import Any

from markupsafe import Markup

from llm_wiki.site.html import escape

WIDTH = 360

# status -> how its mark is drawn (see LEGEND); the word is always in the label too
SHAPES = {
    "active": "dot",
    "superseded": "ring",
    "proposed": "diamond",
    "rejected": "cross",
    "deprecated": "square",
}
LEGEND = ("active", "superseded", "proposed", "rejected", "deprecated")


def _esc(value: object) -> str:
    return escape(str(value))  # markupsafe's escaping, as a plain str (site/html.py)


# How wide each printable ASCII character is, in hundredths of an em (rounded up), in DejaVu
# Sans regular and bold: the sans-serif Chromium draws with on Debian, and among the widest of
# the fonts system-ui names elsewhere, so a label measured with it fits in those too. A label is
# cut to the room it has by this measure, not by a count of characters, which let a label of
# capitals run past the picture's edge and lose its ending (measured in Chromium:
# tests/test_site_browser.py). Any other character counts a whole em (an emoji a quarter more).
_EM = (
    (
        "32,41,46,84,64,96,78,28,40,40,50,84,32,37,32,34,64,64,64,64,64,64,64,64,64,64,34,34,"
        "84,84,84,54,100,69,69,70,78,64,58,78,76,30,30,66,56,87,75,79,61,79,70,64,62,74,69,99,"
        "69,62,69,40,34,40,84,50,50,62,64,55,64,62,36,64,64,28,28,58,28,98,64,62,64,64,42,53,"
        "40,64,60,82,60,60,53,64,34,64,84"
    ),
    (
        "35,46,53,84,70,101,88,31,46,46,53,84,38,42,38,37,70,70,70,70,70,70,70,70,70,70,40,40,"
        "84,84,84,59,100,78,77,74,84,69,69,83,84,38,38,78,64,100,84,86,74,86,78,73,69,82,78,"
        "111,78,73,73,46,37,46,84,50,50,68,72,60,72,68,44,72,72,35,35,67,35,105,72,69,72,72,"
        "50,60,48,72,66,93,65,66,59,72,37,72,84"
    ),
)
_WIDTHS = tuple(tuple(int(n) for n in table.split(",")) for table in _EM)
# the same by code point for all of ASCII (a control character counts an em), so an ASCII label
# is measured by one sum over its bytes
_ASCII = tuple((100,) * 32 + table + (100,) for table in _WIDTHS)


def _hundredths(text: str, bold: bool = False) -> int:
    """How wide ``text`` is drawn, in hundredths of an em, at most (see _EM)."""
    if text.isascii():
        return sum(map(_ASCII[bold].__getitem__, text.encode()))
    table, hundredths = _WIDTHS[bold], 0
    for ch in text:
        code = ord(ch)
        hundredths += table[code - 32] if 32 <= code < 127 else (125 if code >= 0x1F000 else 100)
    return hundredths


def _width(text: str, size: float, bold: bool = False) -> float:
    """How wide ``text`` is drawn at ``size`` user units, at most (see _EM)."""
    return _hundredths(text, bold) * size / 100


def _fit(text: str, room: float, size: float, bold: bool = False, after: str = "") -> str:
    """``text`` (then ``after``, kept whole) in at most ``room`` units: cut, with an ellipsis.
    The cut keeps the longest start of ``text`` that fits (every character has a width, so
    each longer start is wider): found in one pass over the characters' widths."""
    text = " ".join(text.split())
    if _width(text + after, size, bold) <= room:
        return text + after
    if text.isascii():
        each: Iterable[int] = map(_ASCII[bold].__getitem__, text.encode())
    else:
        each = (_hundredths(ch, bold) for ch in text)
    wide = list(accumulate(each, initial=_hundredths("…" + after, bold)))  # [k]: k kept
    over = bisect.bisect_left(wide, True, key=lambda h: h * size / 100 > room)
    return text[: max(over - 1, 0)].rstrip() + "…" + after


def mark(shape: str, x: float, y: float, r: float = 5) -> str:
    """One status mark. ``ring`` is hollow with a slash (superseded: crossed out, still there)."""
    if shape == "dot":
        return f'<circle cx="{x:g}" cy="{y:g}" r="{r:g}" class="ink"/>'
    if shape == "ring":
        d = r * 0.7
        return (
            f'<circle cx="{x:g}" cy="{y:g}" r="{r:g}" class="hollow"/>'
            f'<line x1="{x - d:g}" y1="{y + d:g}" x2="{x + d:g}" y2="{y - d:g}" class="stroke"/>'
        )
    if shape == "diamond":
        return (
            f'<polygon points="{x:g},{y - r - 1:g} {x + r + 1:g},{y:g} {x:g},{y + r + 1:g} '
            f'{x - r - 1:g},{y:g}" class="hollow"/>'
        )
    if shape == "cross":
        return (
            f'<path d="M{x - r:g} {y - r:g}L{x + r:g} {y + r:g}M{x - r:g} {y + r:g}'
            f'L{x + r:g} {y - r:g}" class="stroke thick"/>'
        )
    return (
        f'<rect x="{x - r:g}" y="{y - r:g}" width="{2 * r:g}" height="{2 * r:g}" class="hollow"/>'
    )


def _svg(height: float, body: Sequence[str], label: str, css: str) -> Markup:
    return Markup(
        f'<svg class="picture {css}" viewBox="0 0 {WIDTH} {height:g}" role="img" '
        f'aria-label="{_esc(label)}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{_esc(label)}</title>" + "".join(body) + "</svg>"
    )


def legend(y: float = 10) -> str:
    parts, x = [], 8.0
    for status in LEGEND:
        parts.append(mark(SHAPES[status], x + 5, y, 4))
        parts.append(f'<text x="{x + 13:g}" y="{y + 4:g}" class="small">{status}</text>')
        x += 13 + 5 * len(status) + 9
    return "".join(parts)


# --------------------------------------------------------------------------- decision timeline


def timeline(decisions: Sequence[dict[str, Any]], root: str, title: str) -> Markup:
    """The decisions of a domain, oldest at the top, one row (and one mark) each; an arc on the
    left joins each decision to the one it superseded, its arrow pointing at the newer one.

    ``decisions``: dicts with id, date, status, summary, supersedes (ids), oldest first.
    """
    row_h, top, x_mark = 20, 34, 58
    rows = {d["id"]: n for n, d in enumerate(decisions)}
    height = top + row_h * max(len(decisions), 1) + 6
    body = [legend()]
    body.append(
        '<text x="8" y="28" class="small muted">oldest at the top; arcs join a decision to the '
        "one it replaced</text>"
    )
    month = ""
    for n, d in enumerate(decisions):
        y = top + row_h * n + row_h / 2
        if d["date"][:7] != month:
            month = d["date"][:7]
            body.append(
                f'<line x1="{x_mark - 8}" y1="{y - row_h / 2:g}" x2="{WIDTH - 4}" '
                f'y2="{y - row_h / 2:g}" class="rule"/>'
            )
        for old in d["supersedes"]:
            if old not in rows:
                continue
            y0 = top + row_h * rows[old] + row_h / 2
            bend = min(x_mark - 10, 8 + 3 * abs(n - rows[old]) ** 0.5 * 4)
            x0 = x_mark - 8
            body.append(
                f'<path d="M{x0} {y0:g} C{x0 - bend:g} {y0:g} {x0 - bend:g} {y:g} {x0} {y:g}" '
                'class="arc" marker-end="url(#arrow)"/>'
            )
        status = d["status"]
        word = "" if status == "active" else f" ({status})"
        room = WIDTH - 2 - (x_mark + 10)  # from the label's start to the picture's edge
        label = f"{d['date']} " + _fit(
            d["summary"], room - _width(f"{d['date']} ", 11), 11, after=word
        )
        body.append(
            f'<a href="{_esc(root)}entries/{_esc(d["id"])}.html" class="mark" '
            f'data-id="{_esc(d["id"])}" data-status="{_esc(status)}">'
            f"<title>{_esc(d['date'])} {_esc(status)}: {_esc(d['summary'])}</title>"
            + mark(SHAPES.get(status, "square"), x_mark, y)
            + f'<text x="{x_mark + 10}" y="{y + 4:g}" class="label">{_esc(label)}</text></a>'
        )
    if not decisions:
        body.append(f'<text x="8" y="{top + 14}" class="label">No decisions yet.</text>')
    defs = (
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z" class="ink"/>'
        "</marker></defs>"
    )
    return _svg(height, [defs, *body], title, "timeline")


# --------------------------------------------------------------------------- entries per month


def _periods(months: Sequence[str]) -> tuple[str, list[str]]:
    """Consecutive periods from the first month to the last: months, else quarters, else
    years, whichever gives at most 36 bars."""
    first, last = min(months), max(months)
    y0, m0, y1, m1 = int(first[:4]), int(first[5:7]), int(last[:4]), int(last[5:7])
    span = (y1 - y0) * 12 + m1 - m0 + 1
    if span <= 36:
        out = []
        for k in range(span):
            y, m = divmod(m0 - 1 + k, 12)
            out.append(f"{y0 + y:04d}-{m + 1:02d}")
        return "month", out
    if (y1 - y0 + 1) * 4 <= 36:
        return "quarter", [f"{y}-Q{q}" for y in range(y0, y1 + 1) for q in range(1, 5)]
    return "year", [str(y) for y in range(y0, y1 + 1)]


def _period_of(unit: str, month: str) -> str:
    if unit == "month":
        return month
    if unit == "quarter":
        return f"{month[:4]}-Q{(int(month[5:7]) - 1) // 3 + 1}"
    return month[:4]


def per_month(counts: dict[str, dict[str, int]], title: str) -> Markup:
    """Entries per month by type: one labelled row of bars per type (small multiples, so no
    colour is needed to tell the types apart); each bar's tooltip gives its count."""
    months = sorted({m for by_type in counts.values() for m in by_type})
    types = sorted(counts)
    if not months:
        return _svg(30, ['<text x="8" y="20" class="label">No entries yet.</text>'], title, "bars")
    unit, periods = _periods(months)
    grouped: dict[str, dict[str, int]] = {t: {} for t in types}
    for t in types:
        for m, n in counts[t].items():
            p = _period_of(unit, m)
            grouped[t][p] = grouped[t].get(p, 0) + n
    left, row_h, gap = 78, 34, 6
    step = (WIDTH - left - 6) / len(periods)
    body = []
    for r, t in enumerate(types):
        y = 8 + r * (row_h + gap)
        peak = max(grouped[t].values() or [1])
        total = sum(grouped[t].values())
        body.append(f'<text x="4" y="{y + row_h / 2:g}" class="label">{_esc(t)}</text>')
        body.append(f'<text x="4" y="{y + row_h / 2 + 11:g}" class="small muted">{total}</text>')
        body.append(
            f'<line x1="{left}" y1="{y + row_h:g}" x2="{WIDTH - 6}" y2="{y + row_h:g}" '
            'class="rule"/>'
        )
        for k, p in enumerate(periods):
            n = grouped[t].get(p, 0)
            if not n:
                continue
            h = max(2.0, (row_h - 2) * n / peak)
            x = left + k * step
            body.append(
                f'<rect x="{x + 0.5:g}" y="{y + row_h - h:g}" width="{max(step - 1, 1):g}" '
                f'height="{h:g}" class="ink bar" data-period="{p}" data-type="{_esc(t)}" '
                f'data-count="{n}"><title>{p}: {n} {_esc(t)}</title></rect>'
            )
    y = 8 + len(types) * (row_h + gap)
    body.append(f'<text x="{left}" y="{y + 4:g}" class="small muted">{periods[0]}</text>')
    body.append(
        f'<text x="{WIDTH - 6}" y="{y + 4:g}" class="small muted" text-anchor="end">'
        f"{periods[-1]}</text>"
    )
    body.append(
        f'<text x="{(left + WIDTH) / 2:g}" y="{y + 4:g}" class="small muted" '
        f'text-anchor="middle">per {unit}</text>'
    )
    table = Markup(_count_table(unit, periods, types, grouped))  # (its values escaped there)
    return _svg(y + 10, body, title, "bars") + table


def _count_table(
    unit: str, periods: list[str], types: list[str], grouped: dict[str, dict[str, int]]
) -> str:
    """The bars' numbers as a table, folded under the picture: a tooltip is no way to read them
    on a phone, nor with a screen reader."""
    head = "".join(f"<th>{_esc(t)}</th>" for t in types)
    rows = "".join(
        f"<tr><td>{p}</td>" + "".join(f"<td>{grouped[t].get(p, 0)}</td>" for t in types) + "</tr>"
        for p in reversed(periods)
        if any(grouped[t].get(p) for t in types)
    )
    return (
        f'<details class="counts"><summary>The counts, per {unit}</summary><div class="scroll">'
        f"<table><thead><tr><th>{unit}</th>{head}</tr></thead><tbody>{rows}</tbody></table>"
        "</div></details>"
    )


# --------------------------------------------------------------------------- relations


def relations(centre: dict[str, Any], groups: dict[str, list[dict[str, Any]]], root: str) -> Markup:
    """How one entry relates to others: what it replaced on the left, what replaced it on the
    right, what it cites below, what cites it above. Arrows run from older to newer along a
    supersession ("replaced by") and from the citing entry to the cited one ("cites").

    ``groups``: "replaced", "replaced_by", "cites", "cited_by" -> dicts with label (and id when
    the node is an entry page of this site); at most four are drawn per side, three per row.
    """
    # four lines: date, kind, the title on two; 92 wide, so "replaced" fits between two boxes
    box_w, box_h, gap = 92, 50, 6
    left, right = _capped(groups.get("replaced", [])), _capped(groups.get("replaced_by", []))
    above, below = _capped(groups.get("cited_by", []), 3), _capped(groups.get("cites", []), 3)
    side_n = max(len(left), len(right), 1)
    middle_h = max(box_h, side_n * (box_h + gap) - gap)
    top_h = box_h + 30 if above else 0
    cx, cy = WIDTH / 2, 8 + top_h + middle_h / 2
    height = 8 + top_h + middle_h + (30 + box_h if below else 0) + 8
    body: list[str] = []

    def node(x: float, y: float, item: dict[str, Any], css: str = "") -> str:
        head = [x for x in (item.get("head", ""), item.get("kind", "")) if x]
        room = box_w - 6  # a line's room inside its box
        head = [_fit(x, room, 9, bold=True) for x in head]
        lines = [*head, *_two_lines(item["label"], room)[: 4 - len(head)]]
        text = "".join(
            f'<text x="{x:g}" y="{y + 3 + 10 * i - 5 * (len(lines) - 1):g}" '
            f'class="{"small strong" if i < len(head) else "small"}" '
            f'text-anchor="middle">{_esc(line)}</text>'
            for i, line in enumerate(lines)
        )
        dashed = " dashed" if item.get("dashed") else ""
        rect = (
            f'<rect x="{x - box_w / 2:g}" y="{y - box_h / 2:g}" width="{box_w}" height="{box_h}" '
            f'rx="4" class="box {css}{dashed}"/>'
        )
        inner = f"<title>{_esc(item.get('title') or item['label'])}</title>{rect}{text}"
        if item.get("id"):
            return (
                f'<a href="{_esc(root)}entries/{_esc(item["id"])}.html" class="node" '
                f'data-id="{_esc(item["id"])}">{inner}</a>'
            )
        return f'<g class="node">{inner}</g>'

    def edge(x1: float, y1: float, x2: float, y2: float, word: str) -> str:
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2
        first, _, second = word.partition(" ")
        label = f'<text x="{mx:g}" y="{my - 3:g}" class="tiny" text-anchor="middle">{first}</text>'
        if second:  # "replaced" above the arrow, "by" below it: both fit between two boxes
            label += (
                f'<text x="{mx:g}" y="{my + 8:g}" class="tiny" text-anchor="middle">{second}</text>'
            )
        return (
            f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" class="stroke" '
            f'marker-end="url(#rel-arrow)"/>{label}'
        )

    def side_y(i: int, n: int) -> float:
        return cy + (i - (n - 1) / 2) * (box_h + gap)

    for i, item in enumerate(left):  # older entries this one replaced: older -> this
        y = side_y(i, len(left))
        body.append(node(box_w / 2 + 2, y, item))
        body.append(edge(box_w + 2, y, cx - box_w / 2, cy, "replaced by"))
    for i, item in enumerate(right):  # newer entries that replaced this one: this -> newer
        y = side_y(i, len(right))
        x = WIDTH - box_w / 2 - 2
        body.append(node(x, y, item))
        body.append(edge(cx + box_w / 2, cy, x - box_w / 2, y, "replaced by"))
    for i, item in enumerate(above):  # entries citing this one: citer -> this
        x = cx + (i - (len(above) - 1) / 2) * (box_w + 8)
        y = 8 + box_h / 2
        body.append(node(x, y, item))
        body.append(edge(x, y + box_h / 2, cx, cy - box_h / 2, "cites"))
    for i, item in enumerate(below):  # what this one cites: this -> cited
        x = cx + (i - (len(below) - 1) / 2) * (box_w + 8)
        y = cy + middle_h / 2 + 30 + box_h / 2
        body.append(node(x, y, item))
        body.append(edge(cx, cy + box_h / 2, x, y - box_h / 2, "cites"))
    body.append(node(cx, cy, centre, "this"))
    defs = (
        '<defs><marker id="rel-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z" class="ink"/>'
        "</marker></defs>"
    )
    return _svg(height, [defs, *body], "How this entry relates to others", "relations")


def _capped(items: list[dict[str, Any]], most: int = 4) -> list[dict[str, Any]]:
    if len(items) <= most:
        return items
    return [*items[: most - 1], {"head": f"+{len(items) - most + 1} more", "label": "listed below"}]


def _two_lines(text: str, room: float, size: float = 9) -> list[str]:
    """``text`` on at most two lines of ``room`` units each: whole words on the first, the rest
    cut to fit on the second."""
    words = " ".join(text.split()).split(" ")
    first, used, space = "", 0, _hundredths(" ")
    while words:
        grown = used + (space if first else 0) + _hundredths(words[0])
        if grown * size / 100 > room:
            break
        first += (" " if first else "") + words.pop(0)
        used = grown
    if not first:  # one long word
        return [_fit(text, room, size)]
    rest = " ".join(words)
    return [first, _fit(rest, room, size)] if rest else [first]

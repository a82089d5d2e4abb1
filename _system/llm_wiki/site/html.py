"""The small pieces every list on the site repeats (an entry's line, a decision with its
reasons), written in Python: a tag or person page lists thousands of entries, and a jinja macro
per line cost more than the rest of the build. Every value goes through ``escape``: markupsafe's
escaping, byte for byte, on plain strings without making a Markup of each (a page of thousands of
entries escapes tens of thousands of values)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup
from markupsafe import escape as _markup_escape


def escape(value: Any) -> str:
    """``markupsafe.escape(value)`` as a plain str (a Markup's own HTML is kept as it is)."""
    if type(value) is not str:
        if hasattr(value, "__html__"):
            return str(_markup_escape(value))
        value = str(value)
    if "&" in value or "<" in value or ">" in value or "'" in value or '"' in value:
        return (
            value.replace("&", "&amp;")
            .replace(">", "&gt;")
            .replace("<", "&lt;")
            .replace("'", "&#39;")
            .replace('"', "&#34;")
        )
    return value

GLYPHS = {"active": "●", "superseded": "⊘", "proposed": "◇", "rejected": "✕", "deprecated": "□"}


def _glyph(status: str) -> str:
    return f'<span class="glyph" aria-hidden="true">{GLYPHS.get(status, "□")}</span>'


def _status_word(e: dict[str, Any]) -> str:
    out = ""
    if e["status"] != "active":
        out += f' · <b class="status">{escape(e["status"])}</b>'
    if e["generated"]:
        out += ' · <span class="generated">generated</span>'
    return out


def _link(e: dict[str, Any], root: str) -> str:
    return f'<a href="{escape(root)}entries/{escape(e["id"])}.html">{escape(e["summary"])}</a>'


def glyph(status: str) -> Markup:
    return Markup(_glyph(status))


def status_word(e: dict[str, Any]) -> Markup:
    return Markup(_status_word(e))


def link(e: dict[str, Any], root: str) -> Markup:
    return Markup(_link(e, root))


def item(e: dict[str, Any], root: str, domain: bool = False) -> str:
    where = (
        f' · <a href="{escape(root)}domains/{escape(e["domain"])}.html">{escape(e["domain"])}</a>'
        if domain
        else ""
    )
    return (
        f'<li class="entry status-{escape(e["status"])}">{_glyph(e["status"])} {_link(e, root)} '
        f'<span class="meta">{escape(e["date"])} · {escape(e["type"])}{where}{_status_word(e)}'
        "</span></li>"
    )


def decision(d: dict[str, Any], root: str, slug: Callable[[str], str]) -> str:
    out = [
        f'<article class="decision status-{escape(d["status"])}">',
        f"<h3>{_glyph(d['status'])} {_link(d, root)}</h3>",
    ]
    by = ""
    if d["actors"]:
        by = " · by " + ", ".join(
            f'<a href="{escape(root)}actors/{escape(slug(a))}.html">{escape(a)}</a>'
            for a in d["actors"]
        )
    out.append(f'<p class="meta">{escape(d["date"])}{by}{_status_word(d)}</p>')
    if d["alternatives"]:
        out.append('<p class="label">Rejected alternatives</p>\n<ul class="reasons">')
        out += [f"<li><b>{escape(alt)}</b> — {escape(why)}</li>" for alt, why in d["alternatives"]]
        out.append("</ul>")
    if d["replaced"]:
        olds = "; ".join(f"{_link(r, root)} ({escape(r['date'])})" for r in d["replaced"])
        out.append(f'<p class="replaced">Replaced: {olds}</p>')
    out.append("</article>")
    return "\n".join(out)


def card(e: dict[str, Any], root: str, slug: Callable[[str], str]) -> Markup:
    """An entry's frontmatter as the card at the top of its page."""
    r = escape(root)
    written = ""
    if e["status"] != e["written_status"]:
        written = f" (written as {escape(e['written_status'])})"
    optional = ""  # (these rows end without a line break, as the template wrote them)
    if e["actors"]:
        optional += (
            "<dt>actors</dt><dd>"
            + ", ".join(
                f'<a href="{r}actors/{escape(slug(a))}.html">{escape(a)}</a>' for a in e["actors"]
            )
            + "</dd>"
        )
    if e["tags"]:
        optional += (
            "<dt>tags</dt><dd>"
            + " ".join(f'<a href="{r}tags/{escape(slug(t))}.html">#{escape(t)}</a>' for t in e["tags"])
            + "</dd>"
        )
    if e["aliases"]:
        optional += "<dt>also known as</dt><dd>" + "; ".join(map(escape, e["aliases"])) + "</dd>"
    if e["questions"]:
        optional += "<dt>answers</dt><dd>" + "<br>".join(map(escape, e["questions"])) + "</dd>"
    archived = f" (archived in <code>{escape(e['archive'])}</code>)" if e["archive"] else ""
    if e["verify"]:
        verify = f'<b class="bad">✕ {escape(e["verify"])}</b> — run <code>llm-wiki verify</code>'
    else:
        verify = (
            '<span class="good">✓ holds</span>: the file matches the sha256 logged when it was '
            "written"
        )
    domain = escape(e["domain"])
    return Markup(
        '<dl class="card">\n'
        f"<dt>id</dt><dd><code>{escape(e['id'])}</code></dd>\n"
        f"<dt>type</dt><dd>{escape(e['type'])}</dd>\n"
        f"<dt>date</dt><dd>{escape(e['date'])}</dd>\n"
        f"<dt>status</dt><dd><b>{escape(e['status'])}</b>{written}</dd>\n"
        f'<dt>domain</dt><dd><a href="{r}domains/{domain}.html">{domain}</a></dd>\n'
        f"{optional}<dt>scope</dt><dd>{escape(e['scope'])}</dd>\n"
        f"<dt>origin</dt><dd>{escape(e['origin'])}</dd>\n"
        f"<dt>file</dt><dd><code>{escape(e['path'])}</code>{archived}</dd>\n"
        f'<dt>sha256</dt><dd><code class="sha">{escape(e["sha256"])}</code></dd>\n'
        f"<dt>verify</dt><dd>{verify}</dd>\n"
        "</dl>"
    )


class Fragments:
    """What the templates call as ``h``: the functions above, with each entry's line and each
    decision written once per build and per page depth (an entry is listed on its domain's page,
    on each of its tags' and actors' pages, and a full build lists every entry some five times).
    A build's entry dicts are never mutated, so an id names one line; a new build, a new
    Fragments."""

    glyph = staticmethod(glyph)
    status_word = staticmethod(status_word)
    link = staticmethod(link)
    card = staticmethod(card)

    def __init__(self) -> None:
        self._items: dict[tuple[str, str, bool], str] = {}
        self._decisions: dict[tuple[str, str], str] = {}

    def entries(
        self, items: Sequence[dict[str, Any]], root: str, domain: bool = False, empty: str = "None."
    ) -> Markup:
        if not items:
            return Markup(f'<p class="none">{escape(empty)}</p>')
        memo, lines = self._items, []
        for e in items:
            key = (e["id"], root, domain)
            line = memo.get(key)
            if line is None:
                line = memo[key] = item(e, root, domain)
            lines.append(line)
        return Markup('<ul class="entries">\n' + "\n".join(lines) + "\n</ul>")

    def decisions(
        self, ds: Sequence[dict[str, Any]], root: str, slug: Callable[[str], str], empty: str
    ) -> Markup:
        if not ds:
            return Markup(f'<p class="none">{escape(empty)}</p>')
        memo, out = self._decisions, []
        for d in ds:
            key = (d["id"], root)
            got = memo.get(key)
            if got is None:
                got = memo[key] = decision(d, root, slug)
            out.append(got)
        return Markup("\n".join(out))

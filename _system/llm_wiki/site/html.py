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


def card(
    e: dict[str, Any], root: str, slug: Callable[[str], str], resolved: bool = False
) -> Markup:
    """An entry's frontmatter as the card at the top of its page; ``resolved``: an incident a
    later entry's ``resolves`` closes (its status reads closed, as its domain page files it)."""
    r = escape(root)
    written = ""
    status = e["status"]
    if resolved and e["type"] == "incident" and status == "active":
        status = "closed"
        written = " (written as active; resolved: see Incidents closed below)"
    elif status != e["written_status"]:
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
            + " ".join(
                f'<a href="{r}tags/{escape(slug(t))}.html">#{escape(t)}</a>' for t in e["tags"]
            )
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
        f"<dt>status</dt><dd><b>{escape(status)}</b>{written}</dd>\n"
        f'<dt>domain</dt><dd><a href="{r}domains/{domain}.html">{domain}</a></dd>\n'
        f"{optional}<dt>scope</dt><dd>{escape(e['scope'])}</dd>\n"
        f"<dt>origin</dt><dd>{escape(e['origin'])}</dd>\n"
        f"<dt>file</dt><dd><code>{escape(e['path'])}</code>{archived}</dd>\n"
        f'<dt>sha256</dt><dd><code class="sha">{escape(e["sha256"])}</code></dd>\n'
        f"<dt>verify</dt><dd>{verify}</dd>\n"
        "</dl>"
    )


def entry_main(
    c: dict[str, Any],
    body_html: str,
    picture: str,
    excerpts: dict[str, list[tuple[int, str, bool]]],
    root: str,
    slug: Callable[[str], str],
    lists: Fragments,
) -> str:
    """The main part of an entry's page (what templates/site/entry.html frames): the card, the
    body, its alternatives, the relations picture, the supersession chain, the sources with their
    cited lines, what cites it. Written here rather than in jinja: ten thousand of them make most
    of a full build, and one call with plain-string escaping costs a third of the template."""
    e, r = c["entry"], escape(root)
    out = [f"<h1>{_glyph(e['status'])} {escape(e['summary'])}</h1>\n"]
    replaced_by = c["replaced_by"]
    if replaced_by:
        by = "; ".join(
            f'<a href="{r}entries/{escape(x["id"])}.html" class="replaced-by">'
            f"{escape(x['summary'])}</a> ({escape(x['date'])})"
            for x in replaced_by
        )
        out.append(
            '<div class="banner superseded" role="note">\n'
            f"<p><b>Superseded.</b> Replaced by {by}.</p>\n</div>\n"
        )
    if e["generated"]:
        how = (
            "Made without an LLM, each statement an active entry's own summary"
            if e.get("method") == "extractive"
            else "Written by an LLM"
        )
        out.append(
            f'<div class="banner generated-box" role="note"><p><b>Generated.</b> {how} '
            f"(origin: {escape(e['origin'])}): orientation, not evidence. Its citations point to "
            "the entries it rests on.</p></div>\n"
        )
    resolved = bool(c["resolved_by"])
    out.append(
        f'\n{card(e, root, slug, resolved)}\n\n<h2>Body</h2>\n<div class="body">{body_html}</div>\n\n'
    )
    if c["alternatives"]:
        out.append('<h2>Alternatives considered</h2>\n<ul class="reasons">\n')
        out += [
            f"<li><b>{escape(alt)}</b> — rejected because {escape(because)}</li>\n"
            for alt, because in c["alternatives"]
        ]
        out.append("</ul>\n")
    out.append(
        f"\n<h2>Relations</h2>\n<figure>{picture}<figcaption>Left: what it replaced; right: what "
        "replaced it; below: what it cites; above: what cites it.</figcaption></figure>\n\n"
    )
    replaced, lineage = c["replaced"], c["lineage"]
    if replaced or replaced_by or lineage:
        out.append("<h3>Supersession</h3>\n")
        if replaced:
            out.append(f"<p>It replaced:</p>{lists.entries(replaced, root)}")
        if replaced_by:
            out.append(f"<p>It was replaced by:</p>{lists.entries(replaced_by, root)}")
        if lineage:
            out.append(
                '<p>The whole line of this decision, oldest first:</p>\n<ol class="lineage">\n'
            )
            for x in lineage:
                name = (
                    f"<b>{escape(x['summary'])}</b> (this entry)"
                    if x["id"] == e["id"]
                    else _link(x, root)
                )
                out.append(
                    f'<li class="status-{escape(x["status"])}">{name} <span class="meta">'
                    f"{escape(x['date'])}{_status_word(x)}</span></li>\n"
                )
            out.append("</ol>\n")
    resolves, resolved_by = c.get("resolves"), c.get("resolved_by")
    if resolves or resolved_by:
        out.append("<h3>Incidents closed</h3>\n")
        if resolves:
            out.append(f"<p>It resolves:</p>{lists.entries(resolves, root)}")
        if resolved_by:
            out.append(f"<p>Resolved by:</p>{lists.entries(resolved_by, root)}")
    out.append("\n<h3>Sources</h3>\n")
    if c["sources"]:
        out.append('<ul class="sources">\n')
        for s in c["sources"]:
            out.append("<li>\n")
            kind = s["kind"]
            if kind == "entry":
                ref = s["ref"]
                out.append(
                    f'entry {_link(ref, root)} <span class="meta">{escape(ref["date"])}'
                    f"{_status_word(ref)}</span>\n"
                )
            elif kind == "raw":
                at = f"#L{escape(s['first'])}" if s["first"] else ""
                out.append(
                    f'raw source <a href="{r}{escape(s["name"])}.html{at}"><code>'
                    f"{escape(s['source'])}</code></a>\n"
                )
                if s["source"] in excerpts:
                    out.append('<pre class="excerpt">')
                    out += [
                        f'<span class="{"hit" if hit else "ctx"}"><span class="ln">{escape(n)}'
                        f"</span>{escape(line)}</span>\n"
                        for n, line, hit in excerpts[s["source"]]
                    ]
                    out.append("</pre>\n")
            elif kind == "adr":
                out.append(f"imported from the ADR file <code>{escape(s['name'])}</code>\n")
            else:
                out.append(f"<code>{escape(s['source'])}</code>\n")
            out.append("</li>\n")
        out.append("</ul>\n")
    else:
        out.append('<p class="none">None listed.</p>\n')
    out.append(
        f"\n<h3>Cited by</h3>\n{lists.entries(c['cited_by'], root, True, 'No entry cites it.')}\n"
    )
    return "".join(out)


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

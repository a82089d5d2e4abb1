"""Entry bodies as HTML: CommonMark through markdown-it-py, made safe for a static site.

- Raw HTML in a body is shown as text (``html`` off): an entry holding ``<script>`` cannot run it.
- Images are not loaded (the rule is off): ``![x](https://…)`` would be a request leaving the
  site. It renders as text and a link.
- A relative link points at a file of wherever the text came from (an ADR folder, a repository):
  it becomes a link to the entry imported from that file when this site has one, else plain text,
  so no page links to a page that does not exist. Links with a scheme (https, mailto) stay links.
- ``[<entry id>]`` (how syntheses and answers cite) links to that entry when the reader may see it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

CITE_RE = re.compile(r"\[(\d{4}-\d\d-\d\d-[a-z0-9][a-z0-9-]*[a-z0-9])\]")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@functools.cache
def _md() -> Any:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    return md


def words(text: str) -> list[str]:
    """The distinct words of a text, lowercased, in order of first use (for search; MiniSearch
    splits on the same non-word characters)."""
    return list(dict.fromkeys(_WORD_RE.findall(text.lower())))


_WORD_RE = re.compile(r"\w+")


def render_body(
    text: str,
    *,
    entry_href: Callable[[str], str | None],
    file_href: Callable[[str], str | None] = lambda _: None,
) -> Markup:
    """``text`` (markdown) as safe HTML. ``entry_href(id)``: the relative URL of a visible
    entry's page, else None; ``file_href(name)``: the same for a file a relative link names."""
    md = _md()
    tokens = md.parse(text)
    for block in tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        for tok in block.children:
            if tok.type == "link_open":
                href = str(tok.attrGet("href") or "")
                if not href.startswith("#") and not _SCHEME_RE.match(href):
                    target = file_href(href.split("#", 1)[0].rsplit("/", 1)[-1])
                    if target is None:
                        tok.tag = "span"
                        tok.attrs = {"class": "unlinked", "title": href}
                    else:
                        tok.attrs = {"href": target}
                else:
                    tok.attrs = {"href": href, "rel": "noopener noreferrer"}
                    if href.startswith("#"):
                        tok.attrs = {"href": href}
            elif tok.type == "link_close" and children:
                opener = next(t for t in reversed(children) if t.type == "link_open")
                tok.tag = opener.tag
            if tok.type == "text" and "[" in tok.content and not _inside_link(children):
                children.extend(_cite(tok, entry_href, Token))
                continue
            children.append(tok)
        block.children = children
    return Markup(md.renderer.render(tokens, md.options, {}))


def _inside_link(children: list[Any]) -> bool:
    depth = 0
    for t in children:
        depth += 1 if t.type == "link_open" else -1 if t.type == "link_close" else 0
    return depth > 0


def _cite(tok: Any, entry_href: Callable[[str], str | None], token: Any) -> list[Any]:
    """Split a text token so each ``[id]`` of a visible entry becomes a link."""
    out, pos = [], 0
    for m in CITE_RE.finditer(tok.content):
        href = entry_href(m.group(1))
        if href is None:
            continue
        if m.start() > pos:
            out.append(_text(token, tok.content[pos : m.start()]))
        opener = token("link_open", "a", 1)
        opener.attrs = {"href": href, "class": "cite"}
        out += [opener, _text(token, m.group(0)), token("link_close", "a", -1)]
        pos = m.end()
    if not out:
        return [tok]
    if pos < len(tok.content):
        out.append(_text(token, tok.content[pos:]))
    return out


def _text(token: Any, content: str) -> Any:
    t = token("text", "", 0)
    t.content = content
    return t

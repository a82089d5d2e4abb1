"""Entry bodies as HTML: CommonMark, made safe for a static site.

- Raw HTML in a body is shown as text (``html`` off): an entry holding ``<script>`` cannot run it.
- Images are not loaded (the rule is off): ``![x](https://…)`` would be a request leaving the
  site. It renders as text and a link.
- A relative link points at a file of wherever the text came from (an ADR folder, a repository):
  it becomes a link to the entry imported from that file when this site has one, else plain text,
  so no page links to a page that does not exist. Links with a scheme (https, mailto) stay links.
- ``[<entry id>]`` (how syntheses and answers cite) links to that entry when the reader may see it.

Two CommonMark implementations do the rendering: cmark-gfm (GitHub's C library, through
``cmarkgfm``), about twenty times faster, for a body that holds none of what the rules above
change in the parse itself (``<``, ``![``, an entity, a refused link scheme); markdown-it-py,
whose token stream the rules are written on, for every other body. They give the same bytes for
every body of the real ADR folders (a test holds this), not for every string: on random text
about 0.7% of bodies differ cosmetically (an unclosed fence at the end gains a newline, an empty
blockquote a newline inside it, CR line endings and a tab before a backslash break, a lone ``%``
in a link title), all of them cosmetic. cmark's links and citations
are then rewritten in its HTML, where a tag can only be one cmark wrote (text is escaped).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from markupsafe import Markup

CITE_RE = re.compile(r"\[(\d{4}-\d\d-\d\d-[a-z0-9][a-z0-9-]*[a-z0-9])\]")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@functools.cache
def _md() -> Any:
    from markdown_it import MarkdownIt  # deferred: most bodies never need it

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    return md


# What cmark would parse differently from the rules above: raw HTML and autolinks (``<``), images,
# reference definitions (the two disagree on a few), entities (one can spell a refused scheme), a
# link to a scheme markdown-it refuses (cmark links it with an empty href), odd white space.
_ENTITY_RE = re.compile(r"&[#A-Za-z0-9]+;")
# Characters Python's str.strip() takes for white space and CommonMark does not: markdown-it-py
# trims them at a line's end, cmark keeps them.
_ODD_ASCII_SPACE = "\x0b\x0c\x1c\x1d\x1e\x1f"
_ODD_SPACE_RE = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_REFUSED_RE = re.compile(r"\]\(\s*(?i:javascript|vbscript|file|data):")


def _cmark_renders(text: str) -> bool:
    """Whether cmark renders ``text`` as the rules above want (plain substring tests first: a
    case-blind regex over every body cost more than cmark's whole render)."""
    if "<" in text:
        return False
    # "]" first: one character is looked for at memchr's speed, and an image needs a "]"
    if "]" in text and (
        "]:" in text or "![" in text or ("](" in text and _REFUSED_RE.search(text))
    ):
        return False
    if "&" in text and _ENTITY_RE.search(text):
        return False
    if text.isascii():  # (a flag, not a scan) then only the control characters need looking for
        return not any(c in text for c in _ODD_ASCII_SPACE)
    return not _ODD_SPACE_RE.search(text)


# In cmark's HTML: a link's opening tag, a closing one, a code span or block (never cited in), or
# any other tag; what lies between is text.
_CMARK_PART_RE = re.compile(
    r'<a href="([^"]*)"(?: title="[^"]*")?>|(</a>)|<code[^>]*>.*?</code>|<[^>]*>', re.S
)


def words(text: str) -> list[str]:
    """The distinct words of a text, lowercased, in order of first use (for search; MiniSearch
    splits on the same non-word characters). ASCII text (most bodies) is split by a byte
    translation, which finds the same words as ``\\w+`` at a third of its cost."""
    low = text.lower()
    if low.isascii():
        return list(dict.fromkeys(low.encode("ascii").translate(_ASCII_NONWORD).decode().split()))
    return list(dict.fromkeys(_WORD_RE.findall(low)))


_WORD_RE = re.compile(r"\w+")
# Every byte that is not an ASCII letter, digit or underscore (what ``\w`` matches in ASCII) -> space.
_ASCII_NONWORD = bytes(c if chr(c).isalnum() or c == 95 else 32 for c in range(128)) + b" " * 128


def render_body(
    text: str,
    *,
    entry_href: Callable[[str], str | None],
    file_href: Callable[[str], str | None] = lambda _: None,
) -> Markup:
    """``text`` (markdown) as safe HTML. ``entry_href(id)``: the relative URL of a visible
    entry's page, else None; ``file_href(path)``: the same for a file a relative link names
    (its path as the link writes it, without its #fragment)."""
    if _cmark_renders(text):
        return Markup(_with_heading_ids(_render_cmark(text, entry_href, file_href)))
    return Markup(_with_heading_ids(_render_markdown_it(text, entry_href, file_href)))


_HEADING_RE = re.compile(r"<h([1-6])>(.*?)</h\1>", re.S)
_TAG_RE = re.compile(r"<[^>]*>")
_NOT_ANCHOR_RE = re.compile(r"[^\w\- ]")
# The ids the site's own pages give their parts (templates/site/): a heading never takes one.
PAGE_IDS = frozenset(
    """current history incidents months proposed synthesis timeline changed domains new open
    archives consolidation lint llm operations settings verify op-filter shown text-filter q
    results search-form search-status""".split()
)


def _with_heading_ids(out: str) -> str:
    """Each heading of a body with the anchor GitHub gives it, so that a record's link to
    "#node-instance-types" lands: its text lowercased, characters other than letters, digits,
    "-", "_" and spaces dropped, spaces as "-", a repeat numbered ("-1", "-2"). A heading whose
    anchor is one of the page's own ids (:data:`PAGE_IDS`) gets none."""
    if "<h" not in out:
        return out
    import html  # deferred: html.entities' table, only for a body with a heading

    seen: dict[str, int] = {}

    def add(m: re.Match[str]) -> str:
        text = html.unescape(_TAG_RE.sub("", m.group(2))).strip().lower()
        base = _NOT_ANCHOR_RE.sub("", text).replace(" ", "-")
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchor = base if n == 0 else f"{base}-{n}"
        if not base or anchor in PAGE_IDS:
            return m.group(0)
        return f'<h{m.group(1)} id="{_attr(anchor)}">{m.group(2)}</h{m.group(1)}>'

    return _HEADING_RE.sub(add, out)


def _render_markdown_it(
    text: str,
    entry_href: Callable[[str], str | None],
    file_href: Callable[[str], str | None],
) -> str:
    from markdown_it.token import Token  # deferred: most bodies never need markdown-it

    md = _md()
    tokens = md.parse(text)
    for block in tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        for tok in block.children:
            if tok.type == "link_open":
                tok.tag, tok.attrs = _link_attrs(str(tok.attrGet("href") or ""), file_href)
            elif tok.type == "link_close" and children:
                opener = next(t for t in reversed(children) if t.type == "link_open")
                tok.tag = opener.tag
            if tok.type == "text" and "[" in tok.content and not _inside_link(children):
                children.extend(_cite(tok, entry_href, Token))
                continue
            children.append(tok)
        block.children = children
    return str(md.renderer.render(tokens, md.options, {}))


def _link_attrs(href: str, file_href: Callable[[str], str | None]) -> tuple[str, dict[str, str]]:
    """The tag and attributes of a link to ``href`` (normalised, not escaped), by the rules above."""
    if not href.startswith("#") and not _SCHEME_RE.match(href):
        target = file_href(href.split("#", 1)[0])
        if target is None:
            return "span", {"class": "unlinked", "title": href}
        return "a", {"href": target}
    if href.startswith("#"):
        return "a", {"href": href}
    return "a", {"href": href, "rel": "noopener noreferrer"}


def _render_cmark(
    text: str,
    entry_href: Callable[[str], str | None],
    file_href: Callable[[str], str | None],
) -> str:
    """``text`` through cmark-gfm (safe mode, no extensions), links and citations rewritten as
    :func:`render_body` does on markdown-it's tokens, byte for byte the same HTML."""
    import cmarkgfm  # deferred: only a site build renders bodies

    out = cmarkgfm.markdown_to_html(text, options=0)
    if "<a " not in out and "[" not in out:
        return out

    def cite(m: re.Match[str]) -> str:
        href = entry_href(m.group(1))
        return (
            m.group(0) if href is None else f'<a href="{_attr(href)}" class="cite">{m.group(0)}</a>'
        )

    parts: list[str] = []
    pos, closers = 0, list[str]()  # (cmark nests no link in a link, but a stack costs nothing)
    for m in _CMARK_PART_RE.finditer(out):
        between = out[pos : m.start()]
        if not closers and "[" in between:
            between = CITE_RE.sub(cite, between)
        parts.append(between)
        pos = m.end()
        if m.group(1) is not None:  # a link (cmark makes no link inside a link)
            import html  # deferred: html.entities' table (~2 ms), only for a body with a link

            tag, attrs = _link_attrs(html.unescape(m.group(1)), file_href)
            parts.append(f"<{tag}" + "".join(f' {k}="{_attr(v)}"' for k, v in attrs.items()) + ">")
            closers.append(f"</{tag}>")
        elif m.group(2) is not None:
            parts.append(closers.pop() if closers else "</a>")
        else:
            parts.append(m.group(0))
    tail = out[pos:]
    parts.append(CITE_RE.sub(cite, tail) if "[" in tail else tail)
    return "".join(parts)


def _attr(value: str) -> str:
    """markdown-it's escaping of an attribute value."""
    return (
        value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


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

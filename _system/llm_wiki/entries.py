"""The entry: model, parse/dump, ids, and the checks of its fields' shapes.

An entry is a frozen :class:`Entry`. Text becomes an entry only through :func:`parse_entry` and
an entry becomes text only through :func:`dump_entry`, so the frontmatter key order, the date
format and the body's edges are the same everywhere. User input (CLI flags, ``--from`` files,
MCP calls, LLM proposals) goes through :func:`entry_from_mapping`, which names the field and the
fix for anything wrong; :func:`llm_wiki.schema.check_entry` applies the schema's rules.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import sys
from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from llm_wiki.errors import InvalidInput
from llm_wiki.records import Frozen, dataclass_on_first_use
from llm_wiki.slugs import slugify
from llm_wiki.yaml_input import (  # re-exported: the entry's readers import them from here
    LIMITS,
    TAG_FLOAT,
    TAG_INT,
    TAG_TIMESTAMP,
    Plain,
    YamlLimits,
    load_json,
    load_yaml,
)

# CPython's own SHA-256: loading OpenSSL through hashlib costs ~2 ms of every `write`. Its
# module's name is asked of the version, not tried: a failed import searches all of sys.path.
try:
    if sys.version_info >= (3, 12):
        from _sha2 import sha256  # type: ignore[import-not-found, unused-ignore]
    else:
        from _sha256 import sha256  # type: ignore[import-not-found, no-redef, unused-ignore]
except ImportError:  # pragma: no cover - other interpreters
    from hashlib import sha256  # type: ignore[assignment, unused-ignore]

TYPES_DEFAULT = ("decision", "synthesis", "incident", "reflection")
STATUSES = ("active", "proposed", "rejected", "deprecated")
ORIGINS = ("authored", "imported", "ingested", "consolidated", "answer")
GENERATED_ORIGINS = frozenset({"consolidated", "answer"})
# The reason an importer gives an option the record rejects without saying why (lint counts them).
PLACEHOLDER_REASON = "not chosen (the record gives no reason)"
# Where an entry's date came from, when it is not the writer's own (``date_source``): the record
# itself, the commit that added the record's file, a date in its file name, the file's mtime.
DATE_SOURCES = ("record", "git", "file-name", "mtime")
# Who did what (``roles``): MADR's decision-makers / Deciders, consulted, informed.
ROLES = ("decider", "consulted", "informed")
# Typed links to other entries (``relates``), each read "this entry <kind> that one". A kind and
# its inverse name one relation seen from either end (the importer stores it on the later entry).
RELATION_INVERSE = {
    "amends": "amended-by",
    "refines": "refined-by",
    "extends": "extended-by",
    "supplements": "supplemented-by",
    "partly-supersedes": "partly-superseded-by",
    "reverses": "reversed-by",
    "relates-to": "relates-to",
    "cites": "cited-by",
}
RELATION_INVERSE.update({v: k for k, v in list(RELATION_INVERSE.items())})
RELATION_KINDS = tuple(sorted(RELATION_INVERSE))
MAX_BODY_BYTES = 1024 * 1024
MAX_TEXT_CHARS = 500  # each tag, actor, alias, question, source, alternative id and reason
MAX_LIST_ITEMS = 100  # each list field, alternatives_considered included
MAX_INPUT_BYTES = 2 * 1024 * 1024  # a --from file or stdin is read no further

# Frontmatter order: fixed, so dumps are stable and diffs are readable.
SCALAR_FIELDS = (
    "id",
    "type",
    "date",
    "date_source",
    "summary",
    "domain",
    "status",
    "scope",
    "origin",
)
LIST_FIELDS = ("actors", "tags", "supersedes", "resolves", "aliases", "questions", "sources")
KEY_ORDER = (
    "id",
    "type",
    "date",
    "date_source",
    "actors",
    "roles",
    "tags",
    "domain",
    "summary",
    "status",
    "supersedes",
    "resolves",
    "relates",
    "alternatives_considered",
    "aliases",
    "questions",
    "scope",
    "origin",
    "sources",
)
KNOWN_FIELDS = frozenset(KEY_ORDER)
# Written only when they hold something, so entries from before they existed dump as they were.
OPTIONAL_FIELDS = frozenset({"date_source", "roles", "relates", "resolves"})

# \Z, not $: "$" also matches before a trailing newline, and these names become file names and
# log.md fields.
ID_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,158}[a-z0-9])?\Z")
NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?\Z")  # domain, scope
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")


class Alternative(Frozen):
    """An option the entry weighed and did not take, and why."""

    FIELDS = ("id", "rejected_because")
    __slots__ = FIELDS
    id: str
    rejected_because: str

    def __init__(self, id: str, rejected_because: str) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "rejected_because", rejected_because)


class Relation(Frozen):
    """A typed link: this entry ``kind`` the entry ``id`` (e.g. amends, refines, relates-to)."""

    FIELDS = ("id", "kind")
    __slots__ = FIELDS
    id: str
    kind: str

    def __init__(self, id: str, kind: str) -> None:
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "kind", kind)


@dataclass_on_first_use  # dataclasses.replace works on it; list, which builds none, skips that
class Entry(Frozen):
    """One entry: its frontmatter fields (in KEY_ORDER) and its markdown body. A frozen record
    that ``dataclasses.replace`` and ``dataclasses.fields`` take (see
    :func:`~llm_wiki.records.dataclass_on_first_use`)."""

    id: str
    type: str
    date: str
    summary: str
    domain: str
    status: str = "active"
    scope: str = "shared"
    origin: str = "authored"
    actors: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    resolves: tuple[str, ...] = ()  # incidents this entry says it resolves (closes)
    alternatives_considered: tuple[Alternative, ...] = ()
    date_source: str = ""  # empty: the writer's own date (see DATE_SOURCES)
    roles: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (role, actors), roles in ROLES order
    relates: tuple[Relation, ...] = ()
    aliases: tuple[str, ...] = ()
    questions: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    extra: tuple[tuple[str, Any], ...] = ()  # other frontmatter keys, sorted
    body: str = ""

    FIELDS = tuple(__annotations__)  # the fields above, in order (no __slots__: the defaults)

    def __init__(
        self,
        id: str,
        type: str,
        date: str,
        summary: str,
        domain: str,
        status: str = "active",
        scope: str = "shared",
        origin: str = "authored",
        actors: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
        supersedes: tuple[str, ...] = (),
        resolves: tuple[str, ...] = (),
        alternatives_considered: tuple[Alternative, ...] = (),
        date_source: str = "",
        roles: tuple[tuple[str, tuple[str, ...]], ...] = (),
        relates: tuple[Relation, ...] = (),
        aliases: tuple[str, ...] = (),
        questions: tuple[str, ...] = (),
        sources: tuple[str, ...] = (),
        extra: tuple[tuple[str, Any], ...] = (),
        body: str = "",
    ) -> None:
        self.__dict__.update(  # Frozen refuses setattr; a full build makes 100k of these
            id=id,
            type=type,
            date=date,
            summary=summary,
            domain=domain,
            status=status,
            scope=scope,
            origin=origin,
            actors=actors,
            tags=tags,
            supersedes=supersedes,
            resolves=resolves,
            alternatives_considered=alternatives_considered,
            date_source=date_source,
            roles=roles,
            relates=relates,
            aliases=aliases,
            questions=questions,
            sources=sources,
            extra=extra,
            body=body,
        )

    @property
    def is_generated(self) -> bool:
        """Written by an LLM: readable, never evidence for a synthesis."""
        return self.origin in GENERATED_ORIGINS

    @property
    def relpath(self) -> str:
        """Where the entry lives, relative to the wiki root."""
        return entry_relpath(self.id, self.date)

    def role_of(self, actor: str) -> str:
        """The actor's role ("" if the entry names none)."""
        return next((role for role, names in self.roles if actor in names), "")

    def get_extra(self, key: str, default: Any = None) -> Any:
        for k, v in self.extra:
            if k == key:
                return v
        return default

    def to_dict(self) -> dict[str, Any]:
        """Frontmatter as a plain dict (JSON-safe), in the file's key order, plus body."""
        data = _frontmatter(self)
        data["body"] = self.body
        return data


def entry_relpath(entry_id: str, date: str) -> str:
    return f"entries/{date[:4]}/{date[5:7]}/{entry_id}.md"


# --------------------------------------------------------------------------- text <-> entry


def dump_entry(entry: Entry) -> str:
    """The one way an entry becomes file text.

    The frontmatter is emitted here rather than by PyYAML (importing yaml costs ~10 ms, which is
    most of what ``write`` may spend): the known fields are plain strings and lists, written as
    plain YAML scalars when that is unambiguous and as double-quoted ones otherwise. Extra fields
    of any shape go through yaml's own dumper. ``parse_entry(dump_entry(e)) == e`` is
    property-tested.
    """
    out = ["---"]
    for key in KEY_ORDER:
        value = getattr(entry, key)
        if key in OPTIONAL_FIELDS and not value:
            continue
        if key == "date":
            out.append(f"date: {value}" if valid_date(value) else f"date: {_scalar_text(value)}")
        elif key == "roles":
            out.append("roles:")
            for role, names in value:
                flow = ", ".join(_scalar_text(n, flow=True) for n in names)
                out.append(f"  {_scalar_text(role)}: [{flow}]")
        elif key == "relates":
            out.append("relates:")
            for rel in value:
                out.append(f"- id: {_scalar_text(rel.id)}")
                out.append(f"  kind: {_scalar_text(rel.kind)}")
        elif key == "alternatives_considered":
            if not value:
                out.append(f"{key}: []")
                continue
            out.append(f"{key}:")
            for alt in value:
                out.append(f"- id: {_scalar_text(alt.id)}")
                out.append(f"  rejected_because: {_scalar_text(alt.rejected_because)}")
        elif isinstance(value, tuple):
            out.append(f"{key}: [{', '.join(_scalar_text(v, flow=True) for v in value)}]")
        else:
            out.append(f"{key}: {_scalar_text(value)}")
    if entry.extra:
        import yaml  # deferred: PyYAML, only for fields beyond the tool's own

        head = yaml.dump(
            dict(entry.extra),
            Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=100,
        )
        out.append(head.rstrip("\n"))
    out.append("---")
    text = "\n".join(out) + "\n"
    if entry.body:
        text += entry.body + "\n"
    return text


# A plain scalar is used only when YAML cannot read it as anything but this string: it starts
# with a letter or one of a few safe characters, holds no indicator that could end or change it,
# does not end in a space, and is not one of YAML 1.1's words for booleans and null.
_PLAIN = r"[A-Za-z_(/][A-Za-z0-9 _()/.'%+=;!?@$&*^~<>-]*"
_PLAIN_BLOCK = r"[A-Za-z_(/][A-Za-z0-9 _()/.'%+=;!?@$&*^~<>,\[\]{}-]*"
_YAML_WORDS = frozenset(["y", "n", "yes", "no", "true", "false", "on", "off", "null", "~"])
# Entry ids start with a date; followed by a hyphen and more, YAML reads them as text.
_ID_PLAIN = r"\d{4}-\d\d-\d\d-[a-z0-9-]*[a-z0-9]"
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\x00": "\\0",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}


# What the three patterns above match, as character sets (a write compiled them: ~0.5 ms).
_PLAIN_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_(/")
_PLAIN_REST = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _()/.'%+=;!?@$&*^~<>-"
)
_PLAIN_BLOCK_REST = _PLAIN_REST | frozenset(",[]{}")
_ID_TAIL = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def _id_plain(value: str) -> bool:
    """``re.fullmatch(_ID_PLAIN, value)``; ``\\d`` is any Unicode decimal digit, as
    ``str.isdecimal`` tells (both are category Nd)."""
    return (
        len(value) > 11
        and value[4] == value[7] == value[10] == "-"
        and value[:4].isdecimal()
        and value[5:7].isdecimal()
        and value[8:10].isdecimal()
        and _ID_TAIL.issuperset(value[11:])
        and value[-1] != "-"
    )


def _scalar_text(value: str, *, flow: bool = False) -> str:
    if _id_plain(value):
        return value
    if (
        value
        and value[0] in _PLAIN_FIRST
        and (_PLAIN_REST if flow else _PLAIN_BLOCK_REST).issuperset(value)
        and not value.endswith(" ")
        and "  " not in value
        and value.lower() not in _YAML_WORDS
    ):
        return value
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'  # nothing to escape: no need to compile _quote_re
    return '"' + _quote_re().sub(_escape, value) + '"'


@functools.cache
def _quote_re() -> re.Pattern[str]:
    """Characters a double-quoted scalar must escape (compiled on first use: ~1 ms)."""
    return re.compile('[\\\\"\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]')


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _frontmatter(entry: Entry) -> dict[str, Any]:
    """The frontmatter as plain data (JSON-safe), in file order."""
    data: dict[str, Any] = {}
    for key in KEY_ORDER:
        value = getattr(entry, key)
        if key in OPTIONAL_FIELDS and not value:
            continue
        if key == "alternatives_considered":
            value = [{"id": a.id, "rejected_because": a.rejected_because} for a in value]
        elif key == "roles":
            value = {role: list(names) for role, names in value}
        elif key == "relates":
            value = [{"id": r.id, "kind": r.kind} for r in value]
        elif isinstance(value, tuple):
            value = list(value)
        data[key] = value
    for key, value in entry.extra:
        data[key] = value
    return data


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split ``---\\n<yaml>---\\n<body>`` into its two parts; raise InvalidInput if absent."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        raise InvalidInput(
            "no frontmatter: an entry starts with a '---' line, then YAML, then '---'."
        )
    start = text.index("\n") + 1
    match = _close_re().search(text, start - 1)
    if match is None:
        raise InvalidInput("frontmatter is not closed: add a '---' line after the YAML fields.")
    return text[start : match.start() + 1], text[match.end() :]


@functools.cache
def _close_re() -> re.Pattern[str]:
    """The line that closes the frontmatter (compiled when a file is first read: write and list
    read none)."""
    return re.compile(r"\n---[ \t]*(?:\r?\n|$)")


# --------------------------------------------------------------------------- the fast path
#
# Reading an entry's frontmatter with PyYAML is most of what a full index build costs, and importing
# PyYAML is most of what `show` may spend. Nearly every file is laid out exactly as dump_entry wrote
# it: the known keys in KEY_ORDER, one per line, each value a plain scalar that _scalar_text chose
# (so YAML reads it as that very string), a double-quoted scalar with dump_entry's escapes, a flow
# list of those, the alternatives' and relations' two-line items, or a role's `  role: [a, b]`
# (the optional keys only when dump_entry wrote them). fast_frontmatter reads exactly that layout
# and returns None for anything else (a key out of place, an extra field, a comment, a tab, a CR,
# a scalar dump_entry would not have written plain, an escape it does not use), which then goes to
# YAML. tests/test_entries.py proves the two agree, by property, on dumped and on mangled text.

_LIST_KEYS = frozenset(LIST_FIELDS)
_YAML_ESCAPES = {
    "\\": "\\",
    '"': '"',
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\x00",
    "N": "\x85",
    "L": "\u2028",
    "P": "\u2029",
}
_ALT_ID = "- id: "
_ALT_REASON = "  rejected_because: "
_REL_KIND = "  kind: "


if TYPE_CHECKING:

    class _FastRes(NamedTuple):
        block: re.Pattern[str]  # a scalar _scalar_text writes plain, in block context
        flow: re.Pattern[str]  # ... in a flow list
        plain_list: re.Pattern[str]  # a flow list of plain items only


@functools.cache
def _fast_res() -> _FastRes:
    """The fast path's patterns, compiled on first use (``write`` never reads frontmatter), in a
    tuple class made here too (a namedtuple costs ~0.1 ms to make; mypy sees the typed one).

    ``block`` and ``flow`` accept exactly what _scalar_text writes plain, bar the YAML words
    (checked apart): _ID_PLAIN, or _PLAIN_BLOCK / _PLAIN without a double or trailing
    space, spelled as one pattern (a space only ever followed by another allowed character).
    """
    block_chars = "A-Za-z0-9_()/.'%+=;!?@$&*^~<>,\\[\\]{}-"
    flow_chars = "A-Za-z0-9_()/.'%+=;!?@$&*^~<>-"
    ident = _ID_PLAIN
    block = f"(?:{ident}|[A-Za-z_(/](?: ?[{block_chars}])*)"
    flow = f"(?:{ident}|[A-Za-z_(/](?: ?[{flow_chars}])*)"
    # mypy checks the typed _FastRes above; this is its run-time class, named as it is
    res = namedtuple("_FastRes", ["block", "flow", "plain_list"])  # type: ignore[name-match]
    return res(  # type: ignore[return-value]
        block=re.compile(block),
        flow=re.compile(flow),
        plain_list=re.compile(f"\\[{flow}(?:, {flow})*\\]"),
    )


@functools.cache
def _quoted_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """What a double-quoted scalar may hold, and its escapes: compiled only for a value that is
    not plain printable ASCII (~0.4 ms, a large Unicode class)."""
    quoted = re.compile(
        '(?:[^\\\\"\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]'
        '|\\\\(?:[\\\\"ntr0NLP]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}))*'
    )
    return quoted, re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)")


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code[1:], 16)) if len(code) > 1 else _YAML_ESCAPES[code]


def _fast_quoted(inner: str, res: _FastRes) -> str | None:
    if inner.isascii() and inner.isprintable() and '"' not in inner and "\\" not in inner:
        return inner  # what ``quoted`` accepts, with nothing to unescape
    quoted, escape = _quoted_res()
    if not quoted.fullmatch(inner):
        return None
    return escape.sub(_unescape, inner) if "\\" in inner else inner


def _fast_scalar(raw: str, res: _FastRes, flow: bool = False) -> str | None:
    """The string a scalar written by _scalar_text stands for, or None if it is not one."""
    if raw[:1] == '"':
        # an escaped closing quote leaves a lone backslash inside, which ``quoted`` refuses
        return _fast_quoted(raw[1:-1], res) if len(raw) > 1 and raw[-1] == '"' else None
    if not (res.flow if flow else res.block).fullmatch(raw):
        return None
    if len(raw) < 6 and raw.lower() in _YAML_WORDS:
        return None
    return raw


def _closing_quote(raw: str, start: int) -> int:
    """Where the double-quoted scalar opening at ``raw[start]`` closes (-1: it does not): the
    next ``"`` behind an even run of backslashes."""
    close = start + 1
    while True:
        close = raw.find('"', close)
        if close < 0:
            return -1
        run = close - len(raw[:close].rstrip("\\"))
        if run % 2 == 0:
            return close
        close += 1


def _fast_list(raw: str, res: _FastRes) -> list[str] | None:
    """A flow list as dump_entry writes it: ``[a, "b, c", d]`` (``[]`` when empty)."""
    if raw == "[]":
        return []
    if '"' not in raw:
        if not res.plain_list.fullmatch(raw):
            return None
        items = raw[1:-1].split(", ")
        for plain in items:
            if len(plain) < 6 and plain.lower() in _YAML_WORDS:
                return None
        return items
    if raw[:1] != "[" or raw[-1:] != "]":
        return None
    out: list[str] = []
    pos, end = 1, len(raw) - 1
    while True:
        item: str | None
        if raw[pos : pos + 1] == '"':
            close = _closing_quote(raw, pos)
            if close < 0 or close >= end:
                return None
            item = _fast_quoted(raw[pos + 1 : close], res)
            stop = close + 1
        else:
            stop = raw.find(",", pos)
            if stop < 0:
                stop = end
            item = _fast_scalar(raw[pos:stop], res, True)
        if item is None:
            return None
        out.append(item)
        if stop == end:
            return out
        if raw[stop : stop + 2] != ", " or stop + 2 >= end:
            return None
        pos = stop + 2


def fast_frontmatter(head: str) -> dict[str, Any] | None:
    """The mapping of frontmatter laid out exactly as dump_entry writes it (the date as text);
    None when it is laid out any other way, for YAML to read."""
    lines = head.split("\n")
    if lines.pop() != "":
        return None
    res = _fast_res()
    data: dict[str, Any] = {}
    count = len(lines)
    i = 0
    for key in KEY_ORDER:
        if i >= count:
            if key in OPTIONAL_FIELDS:
                continue
            return None
        line = lines[i]
        if key in OPTIONAL_FIELDS and not line.startswith(key + ":"):
            continue  # dump_entry leaves it out when empty; so does the mapping YAML reads
        i += 1
        value: Any
        if key == "roles":
            if line != "roles:":
                return None
            roles: dict[str, list[str]] = {}
            while i < count and lines[i].startswith("  "):
                role_line = lines[i][2:]
                if role_line[:1] == '"':  # a quoted role may itself hold ": ["
                    cut = _closing_quote(role_line, 0) + 1
                    if cut <= 0 or role_line[cut : cut + 3] != ": [":
                        return None
                else:
                    cut = role_line.find(": [")
                role = _fast_scalar(role_line[:cut], res) if cut > 0 else None
                names = _fast_list(role_line[cut + 2 :], res) if role is not None else None
                if role is None or names is None or role in roles:
                    return None
                roles[role] = names
                i += 1
            if not roles:
                return None
            data[key] = roles
            continue
        if key == "relates":
            if line != "relates:":
                return None
            relations = []
            while i < count and lines[i].startswith(_ALT_ID):
                if i + 1 >= count or not lines[i + 1].startswith(_REL_KIND):
                    return None
                rel_id = _fast_scalar(lines[i][len(_ALT_ID) :], res)
                kind = _fast_scalar(lines[i + 1][len(_REL_KIND) :], res)
                if rel_id is None or kind is None:
                    return None
                relations.append({"id": rel_id, "kind": kind})
                i += 2
            if not relations:
                return None
            data[key] = relations
            continue
        if key == "alternatives_considered":
            if line == "alternatives_considered: []":
                data[key] = []
                continue
            if line != "alternatives_considered:":
                return None
            alts = []
            while i < count and lines[i].startswith(_ALT_ID):
                if i + 1 >= count or not lines[i + 1].startswith(_ALT_REASON):
                    return None
                alt_id = _fast_scalar(lines[i][len(_ALT_ID) :], res)
                reason = _fast_scalar(lines[i + 1][len(_ALT_REASON) :], res)
                if alt_id is None or reason is None:
                    return None
                alts.append({"id": alt_id, "rejected_because": reason})
                i += 2
            if not alts:
                return None
            data[key] = alts
            continue
        if not line.startswith(key) or line[len(key) : len(key) + 2] != ": ":
            return None
        raw = line[len(key) + 2 :]
        if key in _LIST_KEYS:
            value = _fast_list(raw, res)
        elif key == "date" and valid_date(raw):
            value = raw  # YAML reads a date; entry_from_mapping turns it back into this text
        else:
            value = _fast_scalar(raw, res)
        if value is None:
            return None
        data[key] = value
    return data if i == count else None


def parse_entry(text: str, *, what: str = "entry") -> Entry:
    """The one way file text becomes an entry. Structural errors raise InvalidInput."""
    data, body = _read_frontmatter(text, what, fast=True)
    return entry_from_mapping(data, body=body, what=what)


def _read_frontmatter(
    text: str, what: str, limits: YamlLimits = LIMITS, *, fast: bool = False
) -> tuple[dict[Any, Any], str]:
    """The frontmatter mapping and the body (blank lines at its edges cut) of markdown text.

    With ``fast``, frontmatter laid out exactly as :func:`dump_entry` writes it is read by
    :func:`fast_frontmatter` instead of PyYAML; anything else still goes to YAML, exact scalars
    and the limits.
    """
    head, body = split_frontmatter(text)
    data = fast_frontmatter(head) if fast else None
    if data is None:
        data = load_yaml(head, what, exact=True, limits=limits)
    if not isinstance(data, dict):
        raise InvalidInput(f"{what}: the frontmatter must be a YAML mapping of fields.")
    return data, body.strip("\n")


def decode_text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{what} is not UTF-8 text (bad byte at offset {exc.start}); convert it, "
            "e.g. iconv -t utf-8."
        ) from None


# --------------------------------------------------------------------------- building entries


def entry_from_mapping(
    data: Mapping[str, Any], *, body: str | None = None, what: str = "entry"
) -> Entry:
    """Build an entry from loose fields (YAML, JSON, flags), checking shapes, not schema rules.

    Missing scalar fields become "" (``check_entry`` reports the required ones); the body may
    be given separately or under a ``body`` key.
    """
    data = dict(data)
    if body is None:
        raw_body = data.pop("body", "")
        if raw_body is None:
            raw_body = ""
        if not isinstance(raw_body, str):
            raise InvalidInput(f"{what}: body must be text.")
        body = str(raw_body).strip("\n")
    else:
        data.pop("body", None)
    _check_text(body, "body", what)
    values: dict[str, Any] = {}
    for key in SCALAR_FIELDS:
        values[key] = _scalar(data.pop(key, None), key, what)
    for key in LIST_FIELDS:
        values[key] = _str_list(data.pop(key, None), key, what)
    values["alternatives_considered"] = _alternatives(
        data.pop("alternatives_considered", None), what
    )
    values["roles"] = _roles(data.pop("roles", None), what)
    values["relates"] = _relations(data.pop("relates", None), what)
    for key, default in (("status", "active"), ("origin", "authored")):
        values[key] = values[key] or default
    extra = tuple(sorted((_key(k, what), _plain(v, str(k), what)) for k, v in data.items()))
    return Entry(**values, extra=extra, body=body)


def _scalar(value: Any, key: str, what: str) -> str:
    if type(value) is str:  # the common case, first: the index build parses every entry
        _check_text(value, key, what)
        return value.strip() if key != "summary" else " ".join(value.split())
    if isinstance(value, str):  # Plain: 1.10, 010, 2026-05-02 as written
        if (
            key == "date"
            and isinstance(value, Plain)
            and value.tag == TAG_TIMESTAMP
            and not DATE_RE.match(value)
        ):
            raise InvalidInput(f"{what}: date must be a day (YYYY-MM-DD), not a date and time.")
        return _scalar(str(value), key, what)
    if value is None:
        return ""
    if key == "date":
        if isinstance(value, dt.datetime):
            raise InvalidInput(f"{what}: date must be a day (YYYY-MM-DD), not a date and time.")
        if isinstance(value, dt.date):
            return value.isoformat()
    if isinstance(value, (bool, list, dict)):
        raise InvalidInput(f"{what}: {key} must be a single text value, not {_kind(value)}.")
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        raise InvalidInput(f"{what}: {key} must be text.")
    return value.strip() if key != "summary" else " ".join(value.split())


def _str_list(value: Any, key: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(
            f"{what}: {key} must be a list, got {_kind(value)}; write {key}: [a, b] "
            f"(or repeat the flag)."
        )
    out = []
    for item in value:
        if isinstance(item, str):
            item = str(item).strip()  # str(): a Plain (0x1F, 1.10) is the text written
            _check_text(item, key, what)
            if item:
                out.append(item)
            continue
        if isinstance(item, (dt.date, int, float)) and not isinstance(item, bool):
            item = item.isoformat() if isinstance(item, dt.date) else str(item)
        if not isinstance(item, str):
            raise InvalidInput(f"{what}: every item of {key} must be text, got {_kind(item)}.")
        item = item.strip()
        if item:
            out.append(item)
    return tuple(out)


def _alternatives(value: Any, what: str) -> tuple[Alternative, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(
            f"{what}: alternatives_considered must be a list of {{id, rejected_because}}, "
            f"got {_kind(value)}."
        )
    out = []
    for item in value:
        if isinstance(item, Alternative):
            out.append(item)
            continue
        if isinstance(item, str):
            out.append(parse_alt(item))
            continue
        if not isinstance(item, dict):
            raise InvalidInput(
                f"{what}: each alternatives_considered item needs id and rejected_because."
            )
        alt_id = _scalar(item.get("id"), "alternatives_considered.id", what)
        reason = _scalar(item.get("rejected_because"), "rejected_because", what)
        if not alt_id or not reason:
            raise InvalidInput(
                f"{what}: each alternatives_considered item needs both id and rejected_because; "
                "e.g. --alt 'keep-monolith: too slow to deploy'."
            )
        out.append(Alternative(alt_id, " ".join(reason.split())))
    return tuple(out)


def _roles(value: Any, what: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``{decider: [a, b], consulted: [c]}`` (a list of {role, actors} pairs also reads)."""
    if value is None or value == {}:
        return ()
    if isinstance(value, (list, tuple)) and all(isinstance(v, (tuple, list)) for v in value):
        value = {str(k): v for k, v in value}
    if not isinstance(value, dict):
        raise InvalidInput(
            f"{what}: roles must map a role to its actors, e.g. roles: {{decider: [alice]}}."
        )
    out = []
    for role, names in value.items():
        if isinstance(names, str):
            names = [names]
        out.append((str(role).strip(), _str_list(names, f"roles.{role}", what)))
    order = {r: i for i, r in enumerate(ROLES)}
    return tuple(sorted(out, key=lambda pair: (order.get(pair[0], len(order)), pair[0])))


def _relations(value: Any, what: str) -> tuple[Relation, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(f"{what}: relates must be a list of {{id, kind}}, got {_kind(value)}.")
    out = []
    for item in value:
        if isinstance(item, Relation):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise InvalidInput(f"{what}: each relates item needs id and kind.")
        rel_id = _scalar(item.get("id"), "relates.id", what)
        kind = _scalar(item.get("kind"), "relates.kind", what)
        if not rel_id or not kind:
            raise InvalidInput(
                f"{what}: each relates item needs both id and kind, e.g. {{id: <entry id>, "
                "kind: amends}."
            )
        out.append(Relation(rel_id, kind))
    return tuple(out)


def parse_alt(text: str) -> Alternative:
    """``"ID: reason"`` (the --alt flag) to an Alternative."""
    alt_id, sep, reason = text.partition(":")
    alt_id, reason = alt_id.strip(), " ".join(reason.split())
    if not sep or not alt_id or not reason:
        raise InvalidInput(
            f"--alt {text!r} must look like 'ID: why it was rejected', "
            "e.g. --alt 'keep-monolith: too slow to deploy'."
        )
    return Alternative(alt_id, reason)


def _plain(value: Any, key: str, what: str) -> Any:
    """Extra fields keep their YAML shape, with dates as ISO text (JSON-safe, round-trips).

    YAML's other types (``!!binary``, ``!!set``) have no JSON form: the catalog could not hold
    the entry, so they are refused here, where text becomes an entry.
    """
    if isinstance(value, Plain):
        if value.tag in (TAG_INT, TAG_FLOAT) and len(value) > LIMITS.max_number_digits:
            raise InvalidInput(
                f"{what}: field {key!r} holds a number of {len(value)} digits; write it as "
                "text (in quotes) or shorten it."
            )
        return value.value()
    if isinstance(value, str):
        _check_text(value, key, what)
        return value
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v, key, what) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, key, what) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise InvalidInput(
        f"{what}: field {key!r} holds {_kind(value)}; give it as text, a number, a list or a "
        "mapping."
    )


def _key(key: Any, what: str) -> str:
    text = str(key)
    _check_text(text, "a field name", what)
    if text == "<<":
        raise InvalidInput(f"{what}: YAML merge keys (<<) are not supported; write the fields out.")
    return text


def _check_text(value: str, key: str, what: str) -> None:
    """Refuse text that could be stored but never read back: a lone surrogate (JSON's
    ``"\\udc80"``, or a command-line byte that is not UTF-8) cannot be encoded to the file."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(
                f"{what}: {key} holds {value[exc.start]!a}, a lone surrogate that is not text; "
                "give valid Unicode (UTF-8) text."
            ) from None


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------- ids


def content_hash(entry: Entry) -> str:
    """sha256 of the entry's canonical text with the id left out."""
    return sha256_hex(dump_entry(replace_fields(entry, id="")).encode())


def replace_fields(entry: Entry, **changes: Any) -> Entry:
    """``dataclasses.replace(entry, **changes)``, without loading dataclasses (~1.3 ms)."""
    kind = entry.__class__
    return kind(**{**{name: getattr(entry, name) for name in kind.FIELDS}, **changes})


def sha256_hex(data: bytes) -> str:
    return str(sha256(data).hexdigest())


def candidate_ids(entry: Entry, title: str | None = None) -> Iterator[str]:
    """Ids to try for a new entry, in order: ``<date>-<slug>-<hash[:4]>``, then longer hashes.

    The slug is of ``title`` when given (an imported record's own title), else of the summary.

    The same content always yields the same sequence, so a retried write finds its first id
    holding identical content ("already recorded"); different content that collides on four hex
    digits moves on to five, six, ...
    """
    digest = content_hash(entry)
    stem = f"{entry.date}-{slugify(title or entry.summary)}"
    for n in range(4, len(digest) + 1):
        yield f"{stem}-{digest[:n]}"


def check_id(entry_id: str) -> None:
    if not ID_RE.match(entry_id) or ".." in entry_id:
        raise InvalidInput(
            f"id {entry_id!r} is not valid: use lowercase letters, digits and single hyphens "
            "(no '/', '..', spaces or uppercase), e.g. 2026-05-02-use-postgres."
        )


def valid_date(value: str) -> bool:
    """YYYY-MM-DD, and a real day."""
    if not DATE_RE.match(value):
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def as_tuple(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(values or ())


# --------------------------------------------------------------------------- drafts from input


def load_draft(text: str, what: str, *, limits: YamlLimits = LIMITS) -> dict[str, Any]:
    """Fields from a ``--from`` document: markdown with frontmatter, a YAML mapping, or JSON."""
    stripped = text.lstrip("\ufeff")
    if stripped.startswith("---"):
        data, body = _read_frontmatter(stripped, what, limits)
        return {**data, "body": body}
    if stripped.lstrip().startswith("{"):
        data = load_json(stripped, what, limits=limits)
    else:
        data = load_yaml(stripped, what, exact=True, limits=limits)
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{what}: expected markdown with frontmatter, a YAML mapping or a JSON object of fields."
        )
    return dict(data)


def draft(
    base: Mapping[str, Any] | None = None,
    *,
    type: str | None = None,
    domain: str | None = None,
    summary: str | None = None,
    tag: Sequence[str] = (),
    actor: Sequence[str] = (),
    supersedes: Sequence[str] = (),
    resolves: Sequence[str] = (),
    alt: Sequence[str] = (),
    alias: Sequence[str] = (),
    question: Sequence[str] = (),
    source: Sequence[str] = (),
    scope: str | None = None,
    status: str | None = None,
    origin: str | None = None,
    date: str | None = None,
    body: str | None = None,
    what: str = "entry",
) -> Entry:
    """An entry from ``base`` fields (e.g. a --from file) overridden by flag values.

    Keyword names mirror the ``write`` flags; list flags replace the base's list when given.
    """
    data: dict[str, Any] = dict(base or {})
    data.pop("id", None)
    for key, value in (
        ("type", type),
        ("domain", domain),
        ("summary", summary),
        ("scope", scope),
        ("status", status),
        ("origin", origin),
        ("date", date),
        ("body", body),
    ):
        if value is not None:
            data[key] = value
    for key, values in (
        ("tags", tag),
        ("actors", actor),
        ("supersedes", supersedes),
        ("resolves", resolves),
        ("aliases", alias),
        ("questions", question),
        ("sources", source),
    ):
        if values:
            data[key] = list(values)
    if alt:
        data["alternatives_considered"] = [parse_alt(a) for a in alt]
    return entry_from_mapping(data, what=what)

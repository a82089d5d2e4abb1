"""schema.md as rules: the types, the fields each needs, the allowed values and the limits,
and :func:`check_entry`, which applies them to an entry (what ``write`` refuses and ``lint``
reports). Only the code that checks entries against a wiki's rules loads it; reading entries
(``show``, ``list``, a build) does not.
"""

from __future__ import annotations

import functools
import re
from collections import namedtuple
from collections.abc import Mapping, Sized
from typing import TYPE_CHECKING, Any, NamedTuple

from llm_wiki.entries import (
    DATE_SOURCES,
    KNOWN_FIELDS,
    LIST_FIELDS,
    MAX_BODY_BYTES,
    MAX_INPUT_BYTES,
    MAX_LIST_ITEMS,
    MAX_TEXT_CHARS,
    NAME_RE,
    ORIGINS,
    RELATION_KINDS,
    ROLES,
    STATUSES,
    Entry,
    valid_date,
)
from llm_wiki.errors import InvalidInput
from llm_wiki.records import Frozen
from llm_wiki.yaml_input import LIMITS, YamlLimits, load_yaml

DEFAULT_REQUIRED = ("type", "date", "summary", "domain")


if TYPE_CHECKING:

    class Rule(NamedTuple):
        """A per-type rule from schema.md: ``field`` needs ``min_items`` items for these origins."""

        field: str
        min_items: int = 1
        origins: tuple[str, ...] = ()  # empty: every origin
        fix: str = ""

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    Rule = namedtuple("Rule", ["field", "min_items", "origins", "fix"], defaults=(1, (), ""))


if TYPE_CHECKING:

    class TypeSpec(NamedTuple):
        name: str
        description: str = ""
        rules: tuple[Rule, ...] = ()

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    TypeSpec = namedtuple("TypeSpec", ["name", "description", "rules"], defaults=("", ()))


class Schema(Frozen):
    """schema.md as rules: the types, the fields each needs, the allowed values, the limits."""

    FIELDS = (
        "types",
        "required",
        "statuses",
        "origins",
        "roles",
        "relation_kinds",
        "max_body_bytes",
        "max_summary_chars",
        "max_text_chars",
        "max_list_items",
        "max_input_bytes",
        "max_depth",
        "max_nodes",
        "max_alias_nodes",
        "review_after_days",
        "when_to_write",
        "when_not_to_write",
    )
    __slots__ = FIELDS
    types: Mapping[str, TypeSpec]
    required: tuple[str, ...]
    statuses: tuple[str, ...]
    origins: tuple[str, ...]
    roles: tuple[str, ...]
    relation_kinds: tuple[str, ...]
    max_body_bytes: int
    max_summary_chars: int
    max_text_chars: int
    max_list_items: int
    max_input_bytes: int
    max_depth: int
    max_nodes: int
    max_alias_nodes: int
    review_after_days: int
    when_to_write: str
    when_not_to_write: str

    def __init__(
        self,
        types: Mapping[str, TypeSpec],
        required: tuple[str, ...] = DEFAULT_REQUIRED,
        statuses: tuple[str, ...] = STATUSES,
        origins: tuple[str, ...] = ORIGINS,
        roles: tuple[str, ...] = ROLES,
        relation_kinds: tuple[str, ...] = RELATION_KINDS,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_summary_chars: int = 1000,
        max_text_chars: int = MAX_TEXT_CHARS,
        max_list_items: int = MAX_LIST_ITEMS,
        max_input_bytes: int = MAX_INPUT_BYTES,
        max_depth: int = LIMITS.max_depth,
        max_nodes: int = LIMITS.max_nodes,
        max_alias_nodes: int = LIMITS.max_alias_nodes,
        review_after_days: int = 365,
        when_to_write: str = "",
        when_not_to_write: str = "",
    ) -> None:
        object.__setattr__(self, "types", types)
        object.__setattr__(self, "required", required)
        object.__setattr__(self, "statuses", statuses)
        object.__setattr__(self, "origins", origins)
        object.__setattr__(self, "roles", roles)
        object.__setattr__(self, "relation_kinds", relation_kinds)
        object.__setattr__(self, "max_body_bytes", max_body_bytes)
        object.__setattr__(self, "max_summary_chars", max_summary_chars)
        object.__setattr__(self, "max_text_chars", max_text_chars)
        object.__setattr__(self, "max_list_items", max_list_items)
        object.__setattr__(self, "max_input_bytes", max_input_bytes)
        object.__setattr__(self, "max_depth", max_depth)
        object.__setattr__(self, "max_nodes", max_nodes)
        object.__setattr__(self, "max_alias_nodes", max_alias_nodes)
        object.__setattr__(self, "review_after_days", review_after_days)
        object.__setattr__(self, "when_to_write", when_to_write)
        object.__setattr__(self, "when_not_to_write", when_not_to_write)

    @property
    def yaml_limits(self) -> YamlLimits:
        return YamlLimits(self.max_depth, self.max_nodes, self.max_alias_nodes)


# compiled where used: a write reads schema.md's rules from the config cache, not the file
_SCHEMA_BLOCK = r"^```ya?ml[ \t]*\n(.*?)^```"


def parse_schema(text: str, what: str = "schema.md") -> Schema:
    """Read the machine-read YAML block (the first ```yaml fence) of schema.md."""
    return schema_from_data(schema_data(text, what), what)


def schema_data(text: str, what: str = "schema.md") -> Any:
    """The YAML block of schema.md as plain data."""
    match = re.search(_SCHEMA_BLOCK, text, re.MULTILINE | re.DOTALL)
    if match is None:
        raise InvalidInput(
            f"{what} has no ```yaml block; restore the block (git checkout), or copy it from the schema.md of a new `llm-wiki init`."
        )
    return load_yaml(match.group(1), what)


def schema_from_data(data: Any, what: str = "schema.md") -> Schema:
    if not isinstance(data, dict) or not isinstance(data.get("types"), dict) or not data["types"]:
        raise InvalidInput(
            f"{what}: the YAML block needs a 'types' mapping with at least one type."
        )
    types: dict[str, TypeSpec] = {}
    for name, spec in data["types"].items():
        spec = spec or {}
        rules = tuple(
            Rule(
                field=str(r["field"]),
                min_items=int(r.get("min_items", 1)),
                origins=tuple(r.get("origins") or ()),
                fix=str(r.get("fix", "")),
            )
            for r in spec.get("rules") or ()
        )
        types[str(name)] = TypeSpec(str(name), str(spec.get("description", "")).strip(), rules)
    limits = data.get("limits") or {}
    if not isinstance(limits, dict):
        raise InvalidInput(f"{what}: limits must be a mapping of names to numbers.")

    def number(source: Mapping[str, Any], key: str, default: int, where: str = "limits.") -> int:
        value = source.get(key, default)
        if type(value) is not int or value < 0:
            raise InvalidInput(
                f"{what}: {where}{key} must be a whole number (it is {value!r}); fix the YAML block."
            )
        return value

    return Schema(
        types=types,
        required=tuple(data.get("required") or DEFAULT_REQUIRED),
        statuses=tuple(data.get("statuses") or STATUSES),
        origins=tuple(data.get("origins") or ORIGINS),
        roles=tuple(data.get("roles") or ROLES),
        relation_kinds=tuple(data.get("relation_kinds") or RELATION_KINDS),
        max_body_bytes=number(limits, "max_body_bytes", MAX_BODY_BYTES),
        max_summary_chars=number(limits, "max_summary_chars", 1000),
        max_text_chars=number(limits, "max_text_chars", MAX_TEXT_CHARS),
        max_list_items=number(limits, "max_list_items", MAX_LIST_ITEMS),
        max_input_bytes=number(limits, "max_input_bytes", MAX_INPUT_BYTES),
        max_depth=number(limits, "max_depth", LIMITS.max_depth),
        max_nodes=number(limits, "max_nodes", LIMITS.max_nodes),
        max_alias_nodes=number(limits, "max_alias_nodes", LIMITS.max_alias_nodes),
        review_after_days=number(data, "review_after_days", 365, ""),
        when_to_write=str(data.get("when_to_write", "")).strip(),
        when_not_to_write=str(data.get("when_not_to_write", "")).strip(),
    )


if TYPE_CHECKING:

    class Problem(NamedTuple):
        field: str
        message: str


@functools.cache
def _problem_class() -> type[Problem]:
    """The same tuple class, made without typing's check of each field, and only when an entry
    breaks a rule (a namedtuple costs ~0.1 ms to make; a valid write makes none)."""
    return namedtuple("Problem", ["field", "message"])  # type: ignore[return-value]


_FLAG = {
    "type": "--type",
    "summary": "--summary",
    "domain": "--domain",
    "date": "--date",
    "scope": "--scope",
    "status": "--status",
    "origin": "origin",
}


def check_entry(entry: Entry, schema: Schema) -> list[Problem]:
    """Every way ``entry`` breaks schema.md (empty list: it is valid). Ids are checked apart."""
    problems: list[Problem] = []

    def bad(fld: str, message: str) -> None:
        problems.append(_problem_class()(fld, message))

    for fld in schema.required:
        value = getattr(entry, fld, None) if fld in KNOWN_FIELDS else entry.get_extra(fld)
        if value in (None, "", ()):
            flag = _FLAG.get(fld, fld)
            bad(fld, f"{fld} is required (schema.md); pass {flag} {_EXAMPLE.get(fld, 'VALUE')}.")
    if entry.type and entry.type not in schema.types:
        bad(
            "type",
            f"type {entry.type!r} is not one of {', '.join(sorted(schema.types))} (schema.md); "
            "pass --type with one of them.",
        )
    if entry.date and not valid_date(entry.date):
        bad("date", f"date {entry.date!r} is not an ISO date; use YYYY-MM-DD, e.g. 2026-05-02.")
    for fld in ("domain", "scope"):
        value = getattr(entry, fld)
        if value and not NAME_RE.match(value):
            bad(
                fld,
                f"{fld} {value!r} must be lowercase letters, digits and hyphens, "
                f"e.g. {_EXAMPLE[fld]}.",
            )
    if entry.status not in schema.statuses:
        hint = (
            " ('superseded' is derived: write a new entry with --supersedes)"
            if (entry.status == "superseded")
            else ""
        )
        bad(
            "status",
            f"status {entry.status!r} is not one of {', '.join(schema.statuses)}{hint}.",
        )
    if entry.origin not in schema.origins:
        bad("origin", f"origin {entry.origin!r} is not one of {', '.join(schema.origins)}.")
    if len(entry.summary) > schema.max_summary_chars:
        bad(
            "summary",
            f"summary is {len(entry.summary)} characters, over {schema.max_summary_chars}; "
            "shorten it and put details in the body.",
        )
    for fld in LIST_SIZED:
        items = getattr(entry, fld)
        if (message := _too_many(fld, len(items), schema)) is not None:
            bad(fld, message)
            continue
        texts = (
            (t for a in items for t in (a.id, a.rejected_because))
            if fld == "alternatives_considered"
            else items
        )
        for text in texts:
            if len(text) > schema.max_text_chars:
                bad(
                    fld,
                    f"an item of {fld} is {len(text)} characters, over {schema.max_text_chars} "
                    "(schema.md limits.max_text_chars); shorten it, details go in the body.",
                )
                break
    size = len(entry.body.encode())
    if size > schema.max_body_bytes:
        bad(
            "body",
            f"body is {size} bytes, over the {schema.max_body_bytes}-byte limit (schema.md "
            "limits.max_body_bytes); keep the body short and store big sources with "
            "`llm-wiki ingest`.",
        )
    if entry.date_source and entry.date_source not in DATE_SOURCES:
        bad(
            "date_source",
            f"date_source {entry.date_source!r} is not one of {', '.join(DATE_SOURCES)}.",
        )
    for role, names in entry.roles:
        if role not in schema.roles:
            bad("roles", f"role {role!r} is not one of {', '.join(schema.roles)} (schema.md).")
        for name in names:
            if name not in entry.actors:
                bad("roles", f"roles: {name!r} ({role}) is not among the actors; add it there.")
    for rel in entry.relates:
        if rel.kind not in schema.relation_kinds:
            bad(
                "relates",
                f"relates kind {rel.kind!r} is not one of {', '.join(schema.relation_kinds)} "
                "(schema.md).",
            )
        if entry.id and rel.id == entry.id:
            bad("relates", f"entry {entry.id} cannot relate to itself; remove it from relates.")
    if entry.id and entry.id in entry.supersedes:
        bad("supersedes", f"entry {entry.id} cannot supersede itself; remove it from --supersedes.")
    spec = schema.types.get(entry.type)
    for rule in spec.rules if spec else ():
        if rule.origins and entry.origin not in rule.origins:
            continue
        value = (
            getattr(entry, rule.field, None)
            if rule.field in KNOWN_FIELDS
            else (entry.get_extra(rule.field))
        )
        count = len(value) if isinstance(value, (tuple, list, str)) else (0 if value is None else 1)
        if count < rule.min_items:
            who = f"{'/'.join(rule.origins)} " if rule.origins else ""
            fix = rule.fix or f"add {rule.field}"
            bad(
                rule.field,
                f"an {who}{entry.type} needs at least {rule.min_items} {rule.field} item"
                f"{'s' if rule.min_items != 1 else ''} (schema.md); {fix}.",
            )
    return problems


_EXAMPLE = {
    "type": "decision",
    "summary": "'What was decided, in one sentence'",
    "domain": "platform",
    "scope": "shared",
    "date": "2026-05-02",
}


LIST_SIZED = (*LIST_FIELDS, "alternatives_considered")  # the fields limits.max_list_items bounds


def _too_many(fld: str, count: int, schema: Schema) -> str | None:
    if count <= schema.max_list_items:
        return None
    return (
        f"{fld} has {count} items, over {schema.max_list_items} (schema.md "
        "limits.max_list_items); keep the few that matter."
    )


def require_list_sizes(lists: Mapping[str, Sized], schema: Schema) -> None:
    """Refuse a list over ``limits.max_list_items`` before its items are read: an input of a
    million items costs its length, not a million parses, to refuse."""
    for fld, items in lists.items():
        if isinstance(items, (list, tuple)) and (message := _too_many(fld, len(items), schema)):
            raise InvalidInput(message)


def require_valid(entry: Entry, schema: Schema) -> None:
    problems = check_entry(entry, schema)
    if problems:
        raise InvalidInput(problems[0].message)

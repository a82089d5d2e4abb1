"""Reading YAML and JSON input exactly as written, within bounds (issue 13).

PyYAML's own loaders expand an alias bomb without bound, take the last of two equal keys, turn
``010`` into 8 and die on ``2026-13-01``. :func:`load_yaml` instead reads libyaml's events and
builds the data itself, with an explicit stack: equal keys are refused, nesting, values and
alias expansion are bounded (:class:`YamlLimits`, schema.md ``limits``), and (``exact``) a plain
scalar YAML 1.1 would read as a number, bool or date comes back as the :class:`Plain` text it
was written as. :func:`load_json` keeps the same rules for JSON. Every problem is an
InvalidInput that names the field. Entries, drafts, settings.yaml, access.yaml and schema.md
all come through here (``llm_wiki.entries`` re-exports these names).
"""

from __future__ import annotations

import functools
import re
from collections import namedtuple
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from llm_wiki.errors import InvalidInput

if TYPE_CHECKING:

    class YamlLimits(NamedTuple):
        """Bounds on a YAML or JSON document, checked while it is read (schema.md ``limits``)."""

        max_depth: int = 32  # nesting of lists and mappings
        max_nodes: int = 20_000  # scalars, lists and mappings, aliases counted at their full size
        max_alias_nodes: int = 1_000  # nodes reached through aliases (*name) in all
        max_number_digits: int = 100  # longer "numbers" are text, never int(...)'d

else:  # the same tuple class, made without typing's check of each field (~0.1 ms)
    YamlLimits = namedtuple(
        "YamlLimits",
        ["max_depth", "max_nodes", "max_alias_nodes", "max_number_digits"],
        defaults=(32, 20_000, 1_000, 100),
    )


LIMITS = YamlLimits()

TAG_INT = "tag:yaml.org,2002:int"
TAG_FLOAT = "tag:yaml.org,2002:float"
TAG_BOOL = "tag:yaml.org,2002:bool"
TAG_NULL = "tag:yaml.org,2002:null"
TAG_STR = "tag:yaml.org,2002:str"
TAG_TIMESTAMP = "tag:yaml.org,2002:timestamp"
TAG_MAP = "tag:yaml.org,2002:map"
TAG_SEQ = "tag:yaml.org,2002:seq"
TYPED_TAGS = frozenset({TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_TIMESTAMP})


class Plain(str):
    """A plain scalar, kept as written, that YAML 1.1 (or JSON) would read as a number, a bool
    or a date: ``0x1F``, ``1.10``, ``010``, ``12:30``, ``yes``, ``2026-05-02``.

    Text fields take it as the text it is. Extra fields take :meth:`value`, the number or bool
    only when writing it back gives the same text (``3``, ``1.5``, ``true``), else the text.
    """

    tag: str

    def __new__(cls, text: str, tag: str) -> Plain:
        obj = super().__new__(cls, text)
        obj.tag = tag
        return obj

    def value(self) -> Any:
        text = str(self)
        if self.tag == TAG_BOOL:
            return {"true": True, "false": False}.get(text, text)
        if self.tag == TAG_INT and _canon_res()[0].fullmatch(text) and len(text) <= 100:
            return int(text)
        if self.tag == TAG_FLOAT and _canon_res()[1].fullmatch(text) and len(text) <= 100:
            number = float(text)
            if repr(number) == text.lstrip("+"):
                return number
        return text


@functools.cache
def _canon_res() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Canonical int and float text, compiled when YAML is first read (write, show and list read
    their settings from the config cache)."""
    return re.compile(r"-?(?:0|[1-9][0-9]*)"), re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")


_NO_KEY = object()


def load_yaml(text: str, what: str, *, exact: bool = False, limits: YamlLimits = LIMITS) -> Any:
    """Parse one YAML document, within ``limits``, with no silent change of what was written.

    PyYAML's own loaders would expand an alias bomb without bound, take the last of two equal
    keys, turn ``010`` into 8 and die on ``2026-13-01``; this one reads libyaml's events (the C
    parser, ~10x faster than the pure-Python one) and builds the data itself. ``exact``: plain
    scalars that YAML 1.1 would turn into numbers, bools or dates come back as :class:`Plain`
    text (entries and drafts); otherwise they are converted (settings, schema, access). Nulls
    are None either way. Anything else wrong raises InvalidInput naming the field.
    """
    import yaml  # deferred: PyYAML; `write` reads its config from a cache instead

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return _YamlBuilder(what, exact, limits).build(yaml.parse(text, Loader=loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidInput(f"{what}: malformed YAML{where} ({problem}); fix the YAML.") from None
    except UnicodeEncodeError:
        raise InvalidInput(f"{what}: the text holds a lone surrogate; give UTF-8 text.") from None


class _Frame:
    __slots__ = ("obj", "key", "anchor", "start", "path")

    def __init__(self, obj: Any, anchor: str | None, start: int, path: str) -> None:
        self.obj, self.key, self.anchor, self.start, self.path = obj, _NO_KEY, anchor, start, path


class _YamlBuilder:
    """Plain data from a stream of libyaml events, with an explicit stack (no recursion)."""

    def __init__(self, what: str, exact: bool, limits: YamlLimits) -> None:
        self.what, self.exact, self.limits = what, exact, limits
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.nodes = 0
        self.alias_nodes = 0
        self.root: Any = None
        self.documents = 0

    def fail(self, message: str) -> InvalidInput:
        return InvalidInput(f"{self.what}: {message}")

    def here(self) -> str:
        """The field being read, for messages: ``tags``, ``alternatives_considered[0].id``."""
        if not self.stack:
            return "the document"
        frame = self.stack[-1]
        if isinstance(frame.obj, dict):
            key = frame.key if frame.key is not _NO_KEY else None
            name = f"{frame.path}.{key}" if frame.path and key is not None else (key or frame.path)
            return f"field {str(name)!r}" if name else "a field name"
        return f"field {frame.path!r}" if frame.path else "a list item"

    def count(self, n: int = 1) -> None:
        self.nodes += n
        if self.nodes > self.limits.max_nodes:
            raise self.fail(
                f"over {self.limits.max_nodes} values (schema.md limits.max_nodes); "
                "write a smaller document."
            )

    def build(self, events: Iterator[Any]) -> Any:
        for event in events:
            kind = type(event).__name__
            if kind == "ScalarEvent":
                self.count()
                value = self.scalar(event)
                if event.anchor:
                    self.anchors[event.anchor] = (value, 1)
                self.add(value)
            elif kind in ("MappingStartEvent", "SequenceStartEvent"):
                self.count()
                self.open(event, kind == "MappingStartEvent")
            elif kind in ("MappingEndEvent", "SequenceEndEvent"):
                frame = self.stack.pop()
                if frame.anchor:
                    self.anchors[frame.anchor] = (frame.obj, self.nodes - frame.start)
                self.add(frame.obj)
            elif kind == "AliasEvent":
                if event.anchor not in self.anchors:
                    raise self.fail(f"alias *{event.anchor} names no anchor; fix the YAML.")
                value, size = self.anchors[event.anchor]
                self.alias_nodes += size
                if self.alias_nodes > self.limits.max_alias_nodes:
                    raise self.fail(
                        f"aliases expand to over {self.limits.max_alias_nodes} values "
                        "(schema.md limits.max_alias_nodes); write the values out."
                    )
                self.count(size)
                self.add(value)
            elif kind == "DocumentStartEvent":
                self.documents += 1
                if self.documents > 1:
                    raise self.fail("expected one YAML document, found several; keep one.")
        return self.root

    def open(self, event: Any, mapping: bool) -> None:
        tag = event.tag
        if (
            tag is not None
            and not event.implicit
            and tag not in ("!", TAG_MAP if mapping else TAG_SEQ)
        ):
            raise self.fail(
                f"{self.here()} holds a YAML {_short_tag(tag)} value; give it as text, a "
                "number, a list or a mapping."
            )
        if len(self.stack) >= self.limits.max_depth:
            raise self.fail(
                f"nested over {self.limits.max_depth} levels deep (schema.md "
                "limits.max_depth); flatten it."
            )
        path = ""
        if self.stack:
            parent = self.stack[-1]
            if isinstance(parent.obj, dict):
                if parent.key is _NO_KEY:
                    raise self.fail("a field name must be text, not a list or a mapping.")
                path = f"{parent.path}.{parent.key}" if parent.path else str(parent.key)
            else:
                path = f"{parent.path}[{len(parent.obj)}]"
        obj: Any = {} if mapping else []
        self.stack.append(_Frame(obj, event.anchor, self.nodes, path))

    def add(self, value: Any) -> None:
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        obj = frame.obj
        if type(obj) is list:
            obj.append(value)
            return
        if frame.key is _NO_KEY:
            if isinstance(value, (dict, list)):
                raise self.fail("a field name must be text, not a list or a mapping.")
            key = str(value) if isinstance(value, str) else value
            if key in obj:
                name = f"{frame.path}.{key}" if frame.path else key
                raise self.fail(f"field {str(name)!r} is given twice; keep one.")
            frame.key = key
            return
        obj[frame.key] = value
        frame.key = _NO_KEY

    def scalar(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if tag is not None or not event.implicit[0]:
                return value  # quoted, literal, folded, or "!": text
            tag = _resolve(value)
            if tag not in TYPED_TAGS and tag != TAG_NULL:
                return value  # "<<" and "=" are text here: no merge keys
        elif tag not in TYPED_TAGS and tag not in (TAG_STR, TAG_NULL):
            raise self.fail(
                f"{self.here()} holds a YAML {_short_tag(tag)} value; give it as text, a "
                "number, a list or a mapping."
            )
        if tag == TAG_STR:
            return value
        if tag == TAG_NULL:
            return None
        if self.exact:
            if event.tag is not None and event.tag != "!":
                self.typed(value, tag)  # !!float lots: refused, not kept as "lots"
            return Plain(value, tag)
        return self.typed(value, tag)

    def typed(self, value: str, tag: str) -> Any:
        import yaml  # deferred: PyYAML (already loaded by load_yaml)

        if tag in (TAG_INT, TAG_FLOAT) and len(value) > self.limits.max_number_digits:
            raise self.fail(
                f"{self.here()}: a number of {len(value)} digits; write it as text "
                "(in quotes) or shorten it."
            )
        node = yaml.ScalarNode(tag, value)
        constructor = _constructor()
        try:
            if tag == TAG_INT:
                return constructor.construct_yaml_int(node)
            if tag == TAG_FLOAT:
                return constructor.construct_yaml_float(node)
            if tag == TAG_BOOL:
                return constructor.construct_yaml_bool(node)
            return constructor.construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            raise self.fail(
                f"{self.here()}: {value!r} is not a valid {_short_tag(tag)[2:]}; fix it, or "
                "quote it to keep it as text."
            ) from None


def _short_tag(tag: str) -> str:
    return "!!" + tag.rsplit(":", 1)[-1] if tag.startswith("tag:yaml.org,2002:") else tag


@functools.cache
def _resolver() -> Any:
    import yaml  # deferred: PyYAML (already loaded by load_yaml)

    return yaml.resolver.Resolver()


def _resolve(value: str) -> str:
    """The tag YAML 1.1 gives a plain scalar (``010`` -> int)."""
    import yaml  # deferred: PyYAML (already loaded by load_yaml)

    if value and value[0].isalpha() and value.lower() not in _YAML_TYPED_WORDS:
        return TAG_STR  # the common case: a word, which no implicit resolver but these matches
    return str(_resolver().resolve(yaml.ScalarNode, value, (True, False)))


_YAML_TYPED_WORDS = frozenset("y yes n no true false on off null nan inf".split())


@functools.cache
def _constructor() -> Any:
    import yaml  # deferred: PyYAML (already loaded by load_yaml)

    return yaml.constructor.SafeConstructor()


def load_json(text: str, what: str, *, limits: YamlLimits = LIMITS) -> Any:
    """Parse JSON with numbers kept as written (:class:`Plain`), equal keys refused, and
    nesting bounded (json.loads dies with RecursionError on deep input)."""

    import json  # deferred: start-up (only --from of a JSON file reads JSON)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise InvalidInput(f"{what}: field {key!r} is given twice; keep one.")
            out[key] = value
        return out

    def constant(name: str) -> Any:
        raise InvalidInput(f"{what}: {name} is not a JSON number; write it as text (in quotes).")

    try:
        data = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_int=lambda s: Plain(s, TAG_INT),
            parse_float=lambda s: Plain(s, TAG_FLOAT),
            parse_constant=constant,
        )
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{what}: malformed JSON at line {exc.lineno} ({exc.msg}); fix the JSON."
        ) from None
    except RecursionError:
        data = None
        depth = limits.max_depth + 1
    else:
        depth, nodes = _shape(data)
        if nodes > limits.max_nodes:
            raise InvalidInput(
                f"{what}: over {limits.max_nodes} values (schema.md limits.max_nodes); "
                "write a smaller document."
            )
    if depth > limits.max_depth:
        raise InvalidInput(
            f"{what}: nested over {limits.max_depth} levels deep (schema.md limits.max_depth); "
            "flatten it."
        )
    return data


def _shape(data: Any) -> tuple[int, int]:
    """(depth, values) of parsed JSON: lists and mappings walked with a stack."""
    deepest, nodes = 0, 0
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth + 1)
            stack.extend((item, depth + 1) for item in value)
    return deepest, nodes

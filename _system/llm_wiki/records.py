"""Frozen records written by hand, for the classes every command builds.

``@dataclass(frozen=True)`` compiles six methods per class with ``exec`` when its module is
imported: ~0.5 ms a class on CPython 3.11, paid by every `show`, `list` and `write` for each of a
dozen classes. A class that subclasses :class:`Frozen` names its fields in ``FIELDS`` (in
``__init__``'s order) and sets them in its own ``__init__`` with ``object.__setattr__``; it gets
what a frozen dataclass gives: assignment and deletion raise ``FrozenInstanceError``, equality
and hashing by the fields (only between instances of the same class), a repr naming each field,
and copying and pickling by the fields. Give it ``__slots__ = FIELDS`` unless something fills its
``__dict__`` directly.
"""

from __future__ import annotations

import reprlib
import threading
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform

_MAKING = threading.Lock()  # two threads making the first instance at once


def _refused(what: str, name: str) -> Exception:
    """dataclasses' ``FrozenInstanceError``, imported when one is raised: ``list`` loads no
    dataclass machinery at all (~1.3 ms)."""
    from dataclasses import FrozenInstanceError  # deferred: start-up (only a refusal needs it)

    return FrozenInstanceError(f"cannot {what} field {name!r}")


class Frozen:
    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()
    _key: ClassVar[Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        get = attrgetter(*cls.FIELDS)
        one = len(cls.FIELDS) == 1
        cls._key = staticmethod((lambda obj: (get(obj),)) if one else get)  # always a tuple

    def __setattr__(self, name: str, value: Any) -> None:
        raise _refused("assign to", name)

    def __delattr__(self, name: str) -> None:
        raise _refused("delete", name)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(self._key(self) == self._key(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._key(self))


T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def dataclass_on_first_use(cls: type[T]) -> type[T]:
    """Let ``dataclasses`` take ``cls``, a :class:`Frozen` record with its defaults as class
    attributes, the first time anything asks dataclasses about it: ``dataclasses.replace``,
    ``fields``, ``asdict`` and ``is_dataclass`` then work on it as on a frozen dataclass.

    For a class callers use ``dataclasses.replace`` on (:class:`~llm_wiki.entries.Entry`) that
    most commands make without ever asking (``show`` parses one, ``write`` writes one; neither
    loads dataclasses, ~1.3 ms). Every such question looks up ``__dataclass_fields__`` on the
    class, which here is a stand-in that registers the class (``dataclass(init=False,
    repr=False, eq=False)``, no code compiled) and answers with the real fields. Its methods
    stay the hand-written ones :class:`Frozen` gives. The class object is the same before and
    after.
    """
    cls.__dataclass_fields__ = _FieldsOnFirstUse()  # type: ignore[attr-defined]
    return cls


class _FieldsOnFirstUse:
    """A class's ``__dataclass_fields__`` until dataclasses is first asked about the class."""

    def __get__(self, obj: Any, cls: type[Any]) -> Any:
        ensure_dataclass(cls)
        return cls.__dict__["__dataclass_fields__"]


def ensure_dataclass(cls: type[Any]) -> None:
    """Register ``cls`` (decorated with :func:`dataclass_on_first_use`) with dataclasses now."""
    import dataclasses  # deferred: start-up (loaded with the first question about the class)

    with _MAKING:
        if isinstance(cls.__dict__.get("__dataclass_fields__"), _FieldsOnFirstUse):
            # dataclass() reads the fields of the bases, never the class's own stand-in
            dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
            made = cls.__dataclass_params__
            made.init = made.repr = made.eq = made.frozen = True  # what the class does


class _Factory:
    """The default shown for a field whose default comes from a factory (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True)``, without compiling a method.

    A frozen dataclass compiles six methods with ``exec`` when its module is imported (~0.5 to
    1.5 ms a class): the sixteen on an offline query's path cost more than its search. This
    registers the fields with dataclasses (``dataclass(init=False, repr=False, eq=False)``:
    ``fields``, ``replace``, ``asdict`` and pattern matching work as on any dataclass) and
    gives the class methods shared by every record: ``__init__`` (the fields in order, their
    defaults and default factories), equality and hashing by the fields (only between
    instances of the same class), the dataclass repr, and assignment and deletion refused with
    ``FrozenInstanceError``. A class that needs more (a ``field()`` with options, a
    ``__post_init__``, slots, a dataclass base) is made a frozen dataclass as before.
    """
    import dataclasses  # deferred: start-up (loaded with the first record)
    import inspect  # deferred: as above (dataclasses imports it)

    own = cls.__dict__
    plain = dataclasses.field()
    options = ("init", "repr", "hash", "compare", "metadata", "kw_only")
    if (
        "__post_init__" in own
        or "__slots__" in own
        or "__setattr__" in own
        or "__delattr__" in own
        or any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
        or any(
            isinstance(own.get(name), dataclasses.Field)
            and any(getattr(own[name], o) != getattr(plain, o) for o in options)
            for name in own.get("__annotations__", {})
        )
    ):
        return dataclasses.dataclass(frozen=True)(cls)

    annotations = own.get("__annotations__", {})
    names: list[str] = []
    defaults: dict[str, Any] = {}
    factories: dict[str, Any] = {}
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, kind in annotations.items():
        value = own.get(name, dataclasses.MISSING)
        if isinstance(kind, str) and kind.startswith(("ClassVar", "typing.ClassVar")):
            continue
        shown: Any = inspect.Parameter.empty
        if isinstance(value, dataclasses.Field):
            if value.default_factory is not dataclasses.MISSING:
                factories[name], shown = value.default_factory, _FACTORY
            elif value.default is not dataclasses.MISSING:
                defaults[name] = shown = value.default
        elif value is not dataclasses.MISSING:
            defaults[name] = shown = value
        names.append(name)
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=shown, annotation=kind
            )
        )
    order = tuple(names)
    known = frozenset(order)
    qualname = cls.__qualname__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(order):
            least = 1 + len(order) - len(defaults) - len(factories)
            takes = f"from {least} to {len(order) + 1}" if least <= len(order) else least
            noun = "argument" if takes == 1 else "arguments"
            raise TypeError(
                f"{qualname}.__init__() takes {takes} positional {noun} but "
                f"{len(args) + 1} were given"
            )
        values = dict(zip(order, args, strict=False))  # fewer args: the rest below
        for key in kwargs:
            if key not in known:
                raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument {key!r}")
        values.update(kwargs)
        if len(values) < len(order):
            missing = []
            for name in order[len(args) :]:
                if name in values:
                    continue
                if name in defaults:
                    values[name] = defaults[name]
                elif name in factories:
                    values[name] = factories[name]()
                else:
                    missing.append(repr(name))
            if missing:
                listed = " and ".join(
                    [", ".join(missing[:-1]), missing[-1]] if missing[:-1] else missing
                )
                raise TypeError(
                    f"{qualname}.__init__() missing {len(missing)} required positional "
                    f"argument{'s' if len(missing) > 1 else ''}: {listed}"
                )
        self.__dict__.update(values)

    __init__.__qualname__ = f"{qualname}.__init__"
    __init__.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    key: Callable[[Any], tuple[Any, ...]]
    if not order:
        key = lambda obj: ()  # noqa: E731
    elif len(order) == 1:
        one = attrgetter(order[0])
        key = lambda obj: (one(obj),)  # noqa: E731
    else:
        key = attrgetter(*order)

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is self.__class__:
            return bool(key(self) == key(other))
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(key(self))

    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in order)
        return f"{self.__class__.__qualname__}({shown})"

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in known:
            raise _refused("assign to", name)
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in known:
            raise _refused("delete", name)
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    # As dataclass does: methods the class defines are kept; its own __hash__ only if it is
    # one (a class defining __eq__ alone has __hash__ None, which dataclass replaces).
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    for method in (__init__, __eq__, __hash__, __repr__, __setattr__, __delattr__):
        name = method.__name__
        if name == "__hash__" and not explicit_hash or name not in own:
            method.__qualname__ = f"{qualname}.{name}"
            setattr(cls, name, method)
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    made = cls.__dataclass_params__  # type: ignore[attr-defined]
    made.init = made.repr = made.eq = made.frozen = True  # what the class now does
    return cls

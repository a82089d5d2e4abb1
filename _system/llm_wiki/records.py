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

import threading
from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform

_MAKING = threading.Lock()  # two threads making the first instance at once


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
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

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
    attributes, once its first instance is made: ``dataclasses.replace``, ``fields`` and
    ``asdict`` then work on it as on a frozen dataclass.

    For a class callers use ``dataclasses.replace`` on (:class:`~llm_wiki.entries.Entry`) that
    many commands never instantiate (``list`` builds none). Its methods stay the hand-written
    ones :class:`Frozen` gives, so the fields are only registered (``dataclass(init=False,
    repr=False, eq=False)``, no code compiled): ~0.3 ms at the first instance, where a frozen
    dataclass compiles six methods with ``exec`` (~2 ms for Entry's 21 fields). The class
    object is the same before and after; class-level introspection
    (``dataclasses.fields(cls)``) sees a dataclass only once an instance was made, or after
    :func:`ensure_dataclass`.
    """
    written = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        ensure_dataclass(cls)
        written(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[assignment,misc]
    cls.__lazy_init__ = __init__  # type: ignore[attr-defined]
    cls.__written_init__ = written  # type: ignore[attr-defined]
    return cls


def ensure_dataclass(cls: type[Any]) -> None:
    """Register ``cls`` (decorated with :func:`dataclass_on_first_use`) with dataclasses now."""
    import dataclasses  # deferred: start-up (loaded with the first such class it makes)

    with _MAKING:
        if cls.__dict__.get("__init__") is cls.__dict__.get("__lazy_init__"):
            cls.__init__ = cls.__dict__["__written_init__"]
            dataclasses.dataclass(init=False, repr=False, eq=False)(cls)

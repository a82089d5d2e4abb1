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
    """``@dataclass(frozen=True)``, applied to ``cls`` in place when the first instance is made.

    For a class that must stay a dataclass (callers use ``dataclasses.replace`` on it) but that
    many commands never instantiate (``list`` builds no :class:`~llm_wiki.entries.Entry`): they
    skip the six methods the dataclass compiles. The class object is the same before and after.
    Class-level introspection (``dataclasses.fields(cls)``) sees a dataclass only once an
    instance was made, or after :func:`ensure_dataclass`.
    """

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        ensure_dataclass(cls)
        cls.__init__(self, *args, **kwargs)  # type: ignore[misc]  # the dataclass's own

    cls.__init__ = __init__  # type: ignore[assignment,misc]
    cls.__lazy_init__ = __init__  # type: ignore[attr-defined]
    return cls


def ensure_dataclass(cls: type[Any]) -> None:
    """Make ``cls`` (decorated with :func:`dataclass_on_first_use`) a frozen dataclass now."""
    import dataclasses  # deferred: start-up (loaded with the first such class it makes)

    with _MAKING:
        if cls.__dict__.get("__init__") is cls.__dict__.get("__lazy_init__"):
            del cls.__init__
            dataclasses.dataclass(frozen=True)(cls)

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

from dataclasses import FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar


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

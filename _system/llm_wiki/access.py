"""Scopes and readers: who may read and write what — the one place the walls are decided.

Every read takes a :class:`Viewer`. Without ``access.yaml`` the wiki is single-user and the viewer
sees everything; with it, the reader must be named (``--as`` or ``LLM_WIKI_READER``) and sees only
the scopes ``access.yaml`` grants. A hidden entry must look exactly like an absent one, so callers
filter with :meth:`Viewer.can_read` (or the SQL from :meth:`Viewer.sql_filter`) and never say why.

The policy, in one place:

- an entry is visible when its scope is readable (:meth:`Viewer.can_read`);
- something that rests on several scopes (an LLM call whose prompt held entries of two scopes,
  recorded as ``scope=a,b``) is visible only to a reader of every one of them, and something
  resting on no known scope (an unreadable file) only to a reader who sees everything
  (:meth:`Viewer.sees`);
- a write goes only into a scope the reader may write (:func:`require_write`);
- commands that act on the disk rather than for a reader (``index``, ``archive``, ``sync``) run
  for every scope and report on every scope, so under walls they run without a reader or as an
  admin, never as a walled reader (:func:`disk_viewer`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from llm_wiki.entries import NAME_RE, decode_text
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.records import Frozen
from llm_wiki.wiki import Wiki
from llm_wiki.yaml_input import load_yaml

ENV_READER = "LLM_WIKI_READER"


class Viewer(Frozen):
    """One reader, fixed for one invocation. ``read``/``write`` of None mean every scope."""

    FIELDS = ("name", "read", "write", "walls")
    __slots__ = FIELDS
    name: str
    read: frozenset[str] | None
    write: frozenset[str] | None
    walls: bool  # access.yaml is in force

    def __init__(
        self,
        name: str,
        read: frozenset[str] | None,
        write: frozenset[str] | None,
        walls: bool = False,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "read", read)
        object.__setattr__(self, "write", write)
        object.__setattr__(self, "walls", walls)

    @classmethod
    def everyone(cls) -> Viewer:
        return cls(name="", read=None, write=None, walls=False)

    @property
    def sees_all(self) -> bool:
        return self.read is None

    def can_read(self, scope: str) -> bool:
        return self.read is None or scope in self.read

    def can_write(self, scope: str) -> bool:
        return self.write is None or scope in self.write

    def visible(self, scopes: Iterable[str]) -> list[str]:
        return sorted(s for s in scopes if self.can_read(s))

    def sees(self, scopes: Iterable[str]) -> bool:
        """Whether this viewer may see something resting on all of ``scopes``: every one must be
        readable; resting on none (no scope is known) needs a viewer who sees everything."""
        listed = [s for s in scopes if s]
        if not listed:
            return self.sees_all
        return all(self.can_read(s) for s in listed)

    def sql_filter(self, column: str = "scope") -> tuple[str, list[str]]:
        """A WHERE fragment (and its parameters) limiting rows to this viewer's scopes."""
        if self.read is None:
            return "1", []
        if not self.read:
            return "0", []
        marks = ",".join("?" * len(self.read))
        return f"{column} IN ({marks})", sorted(self.read)


def scope_field(scopes: Iterable[str]) -> str:
    """Several scopes as one field (``a,b``), e.g. for the LLM call log; see :func:`split_scopes`."""
    return ",".join(sorted({s for s in scopes if s}))


def split_scopes(field: str | None) -> list[str]:
    return [s for s in str(field or "").split(",") if s]


def load_access(wiki: Wiki) -> dict[str, Any] | None:
    """The parsed access.yaml, or None in single-user mode."""
    access_path = wiki.path("access.yaml")
    try:
        with open(access_path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        if not walls_on(wiki):
            return None
        raise WikiError(  # a link to a file that is not there: walls are not lifted by it
            f"cannot read {access_path}: it links to a missing file; restore it."
        ) from None
    except OSError as exc:  # fail closed: walls that cannot be read are not lifted
        raise WikiError(
            f"cannot read {access_path}: {exc.strerror}; fix its permissions."
        ) from None
    _check_trusted(access_path)
    data = load_yaml(decode_text(raw, access_path), access_path) or {}
    readers = data.get("readers") if isinstance(data, dict) else None
    if not isinstance(readers, dict):
        raise InvalidInput(
            f"{access_path}: expected 'readers:' mapping each reader to its scopes; "
            "see the README section on walls."
        )
    # Fail closed on what a typo would make mean something else: an unknown key grants or
    # withholds nothing, so walls must not rest on one. (Two blocks for one reader are refused
    # by the YAML loader, which names the reader.)
    unknown = sorted(set(data) - {"readers"})
    if unknown:
        raise InvalidInput(
            f"{access_path}: unknown key {unknown[0]!r} at the top; access.yaml holds only "
            "'readers:'. Remove it or fix its spelling."
        )
    for name, spec in readers.items():
        if not isinstance(spec, dict):
            continue  # refused, naming the reader, when that reader is resolved
        extra = sorted(set(spec) - READER_KEYS)
        if extra:
            raise InvalidInput(
                f"{access_path}: reader {name!r} has unknown key {extra[0]!r} (known: "
                f"{', '.join(sorted(READER_KEYS))}); fix its spelling or remove it."
            )
        if "admin" in spec and not isinstance(spec["admin"], bool):
            raise InvalidInput(f"{access_path}: admin of reader {name!r} must be true or false.")
    return data


READER_KEYS = frozenset({"scopes", "read_only", "admin"})


def _check_trusted(path: str) -> None:
    """Refuse an access.yaml that someone other than its owner could have written: walls that
    anyone may edit are no walls."""
    st = os.stat(path)
    if st.st_mode & 0o002:
        raise WikiError(
            f"{path} is world-writable, so anyone could lift the walls; fix it with "
            f"`chmod o-w {path}` and check its contents."
        )
    if st.st_uid not in (os.geteuid(), 0):
        raise WikiError(
            f"{path} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}) or root, so "
            f"its walls are not trusted; fix it with `chown $(id -u) {path}` after checking it."
        )


def resolve_viewer(wiki: Wiki, reader: str | None = None) -> Viewer:
    """The viewer for this invocation: ``--as`` > ``LLM_WIKI_READER``; fail closed under walls."""
    name = (reader or os.environ.get(ENV_READER) or "").strip()
    access = load_access(wiki)
    if access is None:
        return Viewer(name=name, read=None, write=None, walls=False)
    if not name:
        raise WikiError(
            "This wiki has walls (access.yaml): say who is reading with --as READER or "
            f"{ENV_READER}=READER."
        )
    spec = access["readers"].get(name)
    if name in access["readers"] and not isinstance(spec, dict):
        raise InvalidInput(
            f"access.yaml: reader {name!r} must be a mapping, e.g. `scopes: [shared]` or "
            "`admin: true` on the lines under it."
        )
    if not isinstance(spec, dict):
        raise WikiError(
            f"Reader {name!r} is not in access.yaml; ask the wiki's admin to add it, or use "
            "another --as."
        )
    if spec.get("admin") is True:
        return Viewer(name=name, read=None, write=None, walls=True)
    scopes = _scopes(spec.get("scopes"), name)
    read_only = _scopes(spec.get("read_only"), name)
    return Viewer(
        name=name,
        read=frozenset(scopes) | frozenset(read_only),
        write=frozenset(scopes),
        walls=True,
    )


def declared_scopes(wiki: Wiki) -> set[str]:
    """Every scope access.yaml grants to some reader (empty without walls)."""
    access = load_access(wiki)
    if access is None:
        return set()
    return {
        scope
        for name, spec in access["readers"].items()
        if isinstance(spec, dict)
        for key in ("scopes", "read_only")
        for scope in _scopes(spec.get(key), name)
    }


def _scopes(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(s, str) and NAME_RE.match(s) for s in value
    ):
        raise InvalidInput(
            f"access.yaml: scopes of reader {name!r} must be a list of scope names "
            "(lowercase letters, digits, hyphens)."
        )
    return value


def walls_on(wiki: Wiki) -> bool:
    # lexists: a link whose target is missing still means walls (fail closed)
    return os.path.lexists(wiki.path("access.yaml"))


def require_write(viewer: Viewer, scope: str) -> None:
    """Refuse a write into a scope this reader may not write (whether the scope exists or not)."""
    if viewer.can_write(scope):
        return
    mine = sorted(viewer.write or ())
    hint = f"one of your scopes ({', '.join(mine)})" if mine else "a scope you may write"
    raise InvalidInput(
        f"reader {viewer.name!r} may not write to scope {scope!r}; pass --scope with {hint}."
    )


def disk_viewer(wiki: Wiki, reader: str | None, command: str) -> Viewer:
    """The viewer of a command that acts on the disk (``index``, ``archive``, ``sync``).

    Such a command works on every scope and its report names entries of every scope, so it is
    not run for a reader: under walls it runs without one (whoever holds the disk holds every
    scope anyway) or as an admin; a walled reader is refused.
    """
    name = (reader or os.environ.get(ENV_READER) or "").strip()
    if not name or not walls_on(wiki):
        return Viewer.everyone()
    viewer = resolve_viewer(wiki, name)
    if not viewer.sees_all:
        raise WikiError(
            f"`llm-wiki {command}` acts on every scope on disk and reports on all of them, so "
            f"it does not run as reader {name!r}; run it as an admin (--as ADMIN) or without a "
            "reader."
        )
    return viewer

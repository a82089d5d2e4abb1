"""llm-wiki: a compounding memory for people and AI agents.

The front door for Python::

    import llm_wiki

    wiki = llm_wiki.open("~/llm-wiki", reader="alice")
    answer = wiki.query("Which database holds the ledger now, and why?")

:func:`open` and :func:`init` give a :class:`Session` (one method per verb, see
:mod:`llm_wiki.session`); :class:`Entry` and :class:`Viewer` are what it takes and gives; every
expected failure is a :class:`WikiError`. The names are loaded when first used, ``__version__``
too, so importing the package costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "BackendFailed",
    "BackendUnavailable",
    "Entry",
    "InvalidInput",
    "NotFound",
    "Session",
    "Viewer",
    "WikiError",
    "__version__",
    "init",
    "open",
]

if TYPE_CHECKING:
    from llm_wiki.access import Viewer
    from llm_wiki.entries import Entry
    from llm_wiki.errors import (
        BackendFailed,
        BackendUnavailable,
        InvalidInput,
        NotFound,
        WikiError,
    )
    from llm_wiki.session import Session, init, open
    from llm_wiki.version import __version__


def __getattr__(name: str) -> Any:
    """The exported names, each imported the first time it is asked for (PEP 562)."""
    if name in ("Session", "init", "open"):
        from llm_wiki import session  # deferred: the front door loads the wiki's modules

        return getattr(session, name)
    if name in ("WikiError", "InvalidInput", "NotFound", "BackendUnavailable", "BackendFailed"):
        from llm_wiki import errors  # deferred: cheap, but --help needs only __version__

        return getattr(errors, name)
    if name == "Entry":
        from llm_wiki.entries import Entry  # deferred: start-up

        return Entry
    if name == "__version__":
        from llm_wiki.version import __version__  # deferred: a command loads it only for --version

        return __version__
    if name == "Viewer":
        from llm_wiki.access import Viewer  # deferred: start-up

        return Viewer
    raise AttributeError(f"module 'llm_wiki' has no attribute {name!r}")

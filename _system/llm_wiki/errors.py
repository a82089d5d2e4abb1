"""The one exception family. Every expected failure is a WikiError whose message is one line
saying what went wrong and how to fix it; the CLI prints it and exits with ``exit_code``."""

from __future__ import annotations


class WikiError(Exception):
    """A failure the user can act on (exit 1)."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    @property
    def message(self) -> str:
        return str(self.args[0])


class InvalidInput(WikiError):
    """The request itself must change: a bad field, flag or file (exit 2)."""

    exit_code = 2


class NotFound(WikiError):
    """No such entry for this reader. Hidden and absent read the same."""


class BackendUnavailable(WikiError):
    """The chosen LLM backend cannot run here (no key, no executable, ...)."""


class BackendFailed(WikiError):
    """The LLM backend was reached but did not give a usable answer."""

"""The one exception family. Every expected failure is a WikiError whose message is one line
saying what went wrong and how to fix it; the CLI prints it and exits with ``exit_code``."""

from __future__ import annotations

import errno


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


_OS_FIXES = {
    "ENOSPC": "no space left on the device; free some space, then run it again",
    "EDQUOT": "the disk quota is used up; free some space, then run it again",
    "EFBIG": "a file-size limit was reached (ulimit -f); raise it, then run it again",
    "EROFS": "the file system is read-only; mount it read-write or pass --wiki with a writable wiki",
    "EACCES": "permission denied; fix the permissions (ls -l), or pass --wiki with your own wiki",
    "EPERM": "operation not permitted; fix the permissions (ls -l), or pass --wiki with your own wiki",
    "EMFILE": "too many open files; raise the limit (ulimit -n), then run it again",
    "EIO": "a write to the disk failed (is it full, read-only, or over a file-size limit?); fix that, then run it again",
}


def os_failure(exc: OSError, what: str = "") -> WikiError:
    """An OSError as a WikiError whose one line says what failed and how to fix it."""
    name = errno.errorcode.get(exc.errno or 0, "")
    fix = _OS_FIXES.get(name) or f"{exc.strerror or exc}; check the disk and the permissions"
    where = exc.filename if exc.filename else ""
    head = what or (f"cannot write {where}" if where else "a file operation failed")
    return WikiError(f"{head}: {fix}.")


_SQLITE_AS_ERRNO = {
    "SQLITE_FULL": "ENOSPC",
    "SQLITE_READONLY": "EROFS",
    "SQLITE_PERM": "EACCES",
    "SQLITE_CANTOPEN": "EACCES",
    "SQLITE_IOERR": "EIO",
}


def storage_failure(exc: BaseException) -> WikiError | None:
    """An OSError or a SQLite error of the disk (full, read-only, ...) as a WikiError; None for
    anything else (a bug, which should show as one)."""
    if isinstance(exc, OSError):
        return os_failure(exc)
    name = str(getattr(exc, "sqlite_errorname", ""))
    if type(exc).__module__ != "sqlite3" or not name:
        return None
    code = _SQLITE_AS_ERRNO.get("_".join(name.split("_")[:2]))  # SQLITE_IOERR_WRITE: SQLITE_IOERR
    if code is None:
        return None
    fix = _OS_FIXES[code]
    return WikiError(f"cannot write the catalog (.llm-wiki/catalog.sqlite3): {fix}.")

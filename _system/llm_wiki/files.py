"""Writing files so that a crash never leaves half of one: atomic replace, no-clobber create.

These primitives know nothing of a wiki. :func:`atomic_write` replaces a file all at once (temp
file, fsync, rename); :func:`create_no_clobber` creates one that must never be replaced (temp
file, fsync, ``os.link``, which fails rather than overwrite). :func:`crashpoint` is the hook the
crash-safety tests use to kill a process, for real, at a named step.
"""

from __future__ import annotations

import contextlib
import os
import re
import time

from llm_wiki.errors import WikiError

PathLike = str | os.PathLike[str]

CRASH_ENV = "LLM_WIKI_CRASH_AT"  # test hook: SIGKILL this process at a named step


def crashpoint(step: str) -> None:
    """Die here, for real, when ``LLM_WIKI_CRASH_AT`` names this step (crash-safety tests)."""
    if os.environ.get(CRASH_ENV) == step:
        import signal  # deferred: only the crash-safety tests get here

        os.kill(os.getpid(), signal.SIGKILL)


def fsync_dir(path: PathLike) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(folder: PathLike) -> None:
    """``os.makedirs(folder, exist_ok=True)``, and each folder it makes is durable: the parent
    of every new folder is fsynced, deepest first, so a crash cannot take a new month's folder
    (and the entry linked and synced inside it) away with the parent's unsynced entry."""
    folder = os.path.abspath(os.fspath(folder))
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not missing:
        return
    os.makedirs(missing[0], exist_ok=True)
    for made in missing:  # deepest first: each parent then holds a synced child
        fsync_dir(os.path.dirname(made))


def _mkstemp(folder: PathLike, prefix: str) -> tuple[int, str]:
    """A new, exclusively created temp file in ``folder``, made first if it is missing
    (tempfile costs 3 ms to import; os.makedirs asks three syscalls of a folder that exists)."""
    for _ in range(100):
        name = os.path.join(folder, f"{prefix}{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), name
        except FileExistsError:
            continue
        except (FileNotFoundError, NotADirectoryError):  # makedirs says which, as it did
            make_dirs(folder)
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), name
    raise WikiError(f"cannot create a temp file in {folder}; check its permissions.")


def _write_synced(fd: int, data: bytes | bytearray) -> None:
    """All of ``data`` to ``fd``, fsynced; ``fd`` is closed either way (no file object)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


# The temp names _mkstemp makes: "<prefix><pid>.<12 hex>.tmp", prefix "entry." or ".<name>.".
_TEMP_RE = r"(?:entry\.|\.[^/]+\.)\d+\.[0-9a-f]{12}\.tmp\Z"
STALE_TEMP_SECONDS = 3600  # a write takes milliseconds; an hour-old temp file is a killed one's


def sweep_temp(folder: PathLike, max_age: float = STALE_TEMP_SECONDS) -> int:
    """Remove temp files a killed write left in ``folder``: only names this module makes, and
    only older than ``max_age`` seconds, so a write in progress keeps its own. Returns the count."""
    removed = 0
    cutoff = time.time() - max_age
    try:
        with os.scandir(folder) as it:
            for item in it:  # (the folder is most often empty: nothing to compile)
                if not re.fullmatch(_TEMP_RE, item.name):
                    continue
                with contextlib.suppress(OSError):
                    if item.is_file(follow_symlinks=False) and item.stat().st_mtime < cutoff:
                        os.unlink(item.path)
                        removed += 1
    except (FileNotFoundError, NotADirectoryError):
        pass
    return removed


def atomic_write(path: PathLike, data: bytes | bytearray | str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` all at once: temp file, fsync, rename."""
    if isinstance(data, str):
        data = data.encode()
    folder, name = os.path.split(os.fspath(path))
    folder = folder or "."
    fd, tmp = _mkstemp(folder, f".{name}.")
    try:
        _write_synced(fd, data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


def sync_folders(path: PathLike, levels: int = 3) -> None:
    """Sync the folder of ``path`` and the ``levels`` - 1 above it (see create_no_clobber)."""
    folder = os.path.abspath(os.path.dirname(os.fspath(path)) or ".")
    for _ in range(levels):
        fsync_dir(folder)
        folder = os.path.dirname(folder)


def create_no_clobber(path: PathLike, data: bytes, tmp_dir: PathLike, levels: int = 3) -> bool:
    """Create ``path`` holding ``data`` (mode 0444) unless it exists. True if created.

    The bytes are written and fsynced under a temp name first, then hard-linked into place: a
    reader never sees a half-written file and an existing file is never replaced. After the
    link the file's folder and the two above it are synced (an entry's ``entries/YYYY/MM``),
    every time: a write killed between making a month's folder and syncing its parent leaves a
    folder that exists but may not survive a power cut, and the next write into it, seeing it
    there, must not rely on it (a clean folder's fsync costs a few microseconds). ``levels``:
    how many folders are synced, the file's own and those above it, none outside the wiki (a
    raw source's ``raw/`` is one level down: 2, its folder and the wiki's root).
    """
    folder = os.path.abspath(os.path.dirname(os.fspath(path)) or ".")
    make_dirs(folder)
    fd, tmp = _mkstemp(tmp_dir, "entry.")
    try:
        _write_synced(fd, data)
        os.chmod(tmp, 0o444)
        crashpoint("before-link")
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        sync_folders(path, levels)
        crashpoint("after-link")
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)

"""The wiki root: where its files live, its settings and schema, and finding it."""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llm_wiki.entries import decode_text
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.records import Frozen
from llm_wiki.yaml_input import load_yaml

if TYPE_CHECKING:
    from pathlib import Path

    from llm_wiki.schema import Schema

PathLike = str | os.PathLike[str]
ENV_DIR = "LLM_WIKI_DIR"
STATE_DIR = ".llm-wiki"
# In STATE_DIR: the latest `lint` findings, which the site's inspector lists (see lint.py).
LINT_FINDINGS = "lint-findings.json"
# Files a folder may already hold and still be "empty" for init (a fresh git clone, a Mac).
IGNORABLE = {".git", ".DS_Store", ".gitignore", ".gitattributes"}


def __getattr__(name: str) -> Any:
    if name == "TEMPLATES":  # a Path: pathlib is loaded by what renders templates, not by write
        from pathlib import Path  # deferred: start-up

        return Path(__file__).parent / "templates"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _normal(path: str | os.PathLike[str]) -> str:
    """The folder as ``str(Path(path))`` spells it (no ``.`` parts, no doubled or trailing
    slashes), without loading pathlib."""
    text = os.fspath(path)
    lead = (
        "//" if text.startswith("//") and not text.startswith("///") else "/" * text.startswith("/")
    )
    return lead + "/".join(p for p in text.split("/") if p and p != ".") or "."


class Wiki(Frozen):
    """A wiki folder: where its files live, its settings and its schema (read once, kept).

    ``dir`` is the folder as a string and :meth:`path` joins a relative path to it: what
    ``write``, ``show`` and ``list`` use, so that they never load pathlib (~3.7 ms of start-up,
    with the urllib.parse and ipaddress it imports). ``root`` and the layout properties are
    ``Path`` objects, made when first asked for."""

    FIELDS = ("dir",)
    __slots__ = ("dir", "__dict__")  # __dict__: root, the cached settings and schema
    dir: str

    def __init__(self, root: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "dir", _normal(root))

    @functools.cached_property
    def root(self) -> Path:
        from pathlib import Path  # deferred: start-up (see the class's docstring)

        return Path(self.dir)

    def path(self, *parts: str) -> str:
        """``str(self.root.joinpath(*parts))`` for relative parts with no ``.``, ``..`` or
        doubled slash (``"entries"``, ``"index/platform.md"``)."""
        rel = "/".join(parts)
        if self.dir == ".":
            return rel
        return self.dir + rel if self.dir.endswith("/") else f"{self.dir}/{rel}"

    def state_file(self, name: str) -> str:
        """:meth:`state_path` as a string (its folder made)."""
        path = self.path(STATE_DIR, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    # -- layout (DESIGN.md "On disk")
    @property
    def entries_dir(self) -> Path:
        return self.root / "entries"

    @property
    def log_path(self) -> Path:
        return self.root / "log.md"

    @property
    def schema_path(self) -> Path:
        return self.root / "schema.md"

    @property
    def settings_path(self) -> Path:
        return self.root / "settings.yaml"

    @property
    def access_path(self) -> Path:
        return self.root / "access.yaml"

    @property
    def archive_dir(self) -> Path:
        return self.root / "archive"

    @property
    def raw_dir(self) -> Path:
        return self.root / "raw"

    @property
    def state_dir(self) -> Path:
        """Local, rebuildable state: catalog, locks, temp files, the LLM call log."""
        return self.root / STATE_DIR

    def state_path(self, name: str) -> Path:
        """:meth:`state_file` as a Path."""
        from pathlib import Path  # deferred: start-up (see the class's docstring)

        return Path(self.state_file(name))

    # -- configuration
    @functools.cached_property
    def schema(self) -> Schema:
        from llm_wiki.schema import schema_data, schema_from_data  # deferred: reads need no rules

        try:
            data = self._cached(self.path("schema.md"), schema_data)
        except FileNotFoundError:
            raise WikiError(
                f"{self.path('schema.md')} is missing; restore it (git checkout) or copy it "
                "from a new `llm-wiki init`."
            ) from None
        return schema_from_data(data, self.path("schema.md"))

    @functools.cached_property
    def settings(self) -> Settings:
        try:
            data = self._cached(self.path("settings.yaml"), load_yaml) or {}
        except FileNotFoundError:
            return Settings({})
        if not isinstance(data, dict):
            raise InvalidInput(f"{self.path('settings.yaml')} must be a YAML mapping of settings.")
        return Settings(data)

    def _cached(self, path: str, load: Callable[[str, str], Any]) -> Any:
        """``load(text)`` of a config file (plain data), remembered under .llm-wiki/ by the
        file's stat: parsing YAML means importing PyYAML (~10 ms), more than ``write`` can
        afford each time. The cache is marshal (no import cost); data it cannot hold (YAML
        dates) is simply not cached."""
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size, st.st_ino)
        stored = self._config_cache
        try:
            if stored.get(key[0], (None,))[0] == key:
                return stored[key[0]][1]
        except TypeError:  # not what this code stores: parsed again, stored anew
            stored = {}
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise WikiError(
                f"cannot read {path}: {exc.strerror}; fix it or its permissions."
            ) from None
        value = load(decode_text(raw, path), path)
        stored = {k: v for k, v in stored.items() if os.path.exists(k)}
        stored[key[0]] = (key, value)
        try:
            blob = marshal.dumps(stored)
        except ValueError:
            return value
        with contextlib.suppress(OSError):  # a cache; the next run parses again
            atomic_write(self.state_file("config.cache"), blob)
        self.__dict__["_config_cache"] = stored  # as cached_property sets it (a Wiki is frozen)
        return value

    @functools.cached_property
    def _config_cache(self) -> dict[Any, Any]:
        """.llm-wiki/config.cache as stored (empty if missing or unreadable), read once for
        both schema.md and settings.yaml."""
        try:
            with open(self.path(STATE_DIR, "config.cache"), "rb") as fh:
                stored = marshal.loads(fh.read())
        except (OSError, EOFError, TypeError, ValueError):
            return {}
        return stored if isinstance(stored, dict) else {}


class Settings(Frozen):
    """settings.yaml, read by dotted path with a default: ``settings.get("archive.older_than_days", 90)``."""

    FIELDS = ("data",)
    __slots__ = FIELDS
    data: dict[str, Any]

    def __init__(self, data: dict[str, Any]) -> None:
        object.__setattr__(self, "data", data)

    def get(self, path: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return default if node is None else node

    @property
    def default_scope(self) -> str:
        return str(self.get("default_scope", "shared"))


def is_wiki(path: str | os.PathLike[str]) -> bool:
    """schema.md and entries/, or schema.md and log.md: git keeps no empty folder, so a clone of
    a wiki with no entry yet has no entries/ (writes create it)."""
    folder = os.fspath(path)
    return os.path.isfile(os.path.join(folder, "schema.md")) and (
        os.path.isdir(os.path.join(folder, "entries"))
        or os.path.isfile(os.path.join(folder, "log.md"))
    )


def resolve_wiki(
    path: str | os.PathLike[str] | None = None, *, cwd: str | os.PathLike[str] | None = None
) -> Wiki:
    """``--wiki`` > ``LLM_WIKI_DIR`` > nearest folder upward holding schema.md and entries/ >
    ``~/llm-wiki``. (os.path, as ``Path.expanduser().resolve()`` does it: no pathlib loaded.)"""
    explicit = path or os.environ.get(ENV_DIR)
    if explicit:
        root = os.path.realpath(os.path.expanduser(_normal(explicit)))
        if not is_wiki(root):
            how = "--wiki" if path else ENV_DIR
            fix = (
                f"point {how} at a wiki's folder, or create one with `llm-wiki init NEW-FOLDER`"
                if _init_refuses(root)
                else f"create one with `llm-wiki init {root}`"
            )
            raise WikiError(
                f"{root} is not a wiki (no schema.md beside entries/ or log.md; set by {how}); {fix}."
            )
        return Wiki(root)
    folder = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    while True:
        if is_wiki(folder):
            return Wiki(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    home = os.path.join(os.path.expanduser("~"), "llm-wiki")
    if is_wiki(home):
        return Wiki(home)
    raise WikiError(
        "No wiki found here, in LLM_WIKI_DIR or at ~/llm-wiki; create one with "
        "`llm-wiki init PATH`, or pass --wiki PATH."
    )


def _init_refuses(root: str) -> bool:
    """True where `init` would refuse: a file, or a folder holding other things."""
    try:
        return os.path.exists(root) and (
            not os.path.isdir(root) or any(name not in IGNORABLE for name in os.listdir(root))
        )
    except OSError:
        return True

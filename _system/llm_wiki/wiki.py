"""The wiki root: where its files live, its settings and schema, and finding it."""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_wiki.entries import decode_text
from llm_wiki.errors import InvalidInput, WikiError
from llm_wiki.files import atomic_write
from llm_wiki.records import Frozen
from llm_wiki.yaml_input import load_yaml

if TYPE_CHECKING:
    from llm_wiki.schema import Schema

ENV_DIR = "LLM_WIKI_DIR"
TEMPLATES = Path(__file__).parent / "templates"
STATE_DIR = ".llm-wiki"
# Files a folder may already hold and still be "empty" for init (a fresh git clone, a Mac).
IGNORABLE = {".git", ".DS_Store", ".gitignore", ".gitattributes"}


class Wiki(Frozen):
    """A wiki folder: where its files live, its settings and its schema (read once, kept)."""

    FIELDS = ("root",)
    __slots__ = ("root", "__dict__")  # __dict__: the cached settings and schema
    root: Path

    def __init__(self, root: str | os.PathLike[str]) -> None:
        object.__setattr__(self, "root", Path(root))

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
        path = self.state_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    # -- configuration
    @functools.cached_property
    def schema(self) -> Schema:
        from llm_wiki.schema import schema_data, schema_from_data  # deferred: reads need no rules

        try:
            data = self._cached(self.schema_path, schema_data)
        except FileNotFoundError:
            raise WikiError(
                f"{self.schema_path} is missing; restore it (git checkout) or copy it from a "
                "new `llm-wiki init`."
            ) from None
        return schema_from_data(data, str(self.schema_path))

    @functools.cached_property
    def settings(self) -> Settings:
        try:
            data = self._cached(self.settings_path, load_yaml) or {}
        except FileNotFoundError:
            return Settings({})
        if not isinstance(data, dict):
            raise InvalidInput(f"{self.settings_path} must be a YAML mapping of settings.")
        return Settings(data)

    def _cached(self, path: Path, load: Callable[[str, str], Any]) -> Any:
        """``load(text)`` of a config file (plain data), remembered under .llm-wiki/ by the
        file's stat: parsing YAML means importing PyYAML (~10 ms), more than ``write`` can
        afford each time. The cache is marshal (no import cost); data it cannot hold (YAML
        dates) is simply not cached."""
        st = path.stat()
        key = (str(path), st.st_mtime_ns, st.st_size, st.st_ino)
        cache = self.state_dir / "config.cache"
        try:
            stored = marshal.loads(cache.read_bytes())
            if not isinstance(stored, dict):
                stored = {}
            elif stored.get(key[0], (None,))[0] == key:
                return stored[key[0]][1]
        except (OSError, EOFError, TypeError, ValueError):
            stored = {}
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise WikiError(
                f"cannot read {path}: {exc.strerror}; fix it or its permissions."
            ) from None
        value = load(decode_text(raw, str(path)), str(path))
        stored = {k: v for k, v in stored.items() if os.path.exists(k)}
        stored[key[0]] = (key, value)
        try:
            blob = marshal.dumps(stored)
        except ValueError:
            return value
        with contextlib.suppress(OSError):  # a cache; the next run parses again
            atomic_write(self.state_path("config.cache"), blob)
        return value


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


def is_wiki(path: Path) -> bool:
    """schema.md and entries/, or schema.md and log.md: git keeps no empty folder, so a clone of
    a wiki with no entry yet has no entries/ (writes create it)."""
    schema = path / "schema.md"
    return schema.is_file() and ((path / "entries").is_dir() or (path / "log.md").is_file())


def resolve_wiki(path: str | os.PathLike[str] | None = None, *, cwd: Path | None = None) -> Wiki:
    """``--wiki`` > ``LLM_WIKI_DIR`` > nearest folder upward holding schema.md and entries/ >
    ``~/llm-wiki``."""
    explicit = path or os.environ.get(ENV_DIR)
    if explicit:
        root = Path(explicit).expanduser().resolve()
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
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if is_wiki(folder):
            return Wiki(folder)
    home = Path.home() / "llm-wiki"
    if is_wiki(home):
        return Wiki(home)
    raise WikiError(
        "No wiki found here, in LLM_WIKI_DIR or at ~/llm-wiki; create one with "
        "`llm-wiki init PATH`, or pass --wiki PATH."
    )


def _init_refuses(root: Path) -> bool:
    """True where `init` would refuse: a file, or a folder holding other things."""
    try:
        return root.exists() and (
            not root.is_dir() or any(p.name not in IGNORABLE for p in root.iterdir())
        )
    except OSError:
        return True

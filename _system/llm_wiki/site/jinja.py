"""The site's jinja2 environment, loaded only by a build that renders a page with a template
(a rebuild with nothing to render never imports jinja2)."""

from __future__ import annotations

import contextlib
import functools
import io
import marshal
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache

from llm_wiki.wiki import TEMPLATES

SITE_TEMPLATES = TEMPLATES / "site"


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """jinja2's bytecode cache in the wiki's ``.llm-wiki/site-state/templates/`` (each template
    keyed by its source's checksum): a rebuild after one write renders a dozen pages and would
    otherwise spend most of its time compiling them. No folder (not writable): no cache."""

    def __init__(self) -> None:
        super().__init__(directory="")

    def use(self, folder: Path) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.directory = str(folder)
        except OSError:
            self.directory = ""

    def load_bytecode(self, bucket: Any) -> None:
        """jinja2's Bucket.load_bytecode from the file's bytes read whole: marshal.load from a
        file object reads a code object a few bytes at a time (~6 ms for the dozen templates a
        rebuild renders, ~1 ms this way)."""
        if not self.directory:
            return
        try:
            with open(self._get_cache_filename(bucket), "rb") as fh:
                data = fh.read()
        except OSError:
            return
        magic = jinja2.bccache.bc_magic
        if data[: len(magic)] != magic:
            bucket.reset()
            return
        stream = io.BytesIO(data)
        stream.seek(len(magic))
        try:
            checksum = pickle.load(stream)
            if checksum != bucket.checksum:
                bucket.reset()
                return
            bucket.code = marshal.loads(memoryview(data)[stream.tell() :])
        except (EOFError, ValueError, TypeError, pickle.UnpicklingError):
            bucket.reset()

    def dump_bytecode(self, bucket: Any) -> None:
        if self.directory:
            with contextlib.suppress(OSError):
                super().dump_bytecode(bucket)


_DICT_ATTRS = frozenset(dir(dict))


class _Environment(jinja2.Environment):
    """jinja2's environment, with ``x.name`` on a context's dicts looked up as ``x["name"]``
    first: jinja tries the attribute first and pays for an AttributeError on every field of every
    entry shown. A dict's own attributes (``.items()``, ``.get()``) still win, as in jinja."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRS:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


@functools.cache
def environment(slug: Callable[[str], str]) -> Any:
    """The templates, compiled once per process (compiling costs more than rendering a small
    site; ``--serve`` and the tests build many), and across processes through the bytecode
    cache."""
    env = _Environment(
        loader=jinja2.FileSystemLoader(str(SITE_TEMPLATES)),
        bytecode_cache=_TemplateCache(),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals["slug"] = slug
    return env

"""Monthly archive of long-superseded entries into ``archive/YYYY-MM-<hash>.tar.zst``.

Reading side: archived entries stay readable (``show``, ``list``, ``query``, ``verify``).
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator

import zstandard

from llm_wiki.errors import WikiError
from llm_wiki.wiki import Wiki


def iter_members(wiki: Wiki, name: str) -> Iterator[tuple[str, bytes]]:
    """(member path, bytes) of every entry file in one archive, streamed."""
    path = wiki.root / name
    try:
        with open(path, "rb") as raw:
            reader = zstandard.ZstdDecompressor().stream_reader(raw)
            with tarfile.open(fileobj=reader, mode="r|") as tar:
                for member in tar:
                    if not member.isfile() or not member.name.endswith(".md"):
                        continue
                    fh = tar.extractfile(member)
                    if fh is not None:
                        yield member.name, fh.read()
    except (OSError, tarfile.TarError, zstandard.ZstdError) as exc:
        raise WikiError(
            f"{name} is unreadable ({exc}); run `llm-wiki verify` and restore it from a copy."
        ) from None


def read_member(wiki: Wiki, name: str, rel: str) -> bytes:
    for member, data in iter_members(wiki, name):
        if member == rel:
            return data
    raise WikiError(f"{rel} is missing from {name}; run `llm-wiki verify`.")

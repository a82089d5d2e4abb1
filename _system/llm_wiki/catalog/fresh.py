"""Whether the catalog is in step with log.md: the one check every read makes.

A read of a fresh catalog needs only this (one stat of log.md and one small read), so the code
that brings a stale one up to date (:mod:`.refresh`, and the log and lock code it uses) is
loaded only when something changed.
"""

from __future__ import annotations

import os

from llm_wiki.access import walls_on
from llm_wiki.catalog.db import CATALOG_VERSION, Catalog
from llm_wiki.entries import sha256_hex
from llm_wiki.wiki import Wiki

TAIL_BYTES = 4096  # of log.md, fingerprinted to notice a log that was merged, not appended to


def walls_changed(catalog: Catalog) -> bool:
    """access.yaml appeared or went since the index files were last planned: they must be
    re-planned (one set per scope under walls, one whole-wiki set without)."""
    return catalog.meta("walls", "0") != ("1" if walls_on(catalog.wiki) else "0")


def is_fresh(catalog: Catalog) -> bool:
    if catalog.meta("version") != CATALOG_VERSION or catalog.meta("render_pending") == "1":
        return False
    if walls_changed(catalog):
        return False
    size, tail = log_state(catalog.wiki)
    return str(size) == catalog.meta("log_offset") and tail == catalog.meta("log_tail")


def log_state(wiki: Wiki) -> tuple[int, str]:
    try:
        size = os.stat(wiki.path("log.md")).st_size
    except FileNotFoundError:
        return 0, ""
    return size, tail_at(wiki, size)


def tail_at(wiki: Wiki, offset: int) -> str:
    """A fingerprint of the log's last TAIL_BYTES before ``offset``: if git merged lines in
    before that point, it changes (a few lines, not one: two clones that archived the same
    entry end their logs with the same sha256)."""
    if offset <= 0:
        return ""
    try:
        with open(wiki.path("log.md"), "rb") as fh:
            start = max(0, offset - TAIL_BYTES)
            fh.seek(start)
            return sha256_hex(fh.read(offset - start))
    except FileNotFoundError:
        return ""

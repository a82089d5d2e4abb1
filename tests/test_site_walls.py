"""Walls in the site: a site built for one reader holds nothing of a scope it may not read.

The property test plays random walled wikis (tests/site_world.py says what one case does and what
counts as a leak): a few dozen cases here (``LLM_WIKI_SITE_WALLS_EXAMPLES`` to change), many more
in tests/bench/test_site_walls_bench.py.
"""

from __future__ import annotations

import os

import site_world
import walls_world
from conftest import fewer

EXAMPLES = int(os.environ.get("LLM_WIKI_SITE_WALLS_EXAMPLES", "20"))


def run_property(examples: int, monkeypatch) -> site_world.Tally:
    return walls_world.run_property(site_world, examples, monkeypatch, "site-walls-")


def test_property_no_site_shows_what_its_reader_may_not_read(monkeypatch, request):
    n = fewer(EXAMPLES)  # a tenth in the fast loop (conftest)
    tally = run_property(n, monkeypatch)
    print(tally.line())
    assert tally.cases == n and not tally.leaks

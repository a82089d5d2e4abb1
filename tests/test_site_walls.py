"""Walls in the site: a site built for one reader holds nothing of a scope it may not read.

The property test plays random walled wikis (tests/site_world.py says what one case does and what
counts as a leak): a few dozen cases here (``LLM_WIKI_SITE_WALLS_EXAMPLES`` to change), many more
in tests/bench/test_site_walls_bench.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

import site_world

EXAMPLES = int(os.environ.get("LLM_WIKI_SITE_WALLS_EXAMPLES", "20"))


def run_property(examples: int, monkeypatch) -> site_world.Tally:
    monkeypatch.setenv("LLM_WIKI_NOW", "2026-05-02T10:00:00Z")
    tally = site_world.Tally()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(site_world.worlds())
    def check(world):
        base = Path(tempfile.mkdtemp(prefix="site-walls-"))
        try:
            case = site_world.play(world, base / "wiki")
        finally:
            shutil.rmtree(base, ignore_errors=True)
        tally.add(case)
        assert not case.leaks, "\n".join(case.leaks)

    check()
    return tally


def test_property_no_site_shows_what_its_reader_may_not_read(monkeypatch):
    tally = run_property(EXAMPLES, monkeypatch)
    print(tally.line())
    assert tally.cases == EXAMPLES and not tally.leaks

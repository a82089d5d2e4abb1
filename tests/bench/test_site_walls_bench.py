"""The site's walls property at 500 cases (the default run has a few dozen).

Run with ``pytest tests/bench/test_site_walls_bench.py -s``; ``LLM_WIKI_SITE_WALLS_BENCH_EXAMPLES``
changes the count. See ``tests/site_world.py`` for what one case does and what counts as a leak.
"""

from __future__ import annotations

import os
import time

from test_site_walls import run_property

EXAMPLES = int(os.environ.get("LLM_WIKI_SITE_WALLS_BENCH_EXAMPLES", "500"))


def test_site_walls_property_at_500_cases(monkeypatch):
    start = time.process_time()
    tally = run_property(EXAMPLES, monkeypatch)
    cpu = time.process_time() - start
    print(f"\nsite walls property: {tally.line()}")
    print(f"  {cpu:.0f} s CPU, {cpu / max(tally.cases, 1) * 1000:.0f} ms CPU a case")
    assert tally.cases == EXAMPLES and not tally.leaks

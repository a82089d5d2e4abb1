"""The walls property at 5,000 cases (the default run has a few hundred).

Run with ``pytest tests/bench/test_walls_bench.py -s``; ``LLM_WIKI_WALLS_BENCH_EXAMPLES`` changes
the count. Prints the cases run, what they covered, the leaks found (must be 0) and the time.
See ``tests/walls_world.py`` for what one case does and what counts as a leak.
"""

from __future__ import annotations

import os
import time

from test_walls import run_property

EXAMPLES = int(os.environ.get("LLM_WIKI_WALLS_BENCH_EXAMPLES", "5000"))


def test_walls_property_at_5000_cases(monkeypatch):
    start = time.perf_counter()
    tally = run_property(EXAMPLES, monkeypatch)
    seconds = time.perf_counter() - start
    print(f"\nwalls property: {tally.line()}")
    print(f"  {seconds:.0f} s, {seconds / max(tally.cases, 1) * 1000:.0f} ms a case")
    assert tally.cases == EXAMPLES and not tally.leaks

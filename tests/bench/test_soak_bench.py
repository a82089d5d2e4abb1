"""A longer soak: 100 simulated days, 8 entries a day, across three month boundaries.

Prints the day count, entries, invariants broken (must be 0) and how a day's cost grows: the
mean wall time of the last 10 days against the first 10 (the baseline, measured in the same
run), for the whole day and for its job scripts alone (the rest is the invariant checks, which
read back every entry ever written).

Run: /work/venv/bin/pytest tests/bench/test_soak_bench.py -s
"""

from __future__ import annotations

import statistics

from soak import Soak

DAYS = 100
PER_DAY = 8


def test_a_hundred_days(tmp_path):
    fail_days = {day: ("ledger", "ops", "platform")[day % 3] for day in range(10, DAYS, 25)}
    soak = Soak(tmp_path, start="2026-03-20", per_day=PER_DAY, fail_days=fail_days)
    result = soak.run(DAYS)
    print("\n" + result.report())
    for what, series in (("a day", result.day_seconds), ("its jobs", result.job_seconds)):
        first, last = statistics.mean(series[:10]), statistics.mean(series[-10:])
        print(
            f"{what}: {first:.2f} s over the first 10 days (baseline), {last:.2f} s over the "
            f"last 10 ({last / first:.2f}x)"
        )
    print(f"failures injected on {len(fail_days)} days, each recorded and recovered next night")
    assert result.broken == [], "\n".join(result.broken[:20])
    assert result.failures_recorded == len(fail_days) and result.archives == 3

"""A simulated month: 40 days through the job scripts, crossing a month boundary, 0 broken."""

from __future__ import annotations

import datetime as dt

import pytest

from soak import Soak

DAYS = 40
START = "2026-04-12"  # 40 days: to 2026-05-21, across the end of April


@pytest.mark.slow
def test_forty_simulated_days_break_no_invariant(tmp_path):
    soak = Soak(tmp_path, start=START, per_day=3, fail_days={16: "ops"})
    result = soak.run(DAYS)
    print("\n" + result.report())
    end = dt.date.fromisoformat(START) + dt.timedelta(days=DAYS - 1)
    assert end.month != dt.date.fromisoformat(START).month
    assert result.broken == [], "\n".join(result.broken[:20])
    assert result.days == DAYS and result.authored == 3 * DAYS
    assert result.archived > 0 and result.archives == 1  # May's first run; April's had none due
    assert result.failures_recorded == 1 and result.superseded > 0

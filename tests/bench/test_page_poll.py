"""The end-to-end bench times the run page on the page's own polling schedule: the numbers are status.js's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.bench_e2e import PAGE_POLL_MS, page_seen_after  # noqa: E402


def test_the_bench_polls_as_the_run_page_does():
    script = (ROOT / "static" / "js" / "status.js").read_text()
    found = re.search(r"var FIRST = (\d+), GROWTH = ([\d.]+), CEILING = (\d+);", script)
    assert found, "status.js no longer declares FIRST, GROWTH and CEILING: update bench/bench_e2e.py's PAGE_POLL_MS"
    assert (int(found[1]), float(found[2]), int(found[3])) == PAGE_POLL_MS


def test_the_page_sees_a_score_at_its_first_poll_after_it():
    assert page_seen_after(0.1) == 0.15
    assert abs(page_seen_after(0.3) - 0.375) < 1e-9  # 0.15, then 0.225 more
    assert page_seen_after(60) - page_seen_after(59) <= 1.5  # at most the ceiling apart, a long run

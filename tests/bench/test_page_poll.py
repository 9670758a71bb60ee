"""The end-to-end bench times the run page as the page asks: the numbers are status.js's and the server's."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lexboard import long_poll

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.bench_e2e import PAGE_POLL_MS, PAGE_WAIT_S, SERVER_LOOKS, page_seen_after  # noqa: E402


def test_the_bench_asks_as_the_run_page_does():
    script = (ROOT / "static" / "js" / "status.js").read_text()
    found = re.search(r"var FIRST = (\d+), GROWTH = ([\d.]+), CEILING = (\d+);", script)
    assert found, "status.js no longer declares FIRST, GROWTH and CEILING: update bench/bench_e2e.py's PAGE_POLL_MS"
    assert (int(found[1]), float(found[2]), int(found[3])) == PAGE_POLL_MS
    wait = re.search(r"var WAIT = ([\d.]+);", script)
    assert wait, "status.js no longer declares WAIT: update bench/bench_e2e.py's PAGE_WAIT_S"
    assert float(wait[1]) == PAGE_WAIT_S and 0 < PAGE_WAIT_S <= long_poll.MAX_SECONDS
    assert '"wait="' in script


def test_the_bench_looks_at_the_row_as_the_server_does():
    assert SERVER_LOOKS == (long_poll.FAST_EVERY, long_poll.FAST_FOR, long_poll.SLOW_EVERY)


def test_the_page_sees_a_score_at_the_servers_first_look_after_it():
    assert abs(page_seen_after(0.1) - 0.1) < 1e-9  # the first request, begun at once, held: its look at 0.1 s
    assert abs(page_seen_after(0.31) - 0.32) < 1e-9
    # Scoring starts at 0.05 s: that answer comes at 0.06 s, the next request begins then and sees the score at its
    # look 0.24 s in.
    assert abs(page_seen_after(0.3, started=0.05) - 0.30) < 1e-9
    assert abs(page_seen_after(0.3, started=-0.01) - 0.30) < 1e-9  # scoring started before the upload's answer
    assert abs(page_seen_after(3.0) - 3.0) < 1e-9  # past 2 s into a request, a look every 100 ms
    assert page_seen_after(60) - 60 <= 0.1  # a long run: a request every 5 s, the score seen at once
    assert page_seen_after(59.01) - 59.01 <= 0.1

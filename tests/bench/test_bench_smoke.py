"""Each bench script runs end to end in its tiny ``--smoke`` mode (bench/README.md).

One bench stack (gunicorn + a Celery worker, production settings, a database
of its own on the local PostgreSQL, Redis databases 10 and 11) is started for
the module; the scripts run as commands against it, the way a person runs
them. Needs PostgreSQL and Redis (skipped otherwise); the page bench needs
``wrk`` (a Debian package, skipped when missing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import Stack, free_port, postgres_available, redis_available  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack():
    if not (postgres_available() and redis_available()):
        pytest.skip("the bench stack needs PostgreSQL and Redis on 127.0.0.1")
    smoke = Stack(name=f"lexboard_bench_smoke_{os.getpid()}", port=free_port(), entries=5, broker_db=10, cache_db=11,
                  web_workers=1, web_threads=2)
    with smoke:
        yield smoke
    from bench.common import _psql

    _psql(f'DROP DATABASE IF EXISTS "{smoke.name}" WITH (FORCE)')
    shutil.rmtree(smoke.var_dir, ignore_errors=True)


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CACHE_", "CELERY_"))}
    result = subprocess.run([sys.executable, f"bench/{script}", "--smoke", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def stack_args(stack: Stack) -> list[str]:
    return ["--url", stack.url, "--db", stack.name]


def test_the_end_to_end_bench_prints_its_breakdown(stack):
    out = run_bench("bench_e2e.py", *stack_args(stack)).stdout
    assert "queue wait s" in out and "**median**" in out
    results = json.loads((ROOT / "var" / "bench-results" / "e2e-smoke.json").read_text())
    assert len(results["rounds"]) == 2 and all(r["scoring"] > 0 for r in results["rounds"])


def test_the_end_to_end_bench_runs_on_the_embedded_default_too(tmp_path):
    """``--embedded``: make run's SQLite and filesystem broker, a stack of its own; the command line timed on the
    same files beside it."""
    name = f"lexboard_bench_smoke_embedded_{os.getpid()}"
    try:
        out = run_bench("bench_e2e.py", "--embedded", "--db", name, "--port", str(free_port())).stdout
    finally:
        shutil.rmtree(ROOT / "var" / name, ignore_errors=True)
    assert "embedded default" in out and "command line s" in out
    results = json.loads((ROOT / "var" / "bench-results" / "e2e-smoke.json").read_text())
    assert results["backend"].startswith("embedded") and all(r["cli"] > 0 for r in results["rounds"])
    assert results["ratios"]["page"] > 0


def test_the_throughput_bench_scores_every_submission(stack):
    out = run_bench("bench_throughput.py", *stack_args(stack)).stdout
    assert "submissions per minute" in out and "no starvation" in out


def test_the_page_bench_measures_every_target(stack):
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (apt-get install wrk); only bench_pages needs it")
    out = run_bench("bench_pages.py", *stack_args(stack)).stdout
    for target in ("static file", "home page", "leaderboard page", "API leaderboard"):
        assert target in out


def test_the_growth_bench_scores_in_a_subprocess_and_draws_a_plot():
    out = run_bench("bench_growth.py").stdout
    assert "µs per line" in out and "5,000" in out
    svg = (ROOT / "var" / "bench-results" / "growth-smoke.svg").read_text()
    assert svg.startswith("<svg") and "run lines" in svg


def test_the_ladder_bench_times_the_swap_test_beside_its_peers():
    out = run_bench("bench_ladder.py").stdout
    assert "swap / scoring" in out and "| 300 | 5 |" in out
    records = json.loads((ROOT / "var" / "bench-results" / "ladder-smoke.json").read_text())
    assert records[0]["examples"] == 300 and records[0]["swap_step_s"] > 0


def test_the_ledger_bench_times_the_crafted_shape_check():
    out = run_bench("bench_ledger.py").stdout
    assert "corpus pass (s)" in out and "| False |" in out  # a random run is no crafted probe
    results = json.loads((ROOT / "var" / "bench-results" / "ledger-smoke.json").read_text())
    assert results["texts_read"] > 0 and results["shape_check_s"] >= 0


def test_the_json_run_bench_measures_both_conversions_and_the_child_apart():
    out = run_bench("bench_json_run.py").stdout
    assert "| now |" in out and "| before |" in out
    results = json.loads((ROOT / "var" / "bench-results" / "json_run-smoke.json").read_text())
    now, before = results["rows"]
    assert now["trec_bytes"] == before["trec_bytes"] > 0
    # The conversion is the child's: its CPU and peak are its own, and the web process has no child before.
    assert now["child_cpu_s"] > 0 and now["child_peak_rss_mib"] > 0
    assert before["child_cpu_s"] == before["child_peak_rss_mib"] == 0


def test_the_first_entry_bench_compares_the_worker_with_the_command_line():
    out = run_bench("bench_first_entry.py").stdout
    assert "| plain |" in out and "| gzipped |" in out
    results = json.loads((ROOT / "var" / "bench-results" / "first_entry-smoke.json").read_text())
    assert set(results) == {"plain", "gzipped", "plain, with a corpus of 22,633 ids (BSARD's docid rule)"}
    assert all(row["ratio_fast"] > 0 and len(row["cli_cpu_s"]) == 3 for row in results.values())
    # The whole scoring, double entry included (its forked reader's CPU counted), against its peer's sum.
    assert all(row["ratio_whole"] > 0 and min(row["worker_whole_cpu_s"]) > max(row["worker_fast_cpu_s"])
               and len(row["pytrec_eval_cpu_s"]) == 3 for row in results.values())

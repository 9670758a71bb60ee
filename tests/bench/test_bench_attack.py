"""bench/bench_attack.py in its --smoke mode: the attacker recovers every pair before, none after with one identity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# The bench in a subprocess: about two minutes alone (docs/testing.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_attack_bench_runs_and_the_ladder_stops_one_identity():
    done = subprocess.run([sys.executable, "bench/bench_attack.py", "--smoke"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads((ROOT / "var" / "bench-results" / "attack.json").read_text())
    assert results["before"]["recovered"] == results["before"]["relevant_pairs"] > 0
    assert results["after_one_identity"]["recovered"] == 0

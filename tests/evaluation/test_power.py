"""Statistical power: minimum detectable difference and topic-set-size design (Sakai 2016)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from evaluation.power import (
    difference_variance,
    min_detectable_difference,
    paired_power,
    power_analysis,
    residual_variance,
    topics_needed,
)

from .conftest import ROOT


def board(seed: int, systems: int = 8, topics: int = 222) -> np.ndarray:
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 3, size=topics)
    skill = rng.normal(0, 0.05, size=(systems, 1))
    return np.clip(difficulty + skill + rng.normal(0, 0.15, size=(systems, topics)), 0, 1)


def test_the_residual_variance_is_the_two_way_anova_one():
    x = np.array([[0.2, 0.4, 0.9], [0.1, 0.5, 0.6]])
    # Hand-worked: row means 0.5, 0.4; column means 0.15, 0.45, 0.75; grand mean 0.45.
    # Residuals x - row - col + grand: [0, -0.1, 0.1], [0, 0.1, -0.1]; SS_E = 0.04, df = 1 x 2.
    assert residual_variance(x) == pytest.approx(0.02)
    assert difference_variance(x) == pytest.approx(0.04)
    assert difference_variance(x) == pytest.approx(np.var(x[0] - x[1], ddof=1))


@pytest.mark.parametrize("seed", range(3))
def test_twice_the_residual_variance_is_the_mean_variance_of_paired_differences(seed):
    x = board(seed, systems=6, topics=50)
    pairs = [np.var(x[i] - x[j], ddof=1) for i, j in itertools.combinations(range(len(x)), 2)]
    assert difference_variance(x) == pytest.approx(float(np.mean(pairs)), rel=1e-12)


@pytest.mark.parametrize(("delta", "sd", "n"), [(0.02, 0.2, 222), (0.05, 0.3, 50), (0.1, 0.25, 10), (0.5, 1.0, 3)])
def test_power_equals_statsmodels(delta, sd, n):
    expected = TTestPower().power(effect_size=delta / sd, nobs=n, alpha=0.05, alternative="two-sided")
    assert paired_power(delta, sd, n) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize(("delta", "sd"), [(0.01, 0.28), (0.02, 0.28), (0.05, 0.2), (0.3, 0.5), (1.0, 0.4)])
def test_topics_needed_is_the_smallest_n_statsmodels_allows(delta, sd):
    n_float = TTestPower().solve_power(effect_size=delta / sd, alpha=0.05, power=0.8, alternative="two-sided")
    n = topics_needed(delta, sd)
    assert n == max(2, math.ceil(n_float - 1e-6))
    assert paired_power(delta, sd, n) >= 0.8
    if n > 2:
        assert paired_power(delta, sd, n - 1) < 0.8


def test_topics_needed_is_close_to_sakais_normal_approximation():
    # Sakai (2016): n ≈ ((z_{α/2} + z_β) σ / δ)² + z_{α/2}² / 2; for σ = 0.28, δ = 0.01: 6,155.5 + 1.9.
    approx = ((1.959964 + 0.841621) * 0.28 / 0.01) ** 2 + 1.959964 ** 2 / 2
    assert abs(topics_needed(0.01, 0.28) - approx) <= 2


@pytest.mark.parametrize(("sd", "n"), [(0.28, 222), (0.1, 30), (0.5, 5), (0.3, 2)])
def test_the_minimum_detectable_difference_has_power_0_8(sd, n):
    d = min_detectable_difference(sd, n)
    assert paired_power(d, sd, n) == pytest.approx(0.8, abs=1e-9)
    expected = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8, alternative="two-sided") * sd
    assert d == pytest.approx(expected, rel=1e-5)


def test_a_board_analysis_fits_together():
    x = board(1)
    pa = power_analysis(x)
    assert (pa.n_systems, pa.n_topics) == (8, 222)
    sd = math.sqrt(pa.variance)
    assert pa.min_detectable == pytest.approx(min_detectable_difference(sd, 222))
    assert pa.topics_needed == {0.01: topics_needed(0.01, sd), 0.02: topics_needed(0.02, sd)}
    assert pa.topics_needed[0.01] > pa.topics_needed[0.02] > 222 > 0
    assert pa.to_dict()["topics_needed"] == {"0.01": pa.topics_needed[0.01], "0.02": pa.topics_needed[0.02]}


def test_identical_entries_detect_any_difference():
    x = np.tile(np.linspace(0, 1, 20), (3, 1))
    pa = power_analysis(x)
    assert pa.variance == pytest.approx(0.0, abs=1e-30)
    assert pa.min_detectable == pytest.approx(0.0, abs=1e-12)
    assert pa.topics_needed == {0.01: 2, 0.02: 2}


@pytest.mark.parametrize(("values", "message"), [
    ([[0.1, 0.2, 0.3]], "at least 2 scored entries"),
    ([[0.1], [0.2]], "at least 2 topics"),
    ([0.1, 0.2], "2-D matrix"),
    ([[0.1, float("nan")], [0.2, 0.3]], "finite"),
])
def test_it_refuses_what_it_cannot_estimate(values, message):
    with pytest.raises(ValueError, match=message):
        power_analysis(values)


def test_the_power_subcommand(tmp_path):
    qrels = "".join(f"q{i} 0 d{i} 1\n" for i in range(40))
    rng = np.random.default_rng(0)
    runs = []
    for r in range(3):
        lines = []
        for i in range(40):
            docs = [f"d{i}"] + [f"x{j}" for j in range(9)]
            rng.shuffle(docs)
            lines += [f"q{i} Q0 {d} {k} {10 - k} r{r}\n" for k, d in enumerate(docs, start=1)]
        path = tmp_path / f"run{r}"
        path.write_text("".join(lines))
        runs += ["--run", str(path)]
    (tmp_path / "qrels").write_text(qrels)
    res = subprocess.run([sys.executable, "-m", "evaluation", "power", "--qrels", str(tmp_path / "qrels"),
                          "--measure", "MRR@10", *runs], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "MRR@10: 40 topics, 3 runs" in res.stdout
    assert "topics needed to detect 0.01:" in res.stdout and "minimum detectable difference" in res.stdout

"""Leaderboard significance: markers, Holm over the page's comparisons, tiers."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats import holm, randomization_test
from leaderboard.significance import compute_significance, leaderboard_significance

N = 60


@pytest.fixture
def base():
    return np.random.default_rng(7).random(N) * 0.5


def test_identical_systems_form_one_tier(base):
    sig = compute_significance(entries=[(1, False, base), (2, False, base.copy()), (3, True, base.copy())],
                               measure="R@100")
    assert sig.tiers == {1: 1, 2: 1, 3: 1}
    assert all(not m.significant and m.p == 1.0 for m in sig.vs_leader.values())
    assert sig.baseline_id == 3 and not sig.vs_baseline[1].significant


def test_a_much_better_system_gets_a_tier_of_its_own(base):
    noise = np.random.default_rng(8).normal(0, 0.01, N)
    better = np.clip(base + 0.4 + noise, 0, 1)
    sig = compute_significance(entries=[(10, False, better), (11, False, base), (12, True, np.clip(base + noise, 0, 1))],
                               measure="R@100")
    assert sig.tiers[10] == 1
    assert sig.tiers[11] == sig.tiers[12] == 2
    assert sig.vs_leader[11].significant and sig.vs_leader[11].direction == "worse"
    assert sig.vs_leader[11].symbol == "▼"
    assert sig.vs_baseline[10].significant and sig.vs_baseline[10].symbol == "▲"
    assert not sig.vs_baseline[11].significant and sig.vs_baseline[11].symbol == "="


def test_holm_is_applied_over_the_comparisons_on_the_page(base):
    rng = np.random.default_rng(9)
    vectors = [np.clip(base + shift + rng.normal(0, 0.05, N), 0, 1) for shift in (0.08, 0.05, 0.03, 0.0)]
    entries = [(i + 1, i == 3, v) for i, v in enumerate(vectors)]
    sig = compute_significance(entries=entries, measure="R@100")
    # The family: every entry vs the leader, vs the best baseline, and each tier comparison, once per pair.
    pairs = {(min(i, 1), max(i, 1)) for i in (2, 3, 4)} | {(min(i, 4), max(i, 4)) for i in (1, 2, 3)}
    assert sig.n_comparisons >= len(pairs)
    raw = {m.reference_id: m.p for m in sig.vs_leader.values()}
    assert raw  # markers carry their raw and adjusted p
    for marker in list(sig.vs_leader.values()) + list(sig.vs_baseline.values()):
        assert marker.p_holm >= marker.p
        assert marker.significant == (marker.p_holm < 0.05)
    # With exactly the leader/baseline family (tiers adding no pair), the adjusted values equal evaluation.stats.holm.
    family = sorted(pairs)
    ps = [randomization_test(vectors[a - 1], vectors[b - 1]) for a, b in family]
    if sig.n_comparisons == len(family):
        expected = dict(zip(family, holm(ps)))
        for i, marker in sig.vs_leader.items():
            assert marker.p_holm == pytest.approx(expected[(min(i, 1), max(i, 1))])
    assert "Holm–Bonferroni over the" in sig.method and "10,000 sign flips" in sig.method


def test_holm_family_size_matches_a_hand_count():
    # Leader 1, baseline 3; tiers: 2 is far below 1 (new tier), 3 equals 2 (same tier): comparisons
    # (2,1) (3,1) (1,3) (2,3) → unique pairs {1-2, 1-3, 2-3}; tier comparisons (2 vs 1), (3 vs 2) add nothing new.
    top = np.r_[np.ones(30), np.zeros(0)]
    low = np.r_[np.zeros(30)]
    sig = compute_significance(entries=[(1, False, top), (2, False, low), (3, True, low.copy())], measure="R@100")
    assert sig.n_comparisons == 3
    p = randomization_test(top, low)
    assert sig.vs_leader[2].p == p
    assert sig.vs_leader[2].p_holm == pytest.approx(holm([p, p, 1.0])[0])
    assert sig.tiers == {1: 1, 2: 2, 3: 2}


def test_the_dataset_page_shows_markers_tiers_and_the_method(client, scored, alice, bob, analysis_dataset):
    scored("dev", alice, "perfect", name="Perfect system")
    scored("dev", bob, "random", seed=1, name="Random one", is_baseline=True)
    scored("dev", bob, "shifted", name="Shifted system")
    split = analysis_dataset.splits.get(name="dev")
    sig = leaderboard_significance(split=split)
    assert sig is not None and sig.measure == "R@10" and set(sig.tiers.values()) >= {1}
    html = client.get(analysis_dataset.get_absolute_url() + "?split=dev").content.decode()
    assert "Paired two-sided randomization test, 10,000 sign flips, seed 0, Holm–Bonferroni over the" in html
    assert "α = 0.05" in html
    assert "versus the leader" in html and "the best baseline" in html
    assert 'name="ids"' in html and 'id="compare-form"' in html
    html = client.get(analysis_dataset.get_absolute_url() + "?split=dev&sig=MAP@10").content.decode()
    assert "Markers for MAP@10" in html


def test_significance_is_cached_per_split_version(scored, alice, bob, analysis_dataset, django_assert_max_num_queries):
    scored("test", alice, "perfect")
    scored("test", bob, "random", seed=2)
    split = analysis_dataset.splits.get(name="test")
    first = leaderboard_significance(split=split)
    with django_assert_max_num_queries(0):
        again = leaderboard_significance(split=split)
    assert again.tiers == first.tiers
    scored("test", bob, "shifted")
    split.refresh_from_db()
    assert len(leaderboard_significance(split=split).tiers) == 3



def _board(n_entries: int, n_queries: int, seed: int = 3, baselines=(5, 9)) -> list[tuple[int, bool, np.ndarray]]:
    """A ranked board like the bench's: means spread widely, so the walk finds several tiers."""
    rng = np.random.default_rng(seed)
    means = np.sort(rng.uniform(0.1, 0.7, n_entries))[::-1]
    vectors = [np.clip(rng.normal(m, 0.2, n_queries), 0, 1) for m in means]
    return [(100 + i, i in baselines, v) for i, v in enumerate(vectors)]


@pytest.mark.parametrize(("n_entries", "n_queries", "n_resamples", "baselines"), [
    (2, 30, 10000, ()),
    (3, 12, 10000, (0,)),  # exact test, the leader is the baseline
    (12, 16, 10000, (4,)),
    (40, 80, 10000, (5, 9)),  # several tiers: the look-ahead batches
    (60, 60, 10000, (5, 9)),  # the family changes over several rounds before it settles
    (20, 40, 999, (3,)),  # Holm over the tier pairs undoes the tiers: the rounds cycle to the end
    (45, 50, 999, (0, 1)),
])
def test_batched_markers_and_tiers_equal_the_pair_by_pair_computation(n_entries, n_queries, n_resamples, baselines):
    from .significance_before_batching import compute_significance_before_batching

    entries = _board(n_entries, n_queries, seed=n_entries, baselines=baselines)
    kw = {"measure": "R@100", "n_resamples": n_resamples}
    batched = compute_significance(entries=entries, **kw)
    # Same p-values, Holm values, markers, tiers and number of comparisons as one test per pair.
    assert batched == compute_significance_before_batching(entries=entries, **kw)


def test_the_comparisons_are_tested_in_a_few_batches(monkeypatch):
    import leaderboard.significance as significance_module
    from evaluation.stats import randomization_tests

    batches: list[int] = []

    def counting(a_rows, b_rows, **kw):
        batches.append(len(a_rows))
        return randomization_tests(a_rows, b_rows, **kw)

    monkeypatch.setattr(significance_module, "randomization_tests", counting)
    entries = _board(60, 60, seed=4)
    sig = compute_significance(entries=entries, measure="R@100")
    assert len(set(sig.tiers.values())) > 2
    # Every pair with the leader or the best baseline in the first batch, then a batch per new tier best at most.
    assert batches[0] == 2 * 59 - 1
    assert all(n <= significance_module.LOOKAHEAD for n in batches[1:])
    assert len(batches) < 60
    vectors = {i: v for i, _, v in entries}
    for i, marker in sig.vs_leader.items():
        assert marker.p == randomization_test(vectors[i], entries[0][2])


def test_the_significance_bench_finds_the_same_markers_both_ways(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "significance.json"
    result = subprocess.run([sys.executable, "bench/bench_significance.py", "--smoke", "--out", str(out)], cwd=root,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    assert report["same_significance"] and report["tests_alone"]["same_p_values"]
    assert "pair by pair (before)" in result.stdout

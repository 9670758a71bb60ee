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

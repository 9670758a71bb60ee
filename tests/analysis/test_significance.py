"""Leaderboard significance: markers and tiers (one pass down the ranking), Bonferroni over both as one family."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.stats import randomization_test
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


def _board(n_entries: int, n_queries: int, seed: int = 3, baselines=(5, 9)) -> list[tuple[int, bool, np.ndarray]]:
    """A ranked board like the bench's: means spread widely, so the pass finds several tiers."""
    rng = np.random.default_rng(seed)
    means = np.sort(rng.uniform(0.1, 0.7, n_entries))[::-1]
    vectors = [np.clip(rng.normal(m, 0.2, n_queries), 0, 1) for m in means]
    return [(100 + i, i in baselines, v) for i, v in enumerate(vectors)]


@pytest.mark.parametrize(("baselines", "expected"), [
    ((5, 9), 2 * 12 - 3),  # vs the leader (11) and vs the best baseline (11), the leader–baseline pair once
    ((0, 9), 12 - 1),  # the leader is the best baseline: one comparison per other entry
    ((), 12 - 1),  # no baseline: vs the leader only
])
def test_the_family_is_the_marker_comparisons_and_the_tier_tests(baselines, expected):
    entries = _board(12, 40, baselines=baselines)
    sig = compute_significance(entries=entries, measure="R@100", n_resamples=2000)
    assert sig.n_marker_comparisons == expected and sig.n_tier_comparisons == 11
    assert sig.family_size == expected + 11
    vectors = {i: v for i, _, v in entries}
    leader = entries[0][0]
    best_baseline = next((i for i, b, _ in entries if b), None)
    markers = [(i, leader, m) for i, m in sig.vs_leader.items()] + [(i, best_baseline, m) for i, m in sig.vs_baseline.items()]
    assert len(markers) == len(sig.vs_leader) + len(sig.vs_baseline) and markers
    for i, ref, marker in markers:
        assert marker.p == randomization_test(vectors[i], vectors[ref], n_resamples=2000)
        assert marker.p_adjusted == pytest.approx(min(1.0, marker.p * sig.family_size))
        assert marker.significant == (marker.p * sig.family_size < 0.05)
    assert len(set(sig.tiers.values())) > 1


def test_the_family_size_matches_a_hand_count():
    # Leader 1, baseline 3: markers (2 vs 1), (3 vs 1), (1 vs 3), (2 vs 3) → pairs {1-2, 1-3, 2-3}; tier tests 2.
    # Tiers: 2 is far below 1 (a new tier), 3 equals 2 (same tier). One family of 3 + 2 = 5.
    top = np.ones(30)
    low = np.zeros(30)
    sig = compute_significance(entries=[(1, False, top), (2, False, low), (3, True, low.copy())], measure="R@100")
    assert sig.n_marker_comparisons == 3 and sig.n_tier_comparisons == 2 and sig.family_size == 5
    p = randomization_test(top, low)
    assert p == 1 / 10_001  # only the two all-same flips (2 in 2^30) reach |sum| = 30: no hit among 10,000
    assert sig.vs_leader[2].p == p
    assert sig.vs_leader[2].p_adjusted == pytest.approx(5 * p)
    assert sig.tiers == {1: 1, 2: 2, 3: 2}
    assert sig.tier_tests[2].head_id == 1 and sig.tier_tests[2].new_tier
    assert sig.tier_tests[2].p_adjusted == pytest.approx(5 * p)
    assert sig.tier_tests[3].head_id == 2 and not sig.tier_tests[3].new_tier and sig.tier_tests[3].p == 1.0


def test_the_number_of_flips_lets_the_smallest_p_pass_the_correction():
    from leaderboard.significance import MAX_RESAMPLES, resamples_for

    assert resamples_for(1) == resamples_for(50) == 10_000  # the floor
    assert resamples_for(100) == 20_000  # ⌈10 × 100 / 0.05⌉
    assert resamples_for(197) == 39_400
    assert resamples_for(397) == resamples_for(10_000) == MAX_RESAMPLES == 50_000  # the time cap
    for m in (1, 19, 100, 249, 397, 2000):
        assert m / (resamples_for(m) + 1) < 0.05  # the smallest attainable adjusted p is below α
    sig = compute_significance(entries=_board(30, 20), measure="R@100")
    assert sig.n_marker_comparisons == 57 and sig.family_size == 57 + 29 and sig.n_resamples == 17_200


def test_a_clearly_better_entry_is_marked_on_a_200_entry_board():
    # Before: 10,000 flips and Holm over ~575 comparisons (markers and tier pairs) made the smallest
    # attainable adjusted p 575 / 10,001 > 0.05, so no marker could ever be significant. Now 50,000 flips and
    # Bonferroni over 397 + 199 = 596: the smallest adjusted p is 596 / 50,001 ≈ 0.012.
    rng = np.random.default_rng(11)
    n = 100
    base = rng.random(n) * 0.5
    best = np.clip(base + 0.45, 0, 1)
    entries = [(1, False, best)] + [(2 + i, i == 3, np.clip(base + rng.normal(0, 0.05, n), 0, 1)) for i in range(199)]
    entries[1:] = sorted(entries[1:], key=lambda e: -e[2].mean())
    sig = compute_significance(entries=entries, measure="R@100")
    assert sig.n_marker_comparisons == 2 * 200 - 3 and sig.n_tier_comparisons == 199
    assert sig.n_resamples == 50_000
    assert all(m.significant and m.symbol == "▼" for m in sig.vs_leader.values())
    assert sig.vs_baseline[1].significant and sig.vs_baseline[1].symbol == "▲"
    assert sig.tiers[1] == 1 and all(sig.tiers[i] == 2 for i, _, _ in entries[1:])


def test_tiers_follow_one_pass_down_the_ranking_with_the_familys_bonferroni():
    entries = _board(40, 80, seed=40)
    sig = compute_significance(entries=entries, measure="R@100", n_resamples=5000)
    ids = [i for i, _, _ in entries]
    vectors = {i: v for i, _, v in entries}
    assert sig.tiers[ids[0]] == 1 and ids[0] not in sig.tier_tests
    head, tier = ids[0], 1
    for i in ids[1:]:
        test = sig.tier_tests[i]
        assert test.head_id == head  # always the first entry of the current tier
        assert test.p == randomization_test(vectors[i], vectors[head], n_resamples=5000)
        m = sig.family_size
        assert test.p_adjusted == pytest.approx(min(1.0, test.p * m))
        assert test.new_tier == (test.p * m < 0.05 and vectors[i].mean() < vectors[head].mean())
        if test.new_tier:
            head, tier = i, tier + 1
        assert sig.tiers[i] == tier
    assert 2 < tier < 40


def test_tiers_are_deterministic_and_do_not_depend_on_the_walks_prediction(monkeypatch):
    import leaderboard.significance as significance_module

    entries = _board(60, 60, seed=4)
    sig = compute_significance(entries=entries, measure="R@100", n_resamples=8000)
    assert compute_significance(entries=entries, measure="R@100", n_resamples=8000) == sig
    # The normal approximation only decides which pairs are tested in which batch: predicting no
    # boundary at all, or one at every entry, gives the same p-values, markers and tiers.
    for guess in (1.0, 0.0):
        monkeypatch.setattr(significance_module, "_approx_p", lambda d, guess=guess: guess)
        assert compute_significance(entries=entries, measure="R@100", n_resamples=8000) == sig
    assert len(set(sig.tiers.values())) > 2


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
    # Every marker pair and the predicted tier pairs in the first batch; a missed prediction adds one.
    assert batches[0] >= sig.n_marker_comparisons == 2 * 60 - 3
    assert len(batches) <= 3
    vectors = {i: v for i, _, v in entries}
    for i, marker in sig.vs_leader.items():
        assert marker.p == randomization_test(vectors[i], entries[0][2], n_resamples=sig.n_resamples)


def test_a_board_with_few_queries_is_tested_exactly_and_says_so():
    entries = _board(3, 12, baselines=(0,))
    sig = compute_significance(entries=entries, measure="R@100")
    assert sig.exact and sig.flips == "exact: all 2^12 = 4,096 sign flips"
    assert "exact: all 2^12" in sig.method and "(2 comparisons)" in sig.method
    assert "Bonferroni over all 4 (significant when p × 4 < 0.05)" in sig.method


def test_the_dataset_page_shows_markers_tiers_and_the_method(client, scored, alice, bob, analysis_dataset):
    scored("dev", alice, "perfect", name="Perfect system")
    scored("dev", bob, "random", seed=1, name="Random one", is_baseline=True)
    scored("dev", bob, "shifted", name="Shifted system")
    split = analysis_dataset.splits.get(name="dev")
    sig = leaderboard_significance(split=split)
    assert sig is not None and sig.measure == "R@10" and set(sig.tiers.values()) >= {1}
    assert sig.n_marker_comparisons == 3 and sig.n_tier_comparisons == 2 and sig.n_resamples == 10_000
    html = client.get(analysis_dataset.get_absolute_url() + "?split=dev").content.decode()
    assert ("Significance on R@10: paired two-sided randomization test on the per-query values "
            "(10,000 random sign flips, seed 0), α = 0.05.") in html
    assert "Bonferroni over the 3 marker and 2 tier comparisons together (significant when p × 5 &lt; 0.05)" in html
    assert "versus the leader" in html and "the best baseline" in html
    assert "Bonferroni-adjusted" in html  # a tier's test on hover
    assert 'name="ids"' in html and 'id="compare-form"' in html
    html = client.get(analysis_dataset.get_absolute_url() + "?split=dev&sig=MAP@10").content.decode()
    assert "Significance on MAP@10:" in html


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


@pytest.mark.slow  # the bench in a subprocess, > 2 s (docs/testing.md)
def test_the_significance_bench_runs_and_checks_the_method(tmp_path):
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
    assert report["stable"] and report["smallest_adjusted_p"] < 0.05
    assert "as the page computes it" in result.stdout


class _CountingStore:
    """A dict with the cache's two methods, counting what was computed (set) and what was reused (found)."""

    def __init__(self):
        self.data: dict[str, float] = {}
        self.found = self.stored = 0

    def get_many(self, keys):
        hits = {k: self.data[k] for k in keys if k in self.data}
        self.found += len(hits)
        return hits

    def set_many(self, data, timeout=None):
        self.data.update(data)
        self.stored += len(data)
        return []


def test_remembered_p_values_give_the_same_outcome_and_a_new_entry_tests_only_its_own_pairs():
    board = _board(40, 30)
    plain = compute_significance(entries=board, measure="R@100", n_resamples=3000)
    store = _CountingStore()
    remembered = compute_significance(entries=board, measure="R@100", n_resamples=3000, p_store=store)
    assert remembered == plain and store.found == 0 and store.stored > 40
    first = store.stored
    # A new entry lands in the middle of the board: only the pairs that involve it (and the tier walk's
    # new pairs below it) are tested; everything else comes from the store, and the outcome is a fresh run's.
    newcomer = (999, False, np.clip(board[20][2] + 0.01, 0, 1))
    grown = [*board[:20], newcomer, *board[20:]]
    again = compute_significance(entries=grown, measure="R@100", n_resamples=3000, p_store=store)
    assert again == compute_significance(entries=grown, measure="R@100", n_resamples=3000)
    assert store.found >= first - 5 and store.stored - first <= 12, (first, store.found, store.stored)


def _contradictions(sig) -> list[str]:
    """Rows whose tier and marker vs the leader read as opposite answers to one question."""
    out = []
    for i, tier in sig.tiers.items():
        marker = sig.vs_leader.get(i)
        if marker is None:
            continue
        worse = marker.significant and marker.direction == "worse"
        if tier == 1 and worse:
            out.append(f"#{i}: tier 1 (not significantly worse than the leader) beside ▼ vs the leader")
        test = sig.tier_tests.get(i)
        if test is not None and test.head_id == sig.leader_id and test.new_tier and not worse:
            out.append(f"#{i}: a new tier below the leader beside '=' vs the leader")
    return out


def test_a_row_never_shows_tier_one_beside_significantly_worse_than_the_leader():
    """One statistical story per board: the issue's board, where Holm (markers) and Bonferroni (tiers) disagreed.

    16 queries, exact test. X differs from the leader in 6 queries, all lower: p = 2^-5 = 0.031. Holm over the
    three marker pairs (X–leader, baseline–leader, X–baseline, the last two p ≈ 3e-5) adjusts X's p by 1 and
    marked it ▼; Bonferroni over the two tier tests made it 0.0625 and kept X in tier 1.
    """
    leader = np.ones(16)
    x = leader.copy()
    x[:6] -= 0.1
    baseline = np.zeros(16)
    sig = compute_significance(entries=[(1, False, leader), (2, False, x), (3, True, baseline)], measure="R@100")
    assert sig.vs_leader[2].p == pytest.approx(2 ** -5)
    assert _contradictions(sig) == []
    assert sig.tiers[2] == 1 and sig.vs_leader[2].symbol == "="
    assert sig.tiers[3] == 2 and sig.vs_leader[3].symbol == "▼"


@pytest.mark.parametrize("seed", range(6))
def test_no_row_of_a_random_board_contradicts_itself(seed):
    sig = compute_significance(entries=_board(25, 40, seed=seed), measure="R@100", n_resamples=2000)
    assert _contradictions(sig) == []

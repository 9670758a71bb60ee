"""The batched randomization test gives, comparison by comparison, the p-values of the single-pair test.

``_legacy_randomization_test`` is the single-pair implementation as it was
before the batched one existed (one flip matrix drawn per comparison, one
matrix-vector product): the leaderboard's markers must not change because
they are now computed many at a time.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from evaluation import stats
from evaluation.stats import EXACT_MAX_N, randomization_test, randomization_tests


def _legacy_randomization_test(a, b, *, n_resamples=10000, seed=0):
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = len(d)
    if n == 0 or not np.any(d):
        return 1.0
    observed = abs(d.sum())
    threshold = observed - 1e-9 * max(observed, np.abs(d).sum())
    if n <= EXACT_MAX_N:
        flips = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        sums = flips @ d
        return float(np.mean(np.abs(sums) >= threshold))
    rng = np.random.default_rng(seed)
    hits = 0
    block = max(1, min(n_resamples, 4_000_000 // n))
    done = 0
    while done < n_resamples:
        m = min(block, n_resamples - done)
        flips = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(flips @ d) >= threshold))
        done += m
    return (hits + 1) / (n_resamples + 1)


def _leaderboard_like(rng, k, n):
    """Rows like stored per-query scores: clipped around different means, so p-values span 0..1."""
    means = rng.uniform(0.1, 0.7, size=(k, 1))
    return np.clip(rng.normal(means, 0.2, size=(k, n)), 0.0, 1.0)


def _assert_same_as_pairwise(a_rows, b_rows, **kw):
    batched = randomization_tests(a_rows, b_rows, **kw)
    assert batched.shape == (len(a_rows),) and batched.dtype == np.float64
    for i, (a, b) in enumerate(zip(a_rows, b_rows, strict=True)):
        legacy = _legacy_randomization_test(a, b, **kw)
        assert batched[i] == legacy, (i, batched[i], legacy)
        assert randomization_test(a, b, **kw) == legacy
    return batched


@pytest.mark.parametrize("n", [1, 2, 5, 11, EXACT_MAX_N])
def test_the_batched_exact_test_equals_the_pair_by_pair_one(n):
    rng = np.random.default_rng(n)
    _assert_same_as_pairwise(_leaderboard_like(rng, 12, n), _leaderboard_like(rng, 12, n))


@pytest.mark.parametrize(("n", "seed", "n_resamples"), [
    (EXACT_MAX_N + 1, 0, 10000),
    (50, 3, 2000),
    (222, 0, 10000),  # the bench leaderboard's size, the page's settings
    (222, 5, 999),
])
def test_the_batched_random_flip_test_equals_the_pair_by_pair_one(n, seed, n_resamples):
    rng = np.random.default_rng(100 + n + seed)
    a = _leaderboard_like(rng, 15, n)
    b = _leaderboard_like(rng, 15, n)
    b[:5] = np.clip(a[:5] + rng.normal(0, 0.05, size=(5, n)), 0, 1)  # close pairs: p-values away from 0
    p = _assert_same_as_pairwise(a, b, n_resamples=n_resamples, seed=seed)
    assert p.min() < 0.05 < p.max()


def test_it_draws_the_flips_in_the_same_blocks_for_thousands_of_queries():
    # 4,000,000 // 3,000 = 1,333 flips per block: 3 blocks of which the last is short.
    rng = np.random.default_rng(11)
    a = _leaderboard_like(rng, 4, 3000)
    b = np.clip(a + rng.normal(0, 0.02, size=a.shape), 0, 1)
    _assert_same_as_pairwise(a, b, n_resamples=3000, seed=2)


def test_it_counts_ties_and_zero_differences_like_the_single_test():
    # Differences in a few exact values: many flipped sums equal the observed one exactly.
    rng = np.random.default_rng(4)
    for n in (8, EXACT_MAX_N, 40):
        a = rng.choice([0.0, 0.25, 0.5, 1.0], size=(10, n))
        b = rng.choice([0.0, 0.25, 0.5, 1.0], size=(10, n))
        b[0] = a[0]  # no difference at all: 1.0
        b[1] = a[1]
        b[1, 0] = a[1, 0] + 1.0  # one difference only
        a[2], b[2] = np.tile([1.0, 0.0], n)[:n], np.tile([0.0, 1.0], n)[:n]  # +1/-1 alternating
        p = _assert_same_as_pairwise(a, b, n_resamples=2000, seed=0)
        assert p[0] == 1.0
    assert randomization_tests(np.ones((2, 4)), np.zeros((2, 4))).tolist() == [2 / 16, 2 / 16]


def test_a_comparisons_p_value_does_not_depend_on_the_others_in_the_batch():
    rng = np.random.default_rng(6)
    a, b = _leaderboard_like(rng, 30, 222), _leaderboard_like(rng, 30, 222)
    b[::3] = np.clip(a[::3] + rng.normal(0, 0.05, size=(10, 222)), 0, 1)
    together = randomization_tests(a, b)
    order = rng.permutation(30)
    assert randomization_tests(a[order], b[order]).tolist() == together[order].tolist()
    assert randomization_tests(a[7:9], b[7:9]).tolist() == together[7:9].tolist()


def test_it_scores_the_comparisons_in_chunks_with_the_same_result(monkeypatch):
    rng = np.random.default_rng(8)
    a, b = _leaderboard_like(rng, 25, 60), _leaderboard_like(rng, 25, 60)
    b[::2] = np.clip(a[::2] + rng.normal(0, 0.05, size=(13, 60)), 0, 1)
    whole = randomization_tests(a, b, n_resamples=3000)
    monkeypatch.setattr(stats, "_SUM_BLOCK_VALUES", 7000)  # 2 comparisons per product
    assert randomization_tests(a, b, n_resamples=3000).tolist() == whole.tolist()
    monkeypatch.setattr(stats, "_SUM_BLOCK_VALUES", 1)  # one comparison per product
    assert randomization_tests(a, b, n_resamples=3000).tolist() == whole.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_the_batched_exact_test_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random((4, 10)), rng.random((4, 10))
    p = randomization_tests(a, b)
    for i in range(4):
        theirs = sps.permutation_test((a[i], b[i]), lambda x, y, axis: np.mean(x - y, axis=axis),
                                      permutation_type="samples", alternative="two-sided",
                                      n_resamples=np.inf).pvalue
        assert p[i] == pytest.approx(theirs, abs=1e-12)


def test_the_batched_random_flip_test_is_close_to_scipy():
    rng = np.random.default_rng(7)
    a = rng.random((3, 300))
    b = a - 0.02 + rng.normal(0, 0.2, (3, 300))
    p = randomization_tests(a, b, n_resamples=5000, seed=1)
    for i in range(3):
        theirs = sps.permutation_test((a[i], b[i]), lambda x, y, axis: np.mean(x - y, axis=axis),
                                      permutation_type="samples", alternative="two-sided", n_resamples=5000,
                                      rng=np.random.default_rng(1)).pvalue
        assert abs(p[i] - theirs) < 0.03


def test_it_handles_empty_batches_and_no_queries():
    assert randomization_tests(np.zeros((0, 5)), np.zeros((0, 5))).tolist() == []
    assert randomization_tests(np.zeros((3, 0)), np.zeros((3, 0))).tolist() == [1.0, 1.0, 1.0]


def test_it_rejects_rows_of_different_shapes():
    with pytest.raises(ValueError, match="same shape"):
        randomization_tests(np.zeros((2, 5)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="2-D"):
        randomization_tests(np.zeros(5), np.zeros(5))

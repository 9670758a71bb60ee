"""Statistics against scipy, Holm and fusion on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from evaluation import Run
from evaluation.fusion import combsum, rrf
from evaluation.stats import bootstrap_ci, holm, paired_ttest, randomization_test


def _scipy_sign_flip(a, b, **kw):
    return sps.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
                                alternative="two-sided", **kw).pvalue


@pytest.mark.parametrize("seed", range(5))
def test_it_matches_scipy_exactly_for_small_samples(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(10), rng.random(10)
    assert randomization_test(a, b) == pytest.approx(_scipy_sign_flip(a, b, n_resamples=np.inf), abs=1e-12)


def test_it_counts_ties_in_the_exact_test():
    # Differences of 1 and -1: the observed sum is 0, every flip is as extreme.
    assert randomization_test([1, 0, 1, 0], [0, 1, 0, 1]) == 1.0
    # All four differences positive: only the all-plus and all-minus flips reach |4|.
    assert randomization_test([1, 1, 1, 1], [0, 0, 0, 0]) == pytest.approx(2 / 16)


def test_it_is_close_to_scipy_for_large_samples_and_seeded():
    rng = np.random.default_rng(7)
    a = rng.random(300)
    b = a - 0.02 + rng.normal(0, 0.2, 300)
    ours = randomization_test(a, b, n_resamples=5000, seed=1)
    theirs = _scipy_sign_flip(a, b, n_resamples=5000, rng=np.random.default_rng(1))
    assert abs(ours - theirs) < 0.03
    assert randomization_test(a, b, n_resamples=5000, seed=1) == ours


def test_it_never_returns_zero_from_random_flips():
    a = np.ones(50)
    assert randomization_test(a, np.zeros(50), n_resamples=999) == pytest.approx(1 / 1000)


def test_it_returns_one_without_differences():
    assert randomization_test([0.5, 0.2], [0.5, 0.2]) == 1.0
    assert paired_ttest([0.5, 0.2], [0.5, 0.2]) == 1.0
    assert randomization_test([], []) == 1.0


def test_it_matches_scipys_paired_ttest():
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40)
    assert paired_ttest(a, b) == pytest.approx(sps.ttest_rel(a, b).pvalue, rel=1e-12)


def test_it_matches_scipys_percentile_bootstrap():
    rng = np.random.default_rng(5)
    x = rng.random(100)
    ref = sps.bootstrap((x,), np.mean, method="percentile", n_resamples=2000, rng=np.random.default_rng(0))
    lo, hi = bootstrap_ci(x, n_resamples=2000, seed=0)
    assert lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert lo < x.mean() < hi
    assert bootstrap_ci([0.3, 0.3, 0.3]) == (0.3, 0.3)


def test_it_rejects_unpaired_vectors():
    with pytest.raises(ValueError, match="same length"):
        randomization_test([1, 2], [1])


def test_it_adjusts_pvalues_with_holm():
    # Sorted 0.01, 0.02, 0.04, 0.30 -> x4, x3, x2, x1 = 0.04, 0.06, 0.08, 0.30 (monotone already)
    assert holm([0.04, 0.01, 0.30, 0.02]) == pytest.approx([0.08, 0.04, 0.30, 0.06])
    # 0.021 * 2 = 0.042 is raised to 0.06 by the running maximum.
    assert holm([0.02, 0.021, 0.9]) == pytest.approx([0.06, 0.06, 0.9])
    assert holm([0.5, 0.5]) == [1.0, 1.0]
    assert holm([]) == []


def test_it_keeps_holm_monotone():
    # 0.01*3 = 0.03, 0.011*2 = 0.022 -> raised to 0.03 by the running maximum.
    assert holm([0.01, 0.011, 0.5]) == pytest.approx([0.03, 0.03, 0.5])


A = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}})
B = Run.from_dict({"q1": {"c": 9.0, "a": 5.0, "d": 1.0}})


def test_it_fuses_with_reciprocal_rank_fusion():
    fused = rrf([A, B], k=60)
    ranked = fused.ranked()
    # a: 1/61 + 1/62, c: 1/63 + 1/61, b: 1/62, d: 1/63
    assert [d for d, _ in ranked["q1"]] == ["a", "c", "b", "d"]
    scores = dict(ranked["q1"])
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)
    assert ranked["q2"] == [("x", pytest.approx(1 / 61))]


def test_it_cuts_inputs_and_output_at_the_depth():
    fused = rrf([A, B], k=0, depth=1)
    assert fused.ranked() == {"q1": [("c", 1.0)], "q2": [("x", 1.0)]}  # a: 1/1 from A; c: 1/1 from B; tie -> c


def test_it_fuses_with_combsum_of_min_max_scores():
    fused = combsum([A, B]).ranked()
    # A q1: a 1, b .5, c 0; B q1: c 1, a 0.5, d 0 -> a 1.5, c 1, b .5, d 0
    assert fused["q1"] == [("a", 1.5), ("c", 1.0), ("b", 0.5), ("d", 0.0)]
    assert fused["q2"] == [("x", 1.0)]  # a single score normalises to 1


from hypothesis import (  # noqa: E402
    example,
    given,
    settings,
    strategies as st,  # noqa: E402
)

_RUNS = st.dictionaries(st.sampled_from(["q1", "q2", "q3"]),
                        st.dictionaries(st.sampled_from([f"d{i}" for i in range(8)] + ["CivC::11"]),
                                        st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.25]), min_size=1, max_size=8),
                        max_size=3)


def _trec_ranked(docs: dict[str, float]) -> list[str]:
    return [d for d, _ in sorted(docs.items(), key=lambda kv: (float(np.float32(kv[1])), kv[0]), reverse=True)]


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(_RUNS, min_size=1, max_size=3), k=st.integers(0, 100), depth=st.sampled_from([1, 2, 5, 1000]))
# Found by CI: summing 1/3 + 1 + 1 in another order differs in the last bit.
@example(runs=[{"q1": {"d0": 0.0, "d1": 0.0, "d2": 0.0}}, {"q1": {"d0": 0.0}}, {"q1": {"d0": 0.0}}], k=0, depth=5)
def test_it_fuses_like_plain_python_rrf(runs, k, depth):
    expected: dict[str, dict[str, float]] = {}
    for run in runs:
        for q, docs in run.items():
            for rank, d in enumerate(_trec_ranked(docs)[:depth], start=1):
                if k + rank > 0:
                    expected.setdefault(q, {}).setdefault(d, 0.0)
                    expected[q][d] += 1.0 / (k + rank)
    want = {q: [(d, scores[d]) for d in _trec_ranked(scores)[:depth]] for q, scores in expected.items()}
    got = rrf([Run.from_dict(r) for r in runs], k=k, depth=depth).ranked()
    assert got == want

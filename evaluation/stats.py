"""Significance tests and intervals over per-query score vectors.

Used to say whether two leaderboard entries differ: a paired two-sided
randomization (sign-flip) test, a paired t-test, a bootstrap interval of the
mean and Holm–Bonferroni adjustment across the comparisons shown on one page.
All random procedures are seeded, so a page shows the same p-value every time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np
from scipy import stats as _scipy_stats

#: Up to this many queries the sign-flip test enumerates all 2^n flips (exact p-value).
EXACT_MAX_N = 16


def _paired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("paired tests need two 1-D vectors of the same length (one value per query)")
    diff: np.ndarray = x - y
    return diff


def randomization_test(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, *, n_resamples: int = 10000,
                       seed: int = 0, alternative: str = "two-sided") -> float:
    """Paired two-sided randomization test of mean(a - b) = 0 by sign flips.

    Under the null hypothesis each per-query difference is as likely to have
    either sign. With n ≤ ``EXACT_MAX_N`` all 2^n flips are enumerated and the
    p-value is exact; otherwise ``n_resamples`` random flips (seeded) give
    p = (1 + #{|flipped sum| ≥ |observed sum|}) / (1 + n_resamples), which is
    never 0. Returns 1.0 when there are no queries or no differences.
    ``alternative="greater"``: the one-sided test of mean(a - b) > 0, counting
    flipped sums ≥ the observed sum (the Ladder's test).

    One comparison of :func:`randomization_tests` (same flips, same p-value):
    many comparisons at once should go through that one.
    """
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater', not {alternative!r}")
    d = _paired(a, b)
    return float(_sign_flip_pvalues(d[None, :], n_resamples=n_resamples, seed=seed,
                                    one_sided=alternative == "greater")[0])


def randomization_tests(a_rows: np.ndarray, b_rows: np.ndarray, *, n_resamples: int = 10000,
                        seed: int = 0) -> np.ndarray:
    """:func:`randomization_test` of every row pair ``(a_rows[i], b_rows[i])`` at once.

    ``a_rows`` and ``b_rows`` have shape (n_comparisons, n_queries), each row
    a per-query vector aligned on the same queries. Every comparison of one
    seed draws the same flips, so they are drawn once and all comparisons are
    scored by one matrix product per block (memory stays under ~100 MB): a
    leaderboard's few hundred comparisons cost about what one costs alone,
    and each p-value is the one ``randomization_test(a_rows[i], b_rows[i],
    n_resamples=n_resamples, seed=seed)`` gives. Returns a float64 array of
    n_comparisons p-values.
    """
    a = np.asarray(a_rows, dtype=np.float64)
    b = np.asarray(b_rows, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError("batched paired tests need two 2-D arrays of the same shape "
                         "(one row per comparison, one column per query)")
    return _sign_flip_pvalues(a - b, n_resamples=n_resamples, seed=seed)


#: Flip values held at once (rows × queries); the same bound as the single test always had,
#: so the seeded generator is drawn in the same blocks and gives the same flips.
_FLIP_BLOCK_VALUES = 4_000_000
#: Flipped sums held at once (flip rows × comparisons, float64: 32 MB).
_SUM_BLOCK_VALUES = 4_000_000


def _sign_flip_pvalues(d: np.ndarray, *, n_resamples: int, seed: int, one_sided: bool = False) -> np.ndarray:
    """Sign-flip p-values of each row of differences ``d`` (n_comparisons × n_queries): two-sided, or of
    "the sum is greater than 0" when ``one_sided``."""
    k, n = d.shape
    p = np.ones(k, dtype=np.float64)
    if n == 0 or k == 0:
        return p
    active = np.flatnonzero(np.any(d != 0, axis=1))  # rows without any difference keep p = 1
    if len(active) == 0:
        return p
    d = np.ascontiguousarray(d[active])
    observed = d.sum(axis=1) if one_sided else np.abs(d.sum(axis=1))
    # Sums of the same numbers in another order may differ in the last bits.
    threshold = observed - 1e-9 * np.maximum(np.abs(observed), np.abs(d).sum(axis=1))
    hits = np.zeros(len(active), dtype=np.int64)
    if n <= EXACT_MAX_N:
        flips = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        _count_extreme(flips.astype(np.float64), d, threshold, hits, one_sided=one_sided)
        p[active] = hits / 2 ** n
        return p
    for flips in _flip_blocks(n, n_resamples, seed):
        _count_extreme(flips.astype(np.float64), d, threshold, hits, one_sided=one_sided)
    p[active] = (hits + 1) / (n_resamples + 1)
    return p


def _flip_blocks(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The seeded ±1 flips (int8), ``n_resamples`` rows of ``n`` in blocks of at most ``_FLIP_BLOCK_VALUES``.

    The blocks are those the single-pair test always drew (the generator's
    output depends on how a draw is split). A draw that fits in one block
    (10,000 flips of up to 400 queries) is kept for the next call, so the
    batches of one page share it.
    """
    block = max(1, min(n_resamples, _FLIP_BLOCK_VALUES // n))
    if block == n_resamples:
        yield _one_flip_block(n, n_resamples, seed)
        return
    rng = np.random.default_rng(seed)
    done = 0
    while done < n_resamples:
        m = min(block, n_resamples - done)
        yield rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        done += m


@lru_cache(maxsize=4)  # at most 4 × 4 MB
def _one_flip_block(n: int, n_resamples: int, seed: int) -> np.ndarray:
    flips = np.random.default_rng(seed).integers(0, 2, size=(n_resamples, n), dtype=np.int8) * 2 - 1
    flips.flags.writeable = False
    return flips


def _count_extreme(flips: np.ndarray, d: np.ndarray, threshold: np.ndarray, hits: np.ndarray, *,
                   one_sided: bool = False) -> None:
    """Add to ``hits[i]`` how many rows of ``flips`` give |flips @ d[i]| (flips @ d[i] when ``one_sided``)
    ≥ threshold[i] (in chunks of comparisons)."""
    m = len(flips)
    chunk = max(1, _SUM_BLOCK_VALUES // m)
    for start in range(0, len(d), chunk):
        stop = min(start + chunk, len(d))
        sums = flips @ d[start:stop].T  # m × chunk
        if not one_sided:
            np.abs(sums, out=sums)
        hits[start:stop] += np.count_nonzero(sums >= threshold[start:stop], axis=0)


def paired_ttest(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Two-sided paired t-test p-value (scipy's ``ttest_rel``); 1.0 when all differences are equal to 0.

    When all differences are equal but not 0 the t statistic is infinite and
    the p-value 0.
    """
    d = _paired(a, b)
    if len(d) < 2 or not np.any(d):
        return 1.0
    if np.all(d == d[0]):
        return 0.0
    return float(_scipy_stats.ttest_rel(np.asarray(a, float), np.asarray(b, float)).pvalue)


def bootstrap_ci(x: Sequence[float] | np.ndarray, *, confidence: float = 0.95, n_resamples: int = 10000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``x`` (queries resampled with replacement).

    Delegates to ``scipy.stats.bootstrap`` (percentile method, seeded, batched
    for bounded memory). A constant vector gives the degenerate interval (mean, mean).
    """
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        return (0.0, 0.0)
    if len(x) == 1 or np.all(x == x[0]):
        return (float(x[0]), float(x[0]))
    res = _scipy_stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                                 method="percentile", rng=np.random.default_rng(seed),
                                 batch=max(1, 2_000_000 // len(x)))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def holm(pvalues: Sequence[float] | np.ndarray) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given.

    The i-th smallest p-value (from 0) is multiplied by (m - i), then a running
    maximum keeps the adjusted values monotone, and they are capped at 1.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return out.tolist()

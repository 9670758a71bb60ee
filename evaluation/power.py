"""Statistical power of a test collection: how small a difference its topics can detect.

Topic-set-size design (Sakai, "Topic set size design", Information Retrieval
Journal 19(3):256–283, 2016) for the paired two-sided t-test: given the
variance of the per-topic difference between two systems, the power of the
test with n topics to detect a true mean difference δ at level α is

    power(δ, n) = P(|T'| ≥ t_{1-α/2, n-1}),  T' ~ noncentral t(df = n - 1, λ = δ √n / σ_d)

From it come the **minimum detectable difference** of the collection as it is
(the δ with power 0.8 at α = 0.05 for the current n) and the **number of
topics needed** to detect a given δ (the smallest n with power ≥ 0.8).

σ_d² is estimated as Sakai does, from the residual variance V_E of a two-way
ANOVA without replication (systems × topics) over the scored entries:
σ̂_d² = 2 V_E. This equals the mean, over all pairs of entries, of the sample
variance of their per-topic differences (an identity of the two-way table),
so it is also "the variance of paired differences" averaged over the board.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

ALPHA = 0.05
POWER = 0.8
#: Differences (on the 0–1 scale of the measures: 1 and 2 points) whose topic counts a dataset page shows.
DIFFERENCES = (0.01, 0.02)
_MAX_TOPICS = 10**7


@dataclass(frozen=True)
class PowerAnalysis:
    """What a set of per-topic values says about the collection's power.

    ``min_detectable`` is None when the collection has fewer than 2 topics;
    ``topics_needed`` maps each difference asked for to the smallest number
    of topics that detects it with ``power`` at ``alpha``.
    """

    n_topics: int
    n_systems: int
    variance: float  # σ̂_d², estimated variance of a per-topic difference between two systems
    alpha: float
    power: float
    min_detectable: float | None
    topics_needed: dict[float, int]

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly form (keys of ``topics_needed`` as strings)."""
        return {"n_topics": self.n_topics, "n_systems": self.n_systems, "variance": self.variance,
                "alpha": self.alpha, "power": self.power, "min_detectable": self.min_detectable,
                "topics_needed": {repr(d): n for d, n in self.topics_needed.items()}}


def residual_variance(values: np.ndarray | Sequence[Sequence[float]]) -> float:
    """V_E of a two-way ANOVA without replication: rows are systems, columns topics.

    SS_E = Σ_ij (x_ij − x̄_i· − x̄_·j + x̄)², V_E = SS_E / ((m − 1)(n − 1)).
    """
    x = _matrix(values)
    m, n = x.shape
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    return float((resid ** 2).sum() / ((m - 1) * (n - 1)))


def difference_variance(values: np.ndarray | Sequence[Sequence[float]]) -> float:
    """σ̂_d² = 2 V_E, the variance of a per-topic difference between two systems (Sakai 2016)."""
    return 2.0 * residual_variance(values)


def paired_power(delta: float, sd: float, n: int, *, alpha: float = ALPHA) -> float:
    """Power of the two-sided paired t-test with ``n`` topics for a true mean difference ``delta``.

    ``sd`` is the standard deviation of the per-topic differences.
    """
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 topics")
    if sd <= 0:
        return 1.0 if delta != 0 else alpha
    df = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    nc = abs(delta) * math.sqrt(n) / sd
    upper = float(stats.nct.sf(crit, df, nc))
    lower = float(stats.nct.cdf(-crit, df, nc))
    # The far tail underflows for a large noncentrality (scipy then returns NaN, not 0).
    return upper + (lower if math.isfinite(lower) else 0.0)


def min_detectable_difference(sd: float, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest mean difference the paired t-test detects with ``power`` at ``alpha`` on ``n`` topics."""
    if n < 2:
        raise ValueError("a paired t-test needs at least 2 topics")
    if sd <= 0:
        return 0.0
    # Power grows with delta: widen the bracket until it holds the target (with n = 2, one degree of
    # freedom, the t distribution is so wide that 20 standard errors are not enough).
    hi = 20 * sd / math.sqrt(n)
    while paired_power(hi, sd, n, alpha=alpha) < power:
        hi *= 4
    return float(optimize.brentq(lambda d: paired_power(d, sd, n, alpha=alpha) - power, 0.0, hi, xtol=1e-12))


def topics_needed(delta: float, sd: float, *, alpha: float = ALPHA, power: float = POWER) -> int:
    """The smallest number of topics with which the paired t-test detects ``delta`` (Sakai 2016)."""
    if delta <= 0:
        raise ValueError("the difference to detect must be positive")
    if sd <= 0:
        return 2
    # Start from the normal approximation Sakai gives, then settle on the exact (noncentral t) answer.
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    n = max(2, math.ceil((z * sd / delta) ** 2 + float(stats.norm.ppf(1 - alpha / 2)) ** 2 / 2))
    if n > _MAX_TOPICS:
        return n
    while n > 2 and paired_power(delta, sd, n - 1, alpha=alpha) >= power:
        n -= 1
    while paired_power(delta, sd, n, alpha=alpha) < power:
        n += 1
    return n


def power_analysis(values: np.ndarray | Sequence[Sequence[float]], *, alpha: float = ALPHA, power: float = POWER,
                   differences: Sequence[float] = DIFFERENCES) -> PowerAnalysis:
    """Minimum detectable difference and topics needed, from a (systems × topics) matrix of per-topic values.

    Every row is one scored entry's per-query values of one measure, aligned
    on the same topics. Needs at least 2 entries and 2 topics.
    """
    x = _matrix(values)
    m, n = x.shape
    variance = difference_variance(x)
    sd = math.sqrt(variance)
    return PowerAnalysis(
        n_topics=n, n_systems=m, variance=variance, alpha=alpha, power=power,
        min_detectable=min_detectable_difference(sd, n, alpha=alpha, power=power),
        topics_needed={float(d): topics_needed(float(d), sd, alpha=alpha, power=power) for d in differences},
    )


def _matrix(values: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError("power needs a 2-D matrix: one row per scored entry, one column per topic")
    m, n = x.shape
    if m < 2:
        raise ValueError("power needs the per-topic values of at least 2 scored entries")
    if n < 2:
        raise ValueError("power needs at least 2 topics")
    if not np.isfinite(x).all():
        raise ValueError("per-topic values must be finite numbers")
    return x

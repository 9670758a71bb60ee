"""Agreement between assessors: Cohen's κ and Krippendorff's α.

Part of a pool is judged by two (or more) assessors; these numbers say how far
their grades can be trusted, and ``disagreements`` lists the documents to
adjudicate.

* **Cohen's κ** (Cohen, "A coefficient of agreement for nominal scales",
  Educational and Psychological Measurement 20(1), 1960) for one pair of
  assessors on the documents both judged: κ = 1 − Σ w·O / Σ w·E, with O the
  observed and E the chance (product of the margins) contingency tables.
  Unweighted: w = 0 on the diagonal, 1 elsewhere. Weighted for graded
  judgments (Cohen, "Weighted kappa", Psychological Bulletin 70(4), 1968):
  w = |i − j| (linear) or (i − j)² (quadratic), i and j the positions of the
  grades on the scale. Equal to scikit-learn's ``cohen_kappa_score``.
* **Krippendorff's α** (Krippendorff, *Content Analysis*, 4th ed., 2018,
  ch. 12; "Computing Krippendorff's alpha-reliability", 2011) for any number
  of assessors and missing judgments: α = 1 − D_o / D_e from the coincidence
  matrix, with the nominal, ordinal or interval distance. Equal to the
  ``krippendorff`` package.

"Overall" κ over more than two assessors is the mean of the pairwise κ
(Light, Psychological Bulletin 76(5), 1971); overall α is α over everyone.
A value is ``nan`` when it is undefined (e.g. every grade the same, so there
is no chance disagreement to compare with): show it as "n/a", not as 0 or 1.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

WEIGHTS = ("none", "linear", "quadratic")
METRICS = ("nominal", "ordinal", "interval")

#: An item: typically a (qid, docid) pair; the functions below keep the caller's item type.
Item = TypeVar("Item", bound=Hashable)
#: ``{assessor: {item: grade}}``.
Judgments = Mapping[str, Mapping[Item, int]]


def cohen_kappa(a: Sequence[int], b: Sequence[int], *, weights: str = "none",
                labels: Sequence[int] | None = None) -> float:
    """Cohen's κ of two aligned sequences of grades (module docstring).

    ``labels`` is the grade scale in order (default: the grades that occur,
    sorted); weighted κ measures distances as positions on it, so pass the
    full scale (e.g. ``[0, 1, 2, 3]``) when some grade is never used.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    if len(a) != len(b):
        raise ValueError("both assessors must grade the same items (sequences of equal length)")
    if len(a) == 0:
        return math.nan
    scale = sorted(set(a) | set(b)) if labels is None else list(labels)
    index = {g: i for i, g in enumerate(scale)}
    missing = (set(a) | set(b)) - set(index)
    if missing:
        raise ValueError(f"grades {sorted(missing)} are not on the scale {scale}")
    n = len(scale)
    observed = np.zeros((n, n))
    np.add.at(observed, ([index[g] for g in a], [index[g] for g in b]), 1)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    i, j = np.indices((n, n))
    if weights == "none":
        w = (i != j).astype(np.float64)
    elif weights == "linear":
        w = np.abs(i - j).astype(np.float64)
    else:
        w = ((i - j) ** 2).astype(np.float64)
    chance = float((w * expected).sum())
    if chance == 0:
        return math.nan
    return 1.0 - float((w * observed).sum()) / chance


def krippendorff_alpha(units: Iterable[Sequence[int]], *, metric: str = "ordinal",
                       scale: Sequence[int] | None = None) -> float:
    """Krippendorff's α over units, each the grades it received (any number, ≥ 2 to count).

    ``metric``: ``nominal`` (any two different grades are equally far apart),
    ``ordinal`` (distance from how many grades lie between them, Krippendorff's
    ordinal metric) or ``interval`` (squared difference of the grades).
    ``scale`` lists the possible grades (default: those that occur).
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    units = [list(u) for u in units]
    values = sorted({g for u in units for g in u} | set(scale or ()))
    index = {g: i for i, g in enumerate(values)}
    n_values = len(values)
    coincidence = np.zeros((n_values, n_values))
    for u in units:
        m = len(u)
        if m < 2:
            continue  # a single grade pairs with nothing
        counts = np.bincount([index[g] for g in u], minlength=n_values).astype(np.float64)
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return math.nan
    delta = _distance(metric, np.array(values, dtype=np.float64), n_c)
    d_observed = float((coincidence * delta).sum())
    d_expected = float((np.outer(n_c, n_c) * delta).sum()) / (n - 1)
    if d_expected == 0:
        return math.nan
    return float(1.0 - d_observed / d_expected)


def _distance(metric: str, values: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    """Squared distances δ²(c, k) between grade values."""
    if metric == "nominal":
        return np.asarray(1.0 - np.eye(len(values)))
    if metric == "interval":
        return np.asarray((values[:, None] - values[None, :]) ** 2)
    # Ordinal: (Σ_{g between c and k} n_g − (n_c + n_k) / 2)².
    cum = np.cumsum(n_c)
    i, j = np.indices((len(values), len(values)))
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    between = cum[hi] - np.where(lo > 0, cum[lo - 1], 0.0)
    return np.asarray((between - (n_c[i] + n_c[j]) / 2.0) ** 2)


# ---------------------------------------------------------------- per pair, per query, overall


@dataclass(frozen=True)
class PairAgreement:
    """κ and α of two assessors on the items both judged."""

    a: str
    b: str
    items: int
    kappa: float
    alpha: float


def pairwise(judgments: Judgments[Item], *, weights: str = "none", metric: str = "ordinal",
             scale: Sequence[int] | None = None) -> list[PairAgreement]:
    """κ and α for every pair of assessors with at least one item in common, in name order."""
    out = []
    for x, y in itertools.combinations(sorted(judgments), 2):
        common = sorted(set(judgments[x]) & set(judgments[y]), key=repr)
        if not common:
            continue
        ga = [judgments[x][i] for i in common]
        gb = [judgments[y][i] for i in common]
        out.append(PairAgreement(x, y, len(common), cohen_kappa(ga, gb, weights=weights, labels=scale),
                                 krippendorff_alpha(zip(ga, gb), metric=metric, scale=scale)))
    return out


def units_of(judgments: Judgments[Item]) -> dict[Item, list[int]]:
    """Item → the grades it received, for the items judged at least twice."""
    units: dict[Item, list[int]] = {}
    for name in sorted(judgments):
        for item, grade in judgments[name].items():
            units.setdefault(item, []).append(grade)
    return {item: g for item, g in units.items() if len(g) >= 2}


def overall(judgments: Judgments[Item], *, weights: str = "none", metric: str = "ordinal",
            scale: Sequence[int] | None = None) -> dict[str, float]:
    """``{"kappa": mean pairwise κ (Light), "alpha": α over all assessors, "items": doubly judged}``."""
    pairs = [p for p in pairwise(judgments, weights=weights, metric=metric, scale=scale) if not math.isnan(p.kappa)]
    units = units_of(judgments)
    return {"kappa": float(np.mean([p.kappa for p in pairs])) if pairs else math.nan,
            "alpha": krippendorff_alpha(units.values(), metric=metric, scale=scale),
            "items": len(units)}


def alpha_per_query(judgments: Judgments[Item], *, metric: str = "ordinal",
                    scale: Sequence[int] | None = None) -> dict[str, float]:
    """α per query, items being (qid, docid) pairs."""
    by_query: dict[str, list[list[int]]] = {}
    for item, grades in units_of(judgments).items():
        qid = str(item[0])  # type: ignore[index]  # items are (qid, docid) pairs here
        by_query.setdefault(qid, []).append(grades)
    return {q: krippendorff_alpha(u, metric=metric, scale=scale) for q, u in sorted(by_query.items())}


def disagreements(judgments: Judgments[Item]) -> list[tuple[Item, dict[str, int]]]:
    """Items whose assessors gave different grades, with who gave what (to adjudicate)."""
    out = []
    items: dict[Item, dict[str, int]] = {}
    for name in sorted(judgments):
        for item, grade in judgments[name].items():
            items.setdefault(item, {})[name] = grade
    for item in sorted(items, key=repr):
        grades = items[item]
        if len(grades) >= 2 and len(set(grades.values())) > 1:
            out.append((item, grades))
    return out

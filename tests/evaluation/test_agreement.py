"""Cohen's κ against scikit-learn and Krippendorff's α against the krippendorff package, plus hand-worked cases."""

from __future__ import annotations

import math
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from sklearn.metrics import cohen_kappa_score

from evaluation.agreement import alpha_per_query, cohen_kappa, disagreements, krippendorff_alpha, overall, pairwise

SCALE = [0, 1, 2, 3]
pairs_st = st.lists(st.tuples(st.sampled_from(SCALE), st.sampled_from(SCALE)), min_size=1, max_size=40)


def test_kappa_worked_by_hand():
    # 10 items: agree on 4×0 and 3×1; 2 times (0, 1), once (1, 0).
    a = [0] * 4 + [1] * 3 + [0, 0, 1]
    b = [0] * 4 + [1] * 3 + [1, 1, 0]
    # p_o = 7/10; margins a: 6×0, 4×1; b: 5×0, 5×1 -> p_e = (6·5 + 4·5) / 100 = 0.5; κ = (0.7 − 0.5) / 0.5.
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_kappa_is_undefined_without_variation():
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="not on the scale"):
        cohen_kappa([5], [1], labels=SCALE)


@settings(max_examples=200, deadline=None)
@given(pairs=pairs_st, weights=st.sampled_from(["none", "linear", "quadratic"]))
def test_kappa_equals_scikit_learn(pairs, weights):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns when κ is undefined
        ref = cohen_kappa_score(a, b, weights=None if weights == "none" else weights, labels=SCALE)
    got = cohen_kappa(a, b, weights=weights, labels=SCALE)
    assert (math.isnan(ref) and math.isnan(got)) or got == pytest.approx(ref, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(units=st.lists(st.lists(st.one_of(st.none(), st.sampled_from(SCALE)), min_size=3, max_size=3),
                      min_size=2, max_size=30),
       metric=st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_equals_the_krippendorff_package(units, metric):
    # Three assessors, some judgments missing (None).
    data = np.array([[np.nan if g is None else g for g in u] for u in units], dtype=float).T
    values = {g for u in units for g in u if g is not None}
    pairable = sum(1 for u in units if sum(g is not None for g in u) >= 2)
    got = krippendorff_alpha([[g for g in u if g is not None] for u in units], metric=metric)
    if len(values) < 2 or pairable == 0:
        assert math.isnan(got)  # the package refuses these ("more than one value in the domain")
        return
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=metric)
    assert (math.isnan(ref) and math.isnan(got)) or got == pytest.approx(ref, abs=1e-9)


def test_alpha_worked_by_hand_nominal():
    # Two assessors, units (0,0), (1,1), (0,1): coincidences o00 = 2, o11 = 2, o01 = o10 = 1; n = 6,
    # n0 = n1 = 3. D_o = 2/6; D_e = 2·3·3 / (6·5) = 0.6; α = 1 − (1/3) / 0.6 = 4/9.
    assert krippendorff_alpha([(0, 0), (1, 1), (0, 1)], metric="nominal") == pytest.approx(4 / 9)


JUDGMENTS = {
    "ann": {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1, ("q2", "d4"): 1},
    "bob": {("q1", "d1"): 2, ("q1", "d2"): 1, ("q2", "d3"): 1, ("q2", "d5"): 0},
    "cem": {("q1", "d1"): 1, ("q2", "d4"): 1},
}


def test_pairwise_overall_per_query_and_disagreements():
    pairs = {(p.a, p.b): p for p in pairwise(JUDGMENTS, weights="linear", scale=SCALE)}
    assert set(pairs) == {("ann", "bob"), ("ann", "cem"), ("bob", "cem")}
    ab = pairs[("ann", "bob")]
    assert ab.items == 3
    assert ab.kappa == pytest.approx(cohen_kappa([2, 0, 1], [2, 1, 1], weights="linear", labels=SCALE))
    assert ab.alpha == pytest.approx(krippendorff_alpha([(2, 2), (0, 1), (1, 1)], scale=SCALE))
    result = overall(JUDGMENTS, weights="linear", scale=SCALE)
    assert result["items"] == 4  # d1 (3 grades), d2, d3, d4
    defined = [p.kappa for p in pairs.values() if not math.isnan(p.kappa)]
    assert result["kappa"] == pytest.approx(np.mean(defined))
    assert result["alpha"] == pytest.approx(krippendorff_alpha([[2, 2, 1], [0, 1], [1, 1], [1, 1]], scale=SCALE))
    assert set(alpha_per_query(JUDGMENTS, scale=SCALE)) == {"q1", "q2"}
    assert disagreements(JUDGMENTS) == [(("q1", "d1"), {"ann": 2, "bob": 2, "cem": 1}),
                                        (("q1", "d2"), {"ann": 0, "bob": 1})]

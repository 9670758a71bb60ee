"""The Ladder's noisy margin (``evaluation.noisy_margin``): one judgment moves a verdict's odds by at most
e^((1 + Δmargin)/b), e^(1/b) in the probe's case; a clear improvement is still released on a 20-topic split and on
a BSARD-sized one, and a run that changes many topics at random is not (docs/security.md, "The noisy margin")."""

from __future__ import annotations

import math

import pytest

from evaluation.ladder import N_RESAMPLES, ladder_step, ladder_step_macro_f1
from evaluation.noisy_margin import (
    NOISE_SCALE,
    epsilon,
    laplace,
    margin_for,
    margin_step,
    noisy_margin,
    verdict_bits,
)

#: Evenly spread draws: the share of them a run passes with is its probability of release.
DRAWS = [(i + 0.5) / 4000 for i in range(4000)]


def _released_share(best: list[float], new: list[float], n_resamples: int = N_RESAMPLES) -> float:
    """``n_resamples``: the sign-flip test's (above 16 topics), whose p-value only goes on the record with a draw."""
    return sum(ladder_step(best=best, new=new, draw=u, n_resamples=n_resamples).released for u in DRAWS) / len(DRAWS)


def _passed_share(best: list[float], new: list[float]) -> float:
    """The margin's condition alone (the shown value's step aside)."""
    return sum(noisy_margin(best=best, new=new, draw=u).passed for u in DRAWS) / len(DRAWS)


def test_laplace_has_the_tails_it_is_named_for():
    assert laplace(0.5) == 0.0 and laplace(0.25) == -laplace(0.75)
    # P(L >= t) = e^(-t/b) / 2: the draw 1 - e^(-t/b)/2 sits exactly at t.
    for t in (0.5, 1.0, 3.0):
        assert laplace(1 - math.exp(-t / NOISE_SCALE) / 2) == pytest.approx(t)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        laplace(1.0)


def test_the_escaped_probe_reads_its_guess_only_within_the_bound():
    """The probe that escapes the near-copy rule: the reference plus four known relevant documents plus one guess;
    the other 15 topics unchanged in value. The sign-flip test read the guess exactly (p 1/32 with it, 1/16
    without); the noisy margin releases it rarely either way, and the two probabilities differ by e^(1/b) at
    most."""
    best = [0.0] * 20
    right, wrong = [0.5] * 5 + [0.0] * 15, [0.5] * 4 + [0.0] * 16
    assert ladder_step(best=best, new=right).released and not ladder_step(best=best, new=wrong).released
    p_right, p_wrong = _released_share(best, right), _released_share(best, wrong)
    assert p_right < 0.05 and p_wrong < 0.05
    assert p_right <= math.exp(epsilon()) * p_wrong + 1 / len(DRAWS)
    # The worst case the bound allows in the probe's shape: the net count one below the margin without the guess.
    edge = int(margin_for(8))  # the floor: 8 changed topics, a margin of 8
    at_edge_right = [0.5] * edge + [0.0] * (20 - edge)
    at_edge_wrong = [0.5] * (edge - 1) + [0.0] * (21 - edge)
    ratio = _released_share(best, at_edge_right) / _released_share(best, at_edge_wrong)
    assert ratio == pytest.approx(math.exp(1 / NOISE_SCALE), rel=0.02)


def test_a_clear_improvement_on_a_small_split_is_released_with_overwhelming_probability():
    best = [0.2] * 20
    clear = [0.6] * 16 + [0.1] * 2 + [0.2] * 2  # net 14 of 20
    assert _released_share(best, clear) >= 0.998
    assert _released_share(best, [0.6] * 20) == 1.0
    # A first run against an empty one covers the split: released whatever the draw.
    assert all(ladder_step(best=None, new=[0.3] * 24, draw=u).released for u in DRAWS[::40])


def test_the_margin_scales_with_the_changed_topics_like_the_sign_test():
    """max(8, ⌈1.645 √changed⌉): the split's size does not enter, the topics whose value changed do."""
    assert [margin_for(c) for c in (0, 5, 23, 24, 100, 222)] == [8.0, 8.0, 8.0, 9.0, 17.0, 25.0]
    assert noisy_margin(best=[0.2] * 222, new=[0.2] * 212 + [0.5] * 10, draw=0.5).margin == 8.0
    # One changed unit more or less moves the margin by at most 1, anywhere.
    assert max(margin_step(c) for c in range(5000)) == 1.0
    assert margin_step(22) == 0.0 and margin_step(23) == 1.0 and margin_step(100) == 0.0


def test_an_honest_improvement_on_a_bsard_sized_split_is_released():
    """BSARD's 222 topics: 70 better, 30 worse, 122 unchanged (net 40, margin 17): the old max(8, N/5) margin
    (45) never released it."""
    best = [0.4] * 222
    honest = [0.7] * 70 + [0.2] * 30 + [0.4] * 122
    assert noisy_margin(best=best, new=honest, draw=0.5).margin == 17.0
    assert _released_share(best, honest, n_resamples=99) >= 0.99


def test_an_overfitting_random_run_is_not_released():
    """50 better, 50 worse of 222 (what a run tuned to noise looks like): net 0 against a margin of 17. Its mean
    goes up a few steps (its gains are larger than its losses) and the value test passes it (p 0.028), so the
    margin alone holds it back."""
    best = [0.4] * 222
    random_run = [0.7] * 50 + [0.2] * 50 + [0.4] * 122
    exact = ladder_step(best=best, new=random_run)
    assert exact.released and exact.p_value is not None and exact.p_value < 0.05
    assert _released_share(best, random_run, n_resamples=99) <= 0.05


def test_one_judgment_moves_a_verdict_by_at_most_e_to_the_1_plus_the_margin_step():
    """A judgment that turns a unit from unchanged to worse (a relevant document the new run drops) moves
    margin − net by 1 + Δmargin: from 23 to 24 changed units Δmargin = 1 and the ratio of the two release
    probabilities reaches e^(2/b), the recorded epsilon; the probe's shape (unchanged to better) stays within
    e^(1/b)."""
    best = [0.5] * 60
    without = [0.9] * 15 + [0.1] * 8 + [0.5] * 37  # net 7 of 23 changed: margin 8
    with_worse = [0.9] * 15 + [0.1] * 9 + [0.5] * 36  # net 6 of 24 changed: margin 9
    m_without, m_with = (noisy_margin(best=best, new=new, draw=0.5) for new in (without, with_worse))
    assert (m_with.margin - m_with.net) - (m_without.margin - m_without.net) == 2
    assert m_without.epsilon == m_with.epsilon == epsilon(NOISE_SCALE, 2)
    ratio = _passed_share(best, without) / _passed_share(best, with_worse)
    assert ratio == pytest.approx(math.exp(2 / NOISE_SCALE), rel=0.03)
    # The probe's shape at the same place: the unit from unchanged to better moves margin and net up by 1 each.
    with_better = [0.9] * 16 + [0.1] * 8 + [0.5] * 36
    assert _passed_share(best, with_better) / _passed_share(best, without) <= math.exp(1 / NOISE_SCALE)
    # Within the floor (≤ 22 changed units) the margin does not move: e^(1/b).
    assert noisy_margin(best=best, new=[0.9] * 5 + [0.5] * 55, draw=0.5).epsilon == epsilon()


def test_macro_f1_counts_examples_answered_better_or_worse():
    gold = ["a", "b", "c"] * 10
    best = ["a"] * 30
    new = list(gold)  # right on the 20 examples best got wrong
    decision = ladder_step_macro_f1(task="single", gold=gold, best=best, new=new, draw=0.5)
    assert decision.margin is not None and decision.margin.net == 20 and decision.released
    few = [gold[i] if i in (1, 2, 4, 5, 7) else "a" for i in range(30)]  # five better: p = 1/32, below the margin
    assert ladder_step_macro_f1(task="single", gold=gold, best=best, new=few).released
    assert not ladder_step_macro_f1(task="single", gold=gold, best=best, new=few, draw=0.5).released


def test_the_bits_of_a_verdict_follow_its_epsilon():
    assert verdict_bits(0.0) == 0.0 and verdict_bits(5.0) == 1.0
    assert verdict_bits(0.5) == pytest.approx(0.5 * math.expm1(0.5) / math.log(2))
    assert noisy_margin(best=[0.0] * 3, new=[1.0] * 3, draw=0.5).margin == 8.0  # never lowered on a tiny split
    assert verdict_bits(noisy_margin(best=[0.5] * 60, new=[0.9] * 23 + [0.5] * 37, draw=0.5).epsilon) == 1.0

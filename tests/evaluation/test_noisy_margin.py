"""The Ladder's noisy margin (``evaluation.noisy_margin``): one judgment moves a verdict's odds by at most e^(1/b),
and a clear improvement on a 20-topic split is still released (docs/security.md, "The verdict as a channel")."""

from __future__ import annotations

import math

import pytest

from evaluation.ladder import ladder_step, ladder_step_macro_f1
from evaluation.noisy_margin import NOISE_SCALE, epsilon, laplace, margin_for, noisy_margin, verdict_bits

#: Evenly spread draws: the share of them a run passes with is its probability of release.
DRAWS = [(i + 0.5) / 4000 for i in range(4000)]


def _released_share(best: list[float], new: list[float]) -> float:
    return sum(ladder_step(best=best, new=new, draw=u).released for u in DRAWS) / len(DRAWS)


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
    # The worst case the bound allows: the net count one below the margin without the guess.
    edge = int(margin_for(20))
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


def test_the_same_draw_gives_the_same_verdict_and_the_message_hides_which_condition_failed():
    best, new = [0.0] * 20, [0.5] * 9 + [0.0] * 11
    decisions = {ladder_step(best=best, new=new, draw=0.3).released for _ in range(3)}
    assert len(decisions) == 1
    refused_by_margin = ladder_step(best=best, new=new, draw=0.01)
    refused_by_step = ladder_step(best=best, new=[0.0] * 20, draw=0.99)
    assert not refused_by_margin.released and not refused_by_step.released
    assert refused_by_margin.message == refused_by_step.message
    assert refused_by_margin.margin is not None and refused_by_margin.margin.net == 9


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

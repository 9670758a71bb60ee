"""The Ladder's noisy margin: a verdict whose odds one hidden judgment moves by a bounded factor (docs/security.md).

The near-copy rule (``evaluation.ladder.near_copy_of``) gives no verdict to a run that repeats a reference on all
but a few topics; an attacker who knows it changes enough other topics without changing their values (swapping a
topic's last document for an unjudged one) and gets a verdict that turns on one guessed document again. What
holds against that is noise (Thresholdout: Dwork et al. 2015, "The reusable holdout"; Blum & Hardt 2015):

* the statistic is ``net`` = topics (examples) improved − topics worsened over the reference (the identity's best,
  the best baseline, or an empty run): a sign per unit, so its value does not depend on how much a unit moved;
* a judged run passes the margin when ``net + Laplace(b)`` ≥ ``margin(changed)`` (below); the Laplace value is
  drawn per upload from a uniform ``draw`` the server derives from a keyed hash of the upload's content (the same
  bytes, the same draw: a re-upload learns nothing new, and replays and tests are deterministic);
* this replaces, on a hidden split, the sign-flip test's ``p < alpha`` as the Ladder's significance condition
  (the p-value is still computed, for curators): a deterministic test that one judgment can tip (a run improving
  five topics, the fifth by a guess, is released exactly when the guess is relevant) leaves the verdict exact
  whatever noise is added beside it.

The margin scales like the sign-flip test it replaces, with the units whose value changed (``changed`` =
improved + worsened): ``margin`` = max(8, ⌈1.645 √changed⌉), the one-sided 5% point of ``net`` when each changed
unit's sign is a coin flip. So an honest improvement on a large split is released (BSARD, 222 topics: 70 better and
30 worse, net 40 against a margin of 17), while a run that changes many units at random is not (50 better, 50 worse:
net 0 against 17), and a run that changes a handful of units is held to at least 8.

The bound. One judgment changes one unit's value, so ``net`` by at most 1 and ``changed`` by at most 1 when the
unit goes from unchanged to changed (better or worse), or ``net`` by 2 and ``changed`` not at all when it goes
from worse to better. A step of ``changed`` moves the margin by Δmargin ≤ 1 (1.645 (√(c+1) − √c) < 1 for c ≥ 1,
and the margin is the floor of 8 up to c = 23: Δmargin is 0 up to 22 changed units). A run passes when its
Laplace value is ≥ margin − net, and the Laplace density ratio at distance d is e^(d/b), so one judgment moves the
probability of either verdict by a factor of at most **e^((1 + Δmargin)/b)** (unchanged to changed; e^(2/b) from
worse to better): e^(1/b) up to 22 changed units, e^(2/b) at most anywhere. In the probe's recipe (a guessed
document added, the unit unchanged or better) net and margin move the same way, and the factor is e^(1/b).
:attr:`Margin.epsilon` is the bound of the run's own verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The version of the verdict's mechanism: part of each upload's noise key (a new version draws again) and of
#: every ledger row (``submissions.Verdict.mechanism``).
MECHANISM = "ladder-noisy-margin-1"
#: Laplace scale b, in topics (examples) of the net count. One judgment moves a verdict's odds by at most e^(1/b).
NOISE_SCALE = 1.0
#: The margin ``net`` must reach with the noise: at least this many units ...
MARGIN_MIN = 8
#: ... and at least this many standard deviations of ``net`` under coin-flip signs (√changed): the one-sided 5%
#: point of the normal, as the sign-flip test's p < 0.05.
MARGIN_Z = 1.645
#: How far one judgment moves ``margin − net`` at most: 1 + Δmargin (Δmargin ≤ 1) from unchanged to changed,
#: 2 from worse to better.
SENSITIVITY = 2


def margin_for(changed: int) -> float:
    """The margin of a run whose value differs from the reference's on ``changed`` units (topics or examples
    improved + worsened): max(8, ⌈1.645 √changed⌉).

    The floor of 8 is above the escaped probe's five changed topics by three Laplace scales, so that the probe
    (five improved topics, the fifth a guess) is released about once in 40 whatever its guess; a clear improvement
    on a small split (net ≥ 14 of 20 topics) passes with probability 1 − e^(−6)/2 (99.9%). Above 23 changed units
    the margin grows as the sign-flip test's critical value: 17 for 100 changed, 25 for 222.

    On a tiny split (N < 8 units) a run passes only with the noise's help (probability at most
    e^(−(8 − N)/b)/2), as the sign-flip test released nothing below five units (docs/security.md).
    """
    if changed < 0:
        raise ValueError(f"a count of changed units is not negative, not {changed!r}")
    return float(max(MARGIN_MIN, math.ceil(MARGIN_Z * math.sqrt(changed))))


def margin_step(changed: int) -> float:
    """Δmargin around ``changed``: how far one more or one fewer changed unit moves the margin (0 or 1)."""
    here = margin_for(changed)
    return max(margin_for(changed + 1) - here, here - margin_for(max(0, changed - 1)))


def laplace(draw: float, scale: float = NOISE_SCALE) -> float:
    """The Laplace(0, ``scale``) value of the uniform ``draw`` in (0, 1), by the inverse of its distribution."""
    if not 0.0 < draw < 1.0:
        raise ValueError(f"a noise draw is a uniform number strictly between 0 and 1, not {draw!r}")
    if draw < 0.5:
        return scale * math.log(2 * draw)
    return -scale * math.log(2 * (1 - draw))


def uniform_from_digest(digest: bytes) -> float:
    """A uniform number in (0, 1) from the first 8 bytes of a keyed hash (the server's HMAC of the upload)."""
    if len(digest) < 8:
        raise ValueError("a noise draw needs at least 8 bytes of a keyed hash")
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0 ** 64


def net_improved(best: Sequence[float], new: Sequence[float]) -> int:
    """Units where ``new`` is higher minus units where it is lower (the same units in the same order)."""
    better, worse = improved_worsened(best, new)
    return better - worse


def improved_worsened(best: Sequence[float], new: Sequence[float]) -> tuple[int, int]:
    """(units where ``new`` is higher, units where it is lower): their sum is ``changed``, their difference ``net``."""
    if len(best) != len(new):
        raise ValueError("the margin compares two per-unit vectors of the same length (one value per topic)")
    better = sum(n > b for b, n in zip(best, new, strict=True))
    worse = sum(n < b for b, n in zip(best, new, strict=True))
    return better, worse


def epsilon(scale: float = NOISE_SCALE, sensitivity: float = 1) -> float:
    """The log of the factor by which one judgment can move a verdict's probability: ``sensitivity`` / b, the
    sensitivity being how far the judgment moves ``margin − net`` (1 + Δmargin from unchanged to changed)."""
    return sensitivity / scale


def verdict_bits(eps: float) -> float:
    """An upper bound, in bits, on what one verdict tells about any one judgment: a yes or no whose odds that
    judgment moves by at most e^eps carries at most eps (e^eps − 1) nats about it (Dwork, Rothblum & Vadhan
    2010), and never more than the 1 bit of the answer."""
    return min(1.0, eps * math.expm1(eps) / math.log(2))


@dataclass(frozen=True)
class Margin:
    """A run's pass of the noisy margin: ``net`` + ``noise`` against ``margin`` (of ``changed`` units); ``passed``
    when it reaches it.

    For the record (the curators' ledger), never for the participant: ``noise`` read with a run's verdict would
    give ``net``, a function of the judgments.
    """

    net: int
    noise: float
    margin: float
    scale: float
    passed: bool
    changed: int
    mechanism: str = MECHANISM

    @property
    def epsilon(self) -> float:
        """The bound on one judgment's effect on this verdict's odds when it turns a unit from unchanged to changed
        or back: e^((1 + Δmargin)/b), Δmargin the margin's step at this run's ``changed`` (0 up to 22 changed
        units, so e^(1/b) there; the probe's recipe, unchanged or better, stays within e^(1/b) anywhere);
        :data:`SENSITIVITY` / b from worse to better."""
        return epsilon(self.scale, 1 + margin_step(self.changed))


def noisy_margin(*, best: Sequence[float], new: Sequence[float], draw: float, scale: float = NOISE_SCALE,
                 margin: float | None = None) -> Margin:
    """Whether ``new`` clears the noisy margin over ``best`` (per-unit values, higher is better) with ``draw``;
    ``margin``: a fixed margin instead of :func:`margin_for` of the changed units."""
    better, worse = improved_worsened(best, new)
    net, changed = better - worse, better + worse
    noise = laplace(draw, scale)
    needed = margin_for(changed) if margin is None else float(margin)
    return Margin(net=net, noise=noise, margin=needed, scale=scale, passed=net + noise >= needed, changed=changed)

"""The Ladder's noisy margin: a verdict whose odds one hidden judgment moves by a bounded factor (docs/security.md).

The near-copy rule (``evaluation.ladder.near_copy_of``) gives no verdict to a run that repeats a reference on all
but a few topics; an attacker who knows it changes enough other topics without changing their values (swapping a
topic's last document for an unjudged one) and gets a verdict that turns on one guessed document again. What
holds against that is noise (Thresholdout: Dwork et al. 2015, "The reusable holdout"; Blum & Hardt 2015):

* the statistic is ``net`` = topics (examples) improved − topics worsened over the reference (the identity's best,
  the best baseline, or an empty run): a sign per unit, so its value does not depend on how much a unit moved;
* a judged run passes the margin when ``net + Laplace(b)`` ≥ ``margin(N)``; the Laplace value is drawn per upload
  from a uniform ``draw`` the server derives from a keyed hash of the upload's content (the same bytes, the same
  draw: a re-upload learns nothing new, and replays and tests are deterministic);
* this replaces, on a hidden split, the sign-flip test's ``p < alpha`` as the Ladder's significance condition
  (the p-value is still computed, for curators): a deterministic test that one judgment can tip (a run improving
  five topics, the fifth by a guess, is released exactly when the guess is relevant) leaves the verdict exact
  whatever noise is added beside it.

One judgment changes one unit's value, hence ``net`` by at most 1 when the unit goes from unchanged to changed
(the probe's recipe: a guessed document added to the reference's ranking) and by at most 2 in general (a unit
from worse to better). The Laplace density ratio at distance d is e^(d/b), so one judgment moves the probability
of either verdict by a factor of at most e^(1/b) (e^(2/b) in the general case): :func:`epsilon`.
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
#: ... and at least this share of the evaluated units.
MARGIN_SHARE = 0.2
#: How far one judgment moves ``net``: 1 from unchanged to changed (a guess added), 2 from worse to better.
SENSITIVITY = 2


def margin_for(n_units: int) -> float:
    """The margin of a split of ``n_units`` evaluated topics (examples): max(8, ⌈N/5⌉).

    Above the recipe's five changed topics by three Laplace scales on a small split, so that the escaped probe
    (five improved topics, the fifth a guess) is released about once in 40 whatever its guess; a clear
    improvement (net ≥ 14 of 20 topics) passes with probability 1 − e^(−6)/2 (99.9%).

    Never lowered on a tiny split: on N < 8 units a run passes only with the noise's help (probability at most
    e^(−(8 − N)/b)/2), as the sign-flip test released nothing below five units (docs/security.md).
    """
    return float(max(MARGIN_MIN, math.ceil(MARGIN_SHARE * int(n_units))))


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
    if len(best) != len(new):
        raise ValueError("the margin compares two per-unit vectors of the same length (one value per topic)")
    return sum((n > b) - (n < b) for b, n in zip(best, new, strict=True))


def epsilon(scale: float = NOISE_SCALE, sensitivity: int = 1) -> float:
    """The log of the factor by which one judgment can move a verdict's probability: ``sensitivity`` / b."""
    return sensitivity / scale


def verdict_bits(eps: float) -> float:
    """An upper bound, in bits, on what one verdict tells about any one judgment: a yes or no whose odds that
    judgment moves by at most e^eps carries at most eps (e^eps − 1) nats about it (Dwork, Rothblum & Vadhan
    2010), and never more than the 1 bit of the answer."""
    return min(1.0, eps * math.expm1(eps) / math.log(2))


@dataclass(frozen=True)
class Margin:
    """A run's pass of the noisy margin: ``net`` + ``noise`` against ``margin``; ``passed`` when it reaches it.

    For the record (the curators' ledger), never for the participant: ``noise`` read with a run's verdict would
    give ``net``, a function of the judgments.
    """

    net: int
    noise: float
    margin: float
    scale: float
    passed: bool
    mechanism: str = MECHANISM

    @property
    def epsilon(self) -> float:
        """The bound on one judgment's effect on this verdict's odds in the probe's case (a unit unchanged to
        changed): e^(1/b); :data:`SENSITIVITY` / b in general."""
        return epsilon(self.scale)


def noisy_margin(*, best: Sequence[float], new: Sequence[float], draw: float, scale: float = NOISE_SCALE,
                 margin: float | None = None) -> Margin:
    """Whether ``new`` clears the noisy margin over ``best`` (per-unit values, higher is better) with ``draw``."""
    net = net_improved(best, new)
    noise = laplace(draw, scale)
    needed = margin_for(len(new)) if margin is None else float(margin)
    return Margin(net=net, noise=noise, margin=needed, scale=scale, passed=net + noise >= needed)

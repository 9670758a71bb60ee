"""``compute_significance`` as it was before the batched tests (reference for the equality tests).

Verbatim but for its name: one ``randomization_test`` per pair, every round of
the tier walk run. The current function must give the same Significance.
"""

from __future__ import annotations

import numpy as np

from evaluation.stats import holm, randomization_test
from leaderboard.significance import ALPHA, N_RESAMPLES, SEED, Marker, Significance, _direction


def compute_significance_before_batching(*, entries: list[tuple[int, bool, np.ndarray]], measure: str, alpha: float = ALPHA,
                         n_resamples: int = N_RESAMPLES, seed: int = SEED) -> Significance:
    """Markers and tiers for ``entries`` = [(submission id, is baseline, per-query vector)] in rank order.

    Pure (no database): the vectors must be aligned on the same queries.
    """
    ids = [e[0] for e in entries]
    vectors = {e[0]: np.asarray(e[2], dtype=np.float64) for e in entries}
    leader = ids[0] if ids else None
    baseline = next((e[0] for e in entries if e[1]), None)
    p_cache: dict[tuple[int, int], float] = {}

    def p_of(pair: tuple[int, int]) -> float:
        key = (min(pair), max(pair))
        if key not in p_cache:
            p_cache[key] = randomization_test(vectors[key[0]], vectors[key[1]], n_resamples=n_resamples, seed=seed)
        return p_cache[key]

    fixed: list[tuple[int, int]] = []
    if leader is not None:
        fixed += [(i, leader) for i in ids if i != leader]
    if baseline is not None:
        fixed += [(i, baseline) for i in ids if i != baseline]

    def unique(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        seen, out = set(), []
        for a, b in pairs:
            key = (min(a, b), max(a, b))
            if key not in seen:
                seen.add(key)
                out.append(key)
        return out

    def walk(adjusted: dict[tuple[int, int], float]) -> tuple[dict[int, int], list[tuple[int, int]]]:
        tiers: dict[int, int] = {}
        used: list[tuple[int, int]] = []
        tier, best = 0, None
        for i in ids:
            if best is None:
                tier, best = 1, i
            else:
                key = (min(i, best), max(i, best))
                used.append(key)
                p = adjusted.get(key, p_of(key))  # a pair not yet in the family: its raw p, for this round
                if p < alpha:
                    tier, best = tier + 1, i
            tiers[i] = tier
        return tiers, used

    tier_pairs: list[tuple[int, int]] = []
    adjusted: dict[tuple[int, int], float] = {}
    family: list[tuple[int, int]] = []
    tiers: dict[int, int] = {}
    for _ in range(len(ids) + 2):
        family = unique(fixed + tier_pairs)
        adjusted = dict(zip(family, holm([p_of(pair) for pair in family]), strict=True))
        tiers, used = walk(adjusted)
        if set(unique(fixed + used)) == set(family):  # the walk used exactly the adjusted comparisons
            break
        tier_pairs = used

    def marker(i: int, ref: int) -> Marker:
        key = (min(i, ref), max(i, ref))
        return Marker(reference_id=ref, p=p_of(key), p_holm=adjusted.get(key, 1.0),
                      significant=adjusted.get(key, 1.0) < alpha, direction=_direction(vectors[i], vectors[ref]))

    return Significance(
        measure=measure,
        alpha=alpha,
        n_resamples=n_resamples,
        seed=seed,
        n_comparisons=len(family),
        leader_id=leader,
        baseline_id=baseline,
        tiers=tiers,
        vs_leader={i: marker(i, leader) for i in ids if leader is not None and i != leader},
        vs_baseline={i: marker(i, baseline) for i in ids if baseline is not None and i != baseline},
        n_queries=len(next(iter(vectors.values()))) if vectors else 0,
    )


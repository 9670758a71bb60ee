"""The lattice attack: crafted runs whose released means decode probe judgments (no Django: the bench uses it too).

A crafted run puts each topic it does not probe on a lattice the attacker
knows: an *anchor* holds the good retriever's top three documents, then seven
documents outside the corpus (ranks 4 to 10), then the rest of the good run
from rank 11 — its MRR@10 is 0, 1, 1/2 or 1/3, while its R@100 (the Ladder's
measure) keeps the good run's credit, so the run is released. A *zero* topic
holds one document outside the corpus (0 on every measure). A *probe* holds
one guessed document behind fillers at rank 5 or 7: it adds 1/5 or 1/7 to the
MRR@10 sum if the guess is relevant, which no sum of anchors (multiples of
1/6) can mimic. The released mean of a 20-topic split at 4 decimals then
decides both probes of a run.

Rounds: each identity climbs the Ladder in three rounds, each with more
anchors (a significant improvement in R@100 over its previous round, so each
is released) and two new probes. :func:`decode` reads **every** released
measure, each with the set of values the attacker's prior allows per topic
(1 to 4 relevant documents of grade 1), and keeps the probe outcomes that
every released value admits; a probe is recovered when all admitted outcomes
agree on it.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PROBE_RANKS = (5, 7)
ANCHOR_TOP = 3
ANCHOR_DEPTH = 90
MAX_RELEVANT = 4  # the attacker's prior: 1 to 4 relevant documents per topic (the split's generator)
ROUNDS = 3
#: Beyond this many distinct anchor sums the attacker gives a measure up (its values are dense anyway).
MAX_SUMS = 200_000
DISPLAY_STEP = 1e-4  # what a released mean was rounded to before the grid: 4 decimals of the fraction


@dataclass(frozen=True)
class Plan:
    """One crafted run: which topics are anchors, zeros and probes (topic, guessed document, rank)."""

    anchors: tuple[str, ...]
    zeros: tuple[str, ...]
    probes: tuple[tuple[str, str, int], ...]


def plans(qids: Sequence[str], run: Mapping[str, list[str]], *, identity: int, rounds: int = ROUNDS) -> list[Plan]:
    """The rounds of one identity: anchors grow by a block each round, two new probes after them.

    Identity ``i`` guesses the good run's documents ``2i`` and ``2i + 1`` of each probe topic, so identities
    test different judgments of the same topics.
    """
    qids = list(qids)
    # Six more anchors a round: a significant improvement in R@100 even when a probe of the round before scored.
    block = max(6, (len(qids) - len(PROBE_RANKS) * rounds) // rounds + 1)
    out = []
    for r in range(rounds):
        n_anchors = min(block * (r + 1), len(qids) - len(PROBE_RANKS))
        anchors = qids[:n_anchors]
        probe_topics = qids[n_anchors:n_anchors + len(PROBE_RANKS)]
        probes = tuple((q, run[q][len(PROBE_RANKS) * identity + slot], rank)
                       for slot, (q, rank) in enumerate(zip(probe_topics, PROBE_RANKS, strict=False)))
        zeros = tuple(q for q in qids if q not in anchors and q not in probe_topics)
        out.append(Plan(tuple(anchors), zeros, probes))
    return out


def rankings(plan: Plan, run: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The crafted run of ``plan``: qid → documents, best first (``x…`` ids are outside the corpus)."""
    out = {q: run[q][:ANCHOR_TOP] + [f"x{q}a{i}" for i in range(10 - ANCHOR_TOP)] + run[q][ANCHOR_TOP:ANCHOR_DEPTH]
           for q in plan.anchors}
    for q, guess, rank in plan.probes:
        out[q] = [f"x{q}p{i}" for i in range(rank - 1)] + [guess]
    for q in plan.zeros:
        out[q] = [f"x{q}z"]
    return out


def run_text(plan: Plan, run: Mapping[str, list[str]]) -> bytes:
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 crafted" for q, docs in rankings(plan, run).items()
             for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode()


# --- what the attacker's prior allows per topic ----------------------------------------------------------


def _idcg(n_relevant: int, k: int = 10) -> float:
    return sum(1 / math.log2(i + 2) for i in range(min(n_relevant, k)))


def _anchor_values(measure: str) -> set[float] | None:
    """The values an anchor may take on ``measure``; None when they are not a small known set."""
    rels = range(1, MAX_RELEVANT + 1)
    if measure == "MRR@10":
        return {0.0} | {1 / k for k in range(1, ANCHOR_TOP + 1)}
    if measure == "R@10":
        return {j / r for r in rels for j in range(0, min(ANCHOR_TOP, r) + 1)}
    if measure == "R@100":
        return {j / r for r in rels for j in range(0, r + 1)}
    if measure == "nDCG@10":
        hits = [c for n in range(ANCHOR_TOP + 1) for c in itertools.combinations(range(1, ANCHOR_TOP + 1), n)]
        return {sum(1 / math.log2(i + 1) for i in h) / _idcg(r) for r in rels for h in hits if len(h) <= r}
    return None  # MAP@100: the good run's ranks 11 to 90 count, unknown


def _probe_values(measure: str, rank: int) -> set[float] | None:
    """The values a probe whose guess is relevant may take (0 when it is not)."""
    rels = range(1, MAX_RELEVANT + 1)
    if measure == "MRR@10":
        return {1 / rank}
    if measure in ("R@10", "R@100"):
        return {1 / r for r in rels}
    if measure == "nDCG@10":
        return {1 / math.log2(rank + 1) / _idcg(r) for r in rels}
    if measure == "MAP@100":
        return {1 / rank / r for r in rels}
    return None


def _sums(values: Sequence[set[float]]) -> list[float] | None:
    sums = {0.0}
    for v in values:
        if len(sums) * len(v) > 5 * MAX_SUMS:
            return None
        sums = {round(a + b, 9) for a in sums for b in v}
        if len(sums) > MAX_SUMS:
            return None
    return sorted(sums)


def decode(plan: Plan, released: Mapping[str, float], *, n_topics: int, step: float | None) -> dict[tuple[str, str], bool]:
    """(topic, document) → relevant, for every probe of ``plan`` that the released values decide.

    ``released``: measure → released mean (a fraction); ``step``: the grid the site says the values sit on
    (None: the 4 decimals of old). A probe outcome is admitted when, for every released measure whose values
    the attacker can enumerate, some anchor outcome gives a mean that rounds to the released value.
    """
    width = (step or DISPLAY_STEP) / 2
    outcomes = set(itertools.product((False, True), repeat=len(plan.probes)))
    for measure, value in released.items():
        if value is None:
            continue
        anchor = _anchor_values(measure)
        probe_sets = [_probe_values(measure, rank) for _, _, rank in plan.probes]
        if anchor is None or any(p is None for p in probe_sets):
            continue
        sums = _sums([anchor] * len(plan.anchors))
        if sums is None:
            continue
        low, high = n_topics * (value - width) - 1e-9, n_topics * (value + width) + 1e-9
        admitted = set()
        for bits in outcomes:
            chosen = [(p if bit else {0.0}) for bit, p in zip(bits, probe_sets, strict=True)]
            probe_sums = _sums(chosen) or []
            if any(_any_between(sums, low - s, high - s) for s in probe_sums):
                admitted.add(bits)
        outcomes = admitted
    if not outcomes:
        return {}
    return {(q, d): next(iter({bits[i] for bits in outcomes}))
            for i, (q, d, _) in enumerate(plan.probes) if len({bits[i] for bits in outcomes}) == 1}


def _any_between(sorted_values: list[float], low: float, high: float) -> bool:
    i = bisect.bisect_left(sorted_values, low)
    return i < len(sorted_values) and sorted_values[i] <= high

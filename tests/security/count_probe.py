"""The count-probe attack on the released primary measure itself (no Django: the bench uses it too).

The lattice attack of :mod:`tests.security.lattice` decodes from the finer
measures (MRR@10) that a hidden split no longer releases. This one works on
what it still releases: the primary measure (R@100) on a grid of one topic's
share. The attacker makes every topic but the probes *known*:

* an *anchor* holds the good retriever's ranking, whose R@100 the attacker
  takes to be 1 (the best case for the attacker: in the tests' secret split
  the good run does hold every relevant document in its top 30);
* a *zero* holds one document outside the corpus (0 exactly);
* a *probe* holds one guessed document: 1/r if it is relevant (r relevant
  documents on the topic, 1 to 4 in the attacker's prior), else 0.

The released value then fixes the probes' sum to one grid line: with one
probe (``probes=1``), a release decides the guess exactly when it is relevant
on a topic of one or two relevant documents (1/r rounds up to a whole step);
with k probes, their hit count weighed by 1/r, which decides them only when
all of them hit. Each identity climbs the Ladder in rounds of more anchors
(``anchors_per_round`` more each round: five were a significant improvement over
its previous release under the sign test; the noisy margin of #37 asks for net +
Laplace noise ≥ 8 topics, and :data:`CLEAR_ANCHORS_PER_ROUND` passes it but for
a draw below −6, which needs a split of 3 × 14 + 1 topics for three rounds).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_RELEVANT = 4  # the attacker's prior: 1 to 4 relevant documents per topic
ROUNDS = 3
ANCHORS_PER_ROUND = 5
#: Anchors a round that clear the Ladder's noisy margin (``evaluation.noisy_margin``: net ≥ 14 against 8).
CLEAR_ANCHORS_PER_ROUND = 14


@dataclass(frozen=True)
class Plan:
    """One crafted run: anchors (value 1), zeros (value 0) and probes (topic, guessed document)."""

    anchors: tuple[str, ...]
    zeros: tuple[str, ...]
    probes: tuple[tuple[str, str], ...]


def plans(qids: Sequence[str], run: Mapping[str, list[str]], *, identity: int, probes: int = 1,
          rounds: int = ROUNDS, anchors_per_round: int = ANCHORS_PER_ROUND) -> list[Plan]:
    """The rounds of one identity: ``anchors_per_round`` more anchors each round, ``probes`` new probe topics after
    them.

    Identity ``i`` guesses the good run's document ``i`` of each probe topic (its top documents are the likeliest
    relevant ones), so identities test different judgments.
    """
    qids = list(qids)
    out = []
    for r in range(rounds):
        n_anchors = min(anchors_per_round * (r + 1), len(qids) - probes)
        anchors = qids[:n_anchors]
        probe_topics = qids[n_anchors:n_anchors + probes]
        chosen = tuple((q, run[q][identity % len(run[q])]) for q in probe_topics)
        zeros = tuple(q for q in qids if q not in anchors and q not in probe_topics)
        out.append(Plan(tuple(anchors), zeros, chosen))
    return out


def rankings(plan: Plan, run: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The crafted run of ``plan``: qid → documents, best first (``x…`` ids are outside the corpus)."""
    out = {q: list(run[q]) for q in plan.anchors}
    for q, guess in plan.probes:
        out[q] = [guess]
    for q in plan.zeros:
        out[q] = [f"x{q}z"]
    return out


def run_text(plan: Plan, run: Mapping[str, list[str]]) -> bytes:
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 counting" for q, docs in rankings(plan, run).items()
             for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode()


def decode(plan: Plan, released: float, *, n_topics: int, step: float) -> dict[tuple[str, str], bool]:
    """(topic, document) → relevant, for every probe of ``plan`` the released value decides.

    An outcome (each probe a miss, or a hit on a topic of r relevant documents) is admitted when the anchors'
    and the probes' sum, as a mean over ``n_topics`` put on ``step`` (halves up, as the site does), is the
    released value; a probe is decided when every admitted outcome agrees on it.
    """
    values = [0.0] + [1 / r for r in range(1, MAX_RELEVANT + 1)]
    admitted = set()
    for outcome in itertools.product(values, repeat=len(plan.probes)):
        mean = (len(plan.anchors) + sum(outcome)) / n_topics
        if abs(_on_grid(mean, step) - released) < step / 4:
            admitted.add(tuple(v > 0 for v in outcome))
    if not admitted:
        return {}
    return {(q, d): next(iter({bits[i] for bits in admitted}))
            for i, (q, d) in enumerate(plan.probes) if len({bits[i] for bits in admitted}) == 1}


def _on_grid(value: float, step: float) -> float:
    # The site's rule (evaluation.ladder.on_grid: halves up), restated so that the attacker's tool imports nothing.
    return round(int(value / step + 0.5 + 1e-9) * step, 9)

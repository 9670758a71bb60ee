"""Open: the released, rounded mean of a crafted run decides a probe (docs/security.md, "Remaining risks").

The Ladder releases a first run that scores on five topics, and what it
releases is the rounded mean: a sum of the anchors' and the probe's values.
The sum hides the probe only if the anchors' values are unknown. The
attacker makes them known *up to a lattice*: with their ranks 4 to 10
replaced by documents outside the corpus, each anchor's MRR@10 is 0, 1, 1/2
or 1/3, so the anchors add up to a multiple of 1/6. The probe is one guessed
document at rank 7 behind six documents outside the corpus: 1/7 if it is
relevant, else 0 — off the lattice by at least 1/42, twice the display step
of a 20-topic mean (1/42/20 = 0.0012 > 0.0001). So the rounded mean alone
says whether the guess is relevant, whatever the anchors score.

Strict xfail: it fails (the probe is decided) until the released mean stops
deciding it; no small change of a view fixes it (the value is the
leaderboard's own). Quotas and the cost of identities bound it: one or two
probes per released run, about one released run per identity.
"""

from __future__ import annotations

import itertools

import pytest

from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ANCHOR_VALUES = (0.0, 1.0, 1 / 2, 1 / 3)
PROBE_RANK = 7


def _crafted(secret: Secret, guess_relevant: bool) -> tuple[bytes, str, str]:
    topics = sorted(secret.run)
    anchors, probe = topics[:5], topics[5]
    guess = (sorted(secret.relevant[probe])[0] if guess_relevant
             else next(d for d in secret.run[probe] if d not in secret.relevant[probe]))
    rankings = {q: secret.run[q][:3] + [f"x{q}n{i}" for i in range(7)] + secret.run[q][3:90] for q in anchors}
    rankings[probe] = [f"x{probe}n{i}" for i in range(PROBE_RANK - 1)] + [guess]
    rankings.update({q: [f"x{q}"] for q in topics if q not in rankings})
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 crafted" for q, docs in rankings.items() for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode(), probe, guess


def _decide(mean: float, n_topics: int) -> set[bool]:
    """Whether the probe's guess is relevant, for every anchor outcome that gives the released rounded mean."""
    return {bit for anchors in itertools.product(ANCHOR_VALUES, repeat=5) for bit in (False, True)
            if round((sum(anchors) + bit / PROBE_RANK) / n_topics, 4) == mean}


@pytest.mark.xfail(strict=True, reason="open: the released rounded mean of a crafted run decides a probe "
                                       "(docs/security.md, Remaining risks: values on a known lattice)")
def test_the_released_mean_of_a_crafted_run_decides_no_probe(secret, person):
    learnt = {}
    for name, guess_relevant in (("mallory", True), ("trudy", False)):  # one fresh identity per probe
        client = person(name)
        content, probe, guess = _crafted(secret, guess_relevant)
        submission_id, answer = submit(client, secret, content, system_name="crafted", visibility="private")
        assert submission_id is not None and answer["status"] == "scored", answer
        if not answer.get("released"):
            continue
        decided = _decide(float(answer["scores"]["MRR@10"]), len(secret.run))
        if len(decided) == 1:
            learnt[(probe, guess)] = decided.pop()
    right = {k: v for k, v in learnt.items() if v == (k[1] in secret.relevant[k[0]])}
    assert not right, f"the released mean decided {len(right)} of 2 probes ({len(learnt) - len(right)} wrong): {right}"

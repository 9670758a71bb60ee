"""The lattice attack against the live site: every released measure, three rounds per identity, three identities.

Each identity uploads the three crafted runs of ``tests/security/lattice.py``
through the API (gunicorn and a real worker score them), reads every number
the answer releases and the grid it says they sit on, and decodes its probes
from all of them at once. Before the disclosure module, a hidden split
released five measures at 4 decimals and MRR@10 decided both probes of every
run (six judgments per identity, none wrong); now it releases the primary
measure (R@100) on a grid of one topic's share (20 topics: 5 points; 48
here: about 2), and a probe is at most one bit among the anchors' unknown values.

The Ladder's noisy margin (#37) releases a run only when it improves on the
identity's best on net + Laplace noise ≥ 8 topics: on 20 topics the rounds'
blocks of six anchors are never released. On the 48-topic split
(``wide_secret``) ``lattice.plans`` adds fifteen anchors a round (its blocks
follow the split's size), a clear improvement each time, so every round of
every identity can be released and decoded.
"""

from __future__ import annotations

import pytest

from . import lattice
from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IDENTITIES = ("mallory", "trudy", "oscar")


def test_the_lattice_attack_recovers_at_most_one_judgment_per_identity(wide_secret: Secret, person):
    secret = wide_secret
    qids = sorted(secret.run)
    recovered: dict[str, dict[tuple[str, str], bool]] = {}
    released_runs = 0
    for index, name in enumerate(IDENTITIES):
        client = person(name)
        learnt: dict[tuple[str, str], bool] = {}
        for plan in lattice.plans(qids, secret.run, identity=index):
            submission_id, answer = submit(client, secret, lattice.run_text(plan, secret.run),
                                           system_name="crafted", visibility="private")
            assert submission_id is not None and answer["status"] == "scored", answer
            if not answer.get("released"):
                continue
            released_runs += 1
            scores = {m: v for m, v in answer["scores"].items() if v is not None}
            learnt.update(lattice.decode(plan, scores, n_topics=len(qids), step=answer.get("grid")))
        recovered[name] = {k: v for k, v in learnt.items() if v == (k[1] in secret.relevant[k[0]])}
    # The attack is the issue's: its runs are released (each round a significant improvement in R@100).
    assert released_runs >= len(IDENTITIES) * 2, f"only {released_runs} crafted runs were released"
    too_many = {name: found for name, found in recovered.items() if len(found) > 1}
    assert not too_many, f"the released values decided more than one judgment per identity: {too_many}"

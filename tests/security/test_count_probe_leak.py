"""The count-probe attack on the released primary measure itself, against gunicorn and a real worker.

``tests/security/count_probe.py``: every topic but the probes is known (anchors holding the good run, R@100 = 1;
zeros outside the corpus), so the released R@100, on the grid of one topic's share, fixes the probes' sum to one
grid line. Three identities climb the Ladder in three rounds each, one probe per run, through the API; each reads
the released value and the grid the answer states and decodes its probe. The Ladder's noisy margin (#37) releases a
run only when it improves on the identity's best on net + Laplace noise ≥ 8 topics, so the attacker climbs by 14
anchors a round (``count_probe.CLEAR_ANCHORS_PER_ROUND``; five passed the sign test of old) on the 48-topic split
(``wide_secret``), as many released runs, each decoded, as the rule lets an identity have.

What the grid lets through, measured here and stated in docs/security.md: a probe is decided only when its guess
is relevant on a topic of one or two relevant documents (1/r rounds to a whole step), so at most one judgment
per released run, never a wrong one. And a first run is compared with the split's best baseline: with a curator's
baseline as good as the attacker's retriever, no crafted first run is released at all (before, a first run was
compared with an empty run and every crafted run was released).
"""

from __future__ import annotations

import pytest

from . import count_probe
from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

IDENTITIES = ("mallory", "trudy", "oscar")


def _attack(secret: Secret, person, names) -> tuple[dict[str, dict], int, int]:
    qids = sorted(secret.run)
    decided: dict[str, dict] = {}
    released = runs = 0
    for index, name in enumerate(names):
        client = person(name)
        learnt: dict[tuple[str, str], bool] = {}
        mine = 0
        for plan in count_probe.plans(qids, secret.run, identity=index,
                                      anchors_per_round=count_probe.CLEAR_ANCHORS_PER_ROUND):
            submission_id, answer = submit(client, secret, count_probe.run_text(plan, secret.run),
                                           system_name="counting", visibility="private")
            assert submission_id is not None and answer["status"] == "scored", answer
            runs += 1
            if not answer.get("released"):
                continue
            mine += 1
            value = answer["scores"]["R@100"]
            learnt.update(count_probe.decode(plan, value, n_topics=len(qids), step=answer["grid"]))
        decided[name] = {"learnt": learnt, "released": mine}
        released += mine
    return decided, released, runs


def test_count_probes_on_the_primary_measure_decide_at_most_one_judgment_per_released_run(wide_secret: Secret,
                                                                                         person):
    secret = wide_secret
    decided, released, runs = _attack(secret, person, IDENTITIES)
    assert released >= len(IDENTITIES) * 2, f"only {released} of {runs} crafted runs were released"
    for name, found in decided.items():
        wrong = {k for k, v in found["learnt"].items() if v != (k[1] in secret.relevant[k[0]])}
        assert not wrong, f"{name} decided a judgment wrongly: {wrong}"
        assert len(found["learnt"]) <= found["released"], (name, found)


def test_with_a_baseline_no_crafted_first_run_is_released(wide_secret: Secret, person, django_user_model):
    """The same attack as above (which gets its runs released), with a baseline on the split."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.services import submission_create, submission_score_now

    secret = wide_secret
    curator = django_user_model.objects.create_user("curator", "curator@example.org", "x", is_staff=True)
    baseline = submission_create(
        user=curator, split=secret.split, upload=SimpleUploadedFile("good.run", secret.run_text()), enqueue=False,
        is_baseline=True, metadata={"system_name": "good baseline", "family": "lexical", "visibility": "public"})
    assert submission_score_now(baseline.pk).status == "scored"
    decided, released, runs = _attack(secret, person, IDENTITIES[:1])
    assert released == 0 and runs == count_probe.ROUNDS, decided

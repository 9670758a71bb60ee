"""New identities cost a day: a hidden split's daily budget of first releases, and its ledger, on the live stack.

Against gunicorn and a real worker (``tests/security/conftest.py``): fresh
verified accounts each upload a first run through the API. The split
releases the first runs of two new identities a day (its release policy);
the third waits, visibly, with no number of its own anywhere, until a
curator (or the next day's sweep) releases it. Every release is in the
split's ledger with its bits; the identity passing the split's daily rate
raises an alert for the curators; the lattice attack's crafted run is
flagged for review. Before the budget, the third identity's first run was
released at once (the API's ``released`` was true and its scores shown).
"""

from __future__ import annotations

import time

import pytest

from .conftest import Secret, submit

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def _crafted(secret: Secret) -> bytes:
    """The lattice attack's shape: five anchor topics, one probe behind fillers, one document elsewhere.

    The one document is one the attacker knows to be relevant (as the probe's): the Ladder's noisy margin releases
    a first run only when it improves on an empty run on clearly more than eight topics (net + Laplace noise ≥ 8),
    so the run scores on all 20 (where the good run's top document, relevant on no topic, scored on none).
    """
    topics = sorted(secret.run)
    anchors, probe = topics[:5], topics[5]
    rankings = {q: secret.run[q][:90] for q in anchors}
    rankings[probe] = [f"x{probe}n{i}" for i in range(6)] + [sorted(secret.relevant[probe])[0]]
    rankings.update({q: [sorted(secret.relevant[q])[0]] for q in topics if q not in rankings})
    lines = [f"{q} Q0 {d} {i + 1} {1000 - i}.0 crafted" for q, docs in rankings.items() for i, d in enumerate(docs)]
    return ("\n".join(lines) + "\n").encode()


def test_the_third_new_identity_of_the_day_waits_for_the_budget_and_the_ledger_counts_every_release(
        secret, person, django_user_model):
    from campaigns.models import SentNotification
    from submissions.models import LedgerAlert, Release, ReleasePolicy, ReleaseWait, Verdict
    from submissions.services.ladder import release_waits_judge

    django_user_model.objects.create_user("curator", "curator@example.org", "x", is_staff=True)
    ReleasePolicy.objects.create(split=secret.split, first_releases_per_day=2, identity_bits_per_day=100,
                                 split_bits_per_day=5)
    answers = {}
    for name, content in (("mallory", _crafted(secret)), ("trudy", secret.run_text()), ("eve", secret.run_text())):
        client = person(name)
        submission_id, answer = submit(client, secret, content, system_name=f"{name}'s run", visibility="public")
        assert submission_id is not None and answer["status"] == "scored", answer
        answers[name] = (client, submission_id, answer)

    assert answers["mallory"][2]["released"] and answers["trudy"][2]["released"]
    eve, eve_id, eve_answer = answers["eve"]
    assert eve_answer["released"] is False and eve_answer["scores"] == {}
    assert eve_answer["message"].startswith("Waiting for tomorrow's release budget"), eve_answer["message"]
    assert "Waiting for tomorrow" in eve.get(f"/submissions/{eve_id}/").body.replace("&#x27;", "'")
    assert "eve&#x27;s run" not in eve.get(f"/d/{secret.slug}/").body  # not on the board

    # The ledger: two releases, each with its bits, and every verdict's; the split passed its 5 bits a day: one
    # alert counting both, curators mailed.
    rows = list(Release.objects.filter(split=secret.split).order_by("released_at"))
    assert [r.identity_label.split(" ")[0] for r in rows] == ["mallory", "trudy"] and all(r.first for r in rows)
    assert all(r.bits > 4 for r in rows)
    verdicts = Verdict.objects.filter(split=secret.split)
    alert = LedgerAlert.objects.get(split=secret.split)
    assert alert.scope == "split"
    assert alert.bits == pytest.approx(sum(r.bits for r in rows) + sum(v.bits for v in verdicts))
    assert SentNotification.objects.filter(kind="ledger_alert", user__username="curator").count() == 1
    # The crafted run is flagged for review (read by the worker after the commit).
    deadline = time.monotonic() + 30
    while not Release.objects.get(submission_id=answers["mallory"][1]).crafted and time.monotonic() < deadline:
        time.sleep(0.3)
    assert "topics hold one or two documents" in Release.objects.get(submission_id=answers["mallory"][1]).crafted[0]
    assert not Release.objects.get(submission_id=answers["trudy"][1]).crafted

    # A curator releases the waiting run: now it shows, and it is in the ledger.
    assert release_waits_judge(wait_ids=list(ReleaseWait.objects.values_list("pk", flat=True)), curator=True) == 1
    released = eve.get(f"/api/v1/submissions/{eve_id}/").json()
    assert released["released"] is True and released["scores"]
    assert Release.objects.filter(split=secret.split).count() == 3

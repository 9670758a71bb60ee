"""A worker killed (SIGKILL) in the middle of scoring: every submission still ends scored exactly once.

The database row is the record of the job. After the kill, the rows the dead
worker held stay in ``scoring`` with a heartbeat that no longer moves; the
sweep requeues them (and re-sends queued ones whose message died with the
worker), a new worker scores them, and the unique (submission, qrels
version) result and the conditional transitions keep it to one result each.
Bound: a killed submission is picked up again within
``LEXBOARD_HEARTBEAT_STALE_SECONDS`` + ``LEXBOARD_SWEEP_INTERVAL`` (3 minutes
with the defaults); here the sweep is called with a clock moved past that.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from submissions.models import Result, StatusEvent, Submission
from submissions.services import submissions_sweep
from tests.chaos import frozen_mid_task
from tests.waiting import wait_until_final

from .test_e2e_worker import post_run

pytestmark = [pytest.mark.chaos, pytest.mark.e2e, pytest.mark.slow]

#: Big enough that scoring takes a second or two, so the kill lands mid-scoring:
#: 25,000 queries × the 20 documents of the tiny corpus (unknown queries are ignored).
BIG_RUN = "".join(
    f"q{q} Q0 d{d} {d} {1.0 / d} big\n" for q in (1, 2, 3) for d in range(1, 21)
) + "".join(f"x{q} Q0 d{d} {d} {1.0 / d} big\n" for q in range(25_000) for d in range(1, 21))


def test_a_worker_killed_while_scoring_loses_nothing_and_scores_nothing_twice(
    transactional_db, celery_worker_process, client, alice, tiny_dataset
):
    split = tiny_dataset.splits.get(name="test")
    split.daily_limit = 0
    split.save()
    client.force_login(alice)
    for i in range(3):  # three different files (the same file twice is refused as a duplicate)
        response = post_run(client, split, BIG_RUN.replace(" big\n", f" big{i}\n"), name="big.txt")
        assert response.status_code == 302, response.content.decode()[-3000:]
    ids = list(Submission.objects.order_by("pk").values_list("pk", flat=True))

    # Kill the worker (the whole process group) while it is scoring one: stopped as soon as a row is in scoring,
    # killed once it is shown to be scoring a row still in scoring (tests/chaos.py).
    frozen_mid_task(ids, [celery_worker_process])
    celery_worker_process.kill()
    celery_worker_process.process.wait(timeout=10)
    stuck = list(Submission.objects.filter(status=Submission.Status.SCORING).values_list("pk", flat=True))
    assert len(stuck) == 1, "the kill should land while one submission is being scored"

    # The sweep, run by beat once the heartbeat is stale (clock moved past it here).
    later = timezone.now() + timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS + 1)
    submissions_sweep(now=later)
    celery_worker_process.restart()
    for pk in ids:
        assert wait_until_final(pk, celery_worker_process, timeout=180).status == Submission.Status.SCORED

    for pk in ids:
        assert Result.objects.filter(submission_id=pk).count() == 1
        assert StatusEvent.objects.filter(submission_id=pk, status="scored").count() == 1
    # The killed one went back to the queue once, and was scored by the new worker (attempt 2).
    killed = Submission.objects.get(pk=stuck[0])
    assert killed.attempts == 2
    assert [e.status for e in killed.events.all()] == ["scoring", "queued", "scoring", "scored"]
    scores = {tuple(sorted(r.scores.items())) for r in Result.objects.all()}
    assert len(scores) == 1  # the same file, the same numbers, whoever scored it

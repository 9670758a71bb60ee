"""The Celery tasks are thin: their options, and a direct call running the service."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from submissions import services
from submissions.models import Submission
from submissions.services import scoring
from submissions.tasks import score_submission, sweep_submissions

from .conftest import GOOD_RUN, METADATA, upload


def test_scoring_is_acknowledged_late_and_requeued_on_a_lost_worker():
    assert score_submission.acks_late is True
    assert score_submission.reject_on_worker_lost is True


@pytest.mark.django_db
def test_the_task_body_scores_through_the_service(alice, test_split):
    submission = services.submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA)
    score_submission(submission.pk)  # the task's body, in this process
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORED
    assert sweep_submissions() == {"resent": 0, "requeued": 0, "failed": 0}


@pytest.mark.django_db
def test_the_task_ignores_a_submission_that_no_longer_exists():
    score_submission(987654)


def test_the_registered_task_names_are_the_wire_format_and_do_not_change(settings):
    """Queued messages and the beat schedule name tasks; a deploy that renames one strands them."""
    from lexboard.celery import app

    app.loader.import_default_modules()  # what a worker does at start: autodiscovery
    ours = {name for name in app.tasks if not name.startswith("celery.")}
    assert ours == {
        "evaluation.tasks.score_submission",
        "evaluation.tasks.rescore_submission",
        "evaluation.tasks.sweep_submissions",
        # Shared tasks: the e-mails (campaigns/tasks.py) and the reveal (leaderboard/tasks.py).
        "campaigns.send_notification",
        "campaigns.notices_tick",
        "leaderboard.reveal_closed_phases",
        # The sandbox (sandbox/tasks.py): an image run on the sandbox queue, its sweep.
        "sandbox.run_image",
        "sandbox.sweep",
        # Presigned upload slots: the sweep of the bucket's incoming/ (submissions/services/presigned.py).
        "submissions.sweep_upload_slots",
    }
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} == {
        "evaluation.tasks.sweep_submissions", "campaigns.notices_tick", "leaderboard.reveal_closed_phases",
        "sandbox.sweep", "submissions.sweep_upload_slots"}
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= ours


def _left_in_scoring(submission: Submission) -> Submission:
    """The row as a worker killed mid-task leaves it: claimed (scoring, attempt 1), heartbeat no longer moving."""
    assert submission.claim()
    return Submission.objects.get(pk=submission.pk)


@pytest.mark.django_db
def test_a_redelivered_message_scores_once_a_row_whose_worker_died_mid_task(alice, test_split, monkeypatch):
    submission = services.submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA)
    _left_in_scoring(submission)
    waited = []
    monkeypatch.setattr(scoring.time, "sleep", waited.append)  # the heartbeat stands still meanwhile

    services.submission_score(submission.pk)  # a duplicate (not redelivered): someone else has it
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORING and waited == []

    services.submission_score(submission.pk, redelivered=True)
    row = Submission.objects.get(pk=submission.pk)
    assert (row.status, row.attempts, row.results.count()) == (Submission.Status.SCORED, 2, 1)
    assert waited == [pytest.approx(2 * scoring.heartbeat_interval() + 1, abs=0.5)]  # a heartbeat just written
    assert row.events.filter(status=Submission.Status.SCORED).count() == 1
    services.submission_score(submission.pk, redelivered=True)  # a second redelivery: scored already, a no-op
    assert Submission.objects.get(pk=submission.pk).results.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("age, wait", [(0.0, "whole"), (1.0, "rest"), (5.0, "floor"), (60.0, "floor")])
def test_a_redelivered_message_counts_the_two_intervals_from_the_last_heartbeat(alice, test_split, monkeypatch,
                                                                                 age, wait):
    """Two intervals and a second past the heartbeat it saw (not past its own arrival), never less than an interval
    and a second: a row whose attempt beat long ago is taken over sooner, and a live attempt still beats once."""
    submission = services.submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA)
    _left_in_scoring(submission)
    Submission.objects.filter(pk=submission.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=age))
    waited = []
    monkeypatch.setattr(scoring.time, "sleep", waited.append)
    services.submission_score(submission.pk, redelivered=True)
    interval = scoring.heartbeat_interval()
    expected = {"whole": 2 * interval + 1, "rest": 2 * interval + 1 - age, "floor": interval + 1}[wait]
    assert waited == [pytest.approx(expected, abs=0.5)]
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORED


@pytest.mark.django_db
def test_a_redelivered_message_leaves_a_row_whose_attempt_is_alive(alice, test_split, monkeypatch):
    submission = services.submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA)
    row = _left_in_scoring(submission)
    # A live attempt (e.g. started by the sweep's duplicate) beats while the redelivered message watches.
    monkeypatch.setattr(scoring.time, "sleep", lambda seconds: row.heartbeat(0.5))
    services.submission_score(submission.pk, redelivered=True)
    row = Submission.objects.get(pk=submission.pk)
    assert (row.status, row.attempts, row.results.count()) == (Submission.Status.SCORING, 1, 0)

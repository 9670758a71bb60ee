"""Celery tasks: thin wrappers around ``submissions.services`` (found by ``app.autodiscover_tasks()``).

A task takes an id, calls a service, and retries only on transient database
errors — every other outcome is recorded on the submission row by the service
itself. The tasks keep the names they were first registered under
(``evaluation.tasks.*``, :mod:`submissions.services.queue`): queued messages
and the beat schedule name them, so the names are the wire format and survive
a deploy that moves the code.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from .services import submission_rescore_on, submission_score, submissions_sweep
from .services.presigned import slots_sweep
from .services.queue import RESCORE_TASK, SCORE_TASK, SWEEP_TASK

#: Scoring tasks are acknowledged after they ran, redelivered when their worker
#: dies, and retried with backoff only when the database is briefly away.
SCORING_TASK_OPTIONS: dict[str, Any] = dict(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=8,
)


@shared_task(name=SCORE_TASK, bind=True, **SCORING_TASK_OPTIONS)
def score_submission(self: Task, submission_id: int) -> None:
    """Score one submission (a no-op when it is not queued: the row is the record).

    A message the broker redelivered (its worker died mid-task) may take over
    the row that worker left in scoring (``submission_score``'s ``redelivered``).
    """
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    submission_score(int(submission_id), redelivered=redelivered)


@shared_task(name=RESCORE_TASK, **SCORING_TASK_OPTIONS)
def rescore_submission(submission_id: int, qrels_version_id: int) -> None:
    """Score a scored submission on a newly published qrels version (idempotent: one result per version)."""
    submission_rescore_on(submission_id=int(submission_id), qrels_version_id=int(qrels_version_id))


@shared_task(name=SWEEP_TASK, ignore_result=True)
def sweep_submissions() -> dict:
    """Re-send lost messages and recover submissions whose worker died (Celery beat).

    No retry: beat sends the next sweep within ``LEXBOARD_SWEEP_INTERVAL`` anyway.
    """
    return submissions_sweep()


@shared_task(name="submissions.sweep_upload_slots", ignore_result=True)
def sweep_upload_slots() -> dict:
    """Expire presigned upload slots never used and delete the incoming objects no open slot owns (Celery beat).

    No retry: beat sends the next sweep within ``LEXBOARD_SWEEP_INTERVAL`` anyway.
    """
    return slots_sweep()

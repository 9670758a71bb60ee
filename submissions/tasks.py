"""Celery tasks: thin wrappers around ``submissions.services``.

The only module of ``evaluation`` that knows about Django and Celery; the
services are imported inside the tasks so the metric core stays importable on
its own. A task takes an id, calls a service, and retries only on transient
database errors — every other outcome is recorded on the submission row by
the service itself.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

#: Scoring tasks are acknowledged after they ran, redelivered when their worker
#: dies, and retried with backoff only when the database is briefly away.
SCORING_TASK_OPTIONS = dict(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=8,
)


@shared_task(**SCORING_TASK_OPTIONS)
def score_submission(submission_id: int) -> None:
    """Score one submission (a no-op when it is not queued: the row is the record)."""
    from submissions.services import submission_score

    submission_score(int(submission_id))


@shared_task(**SCORING_TASK_OPTIONS)
def rescore_submission(submission_id: int, qrels_version_id: int) -> None:
    """Score a scored submission on a newly published qrels version (idempotent: one result per version)."""
    from submissions.services import submission_rescore_on

    submission_rescore_on(submission_id=int(submission_id), qrels_version_id=int(qrels_version_id))


@shared_task(ignore_result=True)
def sweep_submissions() -> dict:
    """Re-send lost messages and recover submissions whose worker died (Celery beat).

    No retry: beat sends the next sweep within ``LEXBOARD_SWEEP_INTERVAL`` anyway.
    """
    from submissions.services import submissions_sweep

    return submissions_sweep()

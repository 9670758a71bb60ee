"""The doorbell: send the scoring and rescoring messages (never raising).

The database row is the record of the job and the broker only a doorbell:
when the broker cannot be reached the row stays as it is and the sweep
rings again. Messages are sent by their registered names
(:data:`SCORE_TASK`, :data:`RESCORE_TASK`), which are the wire format and
never change; ``submissions.tasks`` registers the tasks under them.
"""

from __future__ import annotations

import hashlib
import logging

from celery import current_app
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from ..models import Submission

logger = logging.getLogger(__name__)

#: The registered names of the tasks (``submissions.tasks``): the wire format of
#: queued messages and of the beat schedule, kept when the code moved.
SCORE_TASK = "evaluation.tasks.score_submission"
RESCORE_TASK = "evaluation.tasks.rescore_submission"
SWEEP_TASK = "evaluation.tasks.sweep_submissions"

logger = logging.getLogger(__name__)


def submission_enqueue(*, submission_id: int, countdown: float | None = None) -> bool:
    """Ring the doorbell: send the scoring message (:data:`SCORE_TASK`). Never raises.

    When the broker cannot be reached the row stays queued with no
    ``enqueued_at`` and the sweep sends it again; the user loses nothing.
    """
    try:
        current_app.send_task(
            SCORE_TASK, args=[submission_id], countdown=countdown, retry=True, retry_policy=SEND_RETRY_POLICY
        )
    except Exception:
        logger.warning("could not send submission %s to the broker; the sweep will resend it", submission_id,
                       exc_info=True)
        return False
    try:
        Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
            enqueued_at=timezone.now()
        )
    except Exception:
        logger.warning("sent submission %s but could not record it", submission_id, exc_info=True)
    return True


def enqueue_after_commit(submission_id: int, *, countdown: float | None = None) -> None:
    transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id, countdown=countdown))

def send_rescoring(submission_ids: list[int], version_id: int, *, split_id: int | None = None,
                    now=None) -> int:
    """Ring the doorbell once per submission; never raises.

    Stops at the first broker error rather than waiting on each of a
    thousand sends: the sweep sends the missing ones again later. With
    ``split_id`` (a whole split's batch), a successful send is remembered for
    ``split_rescoring_resend``, which waits a while before sending again.
    """
    sent = 0
    for submission_id in submission_ids:
        try:
            current_app.send_task(
                RESCORE_TASK, args=[submission_id, version_id], retry=True, retry_policy=SEND_RETRY_POLICY
            )
        except Exception:
            logger.warning("could not send the rescoring of submission %s; the sweep will resend it",
                           submission_id, exc_info=True)
            break
        sent += 1
    if sent and split_id is not None:
        window = settings.LEXBOARD_QUEUED_RESEND_SECONDS
        cache.set(rescoring_sent_key(split_id, version_id), (now or timezone.now()).timestamp(), window)
    return sent


def send_rescoring_after_commit(submission_ids: list[int], version_id: int, *, split_id: int | None = None) -> None:
    if submission_ids:
        ids = list(submission_ids)
        transaction.on_commit(lambda: send_rescoring(ids, version_id, split_id=split_id))


#: Sending a message must not hold a web request for long when the broker is down.
SEND_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}


def rescoring_key(kind: str, *ids: int) -> str:
    """A cache key for rescoring bookkeeping, scoped to this database.

    Row ids repeat from one database to another (e.g. test sessions sharing
    one Redis), so the database's name is part of the key.
    """
    scope = hashlib.sha256(str(connection.settings_dict.get("NAME", "")).encode()).hexdigest()[:12]
    return f"lexboard:rescoring-{kind}:{scope}:" + ":".join(str(i) for i in ids)


def rescoring_sent_key(split_id: int, version_id: int) -> str:
    return rescoring_key("sent", split_id, version_id)

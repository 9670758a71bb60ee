"""The periodic sweep (Celery beat): re-send lost messages, recover rows whose worker died.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalogue.models import Split

from ..models import StatusEvent, Submission
from .ladder import release_waits_judge
from .queue import enqueue_after_commit, submission_enqueue
from .rescoring import requeue_service_failures, split_finish_rescoring, split_rescoring_resend
from .storage import files_remove_expired

logger = logging.getLogger(__name__)


# --- the sweep -----------------------------------------------------------------------------


def submissions_sweep(*, now=None) -> dict[str, int]:
    """Repair what a lost message or a dead worker left behind; run by Celery beat.

    Beat sends it to a queue of its own (``LEXBOARD_SWEEP_QUEUE``), consumed by
    a small worker that does nothing else, so the sweep runs while the scoring
    worker it repairs is dead or stuck.

    * queued rows never sent (``enqueued_at`` null, older than a short grace)
      or sent more than ``LEXBOARD_QUEUED_RESEND_SECONDS`` ago are sent again
      (a duplicate message is harmless: only one claim succeeds);
    * scoring rows whose heartbeat is older than
      ``LEXBOARD_HEARTBEAT_STALE_SECONDS`` are requeued and sent, or failed
      with a service error once ``LEXBOARD_MAX_SCORING_ATTEMPTS`` is reached;
    * runs waiting for judgments on a split whose judgments are published are
      queued (the publication queues them; this catches an upload saved while
      the publication committed);

    * splits with a pending qrels version are switched when every scored
      submission has a result on it (e.g. the last missing one was
      withdrawn), else their missing rescorings are re-sent when no progress
      was made for ``LEXBOARD_QUEUED_RESEND_SECONDS`` (``split_rescoring_resend``);
    * runs waiting for a hidden split's daily budget of first releases are
      judged again when the day's budget leaves room (``release_waits_judge``);
    * the files of withdrawn and failed submissions older than
      ``LEXBOARD_FILE_RETENTION_DAYS`` are removed, their rows kept
      (``files_remove_expired``).

    The stale scoring rows are also recovered by every worker every
    ``LEXBOARD_RECOVERY_INTERVAL`` seconds (``scoring_recover``, run by
    ``submissions.worker_steps``), so a submission whose worker was killed is
    queued again within about stale + that interval (12 s with the defaults),
    without waiting for beat.
    """
    now = now or timezone.now()
    resend_before = now - timedelta(seconds=settings.LEXBOARD_QUEUED_RESEND_SECONDS)
    grace_before = now - timedelta(seconds=min(30, settings.LEXBOARD_QUEUED_RESEND_SECONDS))
    counts = {"resent": 0, "requeued": 0, "failed": 0}

    lost = Submission.objects.filter(status=Submission.Status.QUEUED).filter(
        Q(enqueued_at__isnull=True, updated_at__lt=grace_before) | Q(enqueued_at__lt=resend_before)
    )
    for submission_id in lost.values_list("pk", flat=True):
        if submission_enqueue(submission_id=submission_id):
            counts["resent"] += 1

    recovered = scoring_recover(now=now)
    counts["requeued"], counts["failed"] = recovered["requeued"], recovered["failed"]
    counts["resent"] += recovered["resent"]

    # Runs still waiting on splits whose judgments are now published (a publication that committed while
    # such an upload was being saved did not see it): queue them.
    waiting = (
        Submission.objects.filter(status=Submission.Status.WAITING, split__current_qrels__isnull=False)
        .values_list("split_id", flat=True).distinct()
    )
    for split_id in list(waiting):
        with transaction.atomic():
            woken = requeue_service_failures(split_id)
        if woken:
            counts["waiting_queued"] = counts.get("waiting_queued", 0) + woken

    # Splits waiting for a rescoring: switch the ones that are done (e.g. after
    # a withdrawal), re-send what looks lost. Counted only when something happened.
    for split in Split.objects.filter(pending_qrels__isnull=False):
        if split_finish_rescoring(split=split):
            counts["switched"] = counts.get("switched", 0) + 1
        else:
            resent = split_rescoring_resend(split=split, now=now)
            if resent:
                counts["rescoring_resent"] = counts.get("rescoring_resent", 0) + resent
    # Runs the Ladder admitted that wait for a hidden split's daily budget of first releases: a new day's
    # budget releases the oldest (services/ledger.py).
    released_waits = release_waits_judge()
    if released_waits:
        counts["budget_waits_judged"] = released_waits
    # Storage has a bound: files of withdrawn and failed submissions past the retention period.
    removed = files_remove_expired(now=now)
    if removed:
        counts["files_removed"] = removed
    if any(counts.values()):
        logger.info("sweep: %s", counts)
    return counts


def scoring_recover(*, now=None) -> dict[str, int]:
    """Put back in the queue the submissions whose worker went silent; how many, and how many failed.

    Two kinds of silence, one rule (``LEXBOARD_HEARTBEAT_STALE_SECONDS``):

    * a row in ``scoring`` whose heartbeat stood still lost the process scoring it (killed, out of memory, its
      machine gone): it is requeued and sent, or failed with a service error once
      ``LEXBOARD_MAX_SCORING_ATTEMPTS`` is reached;
    * a row still ``queued`` whose message a worker had received but not started (``held_by``: prefetched, or
      waiting for the pool) lost that worker if its hold was not renewed (``queued_holds_renew``, every
      worker's step): its message is with the dead worker (gone on the ``filesystem://`` broker, held
      unacknowledged by Redis until the visibility timeout), so it is sent again (``resent``).

    Called by the sweep and, every few seconds, by every worker (``submissions.worker_steps.ScoringRecovery``).
    Safe to run anywhere at once: each row is re-read locked (SQLite: a write transaction) and moved only if it
    is still stale, so of two callers one acts, and a live attempt or hold (its heartbeat moved) is never
    touched. A message sent twice is harmless: the scoring task claims the row, and a second message finds it
    claimed.
    """
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.LEXBOARD_HEARTBEAT_STALE_SECONDS)
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    stale = Submission.objects.filter(status=Submission.Status.SCORING).filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True, updated_at__lt=stale_before)
    )
    for submission_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            row = (
                Submission.objects.select_for_update(no_key=True)
                .filter(pk=submission_id, status=Submission.Status.SCORING)
                .filter(Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True))
                .first()
            )
            if row is None:
                continue
            if row.attempts >= settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
                row.mark_failed(
                    kind=Submission.FailureKind.SERVICE,
                    message=(
                        f"The worker scoring this submission stopped answering {row.attempts} times. "
                        "This is our fault and does not count against your quota; you may resubmit."
                    ),
                )
                counts["failed"] += 1
            elif row.requeue(message="the worker scoring it went silent; queued again"):
                enqueue_after_commit(row.pk)
                counts["requeued"] += 1
    counts["resent"] = _orphaned_holds_resend(stale_before)
    return counts


def _orphaned_holds_resend(stale_before) -> int:
    """Send again the queued rows whose message a worker received and then fell silent (see ``scoring_recover``)."""
    orphaned = Submission.objects.filter(status=Submission.Status.QUEUED).exclude(held_by="").filter(
        Q(heartbeat_at__lt=stale_before) | Q(heartbeat_at__isnull=True))
    resent = 0
    for submission_id in orphaned.values_list("pk", flat=True):
        with transaction.atomic():
            # The same conditions again, in the UPDATE: of two callers (or a renewal meanwhile) one moves it.
            moved = orphaned.filter(pk=submission_id).update(held_by="", heartbeat_at=None, enqueued_at=None)
            if moved:
                StatusEvent.objects.create(submission_id=submission_id, status=Submission.Status.QUEUED,
                                           message="the worker that had received it went silent; sent again")
                enqueue_after_commit(submission_id)
                resent += 1
    if resent:
        logger.info("sent again %s queued submissions whose message a silent worker held", resent)
    return resent


# --- a worker's hold on the messages it received --------------------------------------------------------------


def queued_hold(submission_id: int, holder: str) -> None:
    """A worker received this queued row's message (Celery's ``task_received``): it holds it from now on."""
    Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
        held_by=holder[:200], heartbeat_at=timezone.now())


def queued_holds_renew(holder: str) -> int:
    """The worker ``holder`` is alive: renew its holds on the queued rows whose messages it has not started."""
    return Submission.objects.filter(status=Submission.Status.QUEUED, held_by=holder[:200]).update(
        heartbeat_at=timezone.now())

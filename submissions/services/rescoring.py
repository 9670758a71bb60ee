"""New judgments: staged publication, rescoring on the new version, and the switch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from catalogue.models import QrelsVersion, Split
from catalogue.page_generation import pages_renew
from catalogue.services import SMALL_CHANGE_HOW, qrels_batch_check
from catalogue.signals import board_changing

from ..models import Result, Submission
from ..selectors import rescoring_targets, rescoring_waiting
from .ladder import ladder_judge, ladder_replay
from .queue import (
    enqueue_after_commit,
    rescoring_key,
    rescoring_sent_key,
    send_rescoring,
    send_rescoring_after_commit,
)
from .results import (
    ScoresDisagree,
    failure_marker,
    is_failure_marker,
    read_stored_run,
    result_compute,
    result_store,
    stored_json_opener,
    stored_run_opener,
)

logger = logging.getLogger(__name__)


# --- new judgments: staged publication, rescoring, the switch -------------------------------
#
# Publishing a new qrels version on a split that has scored submissions stages
# it (``Split.pending_qrels``) and sends one ``rescore_submission`` task per
# scored submission. The submissions stay "scored" and the leaderboard keeps
# showing the current version's results. Each rescoring stores a Result for
# the pending version (unique per submission and version) and asks
# ``split_finish_rescoring`` whether every scored, non-withdrawn submission
# now has one; the first time the answer is yes, one UPDATE of the split row
# makes the pending version current, so every row of the leaderboard changes
# version at the same moment. A run that cannot be scored on the new version
# leaves a failure marker (a Result without scores, the reason in its
# warnings) instead of holding up the switch forever; at the switch the
# marker is removed and the submission is queued again, so the ordinary
# scoring path retries it and, if it fails again, records the failure on the
# submission itself.


@dataclass(frozen=True)
class PublishOutcome:
    """What publishing a qrels version did: switched at once, or staged with rescorings started."""

    switched: bool
    rescoring: int = 0  # rescoring tasks sent for the pending version
    requeued: int = 0  # failures of the service queued again


def requeue_service_failures(split_id: int) -> int:
    """Queue the runs waiting for judgments, and give failures of ours another chance (the file's own failures stay)."""
    count = 0
    failed = Submission.objects.filter(
        Q(status=Submission.Status.WAITING)
        | Q(status=Submission.Status.FAILED, failure_kind=Submission.FailureKind.SERVICE),
        split_id=split_id, withdrawn_at__isnull=True, file_removed_at__isnull=True,
    )
    for submission in failed:
        if submission.reset_for_rescore():
            enqueue_after_commit(submission.pk)
            count += 1
    return count


def _drop_failure_markers(version_id: int) -> list[Result]:
    """Delete the failure markers on ``version_id``; returns them (they never outlive the pending state)."""
    markers = [
        r for r in Result.objects.filter(qrels_version_id=version_id, primary_score__isnull=True).defer("per_query")
        if is_failure_marker(r)
    ]
    if markers:
        Result.objects.filter(pk__in=[r.pk for r in markers]).delete()
    return markers


def bump_caches_after_commit(split: Split) -> None:
    """Once the switch (or a new score) is visible, make every cached page stale again.

    The switch's UPDATE already changes the leaderboard rows' cache key; this
    also moves the whole-page cache on, after commit so that a page rendered
    from the old version in between cannot be cached under the new key. This
    process renders the busiest pages itself (``pages_renew``): the web keeps
    serving the previous ones meanwhile instead of rendering them.
    """
    split_id = split.pk

    def renew() -> None:
        try:
            Split(pk=split_id).bump_cache_version(pages=False)
        finally:  # the pages move on even when that UPDATE fails (a fail-over): their rows are committed
            pages_renew(split_id)  # the busiest pages rendered here, then served to the crowd

    transaction.on_commit(renew, robust=True)


def split_qrels_publish(*, split: Split, version: QrelsVersion, small_change_reason: str = "", user=None,
                        override: str = SMALL_CHANGE_HOW) -> PublishOutcome:
    """Publish ``version`` of the split's judgments, the curator's way.

    With no scored submission on the split, the version becomes current at
    once. Otherwise it is staged as ``pending_qrels`` and every scored
    submission without a result on it is sent for rescoring (after commit,
    so a rolled-back import sends nothing); the leaderboard switches when
    the last one is stored (:func:`split_finish_rescoring`). Publishing the
    current version again cancels a pending one; publishing another version
    while one is pending replaces it. Failures of the service are queued
    again either way. On a hidden split, a version that changes fewer
    judgments than the split's minimum batch against the current one is
    refused before anything is written (``SmallJudgmentChange``), unless a
    curator's ``small_change_reason`` says why (``override`` names how the
    caller's surface takes it, for the refusal's message).
    """
    if version.split_id != split.pk:
        raise ValueError(f"{version} is not a version of {split}'s judgments.")
    with transaction.atomic():
        current_id, pending_id = split_lock(split.pk)
        qrels_batch_check(split=split, version=version, current_id=current_id,
                          small_change_reason=small_change_reason, user=user, override=override)
        requeued = requeue_service_failures(split.pk)
        if pending_id is not None and pending_id != version.pk:
            _drop_failure_markers(pending_id)  # that version will never be switched to
        if current_id == version.pk:
            Split.objects.filter(pk=split.pk).update(pending_qrels=None)
            bump_caches_after_commit(split)  # pages stop saying "rescoring in progress"
            outcome = PublishOutcome(switched=True, requeued=requeued)
        elif not rescoring_targets(split_id=split.pk).exists():
            Split.objects.filter(pk=split.pk).update(
                current_qrels=version, pending_qrels=None, cache_version=F("cache_version") + 1
            )
            bump_caches_after_commit(split)
            outcome = PublishOutcome(switched=True, requeued=requeued)
        else:
            Split.objects.filter(pk=split.pk).update(pending_qrels=version)
            bump_caches_after_commit(split)  # pages say "rescoring in progress" at once
            missing = list(rescoring_waiting(split_id=split.pk, version_id=version.pk).values_list("pk", flat=True))
            send_rescoring_after_commit(missing, version.pk, split_id=split.pk)
            # Nothing missing (back to a version everyone was scored on): switch now.
            switched = not missing and split_finish_rescoring(split=split)
            outcome = PublishOutcome(switched=switched, rescoring=len(missing), requeued=requeued)
    split.refresh_from_db(fields=["current_qrels", "pending_qrels", "cache_version"])
    logger.info("%s published on %s: %s", version, split, outcome)
    return outcome


def _board_changing(*, split_id: int, current_id: int | None, pending_id: int) -> None:
    """Tell the layers above that the board is about to leave its current judgments (a snapshot keeps it)."""
    versions = dict(QrelsVersion.objects.filter(pk__in=[current_id, pending_id]).values_list("pk", "version"))
    if current_id is None or current_id not in versions:
        return
    split = Split.objects.select_related("dataset").get(pk=split_id)
    board_changing.send(sender=Split, split=split, reason="qrels",
                        note=f"The board on qrels v{versions[current_id]}, as it stood until "
                             f"v{versions[pending_id]} was published and every entry rescored on it.")


def split_finish_rescoring(*, split: Split) -> bool:
    """Make the pending qrels current if every scored submission has a result on them; True if it did.

    Called after each stored rescoring and by the sweep; cheap when there is
    nothing to do. The check and the switch happen under the split's row
    lock, and the switch is one UPDATE of the split (current, pending and the
    cache version together): readers see either every row on the old
    version or every row on the new one. Submissions whose rescoring failed
    lose their marker and are queued again in the same transaction (the
    ordinary scoring path retries them and records a failure on the
    submission). The submissions' warnings follow their new results.
    """
    with transaction.atomic():
        current_id, pending_id = split_lock(split.pk)
        if pending_id is None or rescoring_waiting(split_id=split.pk, version_id=pending_id).exists():
            return False
        _board_changing(split_id=split.pk, current_id=current_id, pending_id=pending_id)
        Split.objects.filter(pk=split.pk).update(
            current_qrels_id=pending_id, pending_qrels=None, cache_version=F("cache_version") + 1
        )
        bump_caches_after_commit(split)
        failed = {m.submission_id: m for m in _drop_failure_markers(pending_id)}
        for submission in Submission.objects.filter(pk__in=list(failed), status=Submission.Status.SCORED):
            if submission.reset_for_rescore():
                enqueue_after_commit(submission.pk)
        # The Ladder on the new judgments: each participant's results again, in upload order.
        ladder_replay(split=split, version_id=pending_id)
        new_warnings = dict(
            Result.objects.filter(qrels_version_id=pending_id, submission__status=Submission.Status.SCORED)
            .values_list("submission_id", "warnings")
        )
        for submission_id, old in Submission.objects.filter(pk__in=list(new_warnings)).values_list("pk", "warnings"):
            if old != new_warnings[submission_id]:
                Submission.objects.filter(pk=submission_id).update(warnings=new_warnings[submission_id])
    split.refresh_from_db(fields=["current_qrels", "pending_qrels", "cache_version"])
    logger.info("%s now shows qrels version id %s (%s rescorings failed and were queued again)",
                split, pending_id, len(failed))
    return True


def submission_rescore_on(*, submission_id: int, qrels_version_id: int) -> str:
    """Score a scored submission on another qrels version of its split (the pending one); idempotent.

    Returns ``"stored"``, ``"failed"`` (a failure marker was stored),
    ``"exists"`` (a result is already there: a redelivered message) or
    ``"skipped"`` (the submission is gone, withdrawn or not scored — queued
    ones are scored on the pending version by their own scoring — or the
    version was superseded). The submission's status does not change, so
    the leaderboard keeps showing it on the current version meanwhile.
    Transient database errors propagate (the task retries them); any other
    error stores a failure marker so that the switch is not held up.
    """
    submission = Submission.objects.select_related("split__dataset").filter(pk=submission_id).first()
    if submission is None:
        return "skipped"
    split = submission.split
    if Result.objects.filter(submission_id=submission_id, qrels_version_id=qrels_version_id).exists():
        split_finish_rescoring(split=split)  # a redelivery after a crash between storing and finishing
        return "exists"
    if qrels_version_id not in (split.current_qrels_id, split.pending_qrels_id):
        return "skipped"
    if submission.status != Submission.Status.SCORED or submission.withdrawn_at is not None:
        return "skipped"
    version = QrelsVersion.objects.defer("qrels_gz").get(pk=qrels_version_id)
    attempt = _rescoring_attempt(submission_id, qrels_version_id)
    if attempt > settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
        # Earlier attempts never came back (the worker was killed: memory, hard time limit).
        logger.error("giving up rescoring submission %s on %s after %s attempts", submission_id, version, attempt - 1)
        computed = failure_marker(
            version, None, reason=f"the worker rescoring it on qrels v{version.version} stopped {attempt - 1} times"
        )
    else:
        try:
            computed = result_compute(dataset=split.dataset, version=version, run=read_stored_run(submission),
                                      source=stored_run_opener(submission),
                                      json_source=stored_json_opener(submission))
        except (OperationalError, InterfaceError):
            raise
        except ScoresDisagree as exc:  # the double entry failed: a failure marker, and the curators' flag
            logger.error("submission %s: %s", submission_id, exc)
            Submission.objects.filter(pk=submission_id).update(scores_disagree=exc.to_dict())
            computed = failure_marker(version, exc, task=split.dataset.task)
        except Exception as exc:
            logger.warning("submission %s cannot be rescored on %s", submission_id, version, exc_info=True)
            computed = failure_marker(version, exc, task=split.dataset.task)

    with transaction.atomic():
        current_id, pending_id = split_lock(split.pk)
        row = Submission.objects.filter(pk=submission_id).first()
        if row is None or row.status != Submission.Status.SCORED or qrels_version_id not in (current_id, pending_id):
            return "skipped"
        if Result.objects.filter(submission=row, qrels_version_id=qrels_version_id).exists():
            return "exists"
        if qrels_version_id == current_id:
            # The split switched while this ran (or the result was missing on the current version).
            if computed.failed:
                if row.reset_for_rescore():
                    enqueue_after_commit(row.pk)
                return "failed"
            stored = result_store(submission=row, computed=computed)
            ladder_judge(result=stored, submission=row, split=split)  # the switch's replay ran without it
            bump_caches_after_commit(split)
            return "stored"
        result_store(submission=row, computed=computed)
    split_finish_rescoring(split=split)
    return "failed" if computed.failed else "stored"


def _rescoring_attempt(submission_id: int, version_id: int) -> int:
    """Count an attempt at rescoring (submission, version); returns its number.

    A run that kills its worker (memory, the hard time limit) would otherwise
    be re-sent forever and hold up the switch. Kept in the cache (Redis in a
    deployment, shared by the workers) for a week: there is no row to keep it
    in, as the submission itself stays scored meanwhile.
    """
    key = rescoring_key("attempts", submission_id, version_id)
    week = 7 * 24 * 3600
    cache.add(key, 0, week)
    try:
        return cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, week)
        return 1


def split_rescoring_resend(*, split: Split, now=None) -> int:
    """Send again the rescorings still missing on the pending version if they seem lost; returns how many.

    "Lost" means: no result on the pending version was stored, and no batch
    was sent successfully, for ``LEXBOARD_QUEUED_RESEND_SECONDS`` (so a
    publication made while the broker was down is sent at the next sweep). While the workers make
    progress nothing is re-sent, so a long rescoring does not fill the queue
    with duplicates (which would be harmless, only wasteful).
    """
    now = now or timezone.now()
    split = Split.objects.get(pk=split.pk)
    pending_id = split.pending_qrels_id
    if pending_id is None:
        return 0
    window = settings.LEXBOARD_QUEUED_RESEND_SECONDS
    key = rescoring_sent_key(split.pk, pending_id)
    last_sent = cache.get(key)
    if last_sent is not None and now.timestamp() - last_sent < window:
        return 0
    recent = Result.objects.filter(
        qrels_version_id=pending_id, submission__split_id=split.pk, created_at__gte=now - timedelta(seconds=window)
    )
    if recent.exists():
        return 0
    missing = list(rescoring_waiting(split_id=split.pk, version_id=pending_id).values_list("pk", flat=True))
    return send_rescoring(missing, pending_id, split_id=split.pk, now=now)


def split_lock(split_id: int) -> tuple[int | None, int | None]:
    """Lock the split row; its (current, pending) qrels version ids.

    Every transaction that stores results or switches versions takes this
    lock first (then submission rows), so the switch and a store never
    interleave and the lock order is always the same.
    """
    return (
        Split.objects.select_for_update(no_key=True)
        .filter(pk=split_id)
        .values_list("current_qrels_id", "pending_qrels_id")
        .get()
    )

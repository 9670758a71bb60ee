"""Writes of the submissions side: upload, scoring, the life cycle and the sweep.

The database row is the record of the job and the broker only a doorbell:

* ``submission_create`` runs the cheap checks inside the request, saves the
  file and a queued row atomically, and rings the bell after commit. If the
  broker is down the upload is still accepted; the sweep rings again later.
* ``submission_score`` (called by the Celery task) claims the row with a
  conditional UPDATE, scores it with the metric core and stores the result and
  the new status in one transaction. A duplicated or redelivered message finds
  the row already claimed and does nothing.
* ``submissions_sweep`` (Celery beat) re-sends queued rows whose message was
  lost and requeues, or fails with a service error, rows whose worker went
  silent (its heartbeat is stale); it also finishes or re-sends rescorings.
* New judgments: ``split_qrels_publish`` stages a new qrels version when the
  split has scored submissions, ``submission_rescore_on`` (the
  ``rescore_submission`` task) stores each submission's result on it while
  the submission stays scored, and ``split_finish_rescoring`` switches the
  leaderboard in one UPDATE once all are there (details above those
  functions). Results are kept per qrels version: the old scores stay.

Quota: per user and split, ``Split.daily_limit`` submissions in any rolling
24 hours, ``Split.total_limit`` in total and ``Split.monthly_limit`` per calendar month (UTC). Every submission counts, including
files that failed because of their content and withdrawn ones (otherwise
"submit, look, withdraw" would make a hidden split an oracle), except failures
caused by the service (``failure_kind == "service"``), files refused by the
cheap checks (nothing is written for them) and curators' baselines.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from catalogue.models import Split
from catalogue.page_generation import page_generation_bump
from evaluation.errors import InputError, QrelsFormatError

from ..models import WAITING_MESSAGE, Submission
from .fusion import FusionFailed
from .inspection import problems_to_details, stored_run_refusal
from .ladder import ladder_judge
from .queue import enqueue_after_commit, send_rescoring_after_commit
from .rescoring import bump_caches_after_commit, split_finish_rescoring, split_lock
from .results import (
    ComputedResult,
    LazyRun,
    ScoresDisagree,
    failure_marker,
    input_error_message,
    read_stored_run_lazily,
    result_compute,
    result_store,
    stored_json_opener,
    stored_run_opener,
)

logger = logging.getLogger(__name__)


# --- scoring -----------------------------------------------------------------------------


def heartbeat_interval() -> float:
    """Seconds between two heartbeats of a live scoring attempt."""
    return max(1.0, min(5.0, settings.LEXBOARD_HEARTBEAT_STALE_SECONDS / 4))


class _Heartbeat(threading.Thread):
    """Tells the sweep, every few seconds, that the worker scoring a row is alive.

    A thread, not calls from the metric core, because parsing a large run can
    take longer than the staleness limit without any progress callback; if the
    process dies, so does the thread, and the heartbeat goes stale. It writes
    only while the row is still this attempt's (status and attempt number).
    """

    def __init__(self, submission_id: int, attempt: int):
        super().__init__(name=f"heartbeat-{submission_id}", daemon=True)
        self.submission_id = submission_id
        self.attempt = attempt
        self.progress = 0.0
        self.interval = heartbeat_interval()
        self._stopped = threading.Event()

    def run(self) -> None:
        failing = False
        try:
            while not self._stopped.wait(self.interval):
                try:
                    Submission.objects.filter(
                        pk=self.submission_id, status=Submission.Status.SCORING, attempts=self.attempt
                    ).update(heartbeat_at=timezone.now(), progress=round(self.progress, 4))
                except Exception:  # the database away or locked a moment: the next beat tries again
                    if not failing:
                        logger.warning("heartbeat of submission %s failed; trying again", self.submission_id,
                                       exc_info=True)
                    failing = True
                    connection.close()
                else:
                    failing = False
        finally:
            connection.close()

    def stop(self) -> None:
        self._stopped.set()


def _locked_attempt(submission_id: int, attempt: int) -> Submission | None:
    """The row, locked, if it is still in scoring by this attempt; else None (someone else has it)."""
    return (
        Submission.objects.select_for_update(no_key=True)
        .filter(pk=submission_id, status=Submission.Status.SCORING, attempts=attempt)
        .first()
    )


def _fail(submission_id: int, attempt: int, *, kind: str, message: str, details: list[dict] | None = None) -> None:
    with transaction.atomic():
        row = _locked_attempt(submission_id, attempt)
        if row is not None:
            row.mark_failed(kind=kind, message=message, details=details)


def _fail_disagreement(submission_id: int, attempt: int, exc: ScoresDisagree) -> None:
    """Two implementations disagree: fail as a service error (no quota used), flag it for the curators.

    Not retried: the same run on the same judgments gives the same numbers.
    The user's message names no query (on a hidden split that would be a
    per-query fact); the flag in the admin has the first differing query.
    """
    d = exc.disagreement
    logger.error("submission %s: scores disagree on qrels v%s: query %r, %s: core %r, %s %r", submission_id,
                 exc.version.version, d.qid, d.measure, d.core, exc.method, d.reference)
    with transaction.atomic():
        row = _locked_attempt(submission_id, attempt)
        if row is None:
            return
        row.scores_disagree = exc.to_dict()
        row.save(update_fields=["scores_disagree"])
        row.mark_failed(
            kind=Submission.FailureKind.SERVICE,
            message=("Our two independent computations of your scores disagree, so nothing was stored. This is "
                     "our fault and does not count against your quota; the curators have been told and will "
                     "rescore it."),
        )


def _retry_or_fail(submission_id: int, attempt: int, *, reason: str) -> None:
    """After our own error: queue again with a delay, or give up as a service failure."""
    with transaction.atomic():
        row = _locked_attempt(submission_id, attempt)
        if row is None:
            return
        if row.attempts < settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
            if row.requeue(message=f"attempt {row.attempts} failed on our side; trying again"):
                enqueue_after_commit(row.pk, countdown=min(300, 10 * 2 ** (row.attempts - 1)))
        else:
            row.mark_failed(
                kind=Submission.FailureKind.SERVICE,
                message=(
                    f"Scoring failed on our side after {row.attempts} attempts ({reason}). "
                    "This does not count against your quota; the curators have been told, "
                    "and you may resubmit the same file."
                ),
            )


def submission_score(submission_id: int, *, progress: Callable[[float], None] | None = None,
                     redelivered: bool = False) -> None:
    """Score one submission if it is queued: claim, evaluate, store the result and mark it scored.

    Safe to call twice or concurrently: only the caller whose claim succeeds
    scores, and the result is stored once per (submission, qrels version).
    While a new qrels version is pending, the run is scored on it too, so a
    submission scored during a rescoring never holds up the switch.

    ``redelivered``: the broker gave this message back because the worker that
    had it died mid-task (late acknowledgement). The row is then still in
    scoring; it is taken over once its heartbeat has stood still
    (:func:`_take_over_dead_attempt`), instead of waiting for the sweep.
    """
    submission = Submission.objects.select_related("split__dataset").filter(pk=submission_id).first()
    if submission is None:
        logger.warning("submission %s does not exist (deleted?); nothing to score", submission_id)
        return
    if not submission.claim() and not (redelivered and _take_over_dead_attempt(submission)):
        logger.info("submission %s is not queued (status %s); someone else has it", submission_id,
                    submission.status)
        if submission.status == Submission.Status.SCORED:
            # A redelivery: the worker that stored it may have died before moving the pages on.
            page_generation_bump()
        return
    attempt = submission.attempts
    # The worker's log names what it is doing: a log that ends here lost its process mid-task, on this submission.
    logger.info("submission %s: scoring, attempt %s", submission.pk, attempt)
    heartbeat = _Heartbeat(submission.pk, attempt)
    heartbeat.start()
    try:
        _score_claimed(submission, attempt, heartbeat, progress)
    except ScoresDisagree as exc:  # the double entry failed: ours, nothing stored, the curators look
        _fail_disagreement(submission.pk, attempt, exc)
    except FusionFailed as exc:  # a part of a fusion cannot be read: ours, not the user's
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE, message=exc.message)
    except QrelsFormatError:
        logger.exception("the qrels of %s cannot be read", submission.split)
        _fail(submission.pk, attempt, kind=Submission.FailureKind.SERVICE,
              message="The split's relevance judgments cannot be read. This is our fault and does not count "
                      "against your quota; the curators have been told.")
    except InputError as exc:
        _fail(
            submission.pk,
            attempt,
            kind=Submission.FailureKind.INPUT,
            message=input_error_message(exc, task=submission.split.dataset.task),
            details=problems_to_details(exc.problems),
        )
    except Exception as exc:  # our fault (or the time limit): retry, then give up without counting it
        logger.exception("scoring submission %s failed (attempt %s)", submission_id, attempt)
        _retry_or_fail(submission.pk, attempt, reason=type(exc).__name__)
    finally:
        heartbeat.stop()


def _take_over_dead_attempt(submission: Submission) -> bool:
    """Whether a redelivered message may score a row left in scoring, and if so the row is now this attempt's.

    A message comes back (``reject_on_worker_lost``, or Redis's visibility
    timeout, longer than the hard time limit) only when the process that had
    it is gone; but a duplicate sent by the sweep may have started a live
    attempt meanwhile. So: wait two heartbeat intervals; if neither the
    attempt nor its heartbeat moved, nobody is scoring it, and the
    conditional UPDATE takes the row (of two such messages, one wins).
    The two intervals count from the last heartbeat (:func:`_dead_attempt_wait`).
    Past ``LEXBOARD_MAX_SCORING_ATTEMPTS`` the sweep fails the row instead.
    """
    if submission.status != Submission.Status.SCORING:
        return False
    if submission.attempts >= settings.LEXBOARD_MAX_SCORING_ATTEMPTS:
        return False
    seen_attempt, seen_heartbeat = submission.attempts, submission.heartbeat_at
    time.sleep(_dead_attempt_wait(seen_heartbeat))
    if not submission.take_over(attempt=seen_attempt, heartbeat_at=seen_heartbeat):
        logger.info("submission %s redelivered, but attempt %s is alive or was taken over", submission.pk,
                    seen_attempt)
        return False
    logger.warning("submission %s: the worker of attempt %s died mid-task; attempt %s scores it from the "
                   "redelivered message", submission.pk, seen_attempt, submission.attempts)
    return True


def _dead_attempt_wait(heartbeat_at: Any) -> float:
    """Seconds a redelivered message watches a row's heartbeat before it may take the row over: until two heartbeat
    intervals and a second have passed since the last heartbeat it saw, not since the message came back (the worker
    notices its process died 1-4 s after the kill, and the attempt's last heartbeat was up to an interval older), and
    never less than one interval and a second, so that a live attempt beats at least once while it watches, whatever
    the two machines' clocks say."""
    interval = heartbeat_interval()
    whole = 2 * interval + 1
    if heartbeat_at is None:
        return whole
    age = (timezone.now() - heartbeat_at).total_seconds()
    return min(whole, max(interval + 1, whole - age))


def _score_claimed(submission: Submission, attempt: int, heartbeat: _Heartbeat,
                   progress: Callable[[float], None] | None) -> None:
    started = time.monotonic()
    split = (
        Split.objects.select_related("dataset", "current_qrels", "pending_qrels")
        # parsed once per version by _qrels_cached, not read every time
        .defer("current_qrels__qrels_gz", "pending_qrels__qrels_gz")
        .get(pk=submission.split_id)
    )
    dataset = split.dataset
    version = split.current_qrels
    if version is None:
        with transaction.atomic():
            row = _locked_attempt(submission.pk, attempt)
            if row is not None:
                row.mark_waiting(WAITING_MESSAGE)
        return

    def report(fraction: float, *_: Any) -> None:
        heartbeat.progress = float(fraction)
        if progress is not None:
            progress(float(fraction))

    pending = split.pending_qrels if split.pending_qrels_id not in (None, version.pk) else None
    share = 0.6 if pending is None else 0.3
    # A retrieval run is parsed only if the numpy path scores it (results.first_entry).
    run = read_stored_run_lazily(submission)
    refusal = None if isinstance(run, LazyRun) else stored_run_refusal(submission=submission, run=run)
    if refusal is not None:  # a file larger than the upload check's in-request budget
        _fail(submission.pk, attempt, kind=Submission.FailureKind.INPUT, message=refusal.message,
              details=refusal.details)
        return
    report(0.3)
    current = result_compute(
        dataset=dataset, version=version, run=run, source=stored_run_opener(submission),
        json_source=stored_json_opener(submission),
        progress=lambda f, *rest: report(0.3 + share * float(f)),
    )
    computed = [dataclasses.replace(current, duration_seconds=time.monotonic() - started)]
    if pending is not None:
        # Scored on the version waiting to be published as well, so that this
        # submission does not hold up the switch.
        try:
            computed.append(result_compute(
                dataset=dataset, version=pending, run=run, source=stored_run_opener(submission),
                json_source=stored_json_opener(submission),
                progress=lambda f, *rest: report(0.6 + 0.3 * float(f)),
            ))
        except (OperationalError, InterfaceError):
            raise
        except Exception as exc:
            logger.warning("submission %s cannot be scored on pending %s", submission.pk, pending, exc_info=True)
            computed.append(failure_marker(pending, exc, task=dataset.task))
    report(0.95)

    with transaction.atomic():
        current_id, pending_id = split_lock(split.pk)
        row = _locked_attempt(submission.pk, attempt)
        if row is None:
            logger.info("submission %s was taken from this worker while scoring; result dropped", submission.pk)
            return
        by_version: dict[int | None, ComputedResult] = {c.version_id: c for c in computed}
        for c in computed:
            if not c.failed or c.version_id == pending_id:  # a failure marker only for a version still pending
                stored = result_store(submission=row, computed=c)
                if c.version_id == current_id and not c.failed:
                    # Hidden split: released only as a significant improvement (a pending version's
                    # results are judged when it becomes current: ladder_replay).
                    ladder_judge(result=stored, submission=row, split=split)
        on_current = by_version.get(current_id)
        if on_current is None or on_current.failed:
            # New judgments were published while we scored: keep these results as history, score again.
            if row.requeue(message="new relevance judgments were published while scoring; scoring again"):
                enqueue_after_commit(row.pk)
        else:
            row.mark_scored(warnings=on_current.warnings)
            if pending_id is not None and pending_id not in by_version:
                # Published after this scoring started: the rescoring waits for this one too.
                send_rescoring_after_commit([row.pk], pending_id)
        # The rows' version now; the pages once committed, rendered in this process first (a bump
        # of the pages before the commit would have the web render the old rows meanwhile).
        split.bump_cache_version(pages=False)
        bump_caches_after_commit(split)
    if pending_id is not None:
        split_finish_rescoring(split=split)
    logger.info("submission %s scored in %.2fs: %s", submission.pk, time.monotonic() - started, current.scores)


def submission_score_now(submission_id: int) -> Submission:
    """Score synchronously, in this process (the demo loader's baselines; no worker needed), and return the row.

    Like :func:`submission_score`, it scores only a queued submission it claims: when a worker has claimed it
    first (its message was sent: ``submission_create(enqueue=True)``), it returns at once with the row still
    scoring. A caller that needs the scores on return creates the submission with ``enqueue=False``.
    """
    submission_score(submission_id)
    return Submission.objects.get(pk=submission_id)

"""Storage has a bound: a per-user quota of stored bytes, and files removed after a retention period.

* Every file a user's submissions still hold on disk counts against
  ``LEXBOARD_STORAGE_QUOTA_BYTES`` (2 GB by default; 0 = no quota). An upload
  that would go over it is refused in the request (``storage_refusal``, called
  by the upload's quota check), naming the usage and the submissions whose
  files take the most space.
* The files of withdrawn submissions and of submissions that failed because
  of the file (``failure_kind`` input) are removed by the sweep
  (``files_remove_expired``) ``LEXBOARD_FILE_RETENTION_DAYS`` after the
  withdrawal or the failure (30 by default; 0 = keep forever). The row, its
  results and its status history stay; ``file_removed_at`` says when. Files of
  service failures are kept: they may be scored again on new judgments.
* A submission whose file was removed cannot be scored again or resubmitted:
  ``file_removed_refusal`` is the message.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Max, Q, Sum
from django.template.defaultfilters import filesizeformat
from django.utils import timezone

from ..models import Submission

logger = logging.getLogger(__name__)


def user_stored_bytes(*, user) -> int:
    """The bytes the user's submissions hold on disk (files not removed yet)."""
    total = Submission.objects.filter(user=user, file_removed_at__isnull=True).aggregate(n=Sum("file_size"))["n"]
    return int(total or 0)


def storage_refusal(*, user, incoming_bytes: int) -> str | None:
    """None when ``incoming_bytes`` more fit in the user's storage quota; else the refusal, for a person."""
    quota = settings.LEXBOARD_STORAGE_QUOTA_BYTES
    if quota <= 0:
        return None
    used = user_stored_bytes(user=user)
    if used + incoming_bytes <= quota:
        return None
    largest = (
        Submission.objects.filter(user=user, file_removed_at__isnull=True, file_size__gt=0)
        .order_by("-file_size", "pk")
        .only("pk", "system_name", "file_size", "status", "withdrawn_at")[:3]
    )
    names = "; ".join(
        f"#{s.pk} {s.system_name} ({filesizeformat(s.file_size)}, {'withdrawn' if s.withdrawn_at else s.status})"
        for s in largest
    )
    days = settings.LEXBOARD_FILE_RETENTION_DAYS
    freeing = (
        f"The files of withdrawn submissions and of submissions that failed because of their file are removed "
        f"{days} days after the withdrawal or the failure, which frees their space."
        if days > 0 else "Ask the site's operators to remove files you no longer need."
    )
    return (
        f"Your submissions store {filesizeformat(used)} of your {filesizeformat(quota)} storage quota; "
        f"this file ({filesizeformat(incoming_bytes)}) would go over it. Your largest files: {names}. "
        f"Withdraw the submissions you no longer need. {freeing} Compressing the run with gzip also helps."
    )


def file_removed_refusal(submission: Submission) -> str | None:
    """None while the submission still has its file; else why it cannot be scored or resubmitted."""
    if submission.file_removed_at is None:
        return None
    when = timezone.localtime(submission.file_removed_at).date().isoformat()
    return (
        f"The file of submission #{submission.pk} was removed on {when}, "
        f"{settings.LEXBOARD_FILE_RETENTION_DAYS} days after it was withdrawn or failed (the site's retention "
        "period); it cannot be scored again. Upload the run as a new submission."
    )


def files_remove_expired(*, now=None) -> int:
    """Remove the files of withdrawn and input-failed submissions past the retention period; keep the rows.

    Run by the sweep. The row is marked first (a conditional UPDATE that a
    rescoring racing with it cannot pass, see ``Submission.reset_for_rescore``),
    then the file is deleted. Returns how many files were removed.
    """
    days = settings.LEXBOARD_FILE_RETENTION_DAYS
    if days <= 0:
        return 0
    now = now or timezone.now()
    before = now - timedelta(days=days)
    final = [Submission.Status.SCORED, Submission.Status.FAILED]
    input_failed = Q(status=Submission.Status.FAILED, failure_kind=Submission.FailureKind.INPUT)
    expired = (
        Submission.objects.filter(file_removed_at__isnull=True, status__in=final)
        .filter(Q(withdrawn_at__lt=before) | input_failed)  # the candidates, before their histories are read
        .annotate(last_failed=Max("events__at", filter=Q(events__status=Submission.Status.FAILED)))
        .filter(Q(withdrawn_at__lt=before) | (input_failed & Q(last_failed__lt=before)))
    )
    removed = 0
    for pk, name, json_name in expired.values_list("pk", "run_file", "json_file"):
        marked = Submission.objects.filter(pk=pk, file_removed_at__isnull=True, status__in=final).update(
            file_removed_at=now
        )
        if not marked:
            continue
        for stored in (name, json_name):  # the run, and the JSON it was converted from (the same storage)
            if not stored:
                continue
            try:
                Submission._meta.get_field("run_file").storage.delete(stored)
            except OSError:
                logger.warning("could not remove the file %s of submission %s", stored, pk, exc_info=True)
        removed += 1
    if removed:
        logger.info("removed the files of %s withdrawn or failed submissions (retention %s days)", removed, days)
    return removed

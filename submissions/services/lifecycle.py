"""A submission's life after upload: metadata, visibility, withdrawal, resubmission, rescoring on request.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from catalogue.models import Split

from ..errors import ActionRefused, UploadRefused
from ..models import Result, Submission
from ..selectors import rescoring_targets, rescoring_waiting
from .admission import submission_create
from .inspection import METADATA_FIELDS, check_provenance, clean_metadata
from .queue import enqueue_after_commit, send_rescoring_after_commit
from .rescoring import requeue_service_failures, split_lock
from .storage import file_removed_refusal

logger = logging.getLogger(__name__)

#: The fields :func:`check_provenance` reads.
PROVENANCE_FIELDS = frozenset({"training_data", "could_have_seen", "models_used"})


# --- metadata, visibility, withdrawal, resubmission -------------------------------------


def submission_update_metadata(*, submission: Submission, data: dict[str, Any]) -> Submission:
    """Change what the participant says about the system (not the file, not the scores).

    Provenance is metadata like the rest: changing it re-scores nothing. On a split that requires it, an edit may
    not change it into an incomplete one (an entry uploaded before the split asked keeps what it had).
    """
    values = clean_metadata(data)
    if "system_name" in values and not values["system_name"]:
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    changed = {name for name in PROVENANCE_FIELDS if name in values and values[name] != getattr(submission, name)}
    if changed and not submission.is_baseline:
        check_provenance(split=submission.split,
                         values={name: values.get(name, getattr(submission, name)) for name in PROVENANCE_FIELDS})
    for name, value in values.items():
        setattr(submission, name, value)
    submission.save(update_fields=[*values, "updated_at"])
    submission.split.bump_cache_version()
    return submission


def submission_set_visibility(*, submission: Submission, visibility: str) -> Submission:
    """Public, anonymous or private; the leaderboard follows at once."""
    if visibility not in Submission.Visibility.values:
        raise ActionRefused(f"Unknown visibility {visibility!r}; use one of {', '.join(Submission.Visibility.values)}.")
    Submission.objects.filter(pk=submission.pk).update(visibility=visibility, updated_at=timezone.now())
    submission.visibility = visibility
    submission.split.bump_cache_version()
    return submission


def submission_withdraw(*, submission: Submission) -> Submission:
    """Take a submission off the leaderboard for good; the file and scores stay for the record.

    A withdrawn submission still counts against the quota (see the module docstring).
    """
    updated = Submission.objects.filter(pk=submission.pk, withdrawn_at=None).update(
        withdrawn_at=timezone.now(), updated_at=timezone.now()
    )
    if not updated:
        raise ActionRefused("This submission is already withdrawn.")
    submission.refresh_from_db(fields=["withdrawn_at", "updated_at"])
    submission.split.bump_cache_version()
    return submission


def submission_resubmit(*, submission: Submission, upload: UploadedFile) -> Submission:
    """A corrected file as a new submission with the same metadata, linked to the old one."""
    if submission.withdrawn_at is not None:
        raise ActionRefused("This submission is withdrawn; make a new submission instead.")
    removed = file_removed_refusal(submission)
    if removed:
        raise ActionRefused(removed.replace("it cannot be scored again", "it cannot be resubmitted"))
    metadata = {name: getattr(submission, name) for name in METADATA_FIELDS}
    return submission_create(
        user=submission.user,
        split=submission.split,
        upload=upload,
        metadata=metadata,
        is_baseline=submission.is_baseline,
        replaces=submission,
    )


def submission_rescore(*, submission: Submission) -> bool:
    """Score one scored or failed submission again (a curator's action).

    Refused (``ActionRefused``) once the sweep removed its file.
    """
    submission.refresh_from_db(fields=["file_removed_at"])
    removed = file_removed_refusal(submission)
    if removed:
        raise ActionRefused(removed)
    with transaction.atomic():
        ok = submission.reset_for_rescore()
        if ok:
            enqueue_after_commit(submission.pk)
    return ok


def split_rescore(*, split: Split) -> int:
    """Score the split's submissions again on its judgments; returns how many were sent or queued.

    While a published version is pending (:func:`split_qrels_publish`), this
    re-sends the rescoring tasks still missing (a duplicate is harmless) and
    the leaderboard keeps its current numbers. Otherwise it queues again the
    scored submissions that have no result on the current version: they are
    off the leaderboard anyway (e.g. after ``qrels_version_publish`` switched
    without rescoring). Failures of the service get another chance too;
    failures caused by the file do not (the file has not changed). Old results
    stay in each submission's history, keyed by their qrels version.
    """
    with transaction.atomic():
        current_id, pending_id = split_lock(split.pk)
        count = requeue_service_failures(split.pk)
        if pending_id is not None:
            missing = list(rescoring_waiting(split_id=split.pk, version_id=pending_id).values_list("pk", flat=True))
            send_rescoring_after_commit(missing, pending_id, split_id=split.pk)
            count += len(missing)
        else:
            lacking = rescoring_targets(split_id=split.pk).exclude(
                Exists(Result.objects.filter(submission=OuterRef("pk"), qrels_version_id=current_id))
            )
            for submission in lacking:
                if submission.reset_for_rescore():
                    enqueue_after_commit(submission.pk)
                    count += 1
        split.bump_cache_version()
    logger.info("rescoring %s submissions of %s", count, split)
    return count

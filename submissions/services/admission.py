"""Admission: whether an upload is taken, then a queued row and the file, atomically.

The checks that need no file come first (the split takes runs, the rules of
the apps above, ``UPLOAD_RULES``, the account policy and the data terms, the
shared task's place, the quota, the storage), then :mod:`.inspection` reads
and checks the file, then content identical to an entry is refused, and
``submission_create`` stores the file and a queued submission; every refusal
comes before the upload costs a slot. Quota: per user and
split, ``Split.daily_limit`` submissions in any rolling 24 hours and
``Split.total_limit`` in total; every submission counts, including files that
failed because of their content and withdrawn ones (otherwise "submit, look,
withdraw" would make a hidden split an oracle), except failures caused by the
service, files refused by the cheap checks and curators' baselines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.policy import upload_refusal
from accounts.terms import terms_pending
from campaigns.models import Phase, Team
from campaigns.selectors import UploadPlace, phase_of
from catalogue.models import Split

from ..errors import AccountRefused, QuotaExceeded, SplitClosed, TermsRequired, UploadRefused
from ..models import SHOWN_VISIBILITIES, WAITING_MESSAGE, StatusEvent, Submission
from ..selectors import submission_quota
from .inspection import (
    InspectedUpload,
    check_provenance,
    check_queries,
    clean_metadata,
    json_run_as_trec,
    upload_inspect,
)
from .locks import lock_uploader
from .places import task_place
from .queue import submission_enqueue
from .storage import storage_refusal

logger = logging.getLogger(__name__)


def _identical_entries(*, user, split: Split, inspected: InspectedUpload, phase: Phase | None) -> Submission | None:
    """Refuse content identical to one of the user's entries on the split; return another user's public twin.

    Identical means the same bytes. After a shared task's close, a run of the task is refused to anyone,
    withdrawn or not, when it has the same bytes or the same ranking under another tag (``ranking_sha256``): sent
    again (its tag changed, by a member or by anyone holding the public file) it would be scored on all topics, and
    with its public-part value shown during the task give its private-part mean by difference (#37). (The rule
    compared bytes, tag included, and only the sender's own live entries: a new tag, another member, a withdrawn
    run, passed.) A participant's own run under another tag is otherwise a new entry, as before: its scores are
    its twin's, and on a hidden split the Ladder judges it a near-copy. ``phase``: the split's shared task
    (``phase_of``), None when it is none.
    """
    digest = Q(content_sha256=inspected.content_sha256) if inspected.content_sha256 else Q(sha256=inspected.sha256)
    twins = Submission.objects.filter(digest, split=split)
    if phase is not None and timezone.now() >= phase.closes_at:
        ranking = digest | Q(ranking_sha256=inspected.ranking_sha256) if inspected.ranking_sha256 else digest
        task_run = (Submission.objects.filter(ranking, split=split, entrant_team__isnull=False, after_task=False)
                    .order_by("created_at").first())
        if task_run is not None:
            raise UploadRefused(
                f"This run ranks the same documents as #{task_run.pk}, a run of the shared task \u201c{phase.title}\u201d "
                f"(whatever its tag): its score on the task's public topics was shown during the task, and on all "
                "topics it would give its score on the private topics, which only the private board shows. A run of "
                "the task is not scored again after the close; upload a new run.",
                [{"line": None, "reason": f"same ranking as submission {task_run.pk} of the shared task"}])
    same = twins.filter(withdrawn_at__isnull=True).exclude(  # a hidden entry is still its owner's: not live_q
        status=Submission.Status.FAILED, failure_kind=Submission.FailureKind.SERVICE
    )
    own = same.filter(user=user).order_by("created_at").first()
    if own is not None:
        raise UploadRefused(
            f"This file has the same content as your entry #{own.pk} \u201c{own.system_name}\u201d on {split} "
            f"(sent {own.created_at:%Y-%m-%d %H:%M} UTC): the same run is not scored twice. Open that entry, "
            "or upload the run you meant to send.",
            [{"line": None, "reason": f"identical to submission {own.pk}"}],
        )
    return (
        same.exclude(user=user)
        .filter(visibility__in=SHOWN_VISIBILITIES)
        .order_by("created_at")
        .first()
    )


def _check_account(*, user, split: Split, terms: bool = True) -> None:
    """The split's account policy (verified e-mail, curator approval), then the dataset's data terms: refused
    before anything is read or kept. ``terms``: False for a run the platform made from an image the participant
    sent when the terms were accepted (checked then, by ``upload_precheck``)."""
    if refusal := upload_refusal(user=user, split=split):
        raise AccountRefused(refusal, [{"line": None, "reason": refusal}])
    if terms and (pending := terms_pending(user=user, dataset=split.dataset)):
        raise TermsRequired(pending)


def _check_accepts(split: Split) -> None:
    if refusal := split.closed_reason:
        raise SplitClosed(refusal)


def _check_quota(*, user, split: Split) -> None:
    quota = submission_quota(user=user, split=split)
    if quota.allowed:
        return
    raise QuotaExceeded(quota.message, [{"line": None, "reason": quota.message}], retry_at=quota.next_allowed_at)

#: Rules of the apps above that refuse a person's upload to a split (keyword arguments ``user``, ``split``; a
#: message, or None), registered at start-up: the sandbox's software-only splits take no run file. Not asked
#: for a run the platform made itself (``submission_create(made_by_platform=True)``).
UPLOAD_RULES: list[Callable[..., str | None]] = []


def _check_rules(*, user, split: Split) -> None:
    for rule in UPLOAD_RULES:
        if refusal := rule(user=user, split=split):
            raise SplitClosed(refusal, [{"line": None, "reason": refusal}])


def upload_precheck(*, user, split: Split, run_file: bool = False) -> None:
    """The checks of ``submission_create`` that need no file: open split, account policy, shared task, quota.

    For uploads whose run is made later (an image the sandbox runs) or sent
    later (a presigned upload slot, ``run_file=True``: the rules on a person's
    run files, ``UPLOAD_RULES``, too): refused before the image is stored or
    the slot given, with the message the run would get.
    """
    split = Split.objects.select_related("dataset").get(pk=split.pk)
    _check_accepts(split)
    if run_file:
        _check_rules(user=user, split=split)
    _check_account(user=user, split=split)
    task_place(user=user, split=split)
    _check_quota(user=user, split=split)


# --- creating submissions -----------------------------------------------------------


def submission_create(
    *,
    user,
    split: Split,
    upload: UploadedFile,
    metadata: dict[str, Any],
    is_baseline: bool = False,
    enqueue: bool = True,
    replaces: Submission | None = None,
    coverage_exempt: bool = False,
    made_by_platform: bool = False,
) -> Submission:
    """Check an upload cheaply, then save it and a queued submission; score it after commit.

    Raises ``UploadRefused`` (nothing written) when the split is closed, the
    metadata is invalid, the quota is used up or the file is obviously wrong.
    ``made_by_platform``: the run was made by the platform (the sandbox ran the
    participant's image), so the rules on a person's uploads (``UPLOAD_RULES``)
    do not apply; every other check does.
    """
    split = Split.objects.select_related("dataset").get(pk=split.pk)
    _check_accepts(split)
    if not made_by_platform and not is_baseline:
        _check_rules(user=user, split=split)
    values = clean_metadata(metadata)
    if not values.get("system_name"):
        raise UploadRefused("Give the system a name.", [{"line": None, "reason": "system_name: required"}])
    if not made_by_platform and not is_baseline:  # an image's run: checked when the image was sent
        check_provenance(split=split, values=values)
    place = UploadPlace()  # a curator's baseline is no shared task's run
    if not is_baseline:
        _check_account(user=user, split=split, terms=not made_by_platform)
        place = task_place(user=user, split=split)  # shared tasks: dates and teams
        _check_quota(user=user, split=split)  # early, to spare a long check of a file that cannot be taken
        if refusal := storage_refusal(user=user, incoming_bytes=upload.size or 0):  # storage.py: bytes stored
            raise QuotaExceeded(refusal, [{"line": None, "reason": refusal}])
    converted = json_run_as_trec(upload=upload, dataset=split.dataset)
    json_upload = upload if converted is not upload else None  # kept: the double entry reads the JSON itself
    upload = converted
    # The ranking digest serves a shared task's rule alone (_identical_entries): only a task's runs are compared
    # with it, and only on the task's split (a run is one only when its split has a phase: task_place).
    phase = phase_of(split_id=split.pk)
    inspected = upload_inspect(upload=upload, dataset=split.dataset, ranking=phase is not None)
    check_queries(split=split, docs_per_topic=inspected.docs_per_topic, complete=inspected.complete,
                  coverage_exempt=coverage_exempt)
    duplicate_of = _identical_entries(user=user, split=split, inspected=inspected, phase=phase)

    original_name = (getattr(upload, "name", "") or "run.txt").replace("\\", "/").rsplit("/", 1)[-1][:300]
    submission = Submission(
        user=user,
        split=split,
        is_baseline=is_baseline,
        replaces=replaces,
        original_name=original_name,
        file_size=inspected.size,
        sha256=inspected.sha256,
        content_sha256=inspected.content_sha256,
        ranking_sha256=inspected.ranking_sha256,
        checked_in_worker=not inspected.complete,
        duplicate_of=duplicate_of,
        coverage_exempt=coverage_exempt,
        entrant_team=place.team,
        after_task=place.after_task,
        **values,
    )
    # The file first, outside the transaction: copying a large file must not hold
    # the database's write lock (SQLite has one for everyone). Removed again if
    # the row is not saved.
    submission.run_file.save(original_name, upload, save=False)
    stored_name = submission.run_file.name
    if json_upload is not None:
        json_name = (getattr(json_upload, "name", "") or "run.json").replace("\\", "/").rsplit("/", 1)[-1][:200]
        try:
            json_upload.seek(0)
            submission.json_file.save(json_name, json_upload, save=False)
        except BaseException:
            submission.run_file.storage.delete(stored_name)
            raise
    try:
        with transaction.atomic():
            lock_uploader(user)
            if place.team is not None:  # and one team's uploads: its quota is shared by its members (no key: FK checks pass)
                Team.objects.select_for_update(no_key=True).filter(pk=place.team.pk).first()
            if not is_baseline:
                _check_quota(user=user, split=split)
            waits = Split.objects.filter(pk=split.pk, current_qrels__isnull=True).exists()
            if waits:  # opened for runs before its judgments: scored when they are published (the sweep checks)
                submission.status = Submission.Status.WAITING
            submission.save()
            if waits:
                StatusEvent.objects.create(submission=submission, status=submission.status, message=WAITING_MESSAGE)
            elif enqueue:
                submission_id = submission.pk
                transaction.on_commit(lambda: submission_enqueue(submission_id=submission_id))
    except BaseException:
        submission.run_file.storage.delete(stored_name)
        if submission.json_file:
            submission.json_file.storage.delete(submission.json_file.name)
        raise
    logger.info("submission %s created for %s by user %s", submission.pk, split, user.pk)
    return submission

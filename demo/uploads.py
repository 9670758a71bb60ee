"""Baselines uploaded and scored through the real pipeline, one row per system (store-or-reuse).

Shared by the retrieval demo (:mod:`demo.services`) and the classification
demo (:mod:`demo.classification`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Profile
from catalogue.models import Split
from submissions.errors import UploadRefused
from submissions.models import Result, Submission
from submissions.services import submission_create, submission_score_now, submission_withdraw

BASELINE_USERNAME = "lexboard-baselines"


@dataclass
class BaselineOutcome:
    split: str
    key: str
    system_name: str
    submission_id: int
    action: str  # "new", "unchanged", "rescored"
    status: str
    scores: dict[str, float] = field(default_factory=dict)


def baseline_user():
    """The system account that owns the baselines; it cannot log in."""
    User = get_user_model()
    user, created = User.objects.get_or_create(
        username=BASELINE_USERNAME, defaults={"email": "", "first_name": "Lexboard", "last_name": "baselines"}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    Profile.objects.get_or_create(user=user, defaults={"display_name": "Lexboard baselines", "affiliation": "Lexboard"})
    return user


def baseline_store(
    *, split: Split, system_name: str, filename: str, content: bytes, metadata: dict, key: str, force: bool = False
) -> BaselineOutcome:
    """Upload and score one baseline file on ``split``, unless the same file is already scored.

    A changed file is uploaded as a new submission and the older one of the
    same system withdrawn (one row per system); an unchanged one is kept, and
    scored again only when forced, failed, or lacking a result on the current
    judgments. Used by the retrieval and the classification demo alike.
    """
    user = baseline_user()
    digest = hashlib.sha256(content).hexdigest()
    mine = Submission.objects.filter(
        split=split, user=user, is_baseline=True, system_name=system_name, withdrawn_at=None
    ).order_by("-created_at")
    submission = mine.filter(sha256=digest).first()
    action = "unchanged"
    if submission is None:
        try:
            submission = submission_create(
                user=user,
                split=split,
                upload=SimpleUploadedFile(filename, content, "text/plain"),
                metadata={
                    "system_name": system_name,
                    "team": "Lexboard",
                    "visibility": Submission.Visibility.PUBLIC,
                    "hardware": "one CPU core (at load time)",
                    **metadata,
                },
                is_baseline=True,
                enqueue=False,
            )
        except UploadRefused as exc:
            raise DemoLoadError(
                f"The {system_name} baseline for {split} was refused: {exc}. "
                "Open the split in the admin (does it accept submissions?) and run load_demo again."
            ) from exc
        action = "new"
        for old in mine.exclude(pk=submission.pk):
            submission_withdraw(submission=old)
    else:
        has_result = Result.objects.filter(submission=submission, qrels_version_id=split.current_qrels_id).exists()
        if force or submission.status == Submission.Status.FAILED or (
            submission.status == Submission.Status.SCORED and not has_result
        ):
            submission.reset_for_rescore()
            action = "rescored"
    if submission.status == Submission.Status.QUEUED or action != "unchanged":
        submission = submission_score_now(submission.pk)
    if submission.status == Submission.Status.FAILED:
        raise DemoLoadError(
            f"The {system_name} baseline on {split} (submission #{submission.pk}) "
            f"ended {submission.status}: {submission.error.get('message', 'no message')}. "
            "Run `python manage.py load_demo --force-baselines` once the cause is fixed."
        )
    result = submission.results.filter(qrels_version_id=split.current_qrels_id).first()
    return BaselineOutcome(
        split=split.name,
        key=key,
        system_name=system_name,
        submission_id=submission.pk,
        action=action,
        status=submission.status,
        scores=dict(result.scores) if result else {},
    )


class DemoLoadError(Exception):
    """The demo could not be loaded completely; the message says what failed and what to do."""

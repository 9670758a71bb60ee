"""Storage has a bound: a per-user quota of stored bytes, and the sweep removes old files of withdrawn and failed runs.

The records stay (row, results, status history, ``file_removed_at``); pages
say "file removed after N days"; rescoring and resubmitting such a
submission are refused with a message that says why and what to do.
"""

from __future__ import annotations

import itertools
import os
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from submissions import services
from submissions.errors import ActionRefused, QuotaExceeded
from submissions.models import Result, StatusEvent, Submission
from submissions.services.storage import files_remove_expired, storage_refusal, user_stored_bytes

from .conftest import GOOD_RUN, METADATA, upload

DAYS = 30


_serial = itertools.count(1)


def create(user, split, content=GOOD_RUN, **kwargs) -> Submission:
    """A submission of ``content`` made distinct by a comment line (the same content twice is refused at upload)."""
    tag = f"# copy {next(_serial)}\n"
    distinct = content + (tag.encode() if isinstance(content, bytes) else tag)
    return services.submission_create(user=user, split=split, upload=upload(distinct), metadata=dict(METADATA),
                                      enqueue=False, **kwargs)


def fail_by_file(submission: Submission, *, days_ago: float) -> None:
    assert submission.claim()
    assert submission.mark_failed(kind=Submission.FailureKind.INPUT, message="line 3: bad rank")
    StatusEvent.objects.filter(submission=submission, status="failed").update(
        at=timezone.now() - timedelta(days=days_ago)
    )


@pytest.fixture(autouse=True)
def _retention(settings):
    settings.LEXBOARD_FILE_RETENTION_DAYS = DAYS
    settings.LEXBOARD_STORAGE_QUOTA_BYTES = 2 * 1024**3


# --- the quota ----------------------------------------------------------------------------


def test_an_upload_over_the_storage_quota_is_refused_naming_the_usage_and_the_largest_files(
    settings, alice, bob, test_split
):
    test_split.daily_limit = 0
    test_split.save()
    first = create(alice, test_split)
    create(bob, test_split)  # other users' files do not count
    used = user_stored_bytes(user=alice)
    assert used == first.file_size  # the next copy has the same size: one byte short of room for it
    settings.LEXBOARD_STORAGE_QUOTA_BYTES = used + first.file_size - 1

    with pytest.raises(QuotaExceeded) as refused:
        create(alice, test_split)
    message = refused.value.message
    assert f"store {used}" in message and "storage quota" in message  # the usage, in the user's words
    assert f"#{first.pk} BM25" in message  # what to withdraw
    assert f"removed {DAYS} days after" in message
    assert refused.value.details[0]["reason"] == message
    assert Submission.objects.filter(user=alice).count() == 1  # nothing written
    assert storage_refusal(user=bob, incoming_bytes=1) is None  # bob stores his own file only

    # Files the sweep removed no longer count.
    Submission.objects.filter(pk=first.pk).update(file_removed_at=timezone.now())
    assert create(alice, test_split).pk


def test_the_upload_page_shows_the_storage_refusal(settings, client, alice, test_split):
    settings.LEXBOARD_STORAGE_QUOTA_BYTES = 10
    client.force_login(alice)
    url = reverse("participants:upload", args=[test_split.dataset.slug]) + f"?split={test_split.name}"
    response = client.post(url, {"run": upload(GOOD_RUN), **METADATA})
    assert response.status_code in (400, 429)
    assert "storage quota" in response.content.decode()
    assert not Submission.objects.exists()


# --- retention: the sweep removes the files, the records stay -----------------------------


def test_the_sweep_removes_files_of_old_withdrawn_and_input_failed_submissions_and_keeps_their_records(
    alice, test_split
):
    test_split.daily_limit = 0
    test_split.save()
    old_failed = create(alice, test_split)
    fail_by_file(old_failed, days_ago=DAYS + 1)
    recent_failed = create(alice, test_split)
    fail_by_file(recent_failed, days_ago=DAYS - 1)
    service_failed = create(alice, test_split)
    assert service_failed.claim()
    service_failed.mark_failed(kind=Submission.FailureKind.SERVICE, message="our fault")
    StatusEvent.objects.filter(submission=service_failed).update(at=timezone.now() - timedelta(days=DAYS + 5))
    withdrawn = create(alice, test_split)
    services.submission_score(withdrawn.pk)
    services.submission_withdraw(submission=withdrawn)
    Submission.objects.filter(pk=withdrawn.pk).update(withdrawn_at=timezone.now() - timedelta(days=DAYS + 1))
    queued_withdrawn = create(alice, test_split)  # not scored yet: never removed under a worker
    Submission.objects.filter(pk=queued_withdrawn.pk).update(withdrawn_at=timezone.now() - timedelta(days=DAYS + 1))
    kept = create(alice, test_split)
    services.submission_score(kept.pk)
    paths = {s.pk: Submission.objects.get(pk=s.pk).run_file.path for s in
             (old_failed, recent_failed, service_failed, withdrawn, queued_withdrawn, kept)}

    counts = services.submissions_sweep()
    assert counts["files_removed"] == 2
    for removed in (old_failed, withdrawn):
        row = Submission.objects.get(pk=removed.pk)
        assert row.file_removed_at is not None
        assert not os.path.exists(paths[removed.pk])
        assert row.sha256 and row.file_size  # the record stays
    assert Result.objects.filter(submission=withdrawn).count() == 1
    assert StatusEvent.objects.filter(submission=old_failed, status="failed").exists()
    for untouched in (recent_failed, service_failed, queued_withdrawn, kept):
        assert Submission.objects.get(pk=untouched.pk).file_removed_at is None
        assert os.path.exists(paths[untouched.pk])
    assert files_remove_expired() == 0  # once


def test_retention_zero_keeps_every_file(settings, alice, test_split):
    settings.LEXBOARD_FILE_RETENTION_DAYS = 0
    submission = create(alice, test_split)
    fail_by_file(submission, days_ago=1000)
    assert files_remove_expired() == 0


def test_a_submission_whose_file_was_removed_cannot_be_rescored_or_resubmitted_and_its_page_says_so(
    client, alice, test_split
):
    submission = create(alice, test_split)
    fail_by_file(submission, days_ago=DAYS + 1)
    assert files_remove_expired() == 1
    submission.refresh_from_db()

    with pytest.raises(ActionRefused) as refused:
        services.submission_rescore(submission=submission)
    assert "was removed on" in refused.value.message and "new submission" in refused.value.message
    assert not submission.reset_for_rescore()  # the model refuses too (a racing rescoring)
    with pytest.raises(ActionRefused) as refused:
        services.submission_resubmit(submission=submission, upload=upload(GOOD_RUN))
    assert "cannot be resubmitted" in refused.value.message
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.FAILED

    client.force_login(alice)
    page = client.get(reverse("participants:detail", args=[submission.pk])).content.decode()
    assert f"file removed after {DAYS} days" in page
    assert reverse("participants:resubmit", args=[submission.pk]) not in page
    mine = client.get(reverse("participants:mine")).content.decode()
    assert f"file removed after {DAYS} days" in mine

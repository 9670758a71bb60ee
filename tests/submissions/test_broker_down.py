"""The broker is a doorbell: when it is down, uploads are still accepted and the sweep rings later."""

from __future__ import annotations

import time

import pytest

from submissions import services
from submissions.models import Submission

from .conftest import GOOD_RUN, METADATA, upload

pytestmark = pytest.mark.django_db


def test_an_upload_is_accepted_and_kept_queued_when_the_broker_is_down(
    alice, tiny_dataset, broker_down, django_capture_on_commit_callbacks
):
    split = tiny_dataset.splits.get(name="test")
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        submission = services.submission_create(user=alice, split=split, upload=upload(GOOD_RUN), metadata=METADATA)
    assert time.monotonic() - started < 10  # the request does not hang on the broker
    submission.refresh_from_db()
    assert submission.status == Submission.Status.QUEUED
    assert submission.enqueued_at is None  # never sent: the sweep will send it


def test_the_upload_page_answers_normally_when_the_broker_is_down(client, alice, tiny_dataset, broker_down):
    from django.urls import reverse

    split = tiny_dataset.splits.get(name="test")
    client.force_login(alice)
    url = reverse("participants:upload", args=[split.dataset.slug]) + f"?split={split.name}"
    data = {"run": upload(GOOD_RUN), "system_name": "BM25", "family": "lexical", "visibility": "public"}
    # The test client runs on_commit callbacks only with a real commit; send by hand what commit would send.
    response = client.post(url, data)
    assert response.status_code == 302
    submission = Submission.objects.get()
    assert services.submission_enqueue(submission_id=submission.pk) is False
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.QUEUED

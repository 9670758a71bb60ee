"""Private first: uploads that do not choose go private (and say so); an entry shows its owner's test tries."""

from __future__ import annotations

import io
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from submissions.models import Submission
from submissions.services import submission_create

from .conftest import GOOD_RUN, METADATA, upload

pytestmark = pytest.mark.django_db


def test_the_upload_form_asks_and_defaults_to_private(client, alice, test_split):
    client.force_login(alice)
    html = client.get(reverse("participants:upload", args=[test_split.dataset.slug]) + "?split=test").content.decode()
    assert "On the public leaderboard?" in html
    private = re.search(r'<input[^>]*value="private"[^>]*>', html).group(0)
    assert "checked" in private and html.count("checked") == 1


def test_an_api_upload_without_visibility_is_private_and_the_response_says_so(alice, test_split):
    _, secret = ApiToken.issue(user=alice, name="t")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    data = {"dataset": test_split.dataset.slug, "split": "test", "system_name": "BM25",
            "run_file": io.BytesIO(GOOD_RUN.encode())}
    data["run_file"].name = "run.txt"
    body = api.post(reverse("api:submissions"), data, format="multipart").json()
    assert body["visibility"] == "private" and "private by default" in body["visibility_note"]
    assert Submission.objects.get(pk=body["id"]).visibility == Submission.Visibility.PRIVATE

    data["run_file"] = io.BytesIO((GOOD_RUN + "# another run\n").encode())  # the same content twice is refused
    data["run_file"].name = "run.txt"
    body = api.post(reverse("api:submissions"), {**data, "visibility": "public"}, format="multipart").json()
    assert body["visibility"] == "public" and "visibility_note" not in body


def test_an_entry_shows_how_many_test_submissions_its_owner_had_made(client, alice, test_split):
    made = [
        submission_create(user=alice, split=test_split, upload=upload(GOOD_RUN + f"# run {i}\n"), metadata=METADATA,
                          enqueue=False)
        for i in range(3)
    ]
    assert "the owner's first submission to this test split" in client.get(made[0].get_absolute_url()).content.decode()
    assert "submission 3 of its owner to this test split" in client.get(made[2].get_absolute_url()).content.decode()

"""Who reaches what through the API: anonymous, the owner, another participant, staff.

Private, withdrawn and curator-hidden submissions answer 404 to everyone but
their owner and staff — the same 404 as an id that does not exist.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from submissions.services import submission_create, submission_score_now

from .conftest import PERFECT, run_bytes

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "owner", "other", "staff")


@pytest.fixture
def clients(alice, bob, staff):
    out = {"anonymous": APIClient()}
    for role, user in (("owner", alice), ("other", bob), ("staff", staff)):
        out[role] = APIClient()
        out[role].force_authenticate(user)
    return out


def make(alice, tiny_dataset, *, visibility="public", **changes):
    split = tiny_dataset.splits.get(name="test")
    submission = submission_create(
        user=alice, split=split, upload=SimpleUploadedFile("run.txt", run_bytes(PERFECT)),
        metadata={"system_name": f"sys {visibility}", "visibility": visibility}, enqueue=False,
    )
    submission = submission_score_now(submission.pk)
    if changes:
        type(submission).objects.filter(pk=submission.pk).update(**changes)
    return submission


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("public", {"anonymous": 200, "owner": 200, "other": 200, "staff": 200}),
        ("anonymous", {"anonymous": 200, "owner": 200, "other": 200, "staff": 200}),
        ("private", {"anonymous": 404, "owner": 200, "other": 404, "staff": 200}),
        ("withdrawn", {"anonymous": 404, "owner": 200, "other": 404, "staff": 200}),
        ("hidden", {"anonymous": 404, "owner": 200, "other": 404, "staff": 200}),
    ],
)
def test_submission_detail_access(clients, alice, tiny_dataset, kind, expected):
    if kind in ("public", "anonymous", "private"):
        submission = make(alice, tiny_dataset, visibility=kind)
    elif kind == "withdrawn":
        submission = make(alice, tiny_dataset, withdrawn_at=timezone.now())
    else:
        submission = make(alice, tiny_dataset, hidden_by_curator=True)
    url = reverse("api:submission", args=[submission.pk])
    missing = reverse("api:submission", args=[submission.pk + 999])
    for role in ROLES:
        response = clients[role].get(url)
        assert response.status_code == expected[role], (kind, role)
        if response.status_code == 404:
            assert response.json() == clients[role].get(missing).json()
        else:
            assert "user" not in response.json() and "alice" not in response.content.decode()


def test_private_entries_reach_only_their_owners_leaderboard(clients, alice, tiny_dataset):
    private = make(alice, tiny_dataset, visibility="private")
    url = reverse("api:leaderboard", args=["tiny"])
    for role in ROLES:
        ids = [e["submission_id"] for e in clients[role].get(url).json()["entries"]]
        assert (private.pk in ids) is (role == "owner"), role


def test_listing_and_uploading_need_an_account(clients, alice, tiny_dataset):
    make(alice, tiny_dataset)
    list_url = reverse("api:submissions")
    assert clients["anonymous"].get(list_url).status_code == 401
    assert clients["owner"].get(list_url).json()["count"] == 1
    assert clients["other"].get(list_url).json()["count"] == 0
    assert clients["staff"].get(list_url).json()["count"] == 0  # "mine" means mine, for staff too
    upload = {"dataset": "tiny", "system_name": "x", "run_file": SimpleUploadedFile("r.txt", run_bytes(PERFECT))}
    assert clients["anonymous"].post(list_url, upload, format="multipart").status_code == 401


def test_reading_datasets_and_leaderboards_needs_nothing(clients, tiny_dataset):
    for role in ROLES:
        assert clients[role].get(reverse("api:datasets")).status_code == 200
        assert clients[role].get(reverse("api:leaderboard", args=["tiny"])).status_code == 200

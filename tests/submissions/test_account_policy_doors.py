"""The account policy at every upload door: web form, API, fusion (accounts.policy.upload_refusal).

Free accounts made the per-account quota no limit (issue 12): a hidden split
takes uploads from verified e-mail addresses only, by default. The refusal
comes before the file is read or kept and before a slot is used, and says
what to do.
"""

from __future__ import annotations

import pytest
from allauth.account.models import EmailAddress
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from submissions.models import Submission
from submissions.services import fusion_create, submission_create
from submissions.services.fusion import FusionRefused

from .conftest import GOOD_RUN, METADATA, good_run, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def mallory(django_user_model):
    """A new account whose address was never verified (the sign-up sent a link nobody clicked)."""
    user = django_user_model.objects.create_user("mallory", "mallory@example.org", "correct horse battery staple")
    EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=False)
    return user


def test_the_upload_page_says_it_before_the_form(client, mallory, test_split):
    client.force_login(mallory)
    page = client.get(reverse("participants:upload", args=["tiny"]) + "?split=test").content.decode()
    assert 'id="account-refusal"' in page
    assert "Verify your e-mail address before uploading" in page and "mallory@example.org" in page
    assert 'type="file"' not in page  # no form to fill in for nothing


def test_the_web_form_refuses_and_keeps_nothing(client, mallory, test_split):
    client.force_login(mallory)
    url = reverse("participants:upload", args=["tiny"]) + "?split=test"
    response = client.post(url, {"run": upload(GOOD_RUN), **METADATA})
    assert response.status_code == 400
    assert "Verify your e-mail address before uploading" in response.content.decode()
    assert not Submission.objects.exists()


def test_the_api_answers_403_with_the_fix(mallory, test_split):
    _, key = ApiToken.issue(user=mallory, name="attack")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = api.post("/api/v1/submissions/", {"dataset": "tiny", "run_file": upload(GOOD_RUN), **METADATA},
                        format="multipart")
    assert response.status_code == 403, response.content
    assert "Verify your e-mail address" in response.json()["error"]["message"]
    assert not Submission.objects.exists()


def test_the_public_split_takes_the_same_account(mallory, dev_split):
    submission = submission_create(user=mallory, split=dev_split, upload=upload(GOOD_RUN), metadata=METADATA,
                                   enqueue=False)
    assert submission.status == Submission.Status.QUEUED


def test_a_verified_address_opens_the_hidden_split(mallory, test_split):
    EmailAddress.objects.filter(user=mallory).update(verified=True)
    submission_create(user=mallory, split=test_split, upload=upload(GOOD_RUN), metadata=METADATA, enqueue=False)


def test_a_fusion_is_refused_too(mallory, alice, test_split):
    parts = [
        submission_create(user=alice, split=test_split, upload=upload(good_run(n)), metadata=METADATA, enqueue=False)
        for n in (1, 2)
    ]
    Submission.objects.filter(pk__in=[p.pk for p in parts]).update(visibility=Submission.Visibility.PUBLIC)
    with pytest.raises(FusionRefused, match="Verify your e-mail address"):
        fusion_create(user=mallory, parts=[Submission.objects.get(pk=p.pk) for p in parts])

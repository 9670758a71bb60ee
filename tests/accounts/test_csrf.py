"""Every account form refuses a POST without its CSRF token."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def csrf_client():
    return Client(enforce_csrf_checks=True)


def test_it_refuses_signup_and_login_without_csrf(csrf_client, alice):
    assert csrf_client.post(reverse("account_signup"), {"username": "x"}).status_code == 403
    data = {"login": "alice", "password": "correct horse battery staple"}
    assert csrf_client.post(reverse("account_login"), data).status_code == 403
    assert csrf_client.post(reverse("account_reset_password"), {"email": "alice@example.org"}).status_code == 403


def test_it_refuses_profile_and_token_actions_without_csrf(csrf_client, alice):
    token, _ = ApiToken.issue(user=alice)
    csrf_client.force_login(alice)
    for url, data in (
        (reverse("accounts:profile"), {"display_name": "x"}),
        (reverse("accounts:token_create"), {"name": "x"}),
        (reverse("accounts:token_revoke", args=[token.pk]), {}),
        (reverse("account_logout"), {}),
        (reverse("account_email"), {"email": "x@example.org", "action_add": ""}),
        (reverse("account_change_password"), {"oldpassword": "x", "password1": "y", "password2": "y"}),
    ):
        assert csrf_client.post(url, data).status_code == 403, url
    token.refresh_from_db()
    assert token.revoked_at is None
    assert ApiToken.objects.filter(user=alice).count() == 1

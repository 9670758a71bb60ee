"""The profile page: display name and affiliation, API tokens created (key shown once) and revoked."""

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken, Profile

pytestmark = pytest.mark.django_db


def test_it_edits_display_name_and_affiliation(client, alice):
    client.force_login(alice)
    response = client.post(reverse("accounts:profile"), {"display_name": "Alice A.", "affiliation": "KU Leuven"})
    assert response.status_code == 302
    profile = Profile.objects.get(user=alice)
    assert (profile.display_name, profile.affiliation) == ("Alice A.", "KU Leuven")


def test_it_asks_anonymous_visitors_to_log_in(client):
    response = client.get(reverse("accounts:profile"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login") + "?next=")


def test_it_shows_a_new_key_once_and_stores_only_its_hash(client, alice):
    client.force_login(alice)
    response = client.post(reverse("accounts:token_create"), {"name": "laptop"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    key = response.context["new_key"]
    assert key.startswith("lxb_") and key in response.content.decode()
    token = ApiToken.objects.get(user=alice)
    assert token.name == "laptop"
    assert token.key_hash == ApiToken.hash_key(key) and key not in token.key_hash

    page = client.get(reverse("accounts:profile")).content.decode()
    assert key not in page
    assert token.prefix in page and "laptop" in page and "never" in page


def test_a_revoked_token_no_longer_authenticates(client, alice):
    token, key = ApiToken.issue(user=alice, name="ci")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(reverse("api:submissions"), {"mine": 1}).status_code == 200

    client.force_login(alice)
    response = client.post(reverse("accounts:token_revoke", args=[token.pk]))
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None

    response = api.get(reverse("api:submissions"), {"mine": 1})
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]
    # (a bare "ci" could be part of a random CSRF token on the page)
    assert "<td>ci</td>" not in client.get(reverse("accounts:profile")).content.decode()


def test_it_does_not_revoke_another_users_token(client, alice, bob):
    token, _ = ApiToken.issue(user=bob)
    client.force_login(alice)
    assert client.post(reverse("accounts:token_revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_it_refuses_token_actions_by_get(client, alice):
    token, _ = ApiToken.issue(user=alice)
    client.force_login(alice)
    assert client.get(reverse("accounts:token_create")).status_code == 405
    assert client.get(reverse("accounts:token_revoke", args=[token.pk])).status_code == 405


def test_the_command_prints_a_working_key(alice, capsys):
    call_command("create_api_token", "alice", "--name", "script")
    out, err = capsys.readouterr()
    key = out.strip()
    assert key.startswith("lxb_") and "\n" not in key
    assert "shown only once" in err
    token = ApiToken.authenticate(key)
    assert token is not None and token.user == alice and token.name == "script"


def test_the_command_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user called 'nobody'"):
        call_command("create_api_token", "nobody")

"""Sign-up, log-in and log-out."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from submissions.models import Profile

pytestmark = pytest.mark.django_db

PASSWORD = "a long and unusual passphrase 42"


def signup_data(**overrides):
    data = {
        "username": "carol",
        "email": "carol@example.org",
        "password1": PASSWORD,
        "password2": PASSWORD,
        "display_name": "Carol D.",
        "affiliation": "UCLouvain",
    }
    data.update(overrides)
    return data


def test_it_creates_user_and_profile_on_signup_and_logs_in(client):
    response = client.post(reverse("accounts:signup"), signup_data())
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:profile")
    user = get_user_model().objects.get(username="carol")
    assert user.email == "carol@example.org"
    profile = Profile.objects.get(user=user)
    assert (profile.display_name, profile.affiliation) == ("Carol D.", "UCLouvain")
    assert client.get(reverse("accounts:profile")).status_code == 200


def test_it_refuses_a_weak_password_with_the_validators_message(client):
    response = client.post(reverse("accounts:signup"), signup_data(password1="password", password2="password"))
    assert response.status_code == 200
    assert "too common" in response.content.decode()
    assert not get_user_model().objects.filter(username="carol").exists()
    assert not Profile.objects.exists()


def test_it_refuses_an_email_already_used(client, alice):
    response = client.post(reverse("accounts:signup"), signup_data(email="ALICE@example.org"))
    assert response.status_code == 200
    assert "exists already" in response.content.decode()


def test_it_renders_the_signup_and_login_pages(client):
    assert client.get(reverse("accounts:signup")).status_code == 200
    page = client.get(reverse("accounts:login"))
    assert page.status_code == 200
    assert reverse("accounts:password_reset") in page.content.decode()


def test_it_logs_in_and_out(client, alice):
    response = client.post(
        reverse("accounts:login"), {"username": "alice", "password": "correct horse battery staple"}
    )
    assert response.status_code == 302
    assert client.get(reverse("accounts:profile")).status_code == 200

    response = client.post(reverse("accounts:logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:home")
    response = client.get(reverse("accounts:profile"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))


def test_it_follows_next_after_login(client, alice):
    response = client.post(
        reverse("accounts:login") + "?next=/accounts/profile/",
        {"username": "alice", "password": "correct horse battery staple", "next": "/accounts/profile/"},
    )
    assert response["Location"] == "/accounts/profile/"


def test_it_does_not_log_out_on_get(client, alice):
    client.force_login(alice)
    assert client.get(reverse("accounts:logout")).status_code == 405
    assert client.get(reverse("accounts:profile")).status_code == 200


def test_it_shows_a_wrong_password_as_a_form_error(client, alice):
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()

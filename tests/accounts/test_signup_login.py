"""Sign-up (with the verification mail), log-in by username or e-mail, log-out: django-allauth's flows."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse

from accounts.models import Profile

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
    response = client.post(reverse("account_signup"), signup_data())
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:profile")
    user = get_user_model().objects.get(username="carol")
    assert user.email == "carol@example.org"
    profile = Profile.objects.get(user=user)
    assert (profile.display_name, profile.affiliation) == ("Carol D.", "UCLouvain")
    page = client.get(reverse("accounts:profile"))
    assert page.status_code == 200
    assert "not verified yet" in page.content.decode()


def test_it_mails_a_verification_link_that_verifies_the_address(client):
    client.post(reverse("account_signup"), signup_data())
    address = EmailAddress.objects.get(email="carol@example.org")
    assert not address.verified
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["carol@example.org"]
    link = re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail.outbox[0].body).group(1)
    # Opening the link shows a button; only the POST verifies (mail scanners follow links).
    assert client.get(link).status_code == 200
    address.refresh_from_db()
    assert not address.verified
    client.post(link)
    address.refresh_from_db()
    assert address.verified


def test_it_refuses_a_weak_password_with_the_validators_message(client):
    response = client.post(reverse("account_signup"), signup_data(password1="password", password2="password"))
    assert response.status_code == 200
    assert "too common" in response.content.decode()
    assert not get_user_model().objects.filter(username="carol").exists()
    assert not Profile.objects.exists()


def test_it_refuses_an_email_already_used(client, alice):
    response = client.post(reverse("account_signup"), signup_data(email="ALICE@example.org"))
    assert response.status_code == 200
    assert "already registered" in response.content.decode()
    assert not get_user_model().objects.filter(username="carol").exists()


def test_it_refuses_another_spelling_of_a_gmail_address_already_used(client):
    client.post(reverse("account_signup"), signup_data(email="Carol.Dupont+lexboard@googlemail.com"))
    assert EmailAddress.objects.filter(email="caroldupont@gmail.com").exists()
    client.logout()
    response = client.post(reverse("account_signup"), signup_data(username="carol2", email="c.a.roldupont@gmail.com"))
    assert response.status_code == 200
    assert "already registered" in response.content.decode()


def test_it_renders_the_signup_and_login_pages_in_the_site_layout(client):
    signup = client.get(reverse("account_signup"))
    assert signup.status_code == 200
    page = client.get(reverse("account_login"))
    assert page.status_code == 200
    text = page.content.decode()
    assert reverse("account_reset_password") in text
    assert 'class="site-nav"' in text and "lexboard.css" in text
    assert text.count("<h1") == 1


@pytest.mark.parametrize("login", ["alice", "alice@example.org"])
def test_it_logs_in_by_username_or_email_and_out(client, alice, login):
    response = client.post(reverse("account_login"), {"login": login, "password": "correct horse battery staple"})
    assert response.status_code == 302
    assert client.get(reverse("accounts:profile")).status_code == 200

    response = client.post(reverse("account_logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("leaderboard:home")
    response = client.get(reverse("accounts:profile"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_it_follows_next_after_login_but_not_to_another_site(client, alice):
    data = {"login": "alice", "password": "correct horse battery staple"}
    response = client.post(reverse("account_login"), {**data, "next": "/accounts/profile/"})
    assert response["Location"] == "/accounts/profile/"
    client.logout()
    response = client.post(reverse("account_login"), {**data, "next": "https://evil.example/"})
    assert response["Location"] == reverse("leaderboard:home")


def test_it_does_not_log_out_on_get(client, alice):
    client.force_login(alice)
    assert client.get(reverse("account_logout")).status_code == 200  # a page with the log-out button
    assert client.get(reverse("accounts:profile")).status_code == 200


def test_it_shows_a_wrong_password_as_a_form_error(client, alice):
    response = client.post(reverse("account_login"), {"login": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "you specified are not correct" in response.content.decode()


def test_the_admin_login_goes_through_the_accounts_login(client, staff):
    response = client.get(reverse("admin:login"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))
    response = client.post(
        reverse("account_login") + "?next=/admin/", {"login": "curator", "password": "correct horse battery staple",
                                                     "next": "/admin/"}
    )
    assert response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200

"""Password reset by e-mail (allauth's flow): the message is sent and its link lets the user choose a new password."""

import re

import pytest
from django.core import mail
from django.urls import reverse

pytestmark = pytest.mark.django_db

NEW = "another quite long passphrase 7"


def _reset_link(message) -> str:
    return re.search(r"https?://[^/\s]+(/accounts/password/reset/key/\S+/)", message.body).group(1)


def test_it_mails_a_working_reset_link(client, alice):
    response = client.post(reverse("account_reset_password"), {"email": "alice@example.org"})
    assert response.status_code == 302
    assert response["Location"] == reverse("account_reset_password_done")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"]
    assert message.subject.startswith("[Lexboard]")
    link = _reset_link(message)

    # allauth redirects the key URL to one without the key, kept in the session.
    response = client.get(link, follow=True)
    assert response.status_code == 200
    form_url = response.redirect_chain[-1][0]
    response = client.post(form_url, {"password1": NEW, "password2": NEW})
    assert response.status_code == 302
    assert response["Location"] == reverse("account_reset_password_from_key_done")
    alice.refresh_from_db()
    assert alice.check_password(NEW)
    assert client.get(reverse("account_reset_password_from_key_done")).status_code == 200


def test_it_refuses_a_weak_new_password(client, alice):
    client.post(reverse("account_reset_password"), {"email": "alice@example.org"})
    response = client.get(_reset_link(mail.outbox[0]), follow=True)
    response = client.post(response.redirect_chain[-1][0], {"password1": "password", "password2": "password"})
    assert response.status_code == 200
    assert "too common" in response.content.decode()
    alice.refresh_from_db()
    assert alice.check_password("correct horse battery staple")


def test_it_says_the_same_for_an_unknown_address_and_mails_nobody(client, alice):
    response = client.post(reverse("account_reset_password"), {"email": "nobody@example.org"})
    assert response.status_code == 302
    assert response["Location"] == reverse("account_reset_password_done")
    assert mail.outbox == []


def test_a_reset_link_works_only_once(client, alice):
    client.post(reverse("account_reset_password"), {"email": "alice@example.org"})
    link = _reset_link(mail.outbox[0])
    response = client.get(link, follow=True)
    client.post(response.redirect_chain[-1][0], {"password1": NEW, "password2": NEW})
    other = client.__class__()
    response = other.get(link, follow=True)
    assert "invalid" in response.content.decode().lower()
    assert b'name="password1"' not in response.content


def test_it_limits_reset_requests_per_address_but_not_the_owner_elsewhere(client, alice, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "reset_password": "2/h/ip,20/h/key"}
    for _ in range(2):
        response = client.post(reverse("account_reset_password"), {"email": "alice@example.org"},
                               REMOTE_ADDR="10.6.6.6")
        assert response.status_code == 302
    response = client.post(reverse("account_reset_password"), {"email": "alice@example.org"}, REMOTE_ADDR="10.6.6.6")
    assert response.status_code == 429  # said, not silently dropped
    assert len(mail.outbox) == 2
    # The owner, from their own address, still gets their mail.
    response = client.post(reverse("account_reset_password"), {"email": "alice@example.org"}, REMOTE_ADDR="10.1.1.1")
    assert response.status_code == 302
    assert len(mail.outbox) == 3

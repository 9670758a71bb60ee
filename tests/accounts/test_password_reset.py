"""Password reset by e-mail: the message is sent and its link lets the user choose a new password."""

import re

import pytest
from django.core import mail
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_it_mails_a_working_reset_link(client, alice):
    response = client.post(reverse("accounts:password_reset"), {"email": "alice@example.org"})
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:password_reset_done")
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["alice@example.org"]
    assert "new password" in message.subject
    assert message.alternatives  # an HTML part beside the text
    link = re.search(r"https?://[^/\s]+(/accounts/password/reset/\S+/)", message.body).group(1)

    # Django redirects the token URL to one without the token, kept in the session.
    response = client.get(link, follow=True)
    assert response.status_code == 200
    assert response.context["validlink"]
    form_url = response.redirect_chain[-1][0]
    new = "another quite long passphrase 7"
    response = client.post(form_url, {"new_password1": new, "new_password2": new})
    assert response.status_code == 302
    assert response["Location"] == reverse("accounts:password_reset_complete")
    alice.refresh_from_db()
    assert alice.check_password(new)
    assert client.get(reverse("accounts:password_reset_complete")).status_code == 200


def test_it_says_the_same_for_an_unknown_address(client, alice):
    response = client.post(reverse("accounts:password_reset"), {"email": "nobody@example.org"})
    assert response.status_code == 302
    assert mail.outbox == []


def test_a_reset_link_works_only_once(client, alice):
    client.post(reverse("accounts:password_reset"), {"email": "alice@example.org"})
    link = re.search(r"(/accounts/password/reset/\S+/)", mail.outbox[0].body).group(1)
    response = client.get(link, follow=True)
    new = "another quite long passphrase 7"
    client.post(response.redirect_chain[-1][0], {"new_password1": new, "new_password2": new})
    other = client.__class__()
    response = other.get(link, follow=True)
    assert not response.context["validlink"]
    assert "does not work any more" in response.content.decode()


def test_it_stops_mailing_after_the_rate_without_saying_so(client, alice, settings):
    settings.LEXBOARD_LOGIN_RATE = "2/m"
    for _ in range(4):
        response = client.post(reverse("accounts:password_reset"), {"email": "alice@example.org"})
        assert response.status_code == 302
        assert response["Location"] == reverse("accounts:password_reset_done")
    assert len(mail.outbox) == 2

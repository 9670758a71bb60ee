"""Throttling of failed log-ins (and the rate limiter behind it)."""

import pytest
from django.test import override_settings
from django.urls import reverse

from submissions.throttling import Rate, RateLimiter, RateSettingError, format_wait

pytestmark = pytest.mark.django_db


def fail(client, username="alice", address="10.0.0.1"):
    return client.post(
        reverse("accounts:login"), {"username": username, "password": "wrong"}, REMOTE_ADDR=address
    )


@override_settings(LEXBOARD_LOGIN_RATE="3/m")
def test_it_answers_429_after_too_many_failed_logins(client, alice):
    for _ in range(3):
        assert fail(client).status_code == 200
    response = fail(client)
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    text = response.content.decode()
    assert "Too many failed log-in attempts" in text
    assert "reset your password" in text


@override_settings(LEXBOARD_LOGIN_RATE="3/m")
def test_it_refuses_even_the_right_password_once_throttled(client, alice):
    for _ in range(3):
        fail(client)
    response = client.post(
        reverse("accounts:login"),
        {"username": "alice", "password": "correct horse battery staple"},
        REMOTE_ADDR="10.0.0.1",
    )
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


@override_settings(LEXBOARD_LOGIN_RATE="3/m")
def test_it_counts_per_address_and_username(client, alice, bob):
    for _ in range(3):
        fail(client, "alice", "10.0.0.1")
    assert fail(client, "alice", "10.0.0.1").status_code == 429
    # Another username from the same address, and the same username from elsewhere, still may try.
    assert fail(client, "bob", "10.0.0.1").status_code == 200
    assert fail(client, "alice", "10.0.0.2").status_code == 200
    # Usernames are compared case-insensitively: ALICE is alice.
    assert fail(client, "ALICE", "10.0.0.1").status_code == 429


@override_settings(LEXBOARD_LOGIN_RATE="3/m")
def test_it_clears_the_count_after_a_successful_login(client, alice):
    for _ in range(2):
        fail(client)
    ok = client.post(
        reverse("accounts:login"),
        {"username": "alice", "password": "correct horse battery staple"},
        REMOTE_ADDR="10.0.0.1",
    )
    assert ok.status_code == 302
    client.logout()
    for _ in range(3):
        assert fail(client).status_code == 200


def test_it_reads_rates():
    assert Rate.parse("10/m") == Rate(10, 60)
    assert Rate.parse("30/hour") == Rate(30, 3600)
    assert Rate.parse(" 5/d ") == Rate(5, 86400)
    with pytest.raises(RateSettingError, match="COUNT/PERIOD"):
        Rate.parse("ten per minute")
    with pytest.raises(RateSettingError):
        Rate.parse("10/w")


@override_settings(LEXBOARD_TEST_RATE="2/h")
def test_it_limits_and_resets_a_key():
    limiter = RateLimiter("test", "LEXBOARD_TEST_RATE")
    assert limiter.hit("k").allowed
    assert limiter.hit("k").allowed
    verdict = limiter.hit("k")
    assert not verdict.allowed
    assert 1 <= verdict.retry_after <= 3600
    assert not limiter.peek("k").allowed
    assert limiter.peek("other").allowed
    limiter.reset("k")
    assert limiter.peek("k").allowed


@override_settings(LEXBOARD_TEST_RATE="0/m")
def test_a_zero_rate_means_no_limit():
    limiter = RateLimiter("test", "LEXBOARD_TEST_RATE")
    assert all(limiter.hit("k").allowed for _ in range(20))


def test_it_says_waits_in_words():
    assert format_wait(1) == "1 second"
    assert format_wait(75) == "1 minute 15 seconds"
    assert format_wait(3600) == "1 hour"


@override_settings(LEXBOARD_LOGIN_RATE="3/m")
def test_the_admin_login_counts_and_obeys_the_same_limit(client, staff):
    admin_login = reverse("admin:login")
    for _ in range(3):
        response = client.post(admin_login, {"username": "curator", "password": "wrong"}, REMOTE_ADDR="10.0.0.9")
        assert response.status_code == 200
    right = {"username": "curator", "password": "correct horse battery staple"}
    response = client.post(admin_login, right, REMOTE_ADDR="10.0.0.9")
    assert response.status_code == 200  # the form again: the right password is refused while throttled
    assert "_auth_user_id" not in client.session
    assert fail(client, "curator", "10.0.0.9").status_code == 429

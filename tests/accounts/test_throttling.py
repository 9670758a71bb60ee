"""Rate limits of accounts (allauth's, keyed on the real client address) and the upload limiter behind ours."""

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.urls import reverse

from submissions.throttling import Rate, RateLimiter, RateSettingError, format_wait

pytestmark = pytest.mark.django_db

RIGHT = "correct horse battery staple"
LIMITS = {"login_failed": "20/m/ip,3/m/key", "lexboard_signup": "2/h/ip"}


def login(client, username="alice", password="wrong", address="10.0.0.1", **extra):
    return client.post(reverse("account_login"), {"login": username, "password": password},
                       REMOTE_ADDR=address, **extra)


def locked(response) -> bool:
    return response.status_code == 200 and "Too many failed login attempts" in response.content.decode()


@pytest.fixture
def limits(settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, **LIMITS}


def test_it_refuses_further_attempts_after_too_many_failed_logins(client, alice, limits):
    for _ in range(3):
        assert not locked(login(client))
    assert locked(login(client))
    # Even the right password, from the guesser's address: guessing must stop paying off.
    assert locked(login(client, password=RIGHT))
    assert "_auth_user_id" not in client.session


def test_the_owner_logs_in_from_another_address_while_the_guesser_is_locked_out(client, alice, limits):
    for _ in range(4):
        login(client, address="10.0.0.1")
    assert locked(login(client, address="10.0.0.1"))
    response = login(client, password=RIGHT, address="10.0.0.2")
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(alice.pk)


def test_it_caps_failed_logins_per_address_whatever_the_username(client, alice, bob, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "5/m/ip,3/m/key"}
    for name in ("alice", "bob", "carol", "dave", "erin"):
        assert not locked(login(client, username=name))
    assert locked(login(client, username="frank"))
    assert not locked(login(client, username="frank", address="10.0.0.2"))


def test_it_counts_usernames_case_insensitively(client, alice, limits):
    for name in ("alice", "Alice", "ALICE"):
        login(client, username=name)
    assert locked(login(client, username="aLiCe"))


@override_settings(LEXBOARD_TRUSTED_PROXY_COUNT=0)
def test_a_forged_forwarded_for_header_does_not_give_a_fresh_address(client, alice, limits):
    for i in range(3):
        login(client, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert locked(login(client, HTTP_X_FORWARDED_FOR="192.0.2.99"))


@override_settings(LEXBOARD_TRUSTED_PROXY_COUNT=1)
def test_behind_one_proxy_the_forwarded_address_is_the_client(client, alice, limits):
    for _ in range(3):
        login(client, address="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert locked(login(client, address="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.7"))
    # Same proxy, another client: its right password works.
    assert login(client, password=RIGHT, address="127.0.0.1", HTTP_X_FORWARDED_FOR="198.51.100.8").status_code == 302


def _signup(client, n, address="10.0.0.5", **extra):
    password = "a long and unusual passphrase 42"
    data = {"username": f"user{n}", "email": f"user{n}@example.org", "password1": password, "password2": password}
    response = client.post(reverse("account_signup"), data, REMOTE_ADDR=address, **extra)
    client.logout()
    return response


def test_it_limits_accounts_created_per_address(client, limits):
    assert _signup(client, 1).status_code == 302
    assert _signup(client, 2).status_code == 302
    refused = _signup(client, 3)
    assert "Sign-up paused" in refused.content.decode()
    assert not get_user_model().objects.filter(username="user3").exists()
    assert _signup(client, 4, address="10.0.0.6").status_code == 302


def test_a_signup_form_with_a_mistake_costs_no_account(client, limits):
    password = "a long and unusual passphrase 42"
    for _ in range(3):
        response = client.post(reverse("account_signup"), {"username": "x", "email": "nope", "password1": password,
                                                           "password2": password}, REMOTE_ADDR="10.0.0.5")
        assert response.status_code == 200
    assert _signup(client, 1).status_code == 302
    assert _signup(client, 2).status_code == 302


# --- the upload limiter (submissions/throttling.py) ----------------------------------------------


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


# --- an IPv6 /64 is one client (lexboard/client_ip.py: client_network) ------------------------------


def test_sign_ups_from_one_ipv6_64_count_together_whatever_the_address(client, limits):
    assert _signup(client, 1, address="2001:db8:7:7::1").status_code == 302
    assert _signup(client, 2, address="2001:db8:7:7:abcd::2").status_code == 302
    assert "Sign-up paused" in _signup(client, 3, address="2001:db8:7:7:ffff::3").content.decode()
    assert _signup(client, 4, address="2001:db8:7:8::1").status_code == 302  # the next /64 is another client


def test_failed_logins_of_one_username_count_per_64_not_per_address(client, alice, settings):
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login_failed": "100/m/ip,3/m/key"}
    for i in range(3):
        assert not locked(login(client, address=f"2001:db8:9:9::{i + 1:x}"))
    assert locked(login(client, address="2001:db8:9:9::ff"))
    assert login(client, password=RIGHT, address="2001:db8:9:a::1").status_code == 302


@override_settings(LEXBOARD_UPLOAD_RATE="10/h", LEXBOARD_UPLOAD_NETWORK_RATE="2/h")
def test_uploads_count_per_network_whichever_account_sends_them(rf, alice, bob):
    from submissions.throttling import upload_check

    def upload_from(user, address):
        request = rf.post("/", REMOTE_ADDR=address)
        request.user = user
        return upload_check(request)

    assert upload_from(alice, "2001:db8:5:5::1").allowed
    assert upload_from(bob, "2001:db8:5:5::2").allowed
    refused = upload_from(bob, "2001:db8:5:5:1::3")  # another account, another address, the same /64
    assert not refused.allowed and "2001:db8:5:5::/64" in refused.message and refused.retry_after > 0
    assert upload_from(bob, "2001:db8:5:6::1").allowed
    assert upload_from(alice, "203.0.113.1").allowed and upload_from(alice, "203.0.113.2").allowed

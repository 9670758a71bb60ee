"""The client address of every rate limit: the socket's, or the N-th X-Forwarded-For entry from the right."""

import pytest
from django.test import RequestFactory

from accounts.emails import canonical_email
from lexboard.client_ip import client_address, client_network, network_of


def _request(remote="10.0.0.1", forwarded=None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_without_proxies_the_header_is_ignored(settings):
    settings.LEXBOARD_TRUSTED_PROXY_COUNT = 0
    assert client_address(_request(forwarded="1.2.3.4")) == "10.0.0.1"


@pytest.mark.parametrize(("count", "forwarded", "expected"), [
    (1, "203.0.113.9", "203.0.113.9"),
    (1, "6.6.6.6, 203.0.113.9", "203.0.113.9"),  # the client wrote 6.6.6.6; our proxy appended the rest
    (2, "6.6.6.6, 203.0.113.9, 10.1.1.1", "203.0.113.9"),
    (2, "203.0.113.9", "10.0.0.1"),  # did not pass through both proxies: the socket address
    (1, "", "10.0.0.1"),
    (1, "not-an-address", "10.0.0.1"),
    (1, "2001:db8::1", "2001:db8::1"),
])
def test_behind_proxies_it_reads_from_the_right(settings, count, forwarded, expected):
    settings.LEXBOARD_TRUSTED_PROXY_COUNT = count
    assert client_address(_request(forwarded=forwarded)) == expected


@pytest.mark.parametrize(("typed", "stored"), [
    ("Jane.Doe+lexboard@GoogleMail.com", "janedoe@gmail.com"),
    ("j.a.n.e.doe@gmail.com", "janedoe@gmail.com"),
    ("Jane+x@Outlook.com", "jane@outlook.com"),
    ("Jane.Doe+x@uclouvain.be", "jane.doe+x@uclouvain.be"),  # elsewhere a +tag may be another mailbox
])
def test_it_stores_one_spelling_per_mailbox(typed, stored):
    assert canonical_email(typed) == stored


# --- what a limit counts per: an IPv6 /64, an IPv4 address ----------------------------------------


@pytest.mark.parametrize(("address", "network"), [
    ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
    ("203.0.113.9", "203.0.113.9"),  # IPv4 unchanged
])
def test_a_limit_counts_per_ipv6_64_and_per_ipv4_address(address, network):
    assert network_of(address) == network


def test_an_ipv4_client_on_a_dual_stack_socket_is_its_ipv4_address(settings):
    """``::ffff:a.b.c.d`` is the IPv4 client, not a member of the one /64 every such address shares."""
    settings.LEXBOARD_TRUSTED_PROXY_COUNT = 0
    assert client_address(_request(remote="::ffff:203.0.113.9")) == "203.0.113.9"
    assert client_network(_request(remote="::ffff:203.0.113.9")) == "203.0.113.9"
    assert client_network(_request(remote="::ffff:198.51.100.1")) != client_network(_request(
        remote="::ffff:203.0.113.9"))


def test_the_prefix_is_a_setting(settings):
    settings.LEXBOARD_IPV6_PREFIX = 48
    assert network_of("2001:db8:1:2::1") == "2001:db8:1::/48"

"""The client's address, for every rate limit: the socket's, or the one the trusted proxies saw.

A reverse proxy in front of gunicorn makes every request come from the
proxy's address; the proxy appends the address it saw to
``X-Forwarded-For``. The client writes that header too, so only the entries
appended by proxies we run can be trusted: with
``settings.LEXBOARD_TRUSTED_PROXY_COUNT = N`` (one setting for allauth's limits
and Lexboard's own), the client is the N-th entry counted from the right.
Entries further left are whatever the client sent and are never read. With
N = 0 (the default: nothing stands in front) the header is ignored entirely.

An IPv6 address costs nothing: a home connection gets a /64, 2⁶⁴ addresses. So
every limit counts per :func:`client_network` — the IPv6 network of
``settings.LEXBOARD_IPV6_PREFIX`` bits (64 by default, the smallest block a
provider hands out), an IPv4 address as it is — never per IPv6 address.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def _address(text: str) -> str | None:
    text = text.strip().strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    # A dual-stack socket shows an IPv4 client as ::ffff:a.b.c.d; it is that IPv4 address (and must not fall into
    # the /64 every such address shares).
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return str(mapped or address)


def network_of(address: str) -> str:
    """What a limit counts per: an IPv4 address as it is; an IPv6 address's network (``2001:db8:1:2::/64``)."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv4Address):
        return str(parsed)
    prefix = int(settings.LEXBOARD_IPV6_PREFIX)
    return str(ipaddress.IPv6Network(f"{parsed}/{prefix}", strict=False))


def client_network(request) -> str:
    """The client's network as every rate limit keys it: :func:`network_of` :func:`client_address`."""
    return network_of(client_address(request))


def client_address(request) -> str:
    """The client's IP address as the outermost trusted proxy saw it (``REMOTE_ADDR`` without proxies).

    A header with fewer entries than trusted proxies did not pass through all
    of them (a misconfiguration, or a request that reached gunicorn directly):
    the socket address is used then, never a client-written entry.
    """
    remote = _address(request.META.get("REMOTE_ADDR", "")) or "unknown"
    count = int(settings.LEXBOARD_TRUSTED_PROXY_COUNT or 0)
    if count <= 0:
        return remote
    entries = [entry for entry in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if entry.strip()]
    if len(entries) < count:
        return remote
    return _address(entries[-count]) or remote

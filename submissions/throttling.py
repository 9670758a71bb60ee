"""Rate limits kept in Django's cache: uploads.

A limit is a rate written like DRF's (``"10/m"``, ``"30/h"``, ``"100/d"``)
read from settings when it is checked, so a deployment (or a test) changes it
without a restart of this module. Counting is a fixed window per key with
``cache.incr``; the cache is shared by every web process (Redis, or the
database's cache table on the embedded default), so the counters are too.

Uploads, from the browser form and from the API, count per user
(``settings.LEXBOARD_UPLOAD_RATE``) and per client network, whoever is logged
in (``settings.LEXBOARD_UPLOAD_NETWORK_RATE``: an IPv6 /64 or an IPv4
address, :func:`lexboard.client_ip.client_network`), so accounts one person
makes share their network's uploads: :func:`upload_check` counts both for
every upload path, :class:`UploadRateThrottle` wraps it for Django REST
framework.
Log-in, sign-up and password-reset limits are django-allauth's
(``settings.ACCOUNT_RATE_LIMITS``, accounts/adapter.py); both key anonymous
requests on :func:`lexboard.client_ip.client_address`.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from rest_framework.throttling import BaseThrottle

from lexboard.client_ip import client_network

_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class RateSettingError(ValueError):
    """A rate setting that cannot be read, e.g. ``"ten per minute"``."""


@dataclass(frozen=True)
class Rate:
    """``count`` events allowed per ``seconds``."""

    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        """Read ``"10/m"`` (``"10/min"`` and ``"30/hour"`` work too: the first letter decides)."""
        try:
            count_text, period = text.strip().split("/", 1)
            count = int(count_text)
            seconds = _PERIODS[period.strip().lower()[:1]]
        except (ValueError, KeyError):
            raise RateSettingError(
                f"cannot read the rate {text!r}: write it as COUNT/PERIOD with PERIOD one of s, m, h, d, e.g. 10/m"
            ) from None
        if count < 0:
            raise RateSettingError(f"cannot read the rate {text!r}: the count must not be negative")
        return cls(count=count, seconds=seconds)


@dataclass(frozen=True)
class Verdict:
    """The answer of a limiter: whether the event is allowed, and when to retry if not."""

    allowed: bool
    count: int
    limit: int
    retry_after: int  # seconds until the window resets; 0 when allowed


class RateLimiter:
    """Count events per key in fixed windows and say when a key has had too many.

    ``scope`` separates counters of different uses; ``rate_setting`` is the
    name of the setting holding the rate (read at each call). A rate of 0
    events disables the limit (``"0/m"``) — a deliberate "no limit" switch
    rather than "refuse everything", which nobody would want.
    """

    def __init__(self, scope: str, rate_setting: str) -> None:
        self.scope = scope
        self.rate_setting = rate_setting

    @property
    def rate(self) -> Rate:
        return Rate.parse(getattr(settings, self.rate_setting))

    def _window(self, rate: Rate, now: float) -> tuple[int, int]:
        window = int(now // rate.seconds)
        retry_after = max(1, math.ceil((window + 1) * rate.seconds - now))
        return window, retry_after

    def _cache_key(self, ident: str, window: int) -> str:
        # Hash the identity: it may hold a username or an address, and cache
        # keys must be short, printable and never leak into logs verbatim.
        digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return f"lexboard:rl:{self.scope}:{digest}:{window}"

    def peek(self, ident: str) -> Verdict:
        """Whether one more event would be allowed now, without counting one."""
        rate = self.rate
        now = time.time()
        window, retry_after = self._window(rate, now)
        count = int(cache.get(self._cache_key(ident, window), 0))
        if rate.count == 0 or count < rate.count:
            return Verdict(True, count, rate.count, 0)
        return Verdict(False, count, rate.count, retry_after)

    def hit(self, ident: str) -> Verdict:
        """Count one event and say whether it was within the limit."""
        rate = self.rate
        now = time.time()
        window, retry_after = self._window(rate, now)
        key = self._cache_key(ident, window)
        cache.add(key, 0, timeout=rate.seconds + 5)
        try:
            count = cache.incr(key)
        except ValueError:  # evicted between add and incr
            cache.set(key, 1, timeout=rate.seconds + 5)
            count = 1
        if rate.count == 0 or count <= rate.count:
            return Verdict(True, count, rate.count, 0)
        return Verdict(False, count, rate.count, retry_after)

    def reset(self, ident: str) -> None:
        """Forget the events of this window, e.g. after a successful log-in."""
        window, _ = self._window(self.rate, time.time())
        cache.delete(self._cache_key(ident, window))


def upload_limiter() -> RateLimiter:
    """Uploads per user, from the browser and the API alike, ``settings.LEXBOARD_UPLOAD_RATE``."""
    return RateLimiter("upload", "LEXBOARD_UPLOAD_RATE")


def upload_network_limiter() -> RateLimiter:
    """Uploads per client network (IPv6 /64, IPv4 address), ``settings.LEXBOARD_UPLOAD_NETWORK_RATE``."""
    return RateLimiter("upload-network", "LEXBOARD_UPLOAD_NETWORK_RATE")


@dataclass(frozen=True)
class UploadVerdict:
    """Whether an upload may go on; when not, the wait and the words that say whose limit it met."""

    allowed: bool
    retry_after: int = 0
    message: str = ""


def upload_check(request) -> UploadVerdict:
    """Count one upload of ``request`` per user (or per network when anonymous) and per client network.

    Every upload path asks it (the form, the API, fusions). The network's
    count goes up only when the user's allowed it: an account that spends
    its own budget does not spend its lab's.
    """
    user = getattr(request, "user", None)
    network = client_network(request)
    ident = f"user:{user.pk}" if user is not None and user.is_authenticated else f"addr:{network}"
    verdict = upload_limiter().hit(ident)
    if not verdict.allowed:
        return UploadVerdict(False, verdict.retry_after,
                             f"Too many uploads in a short time; try again in {format_wait(verdict.retry_after)}.")
    verdict = upload_network_limiter().hit(network)
    if not verdict.allowed:
        return UploadVerdict(False, verdict.retry_after, (
            f"Too many uploads from your network ({network}) in a short time, whichever account sent them; "
            f"try again in {format_wait(verdict.retry_after)}. A lab sharing one address can ask the curators "
            "to raise the network's limit."))
    return UploadVerdict(True)


def format_wait(seconds: int) -> str:
    """``75`` → ``"1 minute 15 seconds"``: a wait a person can read."""
    minutes, secs = divmod(max(1, int(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    parts = []
    for value, unit in ((hours, "hour"), (minutes, "minute"), (secs, "second")):
        if value:
            parts.append(f"{value} {unit}{'' if value == 1 else 's'}")
    return " ".join(parts)


class UploadRateThrottle(BaseThrottle):
    """DRF throttle for uploads (scope ``upload``) sharing its counter with the browser form.

    Counts per user (per address for anonymous requests, which the upload
    endpoint refuses anyway). The rate is ``settings.LEXBOARD_UPLOAD_RATE``,
    the same value REST_FRAMEWORK's ``DEFAULT_THROTTLE_RATES["upload"]`` holds.
    """

    scope = "upload"

    def __init__(self) -> None:
        self._verdict: UploadVerdict | None = None

    def allow_request(self, request, view) -> bool:
        self._verdict = upload_check(request)
        return self._verdict.allowed

    def wait(self) -> float | None:
        return float(self._verdict.retry_after) if self._verdict else None

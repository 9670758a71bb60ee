"""Whole-page cache for anonymous visitors of the busiest pages: home, dataset leaderboards, the API leaderboard.

When a paper deadline brings a crowd, most readers are not logged in and see
the same page. Rendering a leaderboard of 200 entries × 8 measures costs
about 100 ms of template work (more with the significance markers); serving
stored HTML costs a cache get (docs/performance.md has the figures).

The key changes whenever anything the page shows changes, so a page is never
stale and nothing is invalidated by hand. Two ways to build it:

* **Shared cache (Redis)** — each page's entry is tagged with the *page
  generation* it was rendered in, a counter in the cache bumped by every
  ``Split.bump_cache_version()`` (each new score, entry change, qrels
  publication: the rule the leaderboard-row cache already relies on) and by
  every save or delete of what the pages show from the
  curated side (benchmarks, datasets, splits, reported results, profiles; the
  receivers below); an entry whose tag is not the current generation is
  stale. A hit costs one cache round trip (the counter and the page together)
  and no database query. When the counter is missing (Redis flushed or evicted
  it) it restarts from the clock, so an old entry never matches again.
* **Per-process cache (the embedded default, locmem)** — a counter bumped in
  the worker would not reach the web processes, so the tag is a digest of
  every row the page shows, read from the database
  (``boards.selectors.*_page_cache_key``, 3 or 4 queries).

**One render per page generation.** When a new score makes a page stale, the
first request takes the page's render lock (``cache.add``: SET NX in Redis)
and renders it; requests arriving meanwhile are served the previous page
(stale while revalidate, for the few hundred milliseconds of one render)
instead of all rendering the same page at once. A request alone is never
served a stale page: it finds the lock free and renders.

Each page is stored twice, plain and gzip-compressed (compressed once, when
stored), and served compressed to clients that accept it, as browsers do.

Never cached: logged-in users (their private rows, their name in the
navigation, the log-out form's CSRF token), requests carrying an
``Authorization`` header (API tokens), requests with pending messages, and
responses that are not a plain 200 or that set a cookie or used a CSRF token.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import re
import time
from collections.abc import Callable
from functools import wraps

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from accounts.models import Profile
from leaderboard.models import Benchmark, Dataset, ReportedResult, Split
from leaderboard.page_generation import GENERATION_KEY, page_generation, page_generation_bump

logger = logging.getLogger(__name__)

#: Long enough to matter under load; the key does the invalidation.
PAGE_CACHE_SECONDS = 60 * 60
#: A page's render lock: longer than any render, short enough that a dead renderer does not freeze the page.
LOCK_SECONDS = 10
#: With no previous page to serve, how long a request waits for another's render before rendering itself.
COLD_WAIT_SECONDS = 2.0
COLD_POLL_SECONDS = 0.02
_ACCEPTS_GZIP = re.compile(r"\bgzip\b")


def shared_cache() -> bool:
    """True when every process (web and workers) sees the same cache, so a counter in it can version pages."""
    backend = settings.CACHES["default"]["BACKEND"]
    return not backend.endswith(("LocMemCache", "DummyCache"))


def page_key(name: str, request: HttpRequest) -> str:
    """The cache key of a page: its name and path, the query string as a digest.

    A digest, so a long or odd query string (fuzzers send 300 characters of
    control bytes) never makes a key longer than memcached's 250 or one that
    breaks a backend; parameters in another order are the same page.
    """
    query = sorted(request.GET.lists())
    digest = hashlib.blake2b(repr(query).encode(), digest_size=12).hexdigest() if query else "-"
    path = request.path
    if len(path) > 120 or not path.isascii() or not path.isprintable() or " " in path:
        path = hashlib.blake2b(path.encode(), digest_size=12).hexdigest()
    return f"lexboard:page:v5:{name}:{path}:{digest}"


def _cacheable_request(request: HttpRequest) -> bool:
    if request.method not in ("GET", "HEAD") or "HTTP_AUTHORIZATION" in request.META:
        return False
    if request.user.is_authenticated or getattr(request, "_force_auth_user", None) is not None:
        return False  # (the second: DRF's test client authenticates without a session or a header)
    return len(get_messages(request)) == 0


def _cacheable_response(request: HttpRequest, response: HttpResponse) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not request.META.get("CSRF_COOKIE_USED")
        # A page that says it must not be stored (a shared task's countdown: boards/views.py) is not.
        and "no-store" not in response.get("Cache-Control", "")
    )


def _from_cache(entry: tuple, gzip_ok: bool) -> HttpResponse:
    _tag, content, content_type = entry
    response = HttpResponse(content, content_type=content_type)
    if gzip_ok:
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ["Accept-Encoding"])
    return response


def _wait_for_render(wanted: str) -> tuple | None:
    """Poll for a page another request is rendering (a cold cache: no previous page to serve)."""
    deadline = time.monotonic() + COLD_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(COLD_POLL_SECONDS)
        entry = cache.get(wanted)
        if entry is not None:
            return entry
    return None


def anonymous_page_cache(key_func: Callable[..., str | None], *, name: str):
    """Serve the view's response from the cache for anonymous visitors.

    ``name`` tells pages apart; ``key_func(request, *args, **kwargs)`` builds
    the database-digest tag when the cache is per-process, and returns None
    when it cannot name the page (e.g. no such dataset): then the view runs
    and answers as usual (its 404 included).

    One render per page generation: when the stored page is stale, the
    request that takes the page's render lock (``cache.add``, atomic in
    Redis) renders it; requests arriving meanwhile get the previous page
    instead of rendering it too (stale while revalidate). With no previous
    page at all they wait up to ``COLD_WAIT_SECONDS`` for the render, then
    render themselves. The lock expires by itself after ``LOCK_SECONDS`` if
    its holder dies.
    """

    def decorator(view):
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not _cacheable_request(request):
                return view(request, *args, **kwargs)
            gzip_ok = bool(_ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))
            # One key per page, its entry tagged with what it was rendered from: the page generation
            # (shared cache) or the digest of the rows it shows (per-process cache).
            key = page_key(name, request)
            wanted = key + ":gz" if gzip_ok else key
            if shared_cache():
                # The counter and the page come back in one round trip.
                found = cache.get_many([GENERATION_KEY, wanted])
                tag = found.get(GENERATION_KEY)
                if tag is None:
                    tag = page_generation()
            else:
                tag = key_func(request, *args, **kwargs)
                if tag is None:
                    return view(request, *args, **kwargs)
                found = {wanted: cache.get(wanted)}
            cached = found.get(wanted)
            if cached is not None and cached[0] == tag:
                return _from_cache(cached, gzip_ok)
            lock = key + ":render"
            locked = cache.add(lock, 1, LOCK_SECONDS)
            if not locked:
                # Someone is rendering this page now: the previous page, or (cold cache) wait for theirs.
                if cached is None:
                    cached = _wait_for_render(wanted)
                if cached is not None:
                    return _from_cache(cached, gzip_ok)
            try:
                response = view(request, *args, **kwargs)
                if hasattr(response, "render") and not getattr(response, "is_rendered", True):
                    response.render()  # DRF and template responses render after the view returns
                if _cacheable_response(request, response):
                    content_type = response["Content-Type"]
                    # Tagged with the generation read *before* rendering: a score stored meanwhile makes it
                    # stale. Compressed once here rather than per request: a 300 KB leaderboard is 10x smaller.
                    cache.set_many({key: (tag, response.content, content_type),
                                    key + ":gz": (tag, gzip.compress(response.content, 6), content_type)},
                                   PAGE_CACHE_SECONDS)
                    patch_vary_headers(response, ["Accept-Encoding"])
            finally:
                if locked:
                    cache.delete(lock)
            return response

        return wrapped

    return decorator


def connect_signals() -> None:
    """Bump the page generation when a row the pages show from the curated side is saved or deleted.

    Scored entries need no receiver: whatever changes them calls
    ``Split.bump_cache_version()``, which bumps the generation too.
    """
    # Not the user model: every log-in saves it (last_login), and a username change is an admin's rare act.
    for model in (Benchmark, Dataset, Split, ReportedResult, Profile):
        for signal in (post_save, post_delete):
            signal.connect(page_generation_bump, sender=model, dispatch_uid=f"page-cache-{model._meta.label}-{signal}")

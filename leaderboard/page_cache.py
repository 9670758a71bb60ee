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
  (``leaderboard.selectors.*_page_cache_key``, 3 or 4 queries).

**One render per page generation.** When a new score makes a page stale, the
first request takes the page's render lock (``cache.add``: SET NX in Redis)
and renders it; requests arriving meanwhile are served the previous page
(stale while revalidate, for the few hundred milliseconds of one render)
instead of all rendering the same page at once. A request alone is never
served a stale page: it finds the lock free and renders.

**Rendered ahead by the worker.** The pages a new score changes most — the
dataset's leaderboard as it opens, its API leaderboard, the home page — are
not left to the first web request either: the worker that stored the score,
once committed, takes their render locks, bumps the generation and renders
them itself through the full request stack (:func:`render_ahead`, registered
with ``catalogue.page_generation.pages_renew``). Web processes keep serving
the previous pages meanwhile, and none renders after a landing; a render in
a web process would hold its interpreter lock against every other request of
that process for half a second (docs/performance.md).

**Before the session, for visitors without cookies.** With the shared
cache, a stored page is served by :class:`CachedPageMiddleware`, placed
before the session, CSRF, authentication and messages middleware, to a
visitor who sends no cookie (but the CSRF one) and no ``Authorization``
header — anonymous and without pending messages by construction. Everyone
else goes through the full stack to the view's decorator below, which makes
the same decision from the session.

Each page is stored twice, plain and gzip-compressed (compressed once, when
stored), and served compressed to clients that accept it, as browsers do.

Never cached: logged-in users (their private rows, their name in the
navigation, the log-out form's CSRF token), requests carrying an
``Authorization`` header (API tokens), requests with pending messages, and
responses that are not a plain 200 or that set a cookie or used a CSRF token.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import logging
import re
import sys
import time
from collections.abc import Callable
from functools import wraps
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest
from django.db.models.signals import post_delete, post_save
from django.http import HttpRequest, HttpResponse
from django.http.request import validate_host
from django.urls import reverse
from django.utils.cache import patch_vary_headers

from accounts.models import Profile
from campaigns.selectors import phases_for_dataset
from catalogue.models import Benchmark, Dataset, DataTerms, ReportedResult, Split
from catalogue.page_generation import (
    GENERATION_KEY,
    CacheKey,
    CacheKind,
    Variant,
    cache_key,
    page_generation,
    page_generation_bump,
    register_render_ahead,
)

logger = logging.getLogger(__name__)

#: Long enough to matter under load; the key does the invalidation.
PAGE_CACHE_SECONDS = 60 * 60
#: A page's render lock: longer than any render, short enough that a dead renderer does not freeze the page.
LOCK_SECONDS = 10
#: With no previous page to serve, how long a request waits for another's render before rendering itself.
COLD_WAIT_SECONDS = 2.0
COLD_POLL_SECONDS = 0.02
_ACCEPTS_GZIP = re.compile(r"\bgzip\b")
#: Marks a worker's render-ahead request: a WSGI environ key, not a header, so no client can send it.
RENDER_AHEAD = "lexboard.render_ahead"


def shared_cache() -> bool:
    """True when every process (web and workers) sees the same cache, so a counter in it can version pages."""
    backend = settings.CACHES["default"]["BACKEND"]
    return not backend.endswith(("LocMemCache", "DummyCache"))


def page_key(request: HttpRequest, variant: Variant | None = None) -> CacheKey:
    """The cache key of a page: its path and the query string as a digest (one view per path); or of its
    ``variant`` (the gzip copy, the render lock).

    A digest, so a long or odd query string (fuzzers send 300 characters of
    control bytes) never makes a key longer than memcached's 250 or one that
    breaks a backend; parameters in another order are the same page.
    """
    query = sorted(request.GET.lists())
    digest = hashlib.blake2b(repr(query).encode(), digest_size=12).hexdigest() if query else "-"
    path = request.path
    if len(path) > 120 or not path.isascii() or not path.isprintable() or " " in path:
        path = hashlib.blake2b(path.encode(), digest_size=12).hexdigest()
    return cache_key(CacheKind.PAGE, path, digest, variant=variant)


def _wanted(request: HttpRequest) -> tuple[bool, CacheKey, CacheKey]:
    """Whether the client takes gzip, the page's key, and the key of the variant it is served."""
    gzip_ok = bool(_ACCEPTS_GZIP.search(request.META.get("HTTP_ACCEPT_ENCODING", "")))
    key = page_key(request)
    return gzip_ok, key, page_key(request, Variant.GZIP) if gzip_ok else key


def _shared_lookup(wanted: CacheKey) -> tuple[int | None, tuple | None]:
    """The page generation and the stored entry, in one round trip (shared cache)."""
    found = cache.get_many([GENERATION_KEY, wanted])
    return found.get(GENERATION_KEY), found.get(wanted)


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
        # A page that says it must not be stored (a shared task's countdown: leaderboard/views.py) is not.
        and "no-store" not in response.get("Cache-Control", "")
    )


def _from_cache(entry: tuple, gzip_ok: bool) -> HttpResponse:
    _tag, content, content_type = entry
    response = HttpResponse(content, content_type=content_type)
    if gzip_ok:
        response["Content-Encoding"] = "gzip"
    patch_vary_headers(response, ["Accept-Encoding"])
    return response


def _wait_for_render(wanted: CacheKey) -> tuple | None:
    """Poll for a page another request is rendering (a cold cache: no previous page to serve)."""
    deadline = time.monotonic() + COLD_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(COLD_POLL_SECONDS)
        entry = cache.get(wanted)
        if entry is not None:
            return entry
    return None


def anonymous_page_cache(key_func: Callable[..., CacheKey | None]):
    """Serve the view's response from the cache for anonymous visitors.

    ``key_func(request, *args, **kwargs)`` builds
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
            # One key per page, its entry tagged with what it was rendered from: the page generation
            # (shared cache) or the digest of the rows it shows (per-process cache).
            gzip_ok, key, wanted = _wanted(request)
            tag: object
            if shared_cache():
                tag, cached = _shared_lookup(wanted)
                if tag is None:
                    tag = page_generation()
            else:
                tag = key_func(request, *args, **kwargs)
                if tag is None:
                    return view(request, *args, **kwargs)
                cached = cache.get(wanted)
            ahead = request.META.get(RENDER_AHEAD) is True  # the worker, which holds the render lock
            if cached is not None and cached[0] == tag and not ahead:
                return _from_cache(cached, gzip_ok)
            lock = page_key(request, Variant.RENDER_LOCK)
            locked = ahead or cache.add(lock, 1, LOCK_SECONDS)
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
                                    page_key(request, Variant.GZIP): (tag, gzip.compress(response.content, 6),
                                                                      content_type)},
                                   PAGE_CACHE_SECONDS)
                    patch_vary_headers(response, ["Accept-Encoding"])
            finally:
                if locked:
                    cache.delete(lock)
            return response

        return wrapped

    return decorator


class CachedPageMiddleware:
    """Serve a stored anonymous page before the session, CSRF, authentication and messages middleware run.

    A visitor who sends no cookie but the CSRF one and no ``Authorization``
    header is anonymous and has no pending messages, whatever those
    middleware would find; to them a page stored under the current
    generation is served at once, with the bytes and headers the full stack
    gives (``Vary: Accept-Encoding, Cookie``; the security headers come from
    the middleware above this one). Anyone else, a miss and a stale page go
    on to the full stack, where the view's :func:`anonymous_page_cache`
    decides (and renders once per generation). Only with a shared cache: the
    per-process cache's tags are read from the database. A cached page costs
    about a third of the CPU time it does through the full stack
    (docs/performance.md).
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if (
            request.method in ("GET", "HEAD")
            and "HTTP_AUTHORIZATION" not in request.META
            and getattr(request, "_force_auth_user", None) is None  # (DRF's test client)
            and set(request.COOKIES) <= {settings.CSRF_COOKIE_NAME}
            and shared_cache()
        ):
            gzip_ok, _key, wanted = _wanted(request)
            generation, entry = _shared_lookup(wanted)
            if entry is not None and entry[0] == generation:
                response = _from_cache(entry, gzip_ok)
                patch_vary_headers(response, ["Cookie"])  # as the session middleware says for every page
                response["Content-Length"] = str(len(response.content))
                return response
        return self.get_response(request)


def _environ(path: str) -> dict:
    """A WSGI environ for an anonymous GET of ``path`` on the public site (``LEXBOARD_SITE_URL``), gzip accepted."""
    site = urlsplit(settings.LEXBOARD_SITE_URL)
    https = site.scheme == "https"
    return {
        "REQUEST_METHOD": "GET", "PATH_INFO": path, "SCRIPT_NAME": "", "QUERY_STRING": "",
        "SERVER_NAME": site.hostname or "localhost", "SERVER_PORT": str(site.port or (443 if https else 80)),
        "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": site.netloc,
        "HTTP_ACCEPT_ENCODING": "gzip", "wsgi.url_scheme": site.scheme or "http", "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.version": (1, 0),
    }


@functools.cache
def _handler() -> WSGIHandler:
    """One per process, built on first use (it loads the middleware)."""
    return WSGIHandler()


_site_refused: list[str] = []  # the site URL's host, once found not in ALLOWED_HOSTS (said once per process)


def _pages_of_split(split_id: int) -> list[str]:
    """The paths of the pages a score on the split changes that most visitors read."""
    split = Split.objects.select_related("dataset").filter(pk=split_id).first()
    if split is None or not split.dataset.is_published:
        return []  # an anonymous visitor sees no unpublished dataset: nothing to render ahead
    slug = split.dataset.slug
    pages = [reverse("api:leaderboard", args=[slug]), reverse("leaderboard:home")]
    if all(phase.state() == "revealed" for phase in phases_for_dataset(dataset_id=split.dataset_id)):
        # (While a shared task runs, the dataset page carries its countdown and is never stored.)
        pages.insert(0, reverse("leaderboard:dataset", args=[slug]))
    return pages


def _site_host_allowed() -> bool:
    """Whether ``LEXBOARD_SITE_URL``'s host is one Django answers for (otherwise every render would be a 400)."""
    host = urlsplit(settings.LEXBOARD_SITE_URL).hostname or ""
    if validate_host(host, settings.ALLOWED_HOSTS):
        return True
    if host not in _site_refused:
        _site_refused.append(host)
        logger.warning("pages are not rendered ahead: LEXBOARD_SITE_URL's host %r is not in ALLOWED_HOSTS "
                       "(set LEXBOARD_SITE_URL to the site's public address)", host)
    return False


def render_ahead(split_id: int, bump: Callable[[], None]) -> None:
    """Render the pages a new score changes most, here (the worker), while the web serves the previous ones.

    Takes each page's render lock, then calls ``bump`` (the page generation
    moves: every cached page is stale), then renders each locked page
    through the full request stack, as an anonymous visitor of the public
    site, and stores it under the new generation
    (:func:`anonymous_page_cache` does, seeing :data:`RENDER_AHEAD`). A page
    whose lock a web request holds is left to it. Only with a shared cache:
    a per-process one would hold the pages where no web process reads them.
    """
    if not settings.LEXBOARD_RENDER_AHEAD or not shared_cache() or not _site_host_allowed():
        bump()
        return
    pages: list[tuple[str, WSGIRequest, CacheKey]] = []
    try:
        for path in _pages_of_split(split_id):
            request = WSGIRequest({**_environ(path), RENDER_AHEAD: True})
            lock = page_key(request, Variant.RENDER_LOCK)
            if cache.add(lock, 1, LOCK_SECONDS):
                pages.append((path, request, lock))
    finally:
        bump()  # first, whatever failed above: the pages' rows have changed
    for path, request, lock in pages:
        started = time.monotonic()
        try:
            # The handler's middleware and view, without the request signals (nor response.close(), which
            # sends one): they close the worker's database connection (in a test, the test's transaction).
            response = _handler().get_response(request)
        except Exception:  # the next page still gets its turn
            logger.warning("could not render %s ahead; the web renders it", path, exc_info=True)
        else:
            if response.status_code == 200:
                logger.info("rendered %s ahead in %.2fs", path, time.monotonic() - started)
            else:
                logger.warning("rendering %s ahead answered %s; the web renders it", path, response.status_code)
        finally:
            cache.delete(lock)  # (the page's view released it; not if the request stopped before the view)


def connect_signals() -> None:
    """Bump the page generation when a row the pages show from the curated side is saved or deleted.

    Scored entries need no receiver: whatever changes them calls
    ``Split.bump_cache_version()``, which bumps the generation too.
    """
    # Not the user model: every log-in saves it (last_login), and a username change is an admin's rare act.
    for model in (Benchmark, Dataset, DataTerms, Split, ReportedResult, Profile):
        for signal in (post_save, post_delete):
            signal.connect(page_generation_bump, sender=model, dispatch_uid=f"page-cache-{model._meta.label}-{signal}")
    register_render_ahead(render_ahead)

"""Whole-page cache for anonymous visitors of the busiest pages: the home page and the dataset leaderboards.

When a paper deadline brings a crowd, most readers are not logged in and see
the same page. Rendering a leaderboard of 200 entries × 8 measures costs
about 100 ms of template work; serving the stored HTML costs a few
database reads for the cache key and one cache get (docs/performance.md).

The key comes from a selector (``leaderboard.selectors.*_page_cache_key``)
that reads every row the page shows from the database, cheaply, and digests
it together with the splits' ``cache_version``: a new score, an edited entry
or a curator's edit in the admin gives a new key at once, so the page is never
stale; nothing has to be invalidated by hand.

Logged-in users are never served from this cache (their own private rows,
their name in the navigation, the log-out form's CSRF token), nor are
requests with pending messages, and a response that set a cookie or used a
CSRF token is never stored.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.messages import get_messages
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

#: Long enough to matter under load; the key does the invalidation.
PAGE_CACHE_SECONDS = 60 * 60


def _cacheable_request(request: HttpRequest) -> bool:
    if request.method not in ("GET", "HEAD"):
        return False
    if request.user.is_authenticated:
        return False
    return len(get_messages(request)) == 0


def _cacheable_response(request: HttpRequest, response: HttpResponse) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not request.META.get("CSRF_COOKIE_USED")
    )


def anonymous_page_cache(key_func: Callable[..., str | None]):
    """Serve the view's HTML from the cache for anonymous visitors, under ``key_func(request, *args, **kwargs)``.

    ``key_func`` returns None when it cannot name the page (e.g. no such
    dataset): then the view runs and answers as usual (its 404 included).
    """

    def decorator(view):
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not _cacheable_request(request):
                return view(request, *args, **kwargs)
            key = key_func(request, *args, **kwargs)
            if key is None:
                return view(request, *args, **kwargs)
            cached = cache.get(key)
            if cached is not None:
                content, content_type = cached
                return HttpResponse(content, content_type=content_type)
            response = view(request, *args, **kwargs)
            if _cacheable_response(request, response):
                cache.set(key, (response.content, response["Content-Type"]), PAGE_CACHE_SECONDS)
            return response

        return wrapped

    return decorator

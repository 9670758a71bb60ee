"""Project-wide middleware: a content-security policy, and a 503 page when the database is away.

Both are in ``MIDDLEWARE`` of the base settings, so development, tests and
production behave alike.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

import psycopg
from django.conf import settings
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string

logger = logging.getLogger("lexboard.availability")

# --- Content-Security-Policy --------------------------------------------------------


def _csp_for(path: str) -> str | None:
    """The policy for a path: the first matching prefix of LEXBOARD_CSP_PATH_POLICIES, else LEXBOARD_CSP.

    A prefix mapped to ``None`` (or an empty string) sends no policy at all;
    this is for third-party pages we do not control (the browsable API), never
    for our own templates, which carry no inline script or style.
    """
    for prefix, policy in settings.LEXBOARD_CSP_PATH_POLICIES:
        if path.startswith(prefix):
            return policy or None
    return settings.LEXBOARD_CSP or None


class ContentSecurityPolicyMiddleware:
    """Send a Content-Security-Policy header on every response that has none yet.

    Our pages keep all JavaScript and CSS in files under ``static/`` (no inline
    ``<script>``, no ``style=""``), so the strict default blocks any injected
    markup from running. Django's admin (5.2) passes the same policy: its
    templates load every script from a file and carry data in ``data-``
    attributes. A view that needs something else sets its own header, which
    this middleware leaves alone.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            policy = _csp_for(request.path_info)
            if policy:
                response["Content-Security-Policy"] = policy
        return response


# --- Database unavailable → 503 -------------------------------------------------

# psycopg's own errors can escape Django's wrapper while a connection is being set up.
_DB_ERRORS: tuple[type[BaseException], ...] = (
    OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError,
)

_FALLBACK_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Back soon · Lexboard</title></head>
<body><main>
<h1>Lexboard is briefly unavailable</h1>
<p>Our database is not answering right now, so we cannot show this page.
Nothing you uploaded is lost: submissions already accepted are kept and will be scored.</p>
<p>Please try again in a minute. <a href="/">Back to the leaderboards</a>.</p>
</main></body></html>
"""

_MARK = "_lexboard_database_error"


def _is_database_error(exc: BaseException | None) -> bool:
    return isinstance(exc, _DB_ERRORS)


def _mark_request(sender, request=None, **kwargs) -> None:
    """Remember that the 500 about to be rendered comes from the database being away.

    Django turns an exception raised inside an inner middleware (the session
    saved in ``process_response``, say) into a 500 response before it reaches
    us; the ``got_request_exception`` signal is sent from inside that ``except``
    block, so ``sys.exc_info()`` still tells which error it was.
    """
    if request is not None and _is_database_error(sys.exc_info()[1]):
        setattr(request, _MARK, True)


got_request_exception.connect(_mark_request, dispatch_uid="lexboard.middleware.database_unavailable")


def _wants_json(request: HttpRequest) -> bool:
    if request.path_info.startswith("/api/") or request.path_info.startswith("/healthz"):
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


def service_unavailable_response(request: HttpRequest) -> HttpResponse:
    """A 503 that needs no database: a static template (or a built-in page), and Retry-After.

    The template is rendered without a request, so no context processor runs
    (``request.user`` would query the database again).
    """
    retry_after = str(settings.LEXBOARD_RETRY_AFTER_SECONDS)
    if _wants_json(request):
        response: HttpResponse = JsonResponse(
            {
                "error": {
                    "code": "service_unavailable",
                    "message": "The database is not answering; nothing was changed. Retry in a minute.",
                    "details": [],
                }
            },
            status=503,
        )
    else:
        body: str
        try:
            body = render_to_string("503.html", {"retry_after": retry_after})
        except TemplateDoesNotExist:
            body = _FALLBACK_PAGE
        except Exception:  # a broken template must not turn a 503 back into a traceback
            logger.exception("503.html could not be rendered; using the built-in page")
            body = _FALLBACK_PAGE
        response = HttpResponse(body, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = retry_after
    response["Cache-Control"] = "no-store"
    # Logged once by the middleware below; not again by django.request, whose
    # ERROR lines go to ADMINS by mail: an outage must not become a mail storm.
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's private flag (django.utils.log)
    return response


class DatabaseUnavailableMiddleware:
    """Answer 503 with a friendly page, not a traceback, while the database is unreachable.

    It sits first in ``MIDDLEWARE`` so it sees errors from every layer: view
    errors through ``process_exception``, errors of inner middleware through the
    500 that Django made of them, and errors escaping everything (a 500 handler
    that itself needs the database) through ``__call__``. Nothing is retried
    here: the next request opens a fresh connection (``CONN_HEALTH_CHECKS``), so
    the site recovers by itself when the database is back.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            response = self.get_response(request)
        except _DB_ERRORS as exc:
            return self._unavailable(request, exc)
        if response.status_code == 500 and getattr(request, _MARK, False):
            return self._unavailable(request, None)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if _is_database_error(exception):
            return self._unavailable(request, exception)
        return None

    def _unavailable(self, request: HttpRequest, exc: BaseException | None) -> HttpResponse:
        setattr(request, _MARK, False)
        logger.error(
            "database unavailable while serving %s %s: %s",
            request.method,
            request.path,
            exc if exc is not None else "see the error logged just before",
        )
        return service_unavailable_response(request)

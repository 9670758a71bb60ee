"""One shape for every API error: ``{"error": {"message": ..., "details": [{"line", "reason"}]}}``.

``message`` is a sentence for a person; ``details`` lists the particular
problems, with the line of the uploaded file when there is one (``null``
otherwise, e.g. for a missing form field, whose name then starts the reason).
Views raise :class:`ApiError` (or DRF's own exceptions); the handler named in
``REST_FRAMEWORK["EXCEPTION_HANDLER"]`` translates everything here.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.utils import timezone
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from submissions.errors import AccountRefused, QuotaExceeded, SlotSpent, SplitClosed, TermsRequired, UploadRefused
from submissions.throttling import format_wait

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with a message for a person and optional per-line details."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    default_detail = "The request could not be processed."

    def __init__(self, message: str, *, details: list[dict] | None = None, status_code: int | None = None) -> None:
        super().__init__(detail=message)
        self.message = message
        self.details = details or []
        if status_code is not None:
            self.status_code = status_code


def error_body(message: str, details: list[dict] | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "details": [_detail(d) for d in details or []]}}


def refusal_response(exc: UploadRefused, request=None) -> Response:
    """An upload refused by a service, as every upload of the API answers it: 429 a quota (with ``retry_at`` and
    ``Retry-After``), 403 the account policy, 409 a split that takes no runs now or an upload slot spent, 400
    anything else.

    Data terms not accepted (403) name the dataset, the version and where to accept them (``terms``: the page
    for a person, ``accept`` for the client), with absolute addresses when ``request`` is given."""
    body = error_body(exc.message, exc.details)
    if isinstance(exc, TermsRequired):
        terms = exc.pending.as_dict(request.build_absolute_uri if request is not None else None)
        body["error"]["message"] = (f"{exc.pending.summary} Read them at {terms['url']} and accept them there, or "
                                    f"POST {{\"version\": {terms['version']}}} to {terms['accept']} "
                                    "(the client: add --accept-terms).")
        body["error"]["terms"] = terms
    if isinstance(exc, QuotaExceeded):
        headers = {}
        if exc.retry_at is not None:
            body["error"]["retry_at"] = exc.retry_at.isoformat()
            wait = (exc.retry_at - timezone.now()).total_seconds()
            headers["Retry-After"] = str(max(1, int(wait)))
        return Response(body, status=status.HTTP_429_TOO_MANY_REQUESTS, headers=headers)
    if isinstance(exc, AccountRefused):
        return Response(body, status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, (SplitClosed, SlotSpent)):
        return Response(body, status=status.HTTP_409_CONFLICT)
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


API_PREFIX = "/api/"


def is_api_path(request) -> bool:
    """Whether a request is for the API: its errors are JSON in the one shape, whoever makes them."""
    return request.path_info.startswith(API_PREFIX)


def api_error_response(status_code: int, message: str) -> JsonResponse:
    """An error in the one shape outside a DRF view (the site-wide 400/403/404/500 handlers under /api/)."""
    return JsonResponse(error_body(message), status=status_code)


def measure_or_404(dataset, measure: str, *, parameter: str) -> str:
    """``measure`` when ``dataset`` has it; else a 404 listing the ones it has.

    A measure is a name the dataset defines, like a split: one it lacks is not found (the schema cannot list the
    values, which differ per dataset and change when a curator adds one), and the message says what exists.
    """
    measures = list(dataset.measures or [])
    if measure not in measures:
        raise ApiError(f"{dataset.name} has no measure {measure!r}; {parameter} takes one of: {', '.join(measures)} "
                       f"(GET /api/v1/datasets/{dataset.slug}/ lists them).",
                       details=[{"line": None, "reason": f"{parameter}: not one of {', '.join(measures)}"}],
                       status_code=status.HTTP_404_NOT_FOUND)
    return measure


def _detail(item: Any) -> dict[str, Any]:
    """Normalise a problem (a dict, a ``Problem`` of the metric core, or text) to ``{"line", "reason"}``; a kind of
    problem found on several lines of a run keeps its first ``lines`` and their ``count``."""
    if isinstance(item, dict):
        out = {"line": item.get("line"), "reason": str(item.get("reason", ""))}
        if "count" in item:
            out["lines"] = [int(n) for n in item.get("lines") or []]
            out["count"] = int(item["count"])
        return out
    line = getattr(item, "line", None)
    reason = getattr(item, "reason", None)
    if reason is not None:
        return {"line": line, "reason": str(reason)}
    return {"line": None, "reason": str(item)}


def validation_details(detail: Any, prefix: str = "") -> list[dict]:
    """DRF validation errors (nested dicts and lists) as a flat list of reasons, prefixed by field name."""
    if isinstance(detail, dict):
        out: list[dict] = []
        for field, value in detail.items():
            name = "" if field == "non_field_errors" else str(field)
            out.extend(validation_details(value, f"{prefix}.{name}" if prefix and name else (prefix or name)))
        return out
    if isinstance(detail, list):
        return [d for item in detail for d in validation_details(item, prefix)]
    return [{"line": None, "reason": f"{prefix}: {detail}" if prefix else str(detail)}]


_MESSAGES = {
    exceptions.NotAuthenticated: (
        "Authentication required: send the header 'Authorization: Token <key>' "
        "with a key from your profile page (/accounts/profile/)."
    ),
    exceptions.MethodNotAllowed: None,  # DRF's own message names the method
    exceptions.NotFound: "Not found.",
}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Translate any exception raised in an API view into the one error shape."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.exception("database unavailable during an API request")
        return Response(
            error_body("The service cannot reach its database right now; try again in a minute."),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "60"},
        )
    if isinstance(exc, RequestDataTooBig):
        return Response(
            error_body("The request body is larger than the server accepts; send a smaller one."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, SuspiciousOperation):
        exc = exceptions.ParseError("The request is malformed and was not processed.")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        if settings.DEBUG:
            return None  # the developer gets Django's traceback page
        logger.exception("unhandled error in an API view", exc_info=exc)
        return Response(
            error_body("Something went wrong on our side; the error was logged. Please try again later."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )

    if isinstance(exc, ApiError):
        body = error_body(exc.message, exc.details)
    elif isinstance(exc, exceptions.ValidationError):
        details = validation_details(exc.detail)
        if len(details) == 1:
            message = details[0]["reason"]
        else:
            message = "The request has problems: each is listed in details."
        body = error_body(message, details)
    elif isinstance(exc, exceptions.Throttled):
        wait = exc.wait  # type: ignore[attr-defined]  # set by Throttled.__init__; the DRF stubs leave it out
        when = f" Try again in {format_wait(int(wait))}." if wait else " Try again later."
        scope = getattr(context.get("view"), "throttle_scope", None)
        what = "uploads" if scope == "upload" else "requests"
        body = error_body(f"Too many {what} in a short time.{when}")
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        body = error_body(_unsupported_media_type(context))
    else:
        assert isinstance(exc, exceptions.APIException)  # drf_exception_handler answers no other exception
        message = _MESSAGES.get(type(exc)) or _text(exc.detail)
        body = error_body(message)
    response.data = body
    return response


def _unsupported_media_type(context: dict) -> str:
    """A body in a media type the view does not parse: the one sent (or none), and the ones to send instead."""
    request, view = context.get("request"), context.get("view")
    sent = (getattr(request, "content_type", "") or "").split(";", 1)[0].strip()
    wanted = [parser.media_type for parser in getattr(view, "parser_classes", ())]
    what = f'as "{sent}"' if sent else "with no Content-Type"
    return f"The request body was sent {what}; send it as {' or '.join(wanted)}, with that Content-Type."


def _text(detail: Any) -> str:
    if isinstance(detail, (list, tuple)):
        return " ".join(_text(d) for d in detail)
    if isinstance(detail, dict):
        return " ".join(f"{k}: {_text(v)}" for k, v in detail.items())
    return str(detail)

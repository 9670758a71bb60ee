"""What the API promises about its URLs, checked on every request: the schema is the contract.

- ``api_schema()``: the OpenAPI document the API serves, computed once per process (:func:`warm` computes it
  as the process starts, before its first request: 0.1–0.27 s that a first client would otherwise wait).
- Query parameters: an operation accepts the ones its schema declares and refuses any other with a 400 that
  names it (a misspelt ``?srot=`` must not be silently ignored).
- Trailing slashes: under ``/api/``, a path with or without its final slash reaches the same operation
  (:class:`ApiSlashMiddleware`), for every method, so a client's POST is never redirected and lost.
- The schema itself: JSON or YAML, only as asked (:class:`SchemaView`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.renderers import JSONRenderer

from .errors import API_PREFIX, ApiError

#: ``<slug:slug>`` in a Django route, ``{slug}`` in the schema's path: each is one path parameter, compared by place
#: rather than by name (drf-spectacular names a route's ``<int:pk>`` after the model's field, ``{id}``).
_ROUTE_PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")
_SCHEMA_PARAMETER = re.compile(r"\{\w+\}")


@functools.cache
def api_schema() -> dict:
    """The OpenAPI document of the API, as ``/api/v1/schema/`` serves it (it reads no database)."""
    return SchemaGenerator().get_schema(request=None, public=True)


def warm() -> None:
    """Compute what every request reads, as a web process starts (``lexboard.wsgi``): the schema and the
    operations' query parameters."""
    _declared_query_parameters()


def route_shape(route: str) -> str:
    """A Django route under the API (``api/v1/submissions/<id:pk>/``) as the key of its schema operation: the path
    with each parameter as ``{}`` (``/api/v1/submissions/{}/``)."""
    return "/" + _ROUTE_PARAMETER.sub("{}", route)


@functools.cache
def _declared_query_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(path shape, method) → the query parameters the schema declares for it; a shape is the schema's path with
    each parameter as ``{}``."""
    out = {}
    for path, operations in api_schema().get("paths", {}).items():
        for method, operation in operations.items():
            if isinstance(operation, dict) and not method.startswith("x-"):
                names = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "query"}
                out[(_SCHEMA_PARAMETER.sub("{}", path), method)] = frozenset(names)
    return out


def refuse_unknown_query_parameters(request) -> None:
    """A 400 naming every query parameter the operation does not declare; nothing for operations outside the schema."""
    match = request.resolver_match
    if match is None or not request.GET:
        return
    template = "/" + _ROUTE_PARAMETER.sub(r"{\1}", match.route)  # as the schema spells it, for the message
    method = "get" if request.method == "HEAD" else request.method.lower()
    allowed = _declared_query_parameters().get((route_shape(match.route), method))
    if allowed is None:
        return
    unknown = sorted(set(request.GET) - allowed)
    if not unknown:
        return
    accepted = ", ".join(sorted(allowed)) if allowed else "none"
    raise ApiError(
        f"Unknown query parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
        f"{request.method} {template} accepts {accepted}. Remove {'them' if len(unknown) > 1 else 'it'} "
        "or check the spelling.",
        details=[{"line": None, "reason": f"{name}: not a parameter of this operation"} for name in unknown],
    )


def _resolves(path: str, urlconf) -> bool:
    try:
        resolve(path, urlconf)
    except Resolver404:
        return False
    return True


class ApiSlashMiddleware:
    """Under ``/api/``, ``…/files`` and ``…/files/`` are the same operation, whichever one the URL conf spells.

    Django's ``APPEND_SLASH`` would answer a 301 with an HTML body (and nothing
    for a POST); a script that drops or adds the slash gets the operation
    itself instead. Only a path that does not resolve as sent is rewritten, and
    only to one that does.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.startswith(API_PREFIX) and path != API_PREFIX:
            urlconf = getattr(request, "urlconf", None)
            other = path[:-1] if path.endswith("/") else path + "/"
            if not _resolves(path, urlconf) and _resolves(other, urlconf):
                request.path = request.path.removesuffix(path) + other
                request.path_info = other
        return self.get_response(request)


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema: YAML by default, JSON when asked (``?format=json`` or ``Accept: application/json``).

    Any other ``format``, or any other query parameter, is a 400; every error
    of this view is JSON in the API's one shape, never YAML.
    """

    FORMATS = ("json", "yaml")

    def initial(self, request, *args, **kwargs):
        unknown = sorted(set(request.query_params) - {"format"})
        if unknown:
            raise ApiError(
                f"Unknown query parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
                "the schema accepts only format=json or format=yaml.",
                details=[{"line": None, "reason": f"{name}: not a parameter of this operation"} for name in unknown],
            )
        wanted = request.query_params.get("format")
        if wanted is not None and wanted not in self.FORMATS:
            raise ApiError(f"format={wanted!r} is not served: ask for format=json or format=yaml.",
                           details=[{"line": None, "reason": "format: one of json, yaml"}])
        super().initial(request, *args, **kwargs)

    def handle_exception(self, exc):
        # The error is for a person or a script: JSON in the API's shape, whatever format was asked.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = "application/json"
        return super().handle_exception(exc)


#: What an answer leads to (OpenAPI links): an upload to its status, a submission to what its owner does with it,
#: one's list to a comparison and a fusion of two of its entries. Generated clients and Schemathesis' stateful
#: phase follow them. (operation, status) → {link name: (target operation, parameters, request body)}.
_ID = "$response.body#/id"
_FIRST_TWO = ("$response.body#/results/0/id", "$response.body#/results/1/id")
LINKS: dict[tuple[str, str], dict[str, tuple[str, dict, object]]] = {
    ("submission_create", "202"): {
        "status": ("submission_retrieve", {"id": _ID}, None),
        "mine": ("submission_list", {"mine": "true"}, None),
    },
    ("fusion_create", "202"): {"status": ("submission_retrieve", {"id": _ID}, None)},
    ("submission_retrieve", "200"): {
        "final": ("submission_mark_final", {"id": _ID}, None),
        "per_query": ("submission_per_query", {"id": _ID}, None),
        "update": ("submission_update", {"id": _ID}, None),
        "withdraw": ("submission_withdraw", {"id": _ID}, None),
    },
    ("submission_list", "200"): {
        "compare": ("compare", {"submissions": f"{{{_FIRST_TWO[0]}}},{{{_FIRST_TWO[1]}}}"}, None),
        "fuse": ("fusion_create", {}, {"submissions": list(_FIRST_TWO)}),
    },
}


def schema_links(result: dict, generator, request, public) -> dict:
    """Postprocessing hook of the schema: the :data:`LINKS` on the responses they start from."""
    responses = {}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "operationId" in operation:
                for code, response in operation.get("responses", {}).items():
                    responses[(operation["operationId"], code)] = response
    for start, links in LINKS.items():
        response = responses.get(start)
        if response is None:
            continue
        response["links"] = {}
        for name, (target, parameters, body) in links.items():
            link: dict = {"operationId": target}
            if parameters:
                link["parameters"] = parameters
            if body is not None:
                link["requestBody"] = body
            response["links"][name] = link
    return result


def schema_closed_bodies(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: a request body takes the fields its schema lists and no other (``additionalProperties:
    false``), as its serializer (:class:`api.serializers.StrictInput`) refuses any other by name."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                ref = media.get("schema", {}).get("$ref", "")
                component = components.get(ref.rsplit("/", 1)[-1])
                if component is not None and component.get("type") == "object":
                    component["additionalProperties"] = False
    return result


#: What a 415 means: the answer of every operation that takes a body, to a body in another media type or none.
UNSUPPORTED_MEDIA_TYPE = ("The body is not in a media type the operation takes (or says none); `requestBody` lists "
                          "the ones it takes.")


def schema_body_media_types(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: every operation that takes a body documents the 415 its parsers answer to a body in
    another media type (``text/plain``, or no ``Content-Type`` at all), in the one error shape (a ``.ci/run``
    of 7 December 2026: Schemathesis sent an image upload with no media type, and the 415 was undocumented)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and "requestBody" in operation:
                responses = operation["responses"]
                shape = responses["401"]["content"]  # error_responses() documents 401 on every operation
                responses["415"] = {"content": shape, "description": UNSUPPORTED_MEDIA_TYPE}
                operation["responses"] = dict(sorted(responses.items()))
    return result


def schema_public_reads(result: dict, generator, request, public) -> dict:
    """Postprocessing hook: an operation anyone may call (drf-spectacular lists ``{}``, "no token", among its
    security requirements) says ``security: []``, needing no token; a token, when sent, is still read (one's own
    private runs, one's quota). A generated client then calls it without a key (openapi-python-client asks for an
    authenticated client wherever the list is not empty), and the schema's reader sees at once what is public."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict) and {} in operation.get("security", []):
                operation["security"] = []
    return result

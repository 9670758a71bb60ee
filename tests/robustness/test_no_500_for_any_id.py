"""No 500 for any id (issue #13, item 7): out-of-range ids are a 404 on every URL and API.

The test walks the URL resolver: every route with a parameter is requested
with ids too large for the database (2^63, 10^20), negative, zero and
non-numeric ones, anonymously and signed in. Nothing may answer 500; a route
taking a database id (``<id:...>``, ``<int:...>``) answers 404 for each.
The same for the ids in query strings and JSON bodies (compare, fusion).
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

pytestmark = pytest.mark.django_db

BAD_IDS = [str(2**63), str(10**20), "-1", "0", "abc", "1e3", "١٢"]  # the last: Arabic-Indic digits
PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def _routes(patterns=None, prefix: str = ""):
    """Every route of the site as a template, e.g. ``submissions/<id:submission_id>/edit/``."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            if isinstance(entry.pattern, RoutePattern):
                yield from _routes(entry.url_patterns, prefix + str(entry.pattern))
            elif str(entry.pattern.regex.pattern).startswith("^admin/") or str(entry.pattern) == "admin/":
                continue
            else:
                yield from _routes(entry.url_patterns, prefix + str(entry.pattern).lstrip("^"))
        elif isinstance(entry, URLPattern) and isinstance(entry.pattern, RoutePattern):
            yield prefix + str(entry.pattern)


def _id_routes() -> list[str]:
    routes = sorted({r for r in _routes() if PARAMETER.search(r) and not r.startswith("admin/")})
    assert any("<id:" in r for r in routes), routes  # the walk found the id routes
    return routes


def _fill(route: str, bad: str) -> tuple[str, bool]:
    """The route with ``bad`` in each id parameter (other parameters get a plausible value)."""
    takes_id = False

    def value(match: re.Match) -> str:
        nonlocal takes_id
        if match.group("converter") in ("id", "int"):
            takes_id = True
            return bad
        return "tiny" if match.group("converter") in (None, "slug", "str") else "x"

    return "/" + PARAMETER.sub(value, route), takes_id


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
def test_every_route_answers_404_for_an_id_out_of_range(client, tiny_dataset, alice, signed_in):
    if signed_in:
        client.force_login(alice)
    failures = []
    for route in _id_routes():
        for bad in BAD_IDS:
            path, takes_id = _fill(route, bad)
            for method in ("get", "post"):
                response = getattr(client, method)(path)
                if response.status_code >= 500 or (takes_id and response.status_code != 404):
                    failures.append(f"{method.upper()} {path} -> {response.status_code}")
    assert not failures, "\n".join(failures)


def test_an_api_route_answers_json_for_an_id_out_of_range(client):
    response = client.get(f"/api/v1/submissions/{2**63}/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert set(response.json()["error"]) == {"message", "details"}


@pytest.mark.parametrize("ids", [f"1,{10**20}", f"{2**63},1", "1,-2", "0,1", "1,abc", "١,٢"])
def test_compare_refuses_ids_out_of_range(client, tiny_dataset, ids):
    api = client.get("/api/v1/compare/", {"submissions": ids})
    assert api.status_code in (400, 404), api.content
    assert api.json()["error"]["message"]
    page = client.get("/submissions/compare/", {"ids": ids})
    assert page.status_code < 500


@pytest.mark.parametrize("bad", [2**63, 10**20, -1, 0])
def test_fusion_refuses_ids_out_of_range(client, tiny_dataset, alice, bad):
    client.force_login(alice)
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    response = api.post("/api/v1/fusions/", {"submissions": [1, bad]}, format="json")
    assert response.status_code in (400, 404), response.content
    assert response.json()["error"]["details"]
    page = client.post("/submissions/fusion/", {"ids": ["1", str(bad)], "method": "rrf", "k": "60"})
    assert page.status_code < 500

"""The API's URLs keep the schema's word: slashes, unknown query parameters, the schema's own formats.

- a path with or without its trailing slash reaches the same operation, a POST included (no 301 to HTML);
- a query parameter the operation does not declare is a 400 naming it, in the one error shape;
- ``/api/v1/schema/`` answers JSON or YAML only as asked; ``?format=bogus`` is a 400 in JSON.
"""

from __future__ import annotations

import json

import pytest
import yaml

from .conftest import PERFECT, run_bytes

pytestmark = pytest.mark.django_db


def _error(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content)
    assert set(body) == {"error"}, body
    return body["error"]


@pytest.mark.parametrize("path", [
    "/api/v1/datasets/tiny/files/", "/api/v1/datasets/tiny/files",
    "/api/v1/datasets/tiny/leaderboard/", "/api/v1/datasets", "/api/v1/schema",
])
def test_it_serves_a_path_with_or_without_its_trailing_slash(client, tiny_dataset, path):
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.content[:200])


def test_it_accepts_an_upload_posted_without_the_trailing_slash(api, tiny_dataset):
    upload = {"dataset": "tiny", "split": "dev", "run_file": _file(), "system_name": "no slash"}
    response = api.post("/api/v1/submissions", upload, format="multipart")
    assert response.status_code == 202, response.content
    assert response.json()["url"].endswith(f"/api/v1/submissions/{response.json()['id']}/")


def test_a_path_that_is_nothing_either_way_is_a_json_404(client, tiny_dataset):
    _error(client.get("/api/v1/nothing-here"), 404)


@pytest.mark.parametrize("path,unknown", [
    ("/api/v1/datasets/tiny/leaderboard?srot=R@10", ["srot"]),
    ("/api/v1/datasets/?page=2&x=1", ["page", "x"]),
    ("/api/v1/submissions/?mine=1&format=json", ["format"]),
])
def test_it_refuses_an_unknown_query_parameter_by_name(api, tiny_dataset, path, unknown):
    error = _error(api.get(path), 400)
    for name in unknown:
        assert repr(name) in error["message"]
    assert [d["reason"].split(":")[0] for d in error["details"]] == unknown
    assert "accepts" in error["message"]


@pytest.mark.parametrize("suffix", ["", "per-query"])
def test_an_operation_with_a_path_parameter_refuses_an_unknown_query_parameter(api, tiny_dataset, suffix):
    """``<id:pk>`` in the route is ``{id}`` in the schema: the two are matched by place, not by name (they were
    not, and every ``<id:pk>`` URL took any query parameter)."""
    created = api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "dev", "run_file": _file(),
                                                "system_name": "path parameter"}, format="multipart")
    assert created.status_code == 202, created.content
    path = f"/api/v1/submissions/{created.json()['id']}/{suffix}"
    error = _error(api.get(path + "?srot=1"), 400)
    assert "'srot'" in error["message"] and "/api/v1/submissions/{pk}/" in error["message"]
    assert api.get(path).status_code != 400  # 200, or 409 for the per-query values of a run not scored yet


def test_every_api_route_is_an_operation_of_the_schema():
    """Each route under /api/v1/ (but the schema's and the docs' own pages) finds its operation's declared
    query parameters, so none takes an unknown one unchecked."""
    from django.urls import get_resolver

    from api import contract

    declared = contract._declared_query_parameters()
    routes = [p.pattern._route for p in get_resolver("api.urls").url_patterns]
    missing = [route for route in routes if route not in ("schema/", "docs/") and not any(
        (contract.route_shape("api/v1/" + route), method) in declared for method in ("get", "post"))]
    assert routes and not missing, missing


def test_it_refuses_an_unknown_parameter_before_counting_an_upload(api, tiny_dataset):
    response = api.post("/api/v1/submissions/?dry_run=1", {"dataset": "tiny", "run_file": _file()}, format="multipart")
    error = _error(response, 400)
    assert "'dry_run'" in error["message"]
    from submissions.models import Submission

    assert not Submission.objects.exists()


def test_the_declared_parameters_are_accepted(client, tiny_dataset):
    assert client.get("/api/v1/datasets/tiny/leaderboard?split=dev&sort=MAP@10").status_code == 200


def test_the_schema_is_yaml_unless_json_is_asked(client, db):
    plain = client.get("/api/v1/schema/")
    assert plain.status_code == 200 and plain["Content-Type"].startswith("application/vnd.oai.openapi;")
    assert yaml.safe_load(plain.content)["openapi"].startswith("3.")
    for response in (client.get("/api/v1/schema/?format=json"),
                     client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")):
        assert response.status_code == 200 and "json" in response["Content-Type"], response["Content-Type"]
        assert json.loads(response.content)["openapi"].startswith("3.")
    assert "json" not in client.get("/api/v1/schema/?format=yaml")["Content-Type"]


@pytest.mark.parametrize("query", ["format=bogus", "format=html", "format=", "lang=fr"])
def test_the_schema_refuses_any_other_format_in_json(client, db, query):
    error = _error(client.get(f"/api/v1/schema/?{query}"), 400)
    assert "format=json" in error["message"]


def test_the_schema_answers_an_unacceptable_accept_in_json(client, db):
    _error(client.get("/api/v1/schema/", HTTP_ACCEPT="text/html"), 406)


def _file():
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("run.txt", run_bytes(PERFECT))

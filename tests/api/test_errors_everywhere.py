"""Every answer under /api/ is JSON in the one error shape, and no filter value is ignored (issue #20).

404 from the URL resolver, 405, 400 from Django itself, 500 from the
site-wide handler and 413 for a body over the cap all answer
``{"error": {"message", "details"}}`` under /api/, while the pages keep their
HTML. Unknown filter values, negative limits and malformed id lists are a 400
(or a 404 for an unknown dataset), never a 200 with nothing.
"""

from __future__ import annotations

import json

import pytest
from django.test import RequestFactory
from django.urls import get_resolver

pytestmark = pytest.mark.django_db


def assert_api_error(response, status: int) -> dict:
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = json.loads(response.content)
    assert set(body) == {"error"} and {"message", "details"} <= set(body["error"]), body
    assert body["error"]["message"]
    return body


@pytest.mark.parametrize(
    "path",
    ["/api/v1/submissions/abc/", "/api/v1/datasets/Q@J/leaderboard", "/api/v1/nothing-here/", "/api/", "/api/v2/"],
)
def test_a_url_the_resolver_does_not_know_is_a_json_404_under_api(client, path):
    assert_api_error(client.get(path), 404)


def test_pages_keep_their_html_404(client):
    response = client.get("/submissions/abc/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


def test_a_wrong_method_is_a_json_405(client, tiny_dataset):
    assert_api_error(client.delete("/api/v1/datasets/"), 405)
    assert_api_error(client.put("/api/v1/datasets/tiny/leaderboard"), 405)


@pytest.mark.parametrize("status", [400, 403, 404, 500])
def test_the_site_wide_handlers_answer_json_under_api_and_html_elsewhere(status):
    handler = get_resolver().resolve_error_handler(status)
    factory = RequestFactory()
    args = () if status == 500 else (Exception("x"),)
    api = handler(factory.get("/api/v1/submissions/1/"), *args)
    assert_api_error(api, status)
    if status != 404:  # the HTML 404 renders templates with a request context; the page test above covers it
        page = handler(factory.get("/submissions/1/"), *args)
        assert page.status_code == status and not page["Content-Type"].startswith("application/json")


def test_a_json_body_over_the_size_cap_is_a_json_413(client, alice, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client.force_login(alice)
    body = '{"submissions": [1, 2], "system_name": "' + "x" * 5000 + '"}'
    assert_api_error(client.post("/api/v1/fusions/", body, content_type="application/json"), 413)


@pytest.mark.parametrize(
    "query",
    [{"status": "AAA"}, {"mine": "maybe"}, {"limit": "-1"}, {"limit": "0"}, {"limit": "abc"}, {"offset": "-5"},
     {"limit": "100000"}, {"dataset": "Q@J"}],
)
def test_a_filter_value_the_list_does_not_know_is_a_400(api, query):
    body = assert_api_error(api.get("/api/v1/submissions/", query), 400)
    assert any(next(iter(query)) in d["reason"] for d in body["error"]["details"]), body


def test_an_unknown_dataset_in_the_list_filter_is_a_404(api, tiny_dataset):
    assert_api_error(api.get("/api/v1/submissions/", {"dataset": "no-such-dataset"}), 404)
    assert api.get("/api/v1/submissions/", {"dataset": "tiny", "status": "scored", "mine": "1"}).status_code == 200


@pytest.mark.parametrize("ids", ["1", "1,2,3", "1;2", "1, 2", "#1,#2", "", "1,"])
def test_compare_refuses_a_malformed_id_list(client, ids):
    assert_api_error(client.get("/api/v1/compare/", {"submissions": ids}), 400)


def test_fusion_states_k_and_distinct_ids(api, tiny_dataset):
    body = assert_api_error(api.post("/api/v1/fusions/", {"submissions": [1, 2], "k": 10_001}, format="json"), 400)
    assert "k" in body["error"]["message"]

"""The 503 page for a database that is away, tested on views that fail as a dead database makes them fail.

The real outage (a PostgreSQL connection cut under a running gunicorn) is in
test_database_down_chaos.py; these cover each path an error can take through
the middleware stack, quickly and on any database.
"""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.urls("tests.ops.urls_for_tests")


def _client() -> Client:
    return Client(raise_request_exception=False)


def test_it_answers_503_with_a_friendly_page_when_a_view_loses_the_database():
    response = _client().get("/page/")
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    assert response["Content-Type"].startswith("text/html")
    body = response.content.decode()
    assert "<h1" in body and "unavailable" in body.lower()
    assert "Traceback" not in body
    assert "OperationalError" not in body


def test_it_never_shows_the_database_error_text():
    body = _client().get("/page/").content.decode()
    assert "db.internal" not in body
    assert "hunter2" not in body
    assert "5432" not in body


def test_it_answers_503_on_a_closed_connection_too():
    assert _client().get("/closed/").status_code == 503


def test_it_answers_json_to_api_clients():
    response = _client().get("/api/v1/thing/")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == "service_unavailable"
    assert "Retry-After" in response


def test_it_catches_a_database_error_raised_by_an_inner_middleware(settings):
    middleware = list(settings.MIDDLEWARE)
    middleware.insert(middleware.index("lexboard.middleware.DatabaseUnavailableMiddleware") + 1,
                      "tests.ops.urls_for_tests.SessionSaveFails")
    settings.MIDDLEWARE = middleware
    response = _client().get("/after-view/")
    assert response.status_code == 503
    assert "Traceback" not in response.content.decode()


def test_it_leaves_other_errors_to_the_500_handler(settings):
    settings.DEBUG = False
    response = _client().get("/bug/")
    assert response.status_code == 500
    assert "Retry-After" not in response


def test_it_keeps_the_content_security_policy_on_the_503_page():
    response = _client().get("/page/")
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_it_falls_back_to_a_built_in_page_without_a_503_template(settings):
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": []}]
    response = _client().get("/page/")
    assert response.status_code == 503
    assert "briefly unavailable" in response.content.decode()


def test_it_logs_an_outage_once_per_request_and_not_to_the_admins_mail_logger(caplog):
    with caplog.at_level("INFO"):
        _client().get("/page/")
    assert [r.name for r in caplog.records if r.levelname == "ERROR"] == ["lexboard.availability"]

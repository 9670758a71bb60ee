"""/healthz: JSON for container health checks; 503 naming the failed service; no secrets."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_it_answers_ok_when_database_and_broker_answer():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]


@pytest.mark.django_db
def test_it_answers_503_naming_the_broker_when_the_broker_is_away(monkeypatch):
    from lexboard.celery import app

    # A port where nothing listens, with a password that must not be echoed.
    away = "redis://:s3cret-pw@127.0.0.1:9/0"
    monkeypatch.setitem(app.conf, "broker_url", away)
    monkeypatch.setenv("CELERY_BROKER_URL", away)  # Celery lets this variable win over its configuration
    monkeypatch.setitem(app.conf, "broker_transport_options", {})
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "broker": "failed"}
    assert b"s3cret" not in response.content
    assert b"127.0.0.1" not in response.content


@pytest.mark.django_db
def test_it_refuses_writes():
    assert Client().post("/healthz").status_code == 405


def test_it_has_a_stable_url_name():
    from django.urls import reverse

    assert reverse("healthz") == "/healthz"

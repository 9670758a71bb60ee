"""/healthz: JSON for container health checks; 503 naming the failed service; no secrets."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
from django.test import Client

from lexboard.celery import app


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
    monkeypatch.setattr(app, "_pool", None)  # the process's producer pool, made again for the new URL
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis(port: int) -> subprocess.Popen:
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise AssertionError("redis-server did not start")


def _connections_received(port: int) -> int:
    out = subprocess.run(["redis-cli", "-p", str(port), "info", "stats"], capture_output=True, text=True).stdout
    return int(next(line for line in out.splitlines() if line.startswith("total_connections_received:"))
               .split(":")[1])


@pytest.mark.django_db
@pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")
def test_it_asks_the_broker_over_the_pools_connection_and_notices_the_broker_leaving_and_coming_back(monkeypatch):
    """No new broker connection (and DNS lookup of its name) per call; a broker that went away is still noticed."""
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    monkeypatch.setitem(app.conf, "broker_url", url)
    monkeypatch.setenv("CELERY_BROKER_URL", url)
    monkeypatch.setitem(app.conf, "broker_transport_options", {})
    monkeypatch.setattr(app, "_pool", None)
    server = _redis(port)
    try:
        assert Client().get("/healthz").json() == {"database": "ok", "broker": "ok"}
        before = _connections_received(port)
        for _ in range(5):
            assert Client().get("/healthz").status_code == 200
        # redis-cli's own connection is the one more.
        assert _connections_received(port) - before == 1

        server.terminate()
        server.wait(10)
        started = time.monotonic()
        response = Client().get("/healthz")
        assert response.status_code == 503 and response.json()["broker"] == "failed"
        assert time.monotonic() - started < 10

        server = _redis(port)
        assert Client().get("/healthz").status_code == 200
    finally:
        server.kill()
        server.wait(10)
        app.pool.force_close_all()

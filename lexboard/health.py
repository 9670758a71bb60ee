"""``/healthz``: is this web process able to serve? For container health checks and load balancers.

It checks the two services a request or an upload needs, the database and
the Celery broker, and answers JSON: 200 ``{"database": "ok", "broker": "ok"}``,
or 503 naming what failed. The answer carries no host name, URL, password or
error text: anyone can call it.
"""

from __future__ import annotations

import logging
from typing import cast

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection

from lexboard.celery import app

logger = logging.getLogger("lexboard.health")

BROKER_TIMEOUT_SECONDS = 3.0


def database_ok() -> bool:
    """True when the default database answers a trivial query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any failure means "not healthy"; the reason goes to the log only
        logger.warning("health check: database failed: %s", exc)
        # A broken connection must not be reused by the next request of this thread.
        connection.close_if_unusable_or_obsolete()
        return False
    return True


def broker_ok() -> bool:
    """True when the Celery broker answers, asked over a connection of the process's producer pool.

    The pool's connection is the one an upload's task is sent on, so this checks what an upload needs, and it is
    opened once, not at every call: a new connection looks the broker's name up in DNS each time, and the container
    network's DNS drops queries while it reloads (each time a container starts or stops), which made a health
    check taking tens of seconds during a rolling upgrade. The first call, or a call after the broker went away,
    still connects (within a few seconds, or "failed").
    """
    try:
        # A ConnectionPool hands out Connections; celery-types' stubs say Producer.
        with cast(Connection, app.pool.acquire(block=True, timeout=BROKER_TIMEOUT_SECONDS)) as conn:
            # kombu sleeps for float intervals and timeouts; celery-types' kombu stubs say int.
            conn.ensure_connection(max_retries=1, interval_start=0,
                                   interval_step=0.5, timeout=BROKER_TIMEOUT_SECONDS)  # type: ignore[arg-type]
            # Redis-like transports connect lazily: ask for a channel so the server is really spoken to.
            channel = conn.default_channel
            client = getattr(channel, "client", None)
            if client is not None and hasattr(client, "ping"):
                client.ping()
    except Exception as exc:
        logger.warning("health check: broker failed: %s", exc)
        return False
    return True


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database and the broker answer, else 503 with the failing ones marked."""
    checks = {
        "database": "ok" if database_ok() else "failed",
        "broker": "ok" if broker_ok() else "failed",
    }
    healthy = all(value == "ok" for value in checks.values())
    response = JsonResponse(checks, status=200 if healthy else 503)
    # The failing check logged a warning already; a health check polled every
    # few seconds must not also send an ERROR (a mail to ADMINS) each time.
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's private flag (django.utils.log)
    return response


# Included from lexboard/urls.py, so the project's URL module needs one line for it.
urlpatterns = [path("healthz", healthz, name="healthz")]

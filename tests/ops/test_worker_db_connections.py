"""A worker's process keeps its database connection from one task to the next (lexboard/celery.py).

Celery's Django fixup, as a worker installs it, closes every connection before and after every task unless
``CELERY_DB_REUSE_MAX`` is set: each upload's scoring then began with a new PostgreSQL session (4-13 ms measured).
These tests drive the fixup's own task handlers (``DjangoWorkerFixup.on_task_prerun``/``on_task_postrun``, what a
worker runs around each task) and the signals the project connects, on the real database.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from celery.signals import task_postrun, task_prerun
from django.db import connection

from lexboard.celery import app

pytestmark = pytest.mark.django_db(transaction=True)  # no test transaction around: the connection as a worker has it


class _Task:
    """A task as the handlers see it: run by a worker, not in eager mode (signal senders are hashed)."""

    request = SimpleNamespace(is_eager=False)


TASK = _Task()


def run_a_task(fixup: DjangoWorkerFixup) -> None:
    """What a worker does around a task, as far as database connections go."""
    fixup.on_task_prerun(sender=TASK)
    task_prerun.send(sender=TASK, task_id="t", task=TASK, args=(), kwargs={})
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    fixup.on_task_postrun(sender=TASK)
    task_postrun.send(sender=TASK, task_id="t", task=TASK, args=(), kwargs={}, retval=None, state="SUCCESS")


@pytest.fixture
def fixup() -> DjangoWorkerFixup:
    """Celery's Django fixup as a worker has it, on an open PostgreSQL connection."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's connections are not kept (CONN_MAX_AGE 0): opening one costs no network round trip")
    connection.ensure_connection()
    return DjangoWorkerFixup(app)


def test_three_tasks_run_on_one_connection(fixup):
    first = connection.connection
    for _ in range(3):
        run_a_task(fixup)
    assert connection.connection is first


def test_an_obsolete_or_broken_connection_is_replaced_between_tasks(fixup):
    old = connection.connection
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE
    run_a_task(fixup)
    assert connection.connection is not None and connection.connection is not old
    broken = connection.connection
    broken.close()  # the server went away meanwhile (a restart): the health check before the next use sees it
    run_a_task(fixup)
    assert connection.connection is not broken and not connection.connection.closed

"""``manage.py workers_ready``: what ``make run`` waits for before it announces the site (tests/ops/test_make_run.py
runs the script itself)."""

from __future__ import annotations

import time

import pytest
from django.core.management import CommandError, call_command


def test_it_gives_up_naming_the_queue_no_worker_consumes(settings):
    settings.CELERY_TASK_DEFAULT_QUEUE = "a-queue-no-worker-reads"
    started = time.monotonic()
    with pytest.raises(CommandError) as exc:
        call_command("workers_ready", "--timeout", "1")
    assert "'a-queue-no-worker-reads'" in str(exc.value) and "within 1s" in str(exc.value)
    assert time.monotonic() - started < 30

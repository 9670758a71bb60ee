"""Celery tasks of the sandbox: thin wrappers around ``sandbox.services`` (found by autodiscovery).

``sandbox.run_image`` goes to the sandbox queue only (``CELERY_TASK_ROUTES``),
which only sandbox workers serve: hosts with podman and root, never the
scoring workers. It is acknowledged late and redelivered when its worker dies;
the row decides whether the redelivered message takes the run over (its
heartbeat stood still) or gives it up (the second death). The runner stops
the container at the split's wall time; the task's own limit (six hours) is
only a backstop, above the scoring tasks' limit, which would cut a long run.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from .services import RUN_TASK, SWEEP_TASK, sandbox_run_execute, sandbox_sweep


@shared_task(name=RUN_TASK, acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,
             InterfaceError), retry_backoff=5, max_retries=5, soft_time_limit=6 * 3600 - 60, time_limit=6 * 3600)
def run_image(run_id: int) -> None:
    """Run one queued image in the sandbox (a no-op when the row is not queued, or running elsewhere)."""
    sandbox_run_execute(int(run_id))


@shared_task(name=SWEEP_TASK, ignore_result=True)
def sweep() -> dict:
    """Resend lost sandbox runs, give up those whose worker died twice, remove unused images (Celery beat)."""
    return sandbox_sweep()

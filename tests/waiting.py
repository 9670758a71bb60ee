"""The one way a test waits for a worker (or a server, or a container): poll a predicate until a deadline.

``wait_until(predicate, timeout=…, what=…, worker=…)`` returns the
predicate's first true value; it fails at once when the worker died, and at
the deadline with what it waited for and the tail of the worker's log. An
assertion inside the predicate (a submission that failed, an error in the log)
ends the wait at once with its own message.

``wait_until_final(submission_id, worker)`` waits until a submission is scored
or failed and returns it.

A test that checks that something did *not* happen does not sleep and look:
it sends a later marker through the same queue and worker, waits until the
worker has run it (``wait_for_marker``), and only then looks (see
tests/campaigns/test_notifications_worker.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: A bound generous enough for the shared, slow test machines.
TIMEOUT = 90
LOG_TAIL = 3000


def log_tail(worker: Any) -> str:
    return worker.log()[-LOG_TAIL:] if worker is not None else ""


def wait_until(predicate: Callable[[], T], *, timeout: float = TIMEOUT, what: str, worker: Any = None,
               interval: float = 0.1) -> T:
    """Poll ``predicate`` until it returns a true value (returned); fail when ``worker`` died or at ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if worker is not None and not worker.alive:
            raise AssertionError(f"waiting for {what}: the worker died; its log:\n{log_tail(worker)}")
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)
    raise AssertionError(f"waiting for {what}: not after {timeout:.0f} s; the worker's log:\n{log_tail(worker)}")


def wait_until_final(submission_id: int, worker: Any, timeout: float = TIMEOUT):
    """The submission once it is scored or failed."""
    from submissions.models import Submission

    final = (Submission.Status.SCORED, Submission.Status.FAILED)

    def done():
        submission = Submission.objects.get(pk=submission_id)
        return submission if submission.status in final else None

    return wait_until(done, timeout=timeout, what=f"submission {submission_id} scored or failed", worker=worker)


def wait_for_marker(worker: Any, *, queue: str | None = None, countdown: float | None = None,
                    timeout: float = TIMEOUT) -> None:
    """Send a marker task behind everything sent so far and wait until ``worker`` has run it.

    The worker (solo pool, one message at a time, as the test workers are)
    takes its queue in order, so once the marker has run, every task sent
    before it has run too, and so has anything those sent before they ended.
    With ``countdown`` the marker waits in the worker's timer like a retry: it
    runs after every task whose ETA was earlier. Then a test can check that
    something did *not* happen without sleeping and hoping.
    """
    from lexboard.celery import app

    marker = app.send_task("celery.accumulate", args=("marker",), queue=queue or worker.queue, countdown=countdown)
    wait_until(lambda: f"[{marker.id}] succeeded" in worker.log(), timeout=timeout,
               what=f"the marker task {marker.id} run", worker=worker)

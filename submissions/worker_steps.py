"""A step of every Celery worker: put back in the queue, within seconds, what a dead worker was scoring.

A worker killed mid-task (``kill -9``, the out-of-memory killer, its machine gone) leaves its submission in
``scoring``; its message is gone with it on the embedded ``filesystem://`` broker, and on Redis it comes back
only after the visibility timeout (longer than the hard time limit: minutes). The row's heartbeat stops, so
every other worker of the deployment — scoring, sweep or sandbox worker, however it was started, with or
without beat — looks every ``LEXBOARD_RECOVERY_INTERVAL`` seconds for rows whose heartbeat is older than
``LEXBOARD_HEARTBEAT_STALE_SECONDS`` and requeues them (``submissions.services.scoring_recover``, the sweep's
own rule: each row re-read locked and moved only while still stale, so two workers never both requeue it and a
live attempt is never touched). A worker started again after the kill does it too, once it is up.

A message the worker received but had not started when it died (prefetched, or waiting for a pool process) leaves
its row ``queued`` with no heartbeat of its own, and the broker keeps the message from every other worker (Redis
until the visibility timeout; the filesystem broker has handed it over for good). So the worker marks each scoring
message it receives (Celery's ``task_received``: ``Submission.held_by``, its host, process id and start token) and renews those
holds at every tick; a hold not renewed within the same stale bound is sent again by ``scoring_recover``.

Registered on the Celery app by name (``lexboard/celery.py``); it runs on the worker's timer: the event loop's on
Redis, a timer thread of its own on the filesystem broker, so a solo worker busy scoring still looks there. It
logs only when it moved something, and once when the database is away (and once when it is back).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
from typing import Any

from celery import bootsteps
from celery.signals import task_received
from django.conf import settings
from django.db import connection

from .services import queued_hold, queued_holds_renew, scoring_recover
from .services.queue import SCORE_TASK

logger = logging.getLogger(__name__)


#: Drawn once per process: a worker started again in a container keeps its host name and often its process id.
_START = secrets.token_hex(4)


def holder() -> str:
    """This worker process's name on the rows whose messages it holds: its host, process id and a token drawn at
    its start (a worker started again is a new holder, so its predecessor's holds go stale)."""
    return f"{socket.gethostname()}:{os.getpid()}:{_START}"


def hold_received(sender: Any = None, request: Any = None, **_kwargs: Any) -> None:
    """``task_received``: a scoring message reached this worker; mark its queued row held (never raises: a failed
    mark leaves the row to the sweep's resend of a message queued too long)."""
    if request is None or request.name != SCORE_TASK:
        return
    try:
        queued_hold(int(request.args[0]), holder())
    except Exception:
        logger.warning("could not mark submission %r as held by this worker", request.args, exc_info=True)


class ScoringRecovery(bootsteps.StartStopStep):
    """Every ``LEXBOARD_RECOVERY_INTERVAL`` seconds (0: never), renew this worker's holds, then ``scoring_recover()``."""

    requires = ("celery.worker.components:Timer",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.tref: Any = None
        self.failing = False

    def start(self, parent: Any) -> None:
        interval = settings.LEXBOARD_RECOVERY_INTERVAL
        if interval > 0:  # holds only where they are renewed: a hold not renewed is sent again
            task_received.connect(hold_received, weak=False, dispatch_uid="lexboard.queued_hold")
            self.tref = parent.timer.call_repeatedly(float(interval), self.recover, priority=10)

    def stop(self, parent: Any) -> None:
        task_received.disconnect(dispatch_uid="lexboard.queued_hold")
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    def recover(self) -> None:
        """One look; never raises (the timer calls it again)."""
        try:
            queued_holds_renew(holder())
            counts = scoring_recover()
        except Exception:  # the database away, a lock timeout: said once, tried again at the next tick
            if not self.failing:
                logger.warning("recovery of dead workers' submissions failed; trying again every %s s",
                               settings.LEXBOARD_RECOVERY_INTERVAL, exc_info=True)
            self.failing = True
            connection.close()
            return
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()  # the timer's own thread (filesystem broker): no connection left to a fork
        if self.failing:
            logger.info("recovery of dead workers' submissions works again")
            self.failing = False
        if any(counts.values()):
            logger.info("recovered dead workers' submissions: %s", counts)

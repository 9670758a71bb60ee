"""A step of every Celery worker that consumes the sandbox queue: its heartbeat, so the site knows one runs.

The web process cannot ask the broker cheaply whether a worker serves ``LEXBOARD_SANDBOX_QUEUE`` (a remote-control
broadcast waits a second for answers), and an image sent while none does waits for ever. So each sandbox worker,
however it was started (``make run``, ``docker/entrypoint.sh sandbox``, by hand), writes its ``SandboxWorker`` row
every ``LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS`` from a thread of its own (it beats while the pool runs an image,
whatever the pool), and ``sandbox.selectors.sandbox_worker_alive`` reads it. A worker that does not consume the
sandbox queue (scoring, sweep) does nothing here. A failed write is said once and tried again at the next beat.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from celery import bootsteps
from django.conf import settings
from django.db import connection
from django.utils import timezone

from .models import SandboxWorker

logger = logging.getLogger(__name__)


def consumes_sandbox_queue(app: Any) -> bool:
    """Whether this worker consumes the sandbox queue (``-Q`` names it, or its default queues hold it)."""
    return settings.LEXBOARD_SANDBOX_QUEUE in set(app.amqp.queues.consume_from or ())


def beat(hostname: str, *, started_at: Any) -> None:
    """Write this worker's heartbeat row (one UPSERT)."""
    SandboxWorker.objects.update_or_create(hostname=hostname[:200],
                                           defaults={"seen_at": timezone.now(), "started_at": started_at})


class SandboxWorkerBeat(bootsteps.StartStopStep):
    """Every ``LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS`` (0: never), ``beat()``, on a daemon thread."""

    requires = ("celery.worker.components:Pool",)  # started once the pool's processes were forked

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.thread: threading.Thread | None = None
        self.stopped = threading.Event()
        self.failing = False

    def start(self, parent: Any) -> None:
        interval = settings.LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS
        if interval <= 0 or not consumes_sandbox_queue(parent.app):
            return
        hostname, started_at = parent.hostname, timezone.now()
        self.stopped.clear()
        self.thread = threading.Thread(target=self._loop, args=(hostname, started_at, float(interval)),
                                       name="sandbox-worker-beat", daemon=True)
        self.thread.start()

    def stop(self, parent: Any) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
            self.thread = None

    def _loop(self, hostname: str, started_at: Any, interval: float) -> None:
        while not self.stopped.is_set():
            self._beat_once(hostname, started_at)
            self.stopped.wait(interval)

    def _beat_once(self, hostname: str, started_at: Any) -> None:
        try:
            beat(hostname, started_at=started_at)
        except Exception:  # the database away: said once, tried again at the next beat
            if not self.failing:
                logger.warning("the sandbox worker's heartbeat failed; trying again every %s s",
                               settings.LEXBOARD_SANDBOX_WORKER_BEAT_SECONDS, exc_info=True)
            self.failing = True
        else:
            if self.failing:
                logger.info("the sandbox worker's heartbeat works again")
            self.failing = False
        finally:
            connection.close()  # this thread's own connection: none left open between beats

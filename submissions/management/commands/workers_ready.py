"""``manage.py workers_ready [--timeout SECONDS]``: wait until a Celery worker that scores uploads answers.

``make run`` (scripts/run.sh) announces the site only after this returns, so the address it prints is one where
an upload gets scored. A worker counts when it answers the remote-control ``active_queues`` with the scoring
queue (``LEXBOARD_QUEUE``) among its queues: the sweep's own worker does not score. With ``--web URL`` it also
waits for the web server to answer that URL (``/healthz``) with 200.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from celery import current_app
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def scoring_workers(*, timeout: float = 1.0) -> list[str]:
    """The hostnames of the running workers that consume the scoring queue (one broadcast, ``timeout`` seconds)."""
    answers = current_app.control.inspect(timeout=timeout).active_queues() or {}
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    return sorted(host for host, queues in answers.items() if any(q.get("name") == queue for q in queues or ()))


class Command(BaseCommand):
    help = "Wait until a worker consuming the scoring queue answers; exit 1 after --timeout seconds."

    def add_arguments(self, parser):
        parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait (default 300)")
        parser.add_argument("--web", default="", help="also wait for this URL to answer 200, e.g. the site's /healthz")

    def handle(self, *args, timeout: float, web: str, **options):
        deadline = time.monotonic() + timeout
        while True:
            found = scoring_workers()
            if found and (not web or _answers(web)):
                self.stdout.write(f"workers ready: {', '.join(found)}")
                return
            if time.monotonic() >= deadline:
                what = (f"the web server did not answer {web}" if found else
                        f"no worker consuming the queue {settings.CELERY_TASK_DEFAULT_QUEUE!r} answered")
                raise CommandError(
                    f"{what} within {timeout:.0f}s: look at the lines above (a missing dependency, the broker or "
                    "the database unreachable, the port taken), fix it and start again."
                )
            time.sleep(0.5)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (the local site's own address)
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False

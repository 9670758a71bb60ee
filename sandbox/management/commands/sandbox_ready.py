"""``manage.py sandbox_ready --check`` / ``--timeout SECONDS``: can this host run a sandbox worker; has one answered.

``make run`` (scripts/run.sh) asks ``--check`` before it starts a sandbox worker: exit 0 where podman is installed
and the process is root (``sandbox.runner.available``), else the reason on stdout and exit 1, and run.sh says
"no sandbox worker: <reason>" and starts none. Once it started one, ``--timeout`` waits for that worker's first
heartbeat (``sandbox.worker_steps``): a row newer than this command's start.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from sandbox import runner
from sandbox.models import SandboxWorker
from sandbox.services import sandbox_config


class Command(BaseCommand):
    help = "--check: whether this host can run the sandbox (exit 1 with the reason); else wait for a sandbox worker."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true",
                            help="only say whether this host can run a sandbox worker (podman, root)")
        parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for a heartbeat")

    def handle(self, *args, check: bool, timeout: float, **options):
        if check:
            if reason := runner.available(sandbox_config()):
                self.stdout.write(reason)
                raise SystemExit(1)
            return
        since = timezone.now()
        deadline = time.monotonic() + timeout
        while True:
            found = list(SandboxWorker.objects.filter(seen_at__gte=since).values_list("hostname", flat=True))
            if found:
                self.stdout.write(f"sandbox worker ready: {', '.join(sorted(found))}")
                return
            if time.monotonic() >= deadline:
                raise CommandError(f"no sandbox worker answered within {timeout:.0f}s: look at its lines above")
            time.sleep(0.5)

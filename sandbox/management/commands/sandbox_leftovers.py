"""``manage.py sandbox_leftovers``: remove the sandbox containers and /output mounts a killed worker left.

The sandbox worker's start (docker/entrypoint.sh, role ``sandbox``) runs it:
no run is in progress on this host then, so every container carrying the
sandbox label in the sandbox's own store is a leftover.
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from sandbox import runner
from sandbox.services import sandbox_config


class Command(BaseCommand):
    help = "Remove sandbox containers and /output mounts left by a worker that was killed (run at worker start)."

    def handle(self, *args, **options) -> None:
        sandbox = sandbox_config()
        if reason := runner.available(sandbox):
            self.stderr.write(f"the sandbox cannot run here: {reason}")
            return
        removed = runner.leftovers_remove(sandbox, Path(settings.LEXBOARD_SANDBOX_WORK_DIR))
        self.stdout.write(f"removed {len(removed)} leftover(s)" + (f": {', '.join(removed)}" if removed else ""))

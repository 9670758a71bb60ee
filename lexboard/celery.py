"""The Celery application: configured from Django settings (``CELERY_*``)."""

import os
import resource

from billiard.process import current_process
from celery import Celery
from celery.signals import task_postrun
from celery.worker import state as worker_state
from kombu.transport import TRANSPORT_ALIASES

from lexboard import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")
# The embedded default's broker (filesystem://, from the settings or from Celery's CELERY_BROKER_URL variable,
# which wins over them): kombu's filesystem transport with each message file put in place whole
# (lexboard/broker.py), in every process that imports lexboard (web, worker, beat, manage.py, tests).
TRANSPORT_ALIASES["filesystem"] = broker.TRANSPORT

app = Celery("lexboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Every worker puts back in the queue, within seconds, what a dead worker was scoring (submissions/worker_steps.py);
# by name: the step imports the models, loaded once the worker has set Django up.
app.steps["worker"].add("submissions.worker_steps:ScoringRecovery")
# A worker consuming the sandbox queue writes its heartbeat, so the site knows whether an image would run
# (sandbox/worker_steps.py).
app.steps["worker"].add("sandbox.worker_steps:SandboxWorkerBeat")


@task_postrun.connect
def replace_a_grown_solo_worker(**_kwargs) -> None:
    """``--max-memory-per-child`` for a worker that is its own pool (``--pool solo``, as ``make run`` starts it).

    Prefork replaces a pool process that grew past
    ``worker_max_memory_per_child`` KiB after its task; a solo worker has no
    pool process, so after its task it shuts down warmly instead, and
    ``scripts/supervise.sh`` starts a fresh one.
    """
    limit = app.conf.worker_max_memory_per_child
    if not limit or current_process().name != "MainProcess":
        return
    if resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > limit:
        # celery-types declares should_stop as None; celery reads an exit code from it.
        worker_state.should_stop = 0  # type: ignore[assignment]  # a warm shutdown once this task is acknowledged

"""The Celery application: configured from Django settings (``CELERY_*``)."""

import os
import resource

from billiard.process import current_process
from celery import Celery
from celery.signals import task_postrun, task_prerun
from celery.worker import state as worker_state
from django.db import close_old_connections
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


@task_prerun.connect
@task_postrun.connect
def keep_the_database_connection(**_kwargs) -> None:
    """A task's process keeps its database connections from one task to the next, as a web process keeps them from
    one request to the next: closed only when unusable or older than ``CONN_MAX_AGE`` (Django's
    ``close_old_connections``, with the health check of ``CONN_HEALTH_CHECKS`` before the next use).

    Celery's Django fixup closes every connection before and after every task unless ``CELERY_DB_REUSE_MAX`` is set
    (the settings set it, so that it closes them only every that many tasks): a new PostgreSQL session a task,
    4-13 ms of every upload's wait before its scoring starts (measured on the 2-core machine).
    """
    close_old_connections()

"""Real Celery worker processes for end-to-end tests (no eager mode, no mocks).

``celery_worker_process`` (session) starts ``celery -A lexboard worker`` once,
against the test database (a file for SQLite, ``test_<name>`` for
PostgreSQL), the configured broker (``filesystem://`` in var/ or Redis) and a
queue of its own, so parallel test sessions and a developer's running worker
never take each other's messages. ``worker_factory`` starts extra workers
(e.g. prefork ones to kill in chaos tests) and stops them after the test.

Tests using a worker need ``transactional_db`` (the worker must see committed
rows) and are marked ``e2e``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from pytest_django.django_compat import is_django_unittest
from pytest_django.fixtures import validate_django_db

BASE_DIR = Path(__file__).resolve().parent.parent

# One queue per test session. Set before Django reads its settings when this
# plugin is imported early enough; the fixtures below read the queue from the
# settings either way, so the sending side and the worker always agree.
os.environ.setdefault("LEXBOARD_QUEUE", f"lexboard-test-{uuid.uuid4().hex[:12]}")

READY_TIMEOUT = float(os.environ.get("LEXBOARD_TEST_WORKER_READY_TIMEOUT", "90"))


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL naming the database this test process uses (the test database)."""
    engine = settings_dict["ENGINE"]
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3"):
        return f"sqlite:///{Path(name).resolve()}"
    if engine.endswith("postgresql"):
        user = quote(settings_dict.get("USER") or "", safe="")
        password = quote(settings_dict.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings_dict.get("HOST") or "127.0.0.1"
        port = settings_dict.get("PORT") or "5432"
        return f"postgres://{auth}{host}:{port}/{quote(name, safe='')}"
    raise RuntimeError(f"no worker support for database engine {engine}")


@dataclass
class WorkerProcess:
    """A running worker: its process, log file and queue."""

    process: subprocess.Popen
    log_path: Path
    queue: str
    hostname: str = ""
    _log: object = field(repr=False, default=None)
    _start_kwargs: dict = field(repr=False, default_factory=dict)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Kill the whole process group (the main process and its pool children)."""
        if self.alive:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 20) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL if it does not exit in time."""
        if self.alive:
            self.kill(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill(signal.SIGKILL)
                self.process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def children(self) -> list[int]:
        """The pids of this process's children (under ``scripts/supervise.sh``: the supervised command)."""
        return process_children(self.process.pid)

    @staticmethod
    def children_of(pid: int) -> list[int]:
        """The pids of another process's children (e.g. the pool processes of a prefork worker)."""
        return process_children(pid)

    def restart(self) -> None:
        """Start the same worker again (after a kill), in this same handle."""
        self.stop()
        fresh = start_worker(**self._start_kwargs)
        self.process, self._log, self.hostname = fresh.process, fresh._log, fresh.hostname

    def wait_idle(self, timeout: float = 60) -> bool:
        """Wait until this worker runs no task and holds none in reserve; False if it did not in time.

        A solo-pool worker answers a control message only between tasks (it runs
        a task in the callback that received it, so it holds none in reserve
        then): any answer means it is idle. Other pools are asked twice.
        """
        from lexboard.celery import app

        solo = self._start_kwargs.get("pool", "solo") == "solo"
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline:
            inspect = app.control.inspect(destination=[self.hostname], timeout=1.0, limit=1)
            active = inspect.active() or {}
            if self.hostname in active and not active[self.hostname]:
                if solo:
                    return True
                reserved = inspect.reserved() or {}
                if self.hostname in reserved and not reserved[self.hostname]:
                    return True
            time.sleep(0.05)
        return not self.alive

    def settle(self, queue: str, timeout: float = 60) -> bool:
        """Leave this worker nothing to do: ``queue`` purged, nothing running, nothing scheduled.

        Rounds until one finds nothing new: a task that was running may have
        sent more (a notice after its commit, a rescoring) or be due again
        later (a retry's or a countdown's ETA, held in the worker's timer,
        where ``active`` does not list it: revoked, so it never runs).
        """
        from lexboard.celery import app

        deadline = time.monotonic() + timeout
        revoked: set[str] = set()
        while self.alive and time.monotonic() < deadline:
            dropped = drop_messages(queue)
            if not self.wait_idle(timeout=max(0.0, deadline - time.monotonic())):
                return False
            inspect = app.control.inspect(destination=[self.hostname], timeout=1.0, limit=1)
            due = {entry["request"]["id"] for entry in (inspect.scheduled() or {}).get(self.hostname, [])} - revoked
            if due:
                app.control.revoke(sorted(due), destination=[self.hostname])
                revoked |= due
                continue
            if not dropped:
                return True
        return not self.alive


def process_children(pid: int) -> list[int]:
    """The pids of a process's direct children (Linux /proc)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def start_worker(
    *, database: str, queue: str, data_dir: Path, log_path: Path, pool: str = "solo", concurrency: int = 1,
    extra_env: dict | None = None, queues: list[str] | None = None, supervised: bool = False,
    beat: bool = False, cwd: Path | None = None, with_beat: bool = False,
) -> WorkerProcess:
    """Start ``celery -A lexboard worker`` (or ``beat``) and wait until it says it is ready.

    ``queues`` are the queues it consumes (default: ``queue``); ``supervised``
    runs it under ``scripts/supervise.sh`` as ``make run`` does, which starts
    it again when it dies; ``cwd`` runs the code of another tree (a scratch
    copy with a fault put in on purpose) instead of this one; ``with_beat``
    starts the worker as Celery's docs do, ``celery -A lexboard worker -B``:
    its default pool and concurrency, no ``-Q`` (the queues the settings
    declare), beat inside it (only a hostname, and a schedule file of the
    test's own, added).
    """
    from django.conf import settings

    hostname = "" if beat else f"e2e-{uuid.uuid4().hex[:8]}@lexboard-tests"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lexboard.settings.test",
        "DATABASE_URL": database,
        "LEXBOARD_QUEUE": queue,
        "LEXBOARD_DATA_DIR": str(data_dir),
        "LEXBOARD_VAR_DIR": str(settings.VAR_DIR),
        "PYTHONUNBUFFERED": "1",
        # No pages rendered ahead after a score: that work goes on after the "scored" a test waits for, and a
        # worker reading several tables while the test's teardown truncates them deadlocks the flush (seen in
        # CI). tests/submissions/test_render_ahead_worker.py turns it on for a worker of its own.
        "LEXBOARD_RENDER_AHEAD": "0",
        **(extra_env or {}),
    }
    if beat:
        command = [
            sys.executable, "-m", "celery", "-A", "lexboard", "beat", "--loglevel", "INFO",
            "--schedule", str(log_path.with_suffix(".schedule")),
        ]
        ready = b"beat: Starting..."
    elif with_beat:
        command = [
            sys.executable, "-m", "celery", "-A", "lexboard", "worker", "-B", "--loglevel", "INFO",
            "--hostname", hostname, "--schedule", str(log_path.with_suffix(".schedule")),
        ]
        ready = b" ready."
    else:
        command = [
            sys.executable, "-m", "celery", "-A", "lexboard", "worker",
            "--pool", pool, "--concurrency", str(concurrency),
            "-Q", ",".join(queues or [queue]), "--hostname", hostname,
            "--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]
        ready = b" ready."
    if supervised:
        command = [str(BASE_DIR / "scripts" / "supervise.sh"), *command]
        env["SUPERVISE_DELAY"] = env.get("SUPERVISE_DELAY", "1")
    offset = log_path.stat().st_size if log_path.exists() else 0  # a restart appends to the same log
    log = open(log_path, "ab")  # noqa: SIM115 (closed by WorkerProcess.stop)
    process = subprocess.Popen(
        command, cwd=cwd or BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    worker = WorkerProcess(
        process=process, log_path=log_path, queue=queue, hostname=hostname, _log=log,
        _start_kwargs={"database": database, "queue": queue, "data_dir": data_dir, "log_path": log_path,
                       "pool": pool, "concurrency": concurrency, "extra_env": extra_env, "queues": queues,
                       "supervised": supervised, "beat": beat, "cwd": cwd, "with_beat": with_beat},
    )
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if not worker.alive:
            worker.stop()
            raise RuntimeError(f"the Celery process exited at start:\n{worker.log()[-4000:]}")
        if ready in log_path.read_bytes()[offset:]:
            return worker
        time.sleep(0.2)
    worker.stop()
    raise RuntimeError(f"the Celery worker was not ready after {READY_TIMEOUT:.0f}s:\n{worker.log()[-4000:]}")


def drop_messages(queue: str, *, delete: bool = False) -> int:
    """Purge a queue on the broker (or delete it); how many messages it held (0 when it was never declared or
    the broker is gone)."""
    from lexboard.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            channel = conn.default_channel
            if delete:
                channel.queue_delete(queue)
                return 0
            return int(channel.queue_purge(queue) or 0)
    except Exception:  # a queue that was never declared, or a broker that is gone
        return 0


@pytest.fixture(scope="session", autouse=True)
def _purge_test_queue(worker_queue):
    """Drop the messages this session left in its own queues (the broker outlives the session)."""
    yield
    drop_messages(worker_queue)
    drop_messages(unread_queue_of(worker_queue), delete=True)


def unread_queue_of(worker_queue: str) -> str:
    """The session's queue that no worker reads (see ``_no_task_outlives_its_test``)."""
    return f"{worker_queue}-unread"


# A test asking for one of these sends its messages where it means to: to the session's worker, to workers
# it starts, or to a queue of its own.
ROUTING_FIXTURES = frozenset({"celery_worker_process", "worker_factory", "unread_queue", "s3_queue", "s3_worker",
                              "live_site"})  # (gunicorn sends to the session's queue, whatever this process does)
#: The session's worker once a test has started it: it reads the session's queue for every later test too.
SESSION_WORKER = pytest.StashKey["WorkerProcess"]()


def commits(request: pytest.FixtureRequest) -> bool:
    """Whether the test's database work is committed (a transactional test), so that a worker can see it."""
    if is_django_unittest(request):
        return False
    names = request.fixturenames
    if "transactional_db" in names or "live_server" in names:
        return True
    marker = request.node.get_closest_marker("django_db")
    if marker is None:
        return False
    transaction, reset_sequences, *_ = validate_django_db(marker)
    return bool(transaction or reset_sequences)


@pytest.fixture(autouse=True)
def _no_task_outlives_its_test(request, worker_queue):
    """No worker writes to the database while a transactional test's teardown empties it.

    The teardown of a transactional test truncates every table; a worker still
    scoring a run the test sent locks the same tables in another order, and
    PostgreSQL ends one of the two with "deadlock detected" (seen in CI, by a
    test that sent a run and checked only the answer). So, for every such test:

    - one that asks for no worker sends its messages to a queue no worker reads
      (the session's worker, started by an earlier test, would score them);
    - the database fixture is set up before every other fixture of the test, so
      its flush comes last: after the workers the test started have stopped,
      and after the session's worker (started by this test or an earlier one)
      has finished what the test or a server it started sent:
      ``WorkerProcess.settle``, after every committing test.
    """
    if not commits(request):
        yield
        return
    request.getfixturevalue("_django_db_helper")
    routed = not set(request.fixturenames) & ROUTING_FIXTURES
    if routed:
        send_to(unread_queue_of(worker_queue))
    try:
        yield
    finally:
        if routed:
            send_to(worker_queue)
    # Every committing test, whatever its fixtures: a server a test starts itself (as tests/security's
    # start_server does) inherits the session's queue from the environment and sends there (seen in CI).
    worker = request.config.stash.get(SESSION_WORKER, None)
    if worker is not None and worker.alive and not worker.settle(worker_queue):
        raise RuntimeError(f"the session's worker was still busy 60 s after the test:\n{worker.log()[-4000:]}")


@pytest.fixture(scope="session")
def private_data_dir(tmp_path_factory) -> Path:
    """The folder for uploaded runs in this test session (shared with the worker processes)."""
    return tmp_path_factory.mktemp("private-data")


@pytest.fixture(scope="session")
def worker_queue() -> str:
    """This session's queue, for the sending side (this process) and for the workers it starts.

    Django's settings are usually read before this plugin is imported, so the
    queue is set on the settings and on the Celery app directly, before any
    test sends a message (the autouse purge fixture requests this one first).
    """
    queue = os.environ["LEXBOARD_QUEUE"]
    if queue == "lexboard":  # the deployment's default: never share it with a running site
        queue = f"lexboard-test-{uuid.uuid4().hex[:12]}"
    send_to(queue)
    return queue


def send_to(queue: str) -> None:
    """Route the messages this process sends from now on to ``queue`` (settings and the Celery app)."""
    from django.conf import settings

    from lexboard.celery import app

    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    app.conf.task_default_queue = queue
    for cached in ("queues", "default_queue", "router"):
        app.amqp.__dict__.pop(cached, None)


@pytest.fixture
def unread_queue(worker_queue):
    """Messages sent during the test go to a queue no worker reads, deleted afterwards.

    For a test that sends runs through a live server and checks only what the
    requests answer: the session's worker (started by an earlier test) would
    score them meanwhile, and a worker writing to the database while the
    test's teardown truncates every table can deadlock the flush (seen in CI:
    "deadlock detected" at the teardown of tests/api/test_client.py).
    """
    from lexboard.celery import app

    unread = f"{worker_queue}-unread-{uuid.uuid4().hex[:8]}"
    send_to(unread)
    try:
        yield unread
    finally:
        send_to(worker_queue)
        try:
            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1)
                conn.default_channel.queue_delete(unread)
        except Exception:  # never declared, or the broker is gone: nothing to delete
            pass


@pytest.fixture(scope="session")
def celery_worker_process(request, django_db_setup, django_db_blocker, private_data_dir, worker_queue,
                          tmp_path_factory):
    """One real worker (solo pool, concurrency 1) for the whole session, stopped at the end."""
    from django.db import connection

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    # It outlives every test: its recovery of dead workers' submissions (submissions/worker_steps.py) would requeue
    # rows a later test leaves in "scoring" on purpose. The workers a test starts itself recover (tests/ops).
    worker = start_worker(database=url, queue=worker_queue, data_dir=private_data_dir, log_path=log_path,
                          extra_env={"LEXBOARD_RECOVERY_INTERVAL": "0"})
    request.config.stash[SESSION_WORKER] = worker
    yield worker
    del request.config.stash[SESSION_WORKER]
    worker.stop()


@pytest.fixture
def worker_factory(django_db_setup, django_db_blocker, private_data_dir, worker_queue, tmp_path):
    """Start more workers in a test (``worker_factory(pool="prefork")``); all are stopped afterwards."""
    from django.db import connection

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    started: list[WorkerProcess] = []

    def start(**kwargs) -> WorkerProcess:
        log_path = tmp_path / f"worker-{len(started)}.log"
        worker = start_worker(database=url, queue=worker_queue, data_dir=private_data_dir, log_path=log_path,
                              **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()

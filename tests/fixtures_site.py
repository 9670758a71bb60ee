"""A real gunicorn on the test database, for tests that attack or drive the site over HTTP.

``live_site`` (session) starts one gunicorn on a free port of 127.0.0.1 with
``DEBUG=0`` and the static files collected and served by WhiteNoise, as in
production, on the test database, the session's queue and its private run
folder, so the worker of ``tests/fixtures_worker.py`` scores what it
receives. Tests using it need ``transactional_db`` (gunicorn must see the
rows a test commits). Used by the browser tests and the attack tests
(``tests/security/``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def stop_server(server: subprocess.Popen) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM to its group, SIGKILL after 15 s."""
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=5)


@dataclass
class LiveSite:
    url: str
    log_path: Path

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


@contextlib.contextmanager
def serve_site(*, database_url: str, data_dir, worker_queue: str, var_dir, folder: Path, **extra_env: str):
    """Run gunicorn on a free loopback port on the test database (collectstatic first); stop it on exit.

    ``extra_env``: settings of this server alone (e.g. ORCID's keys and a local OAuth server in
    tests/accounts/test_orcid.py).
    """
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lexboard.settings.test",
        "DATABASE_URL": database_url,
        "LEXBOARD_QUEUE": worker_queue,
        "LEXBOARD_DATA_DIR": str(data_dir),
        "LEXBOARD_VAR_DIR": str(var_dir),
        "STATIC_ROOT": str(folder / "static"),
        "DEBUG": "0",
        "PYTHONUNBUFFERED": "1",
        **extra_env,
    }
    collect = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=180,
    )
    assert collect.returncode == 0, collect.stderr[-3000:]

    port = _free_port()
    log_path = folder / "gunicorn.log"
    log = open(log_path, "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lexboard.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--timeout", "60", "--graceful-timeout", "5", "--access-logfile", "-"],
        cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    site = LiveSite(url=f"http://127.0.0.1:{port}", log_path=log_path)
    try:
        deadline = time.monotonic() + 60
        while _get_status(f"{site.url}/healthz") != 200:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not come up:\n{site.log()}")
            time.sleep(0.2)
        yield site
    finally:
        stop_server(server)
        log.close()


@pytest.fixture(scope="session")
def live_site(django_db_setup, django_db_blocker, private_data_dir, worker_queue, tmp_path_factory):
    """A real gunicorn on a free loopback port, with the worker's database, queue, broker and run folder."""
    from django.conf import settings
    from django.db import connection

    from tests.fixtures_worker import database_url

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    with serve_site(database_url=url, data_dir=private_data_dir, worker_queue=worker_queue,
                    var_dir=settings.VAR_DIR, folder=tmp_path_factory.mktemp("gunicorn")) as site:
        yield site

"""Slow clients against gunicorn as `make run` starts it: /healthz keeps answering.

16 connections send a request line and then one header line a second for 30
seconds (a slowloris), while a client asks for /healthz every second. gunicorn
runs with the settings of scripts/run.sh (scripts/gunicorn.conf.py) on the
embedded default (SQLite, filesystem broker). Every /healthz must answer 200
within a few seconds; with the former 3 processes x 4 threads, none did.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures_site import stop_server
from tests.ports import free_port
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TRICKLERS = 16
TRICKLE_SECONDS = 30
ANSWER_WITHIN = 5.0



def healthz(base: str) -> int:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=ANSWER_WITHIN) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


@pytest.fixture
def make_run_gunicorn(tmp_path):
    """gunicorn with scripts/run.sh's command line, on a free port, the embedded default in tmp_path."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST") and k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL",
                                                        "WEB_CONCURRENCY", "GUNICORN_THREADS")}
    env.update(DJANGO_SETTINGS_MODULE="lexboard.settings", DEBUG="0", LEXBOARD_VAR_DIR=str(tmp_path / "var"),
               PYTHONPATH=str(ROOT))
    port = free_port()
    log = open(tmp_path / "gunicorn.log", "w+")  # noqa: SIM115 (closed below)
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lexboard.wsgi:application", "--config", "scripts/gunicorn.conf.py",
         "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while healthz(base) != 200:
        if server.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            os.killpg(server.pid, signal.SIGKILL)
            raise AssertionError(f"gunicorn did not come up:\n{log.read()[-3000:]}")
        time.sleep(0.3)
    try:
        yield base, port
    finally:
        stop_server(server)
        log.close()


def trickle(port: int, stop: threading.Event, opened: list) -> None:
    """A request line, then one header line a second until told to stop (never the blank line)."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    opened.append(sock)
    try:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        n = 0
        while not stop.wait(1.0):
            n += 1
            sock.sendall(f"X-Slow-{n}: {'a' * 10}\r\n".encode())
    except OSError:
        pass  # the server gave up on us: fine
    finally:
        sock.close()


def test_healthz_keeps_answering_while_16_clients_trickle_their_headers(make_run_gunicorn):
    base, port = make_run_gunicorn
    stop = threading.Event()
    opened: list = []
    threads = [threading.Thread(target=trickle, args=(port, stop, opened), daemon=True) for _ in range(TRICKLERS)]
    for thread in threads:
        thread.start()
    answers = []
    try:
        # every trickler connected and holding its request open
        wait_until(lambda: len(opened) == TRICKLERS, timeout=10, what=f"{TRICKLERS} clients connected", interval=0.05)
        deadline = time.monotonic() + TRICKLE_SECONDS
        while time.monotonic() < deadline:
            started = time.monotonic()
            answers.append(healthz(base))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
    unanswered = [i for i, status in enumerate(answers) if status != 200]
    assert len(answers) >= TRICKLE_SECONDS // ANSWER_WITHIN
    assert not unanswered, (f"{len(unanswered)} of {len(answers)} /healthz requests got no 200 within "
                            f"{ANSWER_WITHIN:.0f}s while {TRICKLERS} clients trickled: {answers}")

"""Database down under a running gunicorn: 503 with the friendly page, then recovery on its own.

On PostgreSQL, the web process reaches the server through a TCP proxy that
this test starts on 127.0.0.1; stopping the proxy is the outage. The shared
PostgreSQL server is never stopped. The site gets a throwaway database of its
own. On SQLite (the embedded default), the folder of the database file goes
away for a while.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import dj_database_url
import pytest

from tests.fixtures_site import stop_server

from .tcp_proxy import TcpProxy

pytestmark = [pytest.mark.chaos, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
DATABASE_URL = os.environ.get("DATABASE_URL", "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, *, timeout: float = 15) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()


def _wait_for(url: str, status: int, *, seconds: float) -> tuple[int, dict[str, str], str]:
    deadline = time.monotonic() + seconds
    last: tuple[int, dict[str, str], str] = (0, {}, "")
    while time.monotonic() < deadline:
        try:
            last = _get(url, timeout=5)
        except OSError:
            last = (0, {}, "")
        if last[0] == status:
            return last
        time.sleep(0.3)
    return last


@pytest.fixture
def throwaway_database():
    if not DATABASE_URL.startswith(("postgres://", "postgresql://")):
        pytest.skip("needs DATABASE_URL=postgres://... (the outage is cut with a TCP proxy in front of PostgreSQL)")
    import psycopg

    config = dj_database_url.parse(DATABASE_URL)
    name = f"lexboard_ops_chaos_{os.getpid()}"
    admin = dict(
        host=config["HOST"] or "127.0.0.1", port=int(config["PORT"] or 5432),
        user=config["USER"] or "postgres", password=config["PASSWORD"] or None, dbname="postgres",
    )
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {**admin, "dbname": name}
    finally:
        with psycopg.connect(**admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _url(db: dict, port: int) -> str:
    auth = db["user"] + (f":{db['password']}" if db["password"] else "")
    return f"postgres://{auth}@127.0.0.1:{port}/{db['dbname']}"


def _site_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="lexboard.settings",
        DEBUG="0",
        LEXBOARD_VAR_DIR=str(tmp_path / "var"),
        DATABASE_CONN_MAX_AGE="60",
        PYTHONPATH=str(ROOT),
    )
    env.pop("CACHE_URL", None)  # a per-process cache: the page must come from the database each time
    return env


def _migrate(env: dict[str, str], database_url: str) -> None:
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT, env={**env, "DATABASE_URL": database_url}, capture_output=True, text=True, timeout=300,
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]


@contextlib.contextmanager
def _gunicorn(env: dict[str, str], database_url: str, tmp_path: Path):
    """A real gunicorn serving the site on a free port; yields (base URL, log file)."""
    web_port = _free_port()
    log = open(tmp_path / "gunicorn.log", "w+")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "lexboard.wsgi:application", "--bind", f"127.0.0.1:{web_port}",
         "--workers", "1", "--timeout", "60", "--graceful-timeout", "5"],
        cwd=ROOT, env={**env, "DATABASE_URL": database_url}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{web_port}"
    try:
        status, _, body = _wait_for(f"{base}/healthz", 200, seconds=60)
        assert status == 200, f"the server did not come up: {status} {body}\n{_tail(log)}"
        yield base, log
    finally:
        stop_server(server)
        log.close()


def _assert_friendly_503(base: str, log, *, hide: str) -> None:
    status, headers, body = _get(f"{base}/")
    assert status == 503, f"{status}: {body[:500]}\n{_tail(log)}"
    assert headers.get("Retry-After", "").isdigit()
    assert "unavailable" in body.lower()
    assert "Traceback" not in body and "OperationalError" not in body and hide not in body
    status, _, body = _get(f"{base}/healthz")
    assert status == 503
    assert json.loads(body)["database"] == "failed"


def _assert_recovered(base: str, log) -> None:
    status, _, body = _wait_for(f"{base}/", 200, seconds=20)
    assert status == 200, f"no recovery: {status} {body[:300]}\n{_tail(log)}"
    status, _, body = _get(f"{base}/healthz")
    assert status == 200 and json.loads(body)["database"] == "ok"


def test_it_answers_503_while_the_database_is_away_and_recovers_by_itself(throwaway_database, tmp_path):
    db = throwaway_database
    env = _site_env(tmp_path)
    _migrate(env, _url(db, db["port"]))
    proxy = TcpProxy(db["host"], db["port"]).start()
    try:
        with _gunicorn(env, _url(db, proxy.port), tmp_path) as (base, log):
            status, _, _ = _get(f"{base}/")
            assert status == 200, _tail(log)

            proxy.stop()  # the outage
            _assert_friendly_503(base, log, hide=str(proxy.port))

            proxy.start()  # the database is back, same address
            _assert_recovered(base, log)
    finally:
        proxy.stop()


def test_it_answers_503_while_the_sqlite_file_is_unreachable_and_recovers(tmp_path):
    """The embedded default: the folder holding the SQLite file disappears for a while (a lost mount)."""
    env = _site_env(tmp_path)
    folder = tmp_path / "db"
    folder.mkdir()
    database_url = f"sqlite:///{folder / 'lexboard.sqlite3'}"
    _migrate(env, database_url)
    with _gunicorn(env, database_url, tmp_path) as (base, log):
        status, _, _ = _get(f"{base}/")
        assert status == 200, _tail(log)

        folder.rename(tmp_path / "db-away")  # the outage: SQLite cannot open the file any more
        _assert_friendly_503(base, log, hide=str(folder))

        (tmp_path / "db-away").rename(folder)
        _assert_recovered(base, log)


def _tail(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()[-3000:]

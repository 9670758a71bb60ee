"""Attacks on accounts against a running gunicorn (3 processes, as ``make run``): sign-up floods, password guessing.

Each server runs on the test database with a cache key prefix of its own.
The attacker's requests come from 127.0.0.1; the owner's from 127.0.0.2
(another loopback source address: a different client as the socket sees
it), or, behind the "proxy" (``LEXBOARD_TRUSTED_PROXY_COUNT=1``), from the
address the proxy writes into X-Forwarded-For.

* ten sign-ups from one address in a few seconds: most are refused, and
  forging X-Forwarded-For does not help;
* ten wrong passwords from one address lock that address out of the account,
  counted across all three gunicorn processes (the counters are in the shared
  cache), but never the owner's right password from another address;
* without trusted proxies a forged X-Forwarded-For is ignored.
"""

from __future__ import annotations

import http.client
import io
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest
from allauth.account.models import EmailAddress

from accounts.models import ApiToken
from lexboard_cli import client as lexclient
from submissions.models import Submission

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BASE_DIR = Path(__file__).resolve().parents[2]
PASSWORD = "the owner's long passphrase 2024"
LOCKED = "Too many failed login attempts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Visitor:
    """A browser in a few lines: cookies, the CSRF token, a source address, an optional X-Forwarded-For."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        self.port, self.source, self.cookies = port, source, {}

    def request(self, method: str, path: str, fields: dict | None = None, forwarded: str | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=(self.source, 0))
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if forwarded:
            headers["X-Forwarded-For"] = forwarded
        body = None
        if fields is not None:
            body = urlencode({**fields, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode("utf-8", "replace")
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        conn.close()
        return response.status, text

    def post(self, path: str, fields: dict, forwarded: str | None = None):
        if "csrftoken" not in self.cookies:
            self.request("GET", path, forwarded=forwarded)
        return self.request("POST", path, fields, forwarded=forwarded)

    def login(self, username: str, password: str, forwarded: str | None = None) -> tuple[int, str]:
        return self.post("/accounts/login/", {"login": username, "password": password}, forwarded)


@pytest.fixture(scope="module")
def start_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """Start gunicorn (3 processes) on the test database with extra environment; all stopped after the module."""
    from django.db import connection

    from tests.fixtures_worker import database_url

    with django_db_blocker.unblock():
        url = database_url(connection.settings_dict)
    servers = []

    def start(**env_extra) -> int:
        port = _free_port()
        log = tmp_path_factory.mktemp("gunicorn") / "log"
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "lexboard.settings.test", "DATABASE_URL": url, "DEBUG": "0",
               "LEXBOARD_TEST_CACHE_PREFIX": f"attack-{uuid.uuid4().hex[:12]}", **env_extra}
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "lexboard.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "3", "--timeout", "60", "--graceful-timeout", "5"],
            cwd=BASE_DIR, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
            start_new_session=True,
        )
        servers.append(process)
        deadline = time.monotonic() + 60
        while True:
            try:
                if Visitor(port).request("GET", "/healthz")[0] == 200:
                    return port
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)

    yield start
    for process in servers:
        os.killpg(process.pid, signal.SIGTERM)
    for process in servers:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def owner(transactional_db, django_user_model):
    user = django_user_model.objects.create_user("owner", "owner@example.org", PASSWORD)
    EmailAddress.objects.create(user=user, email="owner@example.org", primary=True, verified=True)
    return user


def test_ten_quick_signups_from_one_address_are_mostly_refused(start_server, transactional_db, django_user_model):
    port = start_server()
    attacker = Visitor(port)
    started = time.monotonic()
    for i in range(10):
        fields = {"username": f"sock{i}", "email": f"sock{i}@example.org",
                  "password1": "a long and unusual passphrase 42", "password2": "a long and unusual passphrase 42"}
        attacker.cookies.pop("sessionid", None)  # a fresh session, as a script would
        attacker.post("/accounts/signup/", fields, forwarded=f"203.0.113.{i}")  # forged: ignored
    elapsed = time.monotonic() - started
    created = django_user_model.objects.filter(username__startswith="sock").count()
    assert created <= 3, f"{created} of 10 sign-ups went through in {elapsed:.1f} s"
    # Another address may still sign up.
    status, _ = Visitor(port, source="127.0.0.2").post(
        "/accounts/signup/", {"username": "neighbour", "email": "neighbour@example.org",
                              "password1": "a long and unusual passphrase 42",
                              "password2": "a long and unusual passphrase 42"})
    assert status == 302
    assert django_user_model.objects.filter(username="neighbour").exists()


def test_ten_wrong_passwords_do_not_stop_the_owner_behind_the_proxy(start_server, owner):
    port = start_server(LEXBOARD_TRUSTED_PROXY_COUNT="1")
    attacker = Visitor(port)
    for _ in range(10):
        status, text = attacker.login("owner", "guess", forwarded="198.51.100.66")
        assert status == 200 and LOCKED not in text
    # The eleventh try from the guesser's address is refused, whichever gunicorn process answers.
    for _ in range(3):
        status, text = attacker.login("owner", PASSWORD, forwarded="198.51.100.66")
        assert status == 200 and LOCKED in text
    # The owner, behind the same proxy, from their own address.
    status, _ = Visitor(port).login("owner", PASSWORD, forwarded="192.0.2.10")
    assert status == 302


def test_a_forged_forwarded_for_is_ignored_without_trusted_proxies(start_server, owner):
    port = start_server(LEXBOARD_TRUSTED_PROXY_COUNT="0")
    attacker = Visitor(port)
    for i in range(10):
        attacker.login("owner", "guess", forwarded=f"203.0.113.{i}")
    status, text = attacker.login("owner", PASSWORD, forwarded="203.0.113.200")
    assert status == 200 and LOCKED in text
    # The owner from another socket address is not locked out.
    status, _ = Visitor(port, source="127.0.0.2").login("owner", PASSWORD)
    assert status == 302


def test_a_fresh_account_cannot_upload_to_the_hidden_split_until_its_address_is_verified(
    start_server, transactional_db, tiny_dataset, django_user_model, tmp_path, private_run_storage
):
    """Issue 12: free accounts made the per-account quota no limit. Sign up, take a token, upload: refused."""
    port = start_server()
    fields = {"username": "sockpuppet", "email": "sockpuppet@example.org",
              "password1": "a long and unusual passphrase 42", "password2": "a long and unusual passphrase 42"}
    assert Visitor(port, source="127.0.0.3").post("/accounts/signup/", fields)[0] == 302
    sock = django_user_model.objects.get(username="sockpuppet")
    _, key = ApiToken.issue(user=sock, name="attack")  # what the profile page hands out
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 3.0 sys\nq2 Q0 d3 1 2.0 sys\nq3 Q0 d4 1 1.0 sys\n")
    out, err = io.StringIO(), io.StringIO()
    argv = ["submit", "--url", f"http://127.0.0.1:{port}", "--token", key, "--dataset", "tiny", "--run", str(run),
            "--system-name", "probe", "--visibility", "private"]
    assert lexclient.main(argv, out=out, err=err) == 2, out.getvalue() + err.getvalue()
    assert "Verify your e-mail address before uploading to tiny/test" in err.getvalue()
    assert not Submission.objects.exists()

    # The mailed link clicked: the same upload goes through.
    EmailAddress.objects.filter(user=sock).update(verified=True)
    out, err = io.StringIO(), io.StringIO()
    assert lexclient.main(argv, out=out, err=err) == 0, out.getvalue() + err.getvalue()
    assert Submission.objects.filter(user=sock).count() == 1

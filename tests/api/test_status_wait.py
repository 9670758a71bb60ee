"""``GET /api/v1/submissions/<id>/?wait=<seconds>``: the status answer held until the run is final (issue #39).

Real PostgreSQL, real commits (``transaction=True``): the held request runs in a thread and a database connection
of its own, as a second client's would in a threaded server, while the test's thread changes the row
(tests/held_requests.py).
"""

from __future__ import annotations

import io
import socket
import threading
import time
from contextlib import contextmanager

import pytest
from django.db import connection, connections
from django.urls import reverse
from rest_framework.test import APIClient

from lexboard import long_poll
from submissions.models import Submission
from submissions.services import submission_score_now
from tests.held_requests import THREADED, held, timed
from tests.waiting import wait_until

from .conftest import PERFECT, run_bytes

#: A test whose request is held: real commits, seen by the held request's own connection (and no transaction around
#: the request, where nothing is held).
committed = pytest.mark.django_db(transaction=True)


def _client(*, token: str | None = None, user=None) -> APIClient:
    client = APIClient(**THREADED)
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    elif user is not None:
        client.force_authenticate(user)
    return client


def _queued(api, *, visibility: str = "private") -> int:
    data = {"dataset": "tiny", "system_name": "BM25", "visibility": visibility, "run_file": io.BytesIO(run_bytes(PERFECT))}
    data["run_file"].name = "run.txt"
    response = api.post(reverse("api:submissions"), data, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def _url(pk: int, wait=None) -> str:
    return reverse("api:submission", args=[pk]) + ("" if wait is None else f"?wait={wait}")


@pytest.fixture
def threaded(alice_token):
    return _client(token=alice_token)


def _is_held(client, pk: int) -> None:
    """``?wait=0.3`` on this (queued) submission is held its 0.3 s: the contrast of the tests that answer at once."""
    response, seconds = timed(client, _url(pk, 0.3))
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert seconds >= 0.28, f"answered at once ({seconds:.3f} s): not held"


@committed
def test_on_postgresql_a_held_answer_wakes_at_the_commit_that_announces_the_change(threaded, tiny_dataset,
                                                                                  monkeypatch):
    """The looks on their schedule pushed to 3 s apart: only the NOTIFY sent with the scoring's commit
    (``long_poll.announce`` in ``Submission._transition``) can wake the held request sooner. A connection left
    listening afterwards would be woken in its thread's later requests for nothing: checked that it is not."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY; elsewhere a held answer looks on its schedule")
    monkeypatch.setattr(long_poll, "FAST_EVERY", 3.0)
    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)
    pk = _queued(threaded, visibility="public")
    request = held(threaded, _url(pk, 10))
    time.sleep(0.3)
    scored = submission_score_now(pk)
    assert request.answer().json()["status"] == "scored"
    late = request.answered_at - scored.scored_at.timestamp()
    assert late < 1.0, f"seen {late:.3f} s after the commit: woken by the schedule, not the announcement"
    assert long_poll.hold(THREADED, seconds=1, settled=lambda: True)  # held here, on this thread's connection
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_listening_channels()")
        assert cursor.fetchone()[0] == 0  # and it listens no more


@committed
def test_on_postgresql_announcements_that_do_not_concern_a_held_request_cost_it_no_look(db, monkeypatch):
    """Another row's announcement, or its own row's status it does not wait for, is read and passed over; the one
    it waits for ends the pause at once. ``settled`` counts the looks (the schedule's pushed to 3 s apart)."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)
    looks: list[float] = []
    final = threading.Event()

    def settled() -> bool:
        looks.append(time.monotonic())
        return final.is_set()

    def wait() -> None:
        try:
            long_poll.hold(THREADED, seconds=8, settled=settled,
                           wakes=lambda key, status: key == "41" and status == "scored")
        finally:
            connections.close_all()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wait_until(lambda: long_poll.held() == 1, timeout=5, what="the hold")
    time.sleep(0.3)  # listening by now
    long_poll.announce(42, "scored")
    long_poll.announce(41, "scoring")
    time.sleep(0.5)
    assert len(looks) == 1 and waiter.is_alive()  # the one look as it began to listen, none since
    final.set()
    sent = time.monotonic()
    long_poll.announce(41, "scored")
    waiter.join(5)
    assert not waiter.is_alive() and len(looks) == 2 and looks[1] - sent < 1.0, looks


@committed
def test_on_postgresql_a_change_made_before_the_listen_is_seen_at_once(db, monkeypatch):
    """The row read by the view, then final before the held request listens: no announcement reaches it, so it
    looks once as soon as it listens (not after its first pause, pushed here to 3 s)."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)
    start = time.monotonic()
    assert long_poll.hold(THREADED, seconds=5, settled=lambda: True)
    assert time.monotonic() - start < 1.0


@committed
def test_on_postgresql_a_hold_leaves_no_announcement_behind_for_the_next_on_its_connection(db, monkeypatch):
    """An announcement read off the wire during the hold's last look waits in psycopg's backlog, where the thread's
    next hold on the same connection would find it at once: the hold drains it as it stops listening."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)

    def settled() -> bool:  # the look: meanwhile another session announces, and this one reads it with its reply
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, '7 scoring'), pg_sleep(0.05)", [long_poll.CHANNEL])
        return True

    assert long_poll.hold(THREADED, seconds=2, settled=settled)
    looks: list[float] = []
    long_poll.hold(THREADED, seconds=0.5, settled=lambda: bool(looks.append(time.monotonic())),
                   wakes=lambda key, status: True)
    assert len(looks) == 2, f"{len(looks)} looks: woken by an announcement left from the hold before"  # as it
    # began to listen, and at the end of its 0.5 s


@committed
def test_on_postgresql_a_connection_lost_while_held_is_the_api_s_503(threaded, tiny_dataset):
    """The pause waits in psycopg itself; a connection killed meanwhile raises Django's error, so the API answers
    in its own shape, as for any query that meets a database gone."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    pk = _queued(threaded)
    pids: list[int] = []
    original = long_poll._announcements

    @contextmanager
    def noting_the_backend(wakes):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.append(cursor.fetchone()[0])
        with original(wakes) as pause:
            yield pause

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(long_poll, "_announcements", noting_the_backend)
        request = held(threaded, _url(pk, 5))
        wait_until(lambda: pids, timeout=5, what="the held request's backend")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pids[0]])
        response = request.answer()
    assert response.status_code == 503, response.content
    assert set(response.json()) == {"error"}, response.content


@committed
def test_on_postgresql_the_api_s_waiter_looks_again_only_for_its_run_s_final_status(threaded, tiny_dataset,
                                                                                    monkeypatch):
    """The view's ``wakes``: its run's claim (``scoring``) and another run's score are passed over without a look;
    its run's score is looked at once."""
    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    from api import submissions as api_submissions

    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)
    looks: list[int] = []
    final = api_submissions._final
    monkeypatch.setattr(api_submissions, "_final", lambda pk: looks.append(pk) or final(pk))
    pk = _queued(threaded)
    request = held(threaded, _url(pk, 10))
    wait_until(lambda: looks, timeout=5, what="the look as it begins to listen")
    long_poll.announce(pk, "scoring")
    long_poll.announce(pk + 1, "scored")
    time.sleep(0.5)
    assert looks == [pk] and request.is_alive()
    scored = submission_score_now(pk)
    assert request.answer().json()["status"] == "scored"
    assert request.answered_at - scored.scored_at.timestamp() < 1.0 and len(looks) == 2, looks


@committed
def test_a_final_submission_is_answered_at_once_with_the_same_body(threaded, tiny_dataset):
    pk = _queued(threaded)
    _is_held(threaded, pk)
    submission_score_now(pk)
    response, seconds = timed(threaded, _url(pk, 5))
    assert response.status_code == 200 and response.json()["status"] == "scored"
    assert seconds < 0.5
    plain = threaded.get(_url(pk))
    assert response.json() == plain.json()
    assert sorted(response.headers.items()) == sorted(plain.headers.items())


@committed
def test_a_queued_submission_is_answered_after_the_wait_with_what_a_poll_answers(threaded, tiny_dataset):
    pk = _queued(threaded)
    response, seconds = timed(threaded, _url(pk, 0.5))
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert 0.45 <= seconds < 1.5, seconds
    assert response.json() == threaded.get(_url(pk)).json()
    assert long_poll.held() == 0  # the slot is given back


@committed
def test_a_score_landing_while_the_request_waits_is_answered_within_0_3_s(threaded, tiny_dataset):
    pk = _queued(threaded, visibility="public")
    request = held(threaded, _url(pk, 10))  # the bound itself
    time.sleep(0.2)
    scored = submission_score_now(pk)  # claimed (scoring: still waiting), scored, committed: this thread's connection
    body = request.answer().json()
    assert body["status"] == "scored" and body["scores"]
    late = request.answered_at - scored.scored_at.timestamp()
    assert late < 0.3, late
    assert body == threaded.get(_url(pk)).json()


@committed
def test_waiting_holds_no_transaction_open_between_its_checks(threaded, tiny_dataset):
    if connection.vendor != "postgresql":
        pytest.skip("reads PostgreSQL's pg_stat_activity; SQLite has no server sessions to look at")
    pk = _queued(threaded)
    request = held(threaded, _url(pk, 1.5))
    states = []
    while request.is_alive():
        with connection.cursor() as cursor:
            cursor.execute("SELECT state FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
                           "pg_backend_pid() AND state IS NOT NULL")
            states.extend(row[0] for row in cursor.fetchall())
        time.sleep(0.01)
    assert request.answer().json()["status"] == "queued"
    assert states and not [s for s in states if s.startswith("idle in transaction")], set(states)


@pytest.mark.django_db
@pytest.mark.parametrize("wait", ["0", "-1", "10.5", "11", "abc", "", "nan", "inf", "1_0", " 5", "1e400", "0x5"])
def test_a_wait_out_of_range_is_a_400_naming_the_parameter_and_its_range(threaded, tiny_dataset, wait):
    pk = _queued(threaded)
    response = threaded.get(reverse("api:submission", args=[pk]), {"wait": wait})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert "0 < wait ≤ 10" in error["message"]
    assert error["details"] == [{"line": None, "reason": "wait: a number of seconds, 0 < wait ≤ 10"}]


@committed
@pytest.mark.parametrize("wait", ["0.3", "3e-1", ".3"])
def test_a_wait_in_range_is_taken_in_any_decimal_spelling(threaded, tiny_dataset, wait):
    pk = _queued(threaded)
    response, seconds = timed(threaded, reverse("api:submission", args=[pk]) + f"?wait={wait}")
    assert response.status_code == 200 and seconds >= 0.28


@committed
def test_beyond_the_slots_a_request_is_answered_at_once(threaded, tiny_dataset, settings):
    settings.LEXBOARD_STATUS_WAIT_SLOTS = 1
    pk = _queued(threaded)
    first = held(threaded, _url(pk, 2))
    second, seconds = timed(threaded, _url(pk, 2))
    assert second.status_code == 200 and second.json()["status"] == "queued"
    assert seconds < 0.5, seconds
    assert first.is_alive()  # the first still holds its slot
    assert first.answer().json()["status"] == "queued"
    _is_held(threaded, pk)  # its slot given back, the next one is held again


@committed
def test_no_slot_means_no_wait(threaded, tiny_dataset, settings):
    pk = _queued(threaded)
    _is_held(threaded, pk)
    settings.LEXBOARD_STATUS_WAIT_SLOTS = 0
    response, seconds = timed(threaded, _url(pk, 2))
    assert response.json()["status"] == "queued" and seconds < 0.5


@committed
def test_a_server_without_threads_answers_at_once(api, threaded, tiny_dataset):
    """The test client, as gunicorn's sync worker, says ``wsgi.multithread`` false: holding would stop the process."""
    pk = _queued(api)
    _is_held(threaded, pk)
    response, seconds = timed(api, _url(pk, 2))
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert seconds < 0.5, seconds


@committed
@pytest.mark.parametrize("who", ["bob", "anonymous"])
def test_another_users_private_submission_is_refused_at_once_as_without_wait(threaded, tiny_dataset, bob, who):
    pk = _queued(threaded, visibility="private")
    _is_held(threaded, pk)  # its owner's request is held
    other = _client(user=bob) if who == "bob" else _client()
    hidden, seconds = timed(other, _url(pk, 5))
    assert seconds < 0.5, seconds  # nothing held: its time tells nothing either
    assert hidden.status_code == 404
    assert hidden.json() == other.get(_url(pk)).json() == other.get(_url(pk + 1000, 5)).json()


@committed
def test_a_submission_made_private_while_its_answer_is_held_is_refused_when_answered(threaded, tiny_dataset, bob):
    pk = _queued(threaded, visibility="public")
    request = held(_client(user=bob), _url(pk, 1))
    Submission.objects.filter(pk=pk).update(visibility=Submission.Visibility.PRIVATE)
    assert request.answer().status_code == 404


def test_a_held_request_stops_waiting_when_its_client_goes_away():
    """Under gunicorn the request sees its socket: the peer closing it ends the wait (the slot is given back).
    No database here: no transaction around the test."""
    server, client = socket.socketpair()
    try:
        threading.Timer(0.2, client.close).start()
        start = time.monotonic()
        assert long_poll.hold({"wsgi.multithread": True, "gunicorn.socket": server}, seconds=5, settled=lambda: False)
        assert time.monotonic() - start < 1
    finally:
        server.close()


def test_the_client_gone_probe_reads_nothing_and_tells_data_from_a_close():
    server, client = socket.socketpair()
    try:
        assert not long_poll.client_gone(server)
        client.sendall(b"GET / HTTP/1.1\r\n")  # a next request on the connection: still there, and left unread
        assert not long_poll.client_gone(server)
        assert server.recv(100) == b"GET / HTTP/1.1\r\n"
        client.close()
        assert long_poll.client_gone(server)
    finally:
        server.close()

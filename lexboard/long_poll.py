"""Answers that wait (a long poll): ``?wait=<seconds>`` on a status that is still moving.

A client following a submission's scoring used to ask again every few tenths of a second; with ``wait`` it asks
once and the server holds the answer until what the client waits for has happened or ``wait`` seconds have passed,
then answers exactly what it would have answered at once (the caller computes the answer again, through its usual
code, after :func:`hold`). ``GET /api/v1/submissions/<id>/`` and the run page's status JSON use it
(``api/submissions.py``, ``participants/views.py``).

What holding an answer costs, and the bounds on it:

- a thread of the web process for up to :data:`MAX_SECONDS`; so each process holds at most
  ``settings.LEXBOARD_STATUS_WAIT_SLOTS`` answers at a time (2 by default, gunicorn's gthread workers having 4
  threads here), and a request beyond them is answered at once, as without ``wait`` (the client asks again);
  0 turns waiting off;
- a server that runs one request per process at a time (gunicorn's sync worker, Django's test client: their
  ``wsgi.multithread`` is false) never holds an answer: it would stop the whole process;
- one narrow query by primary key (the caller's ``settled``) about every :data:`FAST_EVERY` seconds during the first
  :data:`FAST_FOR` seconds, then every :data:`SLOW_EVERY`; each is its own transaction (autocommit) and nothing is
  held open between two of them. On PostgreSQL a change is also announced (:func:`announce`: a ``NOTIFY`` on
  :data:`CHANNEL`, sent with the transaction that makes it, so at its commit and never after a rollback), and a
  held request listens on its own connection between two looks: it looks again as soon as anything is announced,
  so a run's final status is seen within milliseconds of its commit rather than within ``FAST_EVERY``; it then
  looks only every :data:`LISTENING_EVERY` seconds otherwise, for what is not announced (the page's progress, a
  change made by hand, an announcement missed).
  A request already inside a transaction (``ATOMIC_REQUESTS``, a test's) is answered
  at once: waiting there would hold the transaction open and never see another connection's commit in SQLite;
- a client that goes away: under gunicorn the request looks at its socket at each check and stops waiting once the
  peer has closed it (:func:`client_gone`; the answer is then written to nobody). Other servers give no socket
  (Django's dev server): the wait runs to its end, at most ``wait`` seconds, and only within the slots. Django's
  ``runserver --nothreading`` says it is threaded (``wsgiref`` always does) while it serves one request at a time:
  there a held answer holds up every other request for its seconds.
"""

from __future__ import annotations

import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connection

#: The longest answer held, and the name of the query parameter.
MAX_SECONDS = 10
PARAMETER = "wait"
#: How often the row is looked at while an answer is held: every FAST_EVERY s for the first FAST_FOR s, then every
#: SLOW_EVERY s (a run scored within two seconds is seen within 20 ms; a long one costs ten queries a second).
FAST_EVERY, FAST_FOR, SLOW_EVERY = 0.02, 2.0, 0.1
#: How often the row is looked at while the connection listens for announcements (PostgreSQL): a final status wakes
#: the request at its commit, so the looks are only for what is not announced (the page's progress, a row changed by
#: hand). Looking every 20 ms as well cost the scoring beside it CPU: a query and its backend 50 times a second.
LISTENING_EVERY = 0.25
#: The PostgreSQL channel status changes are announced on (its payload: the row's primary key).
CHANNEL = "lexboard_status"
#: A plain decimal number of seconds (``5``, ``0.5``, ``1e-1``): no sign, no ``nan``, ``inf``, ``_`` or spaces,
#: which Python's ``float`` would take.
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?")
RANGE = f"a number of seconds, 0 < {PARAMETER} ≤ {MAX_SECONDS}"


class WaitRefused(ValueError):
    """A ``wait`` that is not a number of seconds in (0, MAX_SECONDS]: ``message`` for a person, ``reason`` for the
    error's details (``wait: …``)."""

    def __init__(self, raw: str):
        self.message = f"{PARAMETER}={raw!r} is not {RANGE} (leave it out to be answered at once)."
        self.reason = f"{PARAMETER}: {RANGE}"
        super().__init__(self.message)


def parse_wait(raw: str | None) -> float | None:
    """The seconds ``?wait=`` asks for, None when it is absent; :class:`WaitRefused` for anything but a number in
    (0, :data:`MAX_SECONDS`]."""
    if raw is None:
        return None
    seconds = float(raw) if _NUMBER.fullmatch(raw) else math.nan
    if not 0 < seconds <= MAX_SECONDS:
        raise WaitRefused(raw)
    return seconds


# --- the slots of this process -------------------------------------------------------------------------

_lock = threading.Lock()
_held = 0


def held() -> int:
    """How many answers this process holds now."""
    return _held


@contextmanager
def _slot() -> Iterator[bool]:
    """A slot of this process for one held answer (True), or none free (False). The bound is read at each
    request: a changed setting applies at once."""
    global _held
    with _lock:
        taken = _held < settings.LEXBOARD_STATUS_WAIT_SLOTS
        if taken:
            _held += 1
    try:
        yield taken
    finally:
        if taken:
            with _lock:
                _held -= 1


# --- the wait -------------------------------------------------------------------------------------------


def check_every(elapsed: float) -> float:
    """Seconds until the next look at the row, ``elapsed`` seconds into the wait."""
    return FAST_EVERY if elapsed < FAST_FOR else SLOW_EVERY


def client_gone(sock: Any) -> bool:
    """Whether the peer of ``sock`` has closed the connection (a peek that reads nothing, without blocking).

    Bytes waiting (a next request on a kept-alive connection) or nothing yet mean it is still there; a socket
    that cannot be peeked at this way (TLS ends in gunicorn itself) is taken as still there.
    """
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError, ValueError):  # nothing yet; a TLS socket refuses flags (ValueError)
        return False
    except OSError:  # reset by the peer, or closed
        return True


def can_hold(meta: Mapping[str, Any]) -> bool:
    """Whether this request may be held at all: a server with threads, outside a transaction."""
    return bool(meta.get("wsgi.multithread")) and not connection.in_atomic_block


#: What a held request is woken by: ``(key, status)`` of an announcement -> whether it concerns the request.
Wakes = Callable[[str, str], bool]


def announce(key: int | str, status: str) -> None:
    """Tell the answers held in every web process that ``key``'s status is now ``status``: a PostgreSQL ``NOTIFY``
    on :data:`CHANNEL` (payload ``"<key> <status>"``), delivered when the transaction it is sent in commits (at once
    outside one) and never after a rollback. Nothing on other databases: there a held answer looks on its
    schedule."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, f"{key} {status}"])


@contextmanager
def _announcements(wakes: Wakes) -> Iterator[Callable[[float], None] | None]:
    """A pause of up to the given seconds that ends early when a change that ``wakes`` the request is announced
    (:func:`announce`), while this thread's PostgreSQL connection listens on :data:`CHANNEL`; None elsewhere, or
    when listening could not start (the caller sleeps on its schedule). Other announcements are read and passed
    over without a query. The connection stops listening afterwards (it serves the thread's next requests)."""
    raw = None
    if connection.vendor == "postgresql":
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"LISTEN {CHANNEL}")
            raw = connection.connection
        except Exception:  # listening is a speed-up only: the looks on their schedule remain
            raw = None
    if raw is None:
        yield None
        return

    def pause(seconds: float) -> None:
        end = time.monotonic() + seconds
        # psycopg's own errors as Django's (a connection lost meanwhile is the API's 503, as for any query).
        with connection.wrap_database_errors:
            while (left := end - time.monotonic()) > 0:
                got = woken = False
                for note in raw.notifies(timeout=left, stop_after=1):  # may give more than one: all are looked at
                    got = True
                    key, _, status = note.payload.partition(" ")
                    woken = woken or wakes(key, status)
                if woken or not got:  # what it waits for, or the time is up
                    return

    try:
        yield pause
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"UNLISTEN {CHANNEL}")
            # What arrived during the last look or the UNLISTEN waits in psycopg's backlog: the thread's next
            # hold on this connection would be woken by it at once.
            for _ in raw.notifies(timeout=0):
                pass
        except Exception:  # a connection gone meanwhile listens no more either
            pass


def hold(meta: Mapping[str, Any], *, seconds: float, settled: Callable[[], bool],
         wakes: Wakes = lambda key, status: True) -> bool:
    """Hold the request whose WSGI environment is ``meta`` until ``settled()`` is true (a narrow query), ``seconds``
    pass or the client goes away. False when it was not held at all (no slot free, a server without threads, a
    transaction open): the caller's first answer stands. True when it was: the caller answers afresh.

    ``settled`` is asked after each pause, and before the first only once the connection listens (PostgreSQL): a
    change committed between the caller's read of the row and the ``LISTEN`` is announced to nobody listening.
    There a pause ends early at an announcement that ``wakes(key, status)`` says concerns the request (its row, a
    status it waits for); other announcements cost no query.
    """
    if not can_hold(meta):
        return False
    with _slot() as taken:
        if not taken:
            return False
        sock = meta.get("gunicorn.socket")
        start = time.monotonic()
        deadline = start + seconds
        with _announcements(wakes) as woken:
            if woken is not None and settled():  # moved between the caller's read and the LISTEN: not announced here
                return True
            while (now := time.monotonic()) < deadline:
                if woken is None:
                    time.sleep(min(check_every(now - start), deadline - now))
                else:
                    woken(min(LISTENING_EVERY, deadline - now))
                if settled() or (sock is not None and client_gone(sock)):
                    break
    return True

"""Requests a server holds (``?wait=``, lexboard/long_poll.py), made in a thread of their own as a second client's.

``held(client, url)`` starts the request in a thread (with its own database connection, closed at its end) and
returns once the server holds it (it took one of the process's slots); ``.answer()`` joins it. The test's own
thread changes the row meanwhile, through its own connection: with ``transaction=True`` the held request sees the
commit as another client's would. The clients must say ``wsgi.multithread`` (``THREADED``): Django's test client
says false by default, as gunicorn's sync worker does, and nothing is held there.
"""

from __future__ import annotations

import threading
import time

from django.db import connections

from lexboard import long_poll
from tests.waiting import wait_until

#: The WSGI environment of a server with threads (gunicorn's gthread worker, Django's dev server).
THREADED = {"wsgi.multithread": True}


class Held(threading.Thread):
    """A GET in a thread of its own: ``response``, and ``answered_at`` (wall clock) once it is answered."""

    def __init__(self, client, url: str):
        super().__init__(daemon=True)
        self.client, self.url = client, url
        self.response = None
        self.answered_at: float | None = None

    def run(self) -> None:
        try:
            self.response = self.client.get(self.url)
            self.answered_at = time.time()
        finally:
            connections.close_all()

    def answer(self, timeout: float = 15):
        self.join(timeout)
        assert not self.is_alive(), f"{self.url} was not answered in {timeout} s"
        return self.response


def held(client, url: str) -> Held:
    """The request started, and held by the server."""
    before = long_poll.held()
    request = Held(client, url)
    request.start()
    wait_until(lambda: long_poll.held() > before or not request.is_alive(), timeout=10, what=f"{url} held")
    assert request.is_alive(), f"{url} was answered at once: {request.response and request.response.content!r}"
    return request


def timed(client, url: str):
    """The answer and the seconds it took."""
    start = time.monotonic()
    response = client.get(url)
    return response, time.monotonic() - start

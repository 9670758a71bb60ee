"""The run page's status JSON with ``?wait=<seconds>`` (static/js/status.js asks it so): held until the status or the
progress changes, answered as an ordinary request would be (issue #39).

Real PostgreSQL, real commits: the held request runs in a thread and a database connection of its own
(tests/held_requests.py).
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from submissions import services
from submissions.models import Submission
from tests.held_requests import THREADED, held, timed

from .conftest import GOOD_RUN, METADATA, upload

#: Real commits, seen by the held request's own connection (and no transaction around the request, where nothing
#: is held).
pytestmark = pytest.mark.django_db(transaction=True)


def _queued(user, split, visibility="private") -> Submission:
    return services.submission_create(user=user, split=split, upload=upload(GOOD_RUN),
                                      metadata={**METADATA, "visibility": visibility})


def _url(pk: int, wait=None) -> str:
    return reverse("participants:status", args=[pk]) + ("" if wait is None else f"?wait={wait}")


def _as(user) -> Client:
    client = Client(**THREADED)
    if user is not None:
        client.force_login(user)
    return client


def _is_held(client, pk: int) -> None:
    """``?wait=0.3`` on this run (queued) is held its 0.3 s: the contrast of the tests that answer at once."""
    response, seconds = timed(client, _url(pk, 0.3))
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert seconds >= 0.28, f"answered at once ({seconds:.3f} s): not held"


def test_on_postgresql_the_page_is_woken_by_its_run_being_claimed(alice, test_split, monkeypatch):
    """The page waits for any change of its run, ``scoring`` included: the claim's announcement wakes it (the looks
    on their schedule pushed to 3 s apart)."""
    from django.db import connection

    from lexboard import long_poll

    if connection.vendor != "postgresql":
        pytest.skip("announcements are PostgreSQL's NOTIFY")
    monkeypatch.setattr(long_poll, "FAST_EVERY", 3.0)
    monkeypatch.setattr(long_poll, "LISTENING_EVERY", 3.0)
    submission = _queued(alice, test_split)
    page = _as(alice)
    request = held(page, _url(submission.pk, 5))
    assert submission.claim()
    assert request.answer().json()["status"] == "scoring"
    assert request.answered_at - submission.updated_at.timestamp() < 1.0


def test_the_answer_comes_when_the_status_then_the_progress_changes(alice, test_split):
    submission = _queued(alice, test_split)
    page = _as(alice)
    request = held(page, _url(submission.pk, 5))
    assert submission.claim()  # queued -> scoring, as a worker does
    answer = request.answer()
    assert answer.json()["status"] == "scoring" and answer.json()["progress"] == 0.0
    assert request.answered_at - submission.updated_at.timestamp() < 0.3
    assert answer.json() == page.get(_url(submission.pk)).json()

    request = held(page, _url(submission.pk, 5))
    submission.heartbeat(0.4)  # the worker's heartbeat: the progress moves
    assert request.answer().json() == {**answer.json(), "progress": 0.4}


def test_a_run_that_does_not_move_is_answered_after_the_wait(alice, test_split):
    submission = _queued(alice, test_split)
    page = _as(alice)
    response, seconds = timed(page, _url(submission.pk, 0.5))
    assert 0.45 <= seconds < 1.5, seconds
    assert response.json() == page.get(_url(submission.pk)).json()
    assert response.json()["status"] == "queued" and response.json()["is_final"] is False


def test_a_final_run_is_answered_at_once(alice, test_split):
    submission = _queued(alice, test_split)
    page = _as(alice)
    _is_held(page, submission.pk)
    services.submission_score(submission.pk)
    response, seconds = timed(page, _url(submission.pk, 5))
    assert seconds < 0.5 and response.json()["is_final"] is True
    assert response.json() == page.get(_url(submission.pk)).json()


@pytest.mark.django_db  # nothing is held: no commit needed
@pytest.mark.parametrize("wait", ["0", "10.01", "soon", ""])
def test_a_wait_out_of_range_is_a_400_in_the_one_error_shape(alice, test_split, wait):
    submission = _queued(alice, test_split)
    response = _as(alice).get(reverse("participants:status", args=[submission.pk]), {"wait": wait})
    assert response.status_code == 400
    assert response.json() == {"error": {"message": response.json()["error"]["message"], "details": [
        {"line": None, "reason": "wait: a number of seconds, 0 < wait ≤ 10"}]}}


@pytest.mark.parametrize("who", ["bob", "anonymous"])
def test_another_users_private_run_is_refused_at_once_as_without_wait(alice, bob, test_split, who):
    submission = _queued(alice, test_split)
    _is_held(_as(alice), submission.pk)  # its owner's request is held
    other = _as(bob if who == "bob" else None)
    response, seconds = timed(other, _url(submission.pk, 5))
    assert response.status_code == other.get(_url(submission.pk)).status_code == 404
    assert seconds < 0.5, seconds

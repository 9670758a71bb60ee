"""Notifications through a real Celery worker: a team's run scored by the worker sends one e-mail after the
commit; a redelivered sending task sends nothing more; the reveal task publishes the board and tells the members.

The worker writes its e-mails to files (``LEXBOARD_TEST_EMAIL_DIR``: Django's file backend, since the
locmem outbox lives in the worker's memory); the sent-notifications table is read from the database.
"""

from __future__ import annotations

import pytest
from celery import current_app
from django.urls import reverse

from campaigns.models import PrivateBoard, SentNotification
from campaigns.notifications import SEND_TASK
from leaderboard.tasks import REVEAL_TASK
from submissions.models import Submission
from tests.waiting import wait_for_marker, wait_until

from .conftest import ALICE_RANKS, close, run_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
TIMEOUT = 90


def _wait(predicate, worker, what: str):
    wait_until(predicate, timeout=TIMEOUT, what=what, worker=worker)


def _mails(folder) -> list[str]:
    """Every message the worker wrote (Django's file backend ends each with a line of 79 dashes; two
    connections may share a file)."""
    text = "".join(p.read_text() for p in sorted(folder.glob("*.log")))
    return [m for m in text.split("-" * 79 + "\n") if m.strip()]


@pytest.fixture
def mail_worker(celery_worker_process, worker_factory, tmp_path):
    """A worker that writes its mail to a folder, alone on the session's queue.

    The session's shared worker consumes the same queue: left running, it took
    some of these tasks and sent their mail with its own backend (in the whole
    suite, not alone). It pauses for the test and starts again after.
    """
    celery_worker_process.stop()
    folder = tmp_path / "mail"
    folder.mkdir()
    try:
        yield worker_factory(extra_env={"LEXBOARD_TEST_EMAIL_DIR": str(folder)}), folder
    finally:
        celery_worker_process.restart()


def test_a_scored_run_is_mailed_once_by_the_worker_and_the_board_at_the_reveal(transactional_db, task_world, carol,
                                                                              client, mail_worker):
    worker, folder = mail_worker
    client.force_login(carol)
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(reverse("participants:upload", args=["coliee-t3"]) + "?split=test", {
        "run": SimpleUploadedFile("run.txt", run_bytes(ALICE_RANKS, "w")), "system_name": "worker run",
        "family": "lexical", "visibility": "public"})
    assert response.status_code == 302, response.content.decode()[:2000]
    run = Submission.objects.get(system_name="worker run")
    assert run.entrant_team_id == task_world.red.pk
    key = f"run-scored:{run.pk}"
    _wait(lambda: SentNotification.objects.filter(key=key, sent_at__isnull=False).exists(), worker, "the e-mail")
    mails = _mails(folder)
    assert len(mails) == 1 and "carol@example.org" in mails[0] and f"/submissions/{run.pk}/" in mails[0]
    sent_at = SentNotification.objects.get(key=key).sent_at

    # The same message delivered again (a redelivery after a lost acknowledgement): nothing more is sent.
    current_app.send_task(SEND_TASK, args=[SentNotification.objects.get(key=key).pk])
    wait_for_marker(worker)  # the redelivered task has run (and anything it sent)
    assert len(_mails(folder)) == 1 and SentNotification.objects.get(key=key).sent_at == sent_at

    # The reveal, as beat sends it: the worker publishes the board and mails each member once.
    close(task_world.phase)
    current_app.send_task(REVEAL_TASK)
    current_app.send_task(REVEAL_TASK)  # twice: idempotent
    _wait(lambda: SentNotification.objects.filter(kind="board_published", sent_at__isnull=False).count() == 3,
          worker, "the board's e-mails")
    assert PrivateBoard.objects.count() == 1
    assert PrivateBoard.objects.get().rows[0]["system"] == "worker run"
    # One run e-mail, three board e-mails (polled: on a loaded machine the last file may come a moment later).
    _wait(lambda: len(_mails(folder)) >= 4, worker, "four e-mails in the folder")
    wait_for_marker(worker)  # every task sent so far has run: no fifth e-mail is on its way
    assert len(_mails(folder)) == 4, list(SentNotification.objects.values_list("key", "sent_at"))

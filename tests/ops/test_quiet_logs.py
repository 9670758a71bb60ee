"""Logs carry no warning for normal work: a worker that scores a run and e-mails its owner says nothing at WARNING.

The worker is the one make run starts (solo pool) on this session's broker, with the console e-mail backend make run
uses: before, every e-mail came out as ``WARNING celery.redirected`` (Celery logs what a task prints at WARNING),
and on the embedded ``filesystem://`` broker every connection logged ``WARNING kombu.connection: No hostname was
supplied``. A warning in these logs should mean something is wrong.
"""

from __future__ import annotations

import re
import uuid

import pytest

from campaigns.models import SentNotification
from submissions.models import Submission
from tests.fixtures_worker import drop_messages, send_to
from tests.submissions.conftest import GOOD_RUN
from tests.submissions.test_e2e_worker import post_run
from tests.waiting import wait_until, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.private_storage]

WARNING_OR_WORSE = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b")


@pytest.fixture
def own_queue(worker_queue):
    """A queue of this test's own: an earlier test's leftover message (a duplicate its killed worker left in Redis)
    would be taken here for a row the flush deleted, and rightly logged as a warning."""
    queue = f"{worker_queue}-quiet-{uuid.uuid4().hex[:8]}"
    send_to(queue)
    try:
        yield queue
    finally:
        send_to(worker_queue)
        drop_messages(queue, delete=True)


def test_a_worker_scoring_a_run_and_mailing_its_owner_logs_no_warning(transactional_db, worker_factory, own_queue,
                                                                      client, alice, tiny_dataset):
    worker = worker_factory(queues=[own_queue], extra_env={
        "LEXBOARD_QUEUE": own_queue, "LEXBOARD_TEST_EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"})
    split = tiny_dataset.splits.get(name="test")
    client.force_login(alice)
    assert post_run(client, split, GOOD_RUN).status_code == 302
    run = Submission.objects.get()
    assert wait_until_final(run.pk, worker).status == Submission.Status.SCORED
    wait_until(lambda: SentNotification.objects.filter(key=f"run-scored:{run.pk}", sent_at__isnull=False).exists(),
               timeout=90, what="the e-mail", worker=worker)
    log = worker.log()
    assert "alice@example.org" in log and f"/submissions/{run.pk}/" in log  # the e-mail, printed whole
    assert [line for line in log.splitlines() if WARNING_OR_WORSE.search(line)] == [], log[-4000:]

"""No worker writes to the database while a transactional test's teardown empties it.

CI failed twice on "deadlock detected" in the teardown flush of a test that
sent a run and did not wait for it: the session's worker, started by an
earlier test, was scoring it while the flush truncated every table.
``tests/fixtures_worker._no_task_outlives_its_test`` sends the messages of a
test that asks for no worker to a queue no worker reads, and has the session's
worker finish what a test sent before the flush (``WorkerProcess.settle``:
its queue purged, nothing running, anything held for later revoked). These
tests check each part.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from lexboard.celery import app
from submissions.models import Submission
from submissions.services import submission_create
from submissions.services.queue import submission_enqueue
from tests.fixtures_worker import unread_queue_of
from tests.waiting import wait_for_marker, wait_until

from .conftest import GOOD_RUN

pytestmark = [pytest.mark.e2e]


def waiting_messages(queue: str) -> int:
    with app.connection_for_write() as conn:
        try:
            return conn.default_channel.queue_declare(queue=queue, passive=True).message_count
        except Exception:  # an empty queue is no key at all in Redis
            return 0


def send_a_run(user, dataset) -> Submission:
    split = dataset.splits.get(name="test")
    upload = SimpleUploadedFile("run.txt", GOOD_RUN.encode())
    return submission_create(user=user, split=split, upload=upload, metadata={"system_name": "sent, not awaited"})


def test_a_test_that_asks_for_no_worker_sends_to_a_queue_no_worker_reads(transactional_db, worker_queue, alice,
                                                                          tiny_dataset):
    unread = unread_queue_of(worker_queue)
    assert settings.CELERY_TASK_DEFAULT_QUEUE == unread
    before = waiting_messages(unread)
    submission = send_a_run(alice, tiny_dataset)
    assert waiting_messages(unread) == before + 1
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.QUEUED


def test_a_test_with_the_sessions_worker_sends_to_it(transactional_db, celery_worker_process, worker_queue):
    assert settings.CELERY_TASK_DEFAULT_QUEUE == worker_queue


def test_settle_revokes_a_task_the_worker_holds_for_later(transactional_db, celery_worker_process, worker_queue,
                                                          alice, tiny_dataset):
    """A retry or a countdown waits in the worker's timer, where ``active`` does not list it: revoked."""
    worker = celery_worker_process
    split = tiny_dataset.splits.get(name="test")
    submission = submission_create(user=alice, split=split, upload=SimpleUploadedFile("run.txt", GOOD_RUN.encode()),
                                   metadata={"system_name": "later"}, enqueue=False)
    taken = worker.log().count("] received")
    assert submission_enqueue(submission_id=submission.pk, countdown=2)
    wait_until(lambda: worker.log().count("] received") > taken, timeout=60, interval=0.02, worker=worker,
               what="the worker to take the message (held in its timer until its ETA)")
    assert worker.settle(worker_queue)
    wait_for_marker(worker, countdown=2.5)  # a marker due after it has run: its ETA is past
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.QUEUED
    assert "revoked" in worker.log().lower()


def test_wait_idle_returns_once_the_worker_has_finished_what_it_took(transactional_db, celery_worker_process,
                                                                    alice, tiny_dataset):
    worker = celery_worker_process
    taken = worker.log().count("] received")
    submission = send_a_run(alice, tiny_dataset)
    wait_until(lambda: worker.log().count("] received") > taken, timeout=60, interval=0.02, worker=worker,
               what="the worker to take the message")
    assert worker.wait_idle()
    assert Submission.objects.get(pk=submission.pk).status == Submission.Status.SCORED

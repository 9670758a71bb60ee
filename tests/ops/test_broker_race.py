"""The embedded broker under load: a worker reading ``filesystem://`` never takes a message file half written.

kombu's own filesystem transport writes a message into its final file name; a
worker listing the folder at that moment moves the file away and reads it
empty or cut, and the ``JSONDecodeError`` kills its consumer (lexboard/broker.py
writes under another name and renames). Here many large messages are sent to a
real worker, one every few milliseconds: every one must be run, by a worker that is
still alive, with no decoding error in its log. With kombu's transport (the
alias in lexboard/celery.py taken out) the worker dies within the first few
hundred messages.
"""

from __future__ import annotations

import random
import time
import uuid

import pytest
from django.conf import settings

from tests.waiting import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("filesystem"),
                       reason="the filesystem transport only (the embedded default)"),
]

MESSAGES = 150
#: Large enough that serialising and writing one takes milliseconds: the window in which kombu's transport shows
#: an empty or cut file to a worker that lists the folder.
PAYLOAD = "x" * 4_000_000


def test_a_worker_never_reads_a_message_file_half_written(worker_factory, worker_queue):
    from kombu.transport import resolve_transport

    from lexboard.broker import Transport
    from lexboard.celery import app

    assert resolve_transport("filesystem") is Transport
    queue = f"{worker_queue}-race-{uuid.uuid4().hex[:6]}"
    worker = worker_factory(queues=[queue])
    pause = random.Random(0)
    for _ in range(MESSAGES):
        # The worker idle between messages, listing the folder while the next one is written.
        app.send_task("celery.accumulate", args=(PAYLOAD,), queue=queue)
        time.sleep(pause.uniform(0, 0.03))

    def all_run() -> bool:
        assert "JSONDecodeError" not in worker.log(), worker.log()[-3000:]
        return worker.log().count("Task celery.accumulate[") >= MESSAGES

    wait_until(all_run, timeout=180, what=f"the worker to run all {MESSAGES} messages", worker=worker)

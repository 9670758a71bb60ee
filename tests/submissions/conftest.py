"""Helpers for the submissions tests: run files for the tiny dataset, uploads, isolated file storage."""

from __future__ import annotations

import gzip
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

#: A good run for the tiny dataset (tests/conftest.py): q1 finds d1 then d2, q2 misses d3
#: in the top 2 but finds it at 3, q3 finds d4 only.
GOOD_RUN = (
    "q1 Q0 d1 1 3.0 sys\n"
    "q1 Q0 d2 2 2.0 sys\n"
    "q1 Q0 d9 3 1.0 sys\n"
    "q2 Q0 d8 1 3.0 sys\n"
    "q2 Q0 d9 2 2.0 sys\n"
    "q2 Q0 d3 3 1.0 sys\n"
    "q3 Q0 d4 1 5.0 sys\n"
    "q3 Q0 d10 2 4.0 sys\n"
)


def good_run(n: int = 0) -> str:
    """GOOD_RUN under the run tag ``s<n>`` (same ranking, same length): a user's n-th copy is no duplicate upload."""
    return GOOD_RUN.replace(" sys\n", f" s{n:02d}\n") if n else GOOD_RUN


def upload(content: str | bytes, name: str = "run.txt") -> SimpleUploadedFile:
    data = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def gz(content: str | bytes) -> bytes:
    return gzip.compress(content.encode() if isinstance(content, str) else content)


METADATA = {"system_name": "BM25", "family": "lexical", "visibility": "public"}




@pytest.fixture
def test_split(tiny_dataset):
    return tiny_dataset.splits.get(name="test")


@pytest.fixture
def dev_split(tiny_dataset):
    return tiny_dataset.splits.get(name="dev")


def _reset_pools(app) -> None:
    from kombu import pools

    pools.reset()  # closes and forgets every pool, so the next send connects to the current URL
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None


class BrokerOutage:
    """Points the Celery app at a broker nobody listens on (a real refused connection, not a mock)."""

    def __init__(self):
        from lexboard.celery import app

        self.app = app
        self.saved = (app.conf.broker_url, app.conf.broker_transport_options)
        self.saved_env = os.environ.get("CELERY_BROKER_URL")
        self.down = False

    def start(self) -> None:
        _reset_pools(self.app)
        dead = "redis://127.0.0.1:9/0"
        # Celery prefers the CELERY_BROKER_URL environment variable over its configuration.
        if self.saved_env is not None:
            os.environ["CELERY_BROKER_URL"] = dead
        self.app.conf.broker_url = dead
        self.app.conf.broker_transport_options = {}
        self.down = True

    def restore(self) -> None:
        if self.down:
            _reset_pools(self.app)
            if self.saved_env is not None:
                os.environ["CELERY_BROKER_URL"] = self.saved_env
            self.app.conf.broker_url, self.app.conf.broker_transport_options = self.saved
            self.down = False


@pytest.fixture
def broker_down():
    outage = BrokerOutage()
    outage.start()
    yield outage
    outage.restore()

"""The serialising row locks never block a foreign-key check (PostgreSQL).

CI found a deadlock: an upload held its user row ``FOR UPDATE`` and inserted a
submission (the foreign key takes ``FOR KEY SHARE`` on the split row), while a
worker storing a result held the split row ``FOR UPDATE`` and inserted a row
referring to the same user. Each waited for the other. The locks that only
serialise (quota, result store, qrels switch) are ``FOR NO KEY UPDATE``, which
a foreign-key check does not wait for; two of them still exclude each other.
"""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError, connection, connections, transaction

from catalogue.models import QrelsVersion
from submissions.models import LadderBest, Submission
from submissions.services.locks import lock_uploader
from submissions.services.rescoring import split_lock

pytestmark = pytest.mark.django_db(transaction=True)


def _holding(lock, *, released: threading.Event, taken: threading.Event, errors: list) -> threading.Thread:
    def run():
        try:
            with transaction.atomic():
                lock()
                taken.set()
                released.wait(10)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
            taken.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _while_held(lock, act):
    """Run ``act`` on this connection while another connection holds ``lock``; the lock wait is capped at 2 s."""
    released, taken, errors = threading.Event(), threading.Event(), []
    thread = _holding(lock, released=released, taken=taken, errors=errors)
    try:
        assert taken.wait(10)
        assert not errors, errors
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            act()
    finally:
        released.set()
        thread.join(10)


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's; SQLite has one database lock")


def test_a_result_store_holding_the_split_does_not_block_an_upload_on_it(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="test")

    def insert_submission():
        Submission.objects.create(user=alice, split=split, system_name="during a store", original_name="run.txt")

    try:
        _while_held(lambda: split_lock(split.pk), insert_submission)
    except OperationalError as exc:  # the lock timeout: the insert waited for the split lock
        pytest.fail(f"inserting a submission waited for the split lock: {exc}")
    assert Submission.objects.filter(system_name="during a store").exists()


def test_an_upload_holding_its_user_does_not_block_a_row_that_refers_to_the_user(tiny_dataset, alice):
    split = tiny_dataset.splits.get(name="test")
    version = QrelsVersion.objects.filter(split=split).latest("version")

    def insert_ladder_row():
        LadderBest.objects.create(split=split, user=alice, qrels_version=version)

    try:
        _while_held(lambda: lock_uploader(alice), insert_ladder_row)
    except OperationalError as exc:
        pytest.fail(f"a row referring to the user waited for the upload's lock: {exc}")


def test_two_result_stores_on_one_split_still_exclude_each_other(tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    with pytest.raises(OperationalError, match="lock timeout"):
        _while_held(lambda: split_lock(split.pk), lambda: split_lock(split.pk))

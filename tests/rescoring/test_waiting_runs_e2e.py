"""Runs sent before a split's judgments exist are scored when the judgments are published, by every path.

A curator opens a split for runs before judgments (the TREC way); a run is
uploaded and waits (status ``waiting``: "scored when the curators publish
them"; the real worker puts a run it gets meanwhile back to waiting). Then the judgments arrive through one of the four
ways a curator publishes: the admin's import form, the admin's "publish"
action, ``import_dataset --publish``, and the importer's first version
(``import_trec`` called below the submissions side). Each time the same
worker must score the waiting run, with exactly what the metric core gives.

The split is hidden, and a hidden split releases a run only through the
Ladder: since its noisy margin (#37) a first run must improve on an empty run
on net + Laplace noise ≥ 8 topics. The importer tests' TREC release judges 5
topics, too few for any run to be released there, so the files are its wider
copy (``tests/data/import/trec_wide``: the same first six topics, 16 in all,
15 judged), where the run is right on every judged topic (net 15).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from catalogue.importers import import_trec
from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from submissions import disclosure
from submissions.models import Submission
from submissions.services import submission_create, submission_enqueue
from tests.waiting import wait_until

from .conftest import core_means, expected_means, upload

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TREC = Path(__file__).resolve().parent.parent / "data" / "import" / "trec_wide"
TIMEOUT = 90


def _other(q: int) -> str:
    """The document judged non-relevant on topic ``q`` in the release: doc1q up to topic 9, then wrapping at doc20."""
    return f"doc{q + 10}" if q <= 10 else f"doc{q - 10}"


RUN = "".join(f"{q} Q0 doc{q} 1 2.0 mine\n{q} Q0 {_other(q)} 2 1.0 mine\n" for q in range(1, 17))
QRELS = {str(q): {f"doc{q}": 1, _other(q): 0} for q in range(1, 16)}


@pytest.fixture
def waiting(transactional_db, celery_worker_process, alice):
    """A split opened for runs before judgments, and a run the worker could not score yet."""
    bench = Benchmark.objects.create(slug="trecish", name="TREC-ish")
    ds = Dataset.objects.create(
        benchmark=bench, slug="trecish", name="TREC-ish", docid_example="doc1",
        measures=["R@10", "nDCG@10"], primary_measure="nDCG@10",
    )
    corpus_set(dataset=ds, ids=[f"doc{i}" for i in range(1, 21)])
    split = Split.objects.create(dataset=ds, name="test", kind="test", hidden=True, open_before_judgments=True)
    for line in (TREC / "topics.tsv").read_text().splitlines():
        qid, text, category = line.split("\t")
        Topic.objects.create(split=split, qid=qid, text=text, category=category)
    submission = submission_create(
        user=alice, split=split, upload=upload(RUN, "mine.trec"),
        metadata={"system_name": "Mine", "family": "other", "visibility": "private"},
    )
    # Waiting at once: no message to the worker, the status says why.
    assert submission.status == Submission.Status.WAITING
    assert "scored when the curators publish them" in submission.events.get().message
    # A run the worker gets while there are no judgments (queued by hand here) goes back to waiting.
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.QUEUED)
    submission_enqueue(submission_id=submission.pk)
    wait_for(submission, Submission.Status.WAITING, celery_worker_process)
    assert Submission.objects.get(pk=submission.pk).failure_kind == ""
    return split, submission


def wait_for(submission, status: str, worker) -> Submission:
    def reached():
        row = Submission.objects.get(pk=submission.pk)
        return row if row.status == status else None

    try:
        return wait_until(reached, timeout=TIMEOUT, what=f"submission {submission.pk} {status}", worker=worker)
    except AssertionError as exc:
        row = Submission.objects.get(pk=submission.pk)
        events = list(row.events.values_list("status", "message"))
        raise AssertionError(f"submission {submission.pk} is {row.status} {events} ({row.error}): {exc}") from None


def assert_scored_on_current(split, submission, worker) -> None:
    row = wait_for(submission, Submission.Status.SCORED, worker)
    split = Split.objects.get(pk=split.pk)
    assert split.current_qrels is not None
    result = row.results.get(qrels_version=split.current_qrels)
    # Stored at full precision: exactly what the metric core gives.
    means, n_topics = core_means(split, split.current_qrels, RUN)
    assert result.scores == pytest.approx(means, rel=1e-12, abs=1e-12)
    assert result.n_queries == n_topics
    # Released as the hidden split releases it: the primary measure only, on the grid of the evaluated topics.
    shown = disclosure.released_scores(result, split=split)
    assert shown == expected_means(split, split.current_qrels, RUN)
    assert list(shown) == [split.dataset.primary_measure]


def test_the_admin_import_scores_the_waiting_run(waiting, client, staff, celery_worker_process):
    split, submission = waiting
    client.force_login(staff)
    response = client.post(
        reverse("admin:catalogue_dataset_import", args=[split.dataset.pk]),
        {
            "format": "trec", "split": "test", "hidden": "on", "note": "",
            "topics": SimpleUploadedFile("topics.tsv", (TREC / "topics.tsv").read_bytes()),
            "qrels": SimpleUploadedFile("test.qrels", (TREC / "test.qrels").read_bytes()),
        },
    )
    assert response.status_code == 200 and b"published" in response.content
    assert_scored_on_current(split, submission, celery_worker_process)


def test_the_admin_publish_action_scores_the_waiting_run(waiting, client, staff, celery_worker_process):
    split, submission = waiting
    version, _ = qrels_version_add(split=split, qrels=QRELS, publish=False)
    assert Split.objects.get(pk=split.pk).current_qrels is None
    client.force_login(staff)
    response = client.post(
        reverse("admin:catalogue_qrelsversion_changelist"), {"action": "publish", "_selected_action": [version.pk]}
    )
    assert response.status_code == 302
    assert_scored_on_current(split, submission, celery_worker_process)


def test_import_dataset_publish_scores_the_waiting_run(waiting, celery_worker_process):
    split, submission = waiting
    call_command(
        "import_dataset", format="trec", dataset="trecish", split="test", hidden=True, publish=True,
        topics=str(TREC / "topics.tsv"), qrels=str(TREC / "test.qrels"),
    )
    assert_scored_on_current(split, submission, celery_worker_process)


def test_the_importers_first_version_scores_the_waiting_run(waiting, celery_worker_process):
    split, submission = waiting
    import_trec(
        dataset=split.dataset, split="test", hidden=True,
        topics=("topics.tsv", (TREC / "topics.tsv").read_bytes()),
        qrels=("test.qrels", (TREC / "test.qrels").read_bytes()),
    )
    assert_scored_on_current(split, submission, celery_worker_process)


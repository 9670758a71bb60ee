"""A split without published judgments refuses uploads unless a curator opened it for runs before judgments."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalogue.models import Benchmark, Dataset, Split, Topic
from catalogue.services import corpus_set, qrels_version_add
from submissions.errors import UploadRefused
from submissions.models import Submission
from submissions.services import submission_create
from submissions.services.sweep import submissions_sweep


def upload(content: str) -> SimpleUploadedFile:
    return SimpleUploadedFile("run.trec", content.encode(), content_type="text/plain")


@pytest.mark.django_db
def test_a_split_without_judgments_refuses_uploads_unless_opened_before_judgments(alice):
    bench = Benchmark.objects.create(slug="b", name="B")
    ds = Dataset.objects.create(benchmark=bench, slug="closed", name="Closed", measures=["R@10"], primary_measure="R@10")
    corpus_set(dataset=ds, ids=["doc1"])
    split = Split.objects.create(dataset=ds, name="test", kind="test", hidden=True)
    Topic.objects.create(split=split, qid="1", text="?")
    with pytest.raises(UploadRefused, match="not open for uploads yet"):
        submission_create(user=alice, split=split, upload=upload("1 Q0 doc1 1 1.0 x\n"),
                          metadata={"system_name": "X", "family": "other"})
    assert not Submission.objects.exists()

    Split.objects.filter(pk=split.pk).update(open_before_judgments=True)
    split.refresh_from_db()
    assert split.waits_for_judgments and split.open_for_uploads
    taken = submission_create(user=alice, split=split, upload=upload("1 Q0 doc1 1 1.0 x\n"),
                              metadata={"system_name": "X", "family": "other"}, enqueue=False)
    assert taken.status == Submission.Status.WAITING
    assert taken.events.get().status == "waiting"


@pytest.mark.django_db
def test_the_sweep_queues_a_waiting_run_whose_judgments_the_publication_missed(alice, private_run_storage):
    """An upload saved while a publication committed is not seen by it: the sweep finds the run waiting."""
    bench = Benchmark.objects.create(slug="b", name="B")
    ds = Dataset.objects.create(benchmark=bench, slug="early", name="Early", measures=["R@10"], primary_measure="R@10")
    corpus_set(dataset=ds, ids=["doc1"])
    split = Split.objects.create(dataset=ds, name="test", kind="test", hidden=True, open_before_judgments=True)
    Topic.objects.create(split=split, qid="1", text="?")
    taken = submission_create(user=alice, split=split, upload=upload("1 Q0 doc1 1 1.0 x\n"),
                              metadata={"system_name": "X", "family": "other"}, enqueue=False)
    assert submissions_sweep() == {"resent": 0, "requeued": 0, "failed": 0}  # no judgments: it keeps waiting
    version, _ = qrels_version_add(split=split, qrels={"1": {"doc1": 1}}, publish=False)
    Split.objects.filter(pk=split.pk).update(current_qrels=version)  # published, without the signal
    assert submissions_sweep()["waiting_queued"] == 1
    assert Submission.objects.get(pk=taken.pk).status == Submission.Status.QUEUED

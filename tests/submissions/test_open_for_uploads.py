"""A split without published judgments refuses uploads unless a curator opened it for runs before judgments."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Benchmark, Dataset, Split, Topic
from leaderboard.services import corpus_set
from submissions.errors import UploadRefused
from submissions.models import Submission
from submissions.services import submission_create


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
    assert taken.status == Submission.Status.QUEUED

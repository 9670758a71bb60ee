"""New judgments: before the board leaves its current version, a snapshot keeps it as it stood."""

from __future__ import annotations

import pytest
from django.urls import reverse

from catalogue.models import Split
from snapshots.models import Snapshot
from submissions import services

from .test_rescoring_services import board, score_all, stage_v2

pytestmark = pytest.mark.django_db


def test_the_board_on_the_old_judgments_is_kept_at_the_switch(test_split, make_submission, client,
                                                              django_capture_on_commit_callbacks):
    subs = score_all(test_split, make_submission)
    on_v1 = board(test_split)
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)
    assert not Snapshot.objects.exists()  # staged: the board still shows v1
    for submission in subs.values():
        services.submission_rescore_on(submission_id=submission.pk, qrels_version_id=v2.pk)
    assert Split.objects.get(pk=test_split.pk).current_qrels_id == v2.pk

    snapshot = Snapshot.objects.get()
    assert snapshot.reason == Snapshot.Reason.QRELS and snapshot.qrels_version == 1
    assert "until v2 was published" in snapshot.note
    assert {r["system"]: r["scores"] for r in snapshot.rows} == on_v1
    assert {r["system"]: r["run_sha256"] for r in snapshot.rows} == {s: subs[s].sha256 for s in subs}
    assert all(len(r["run_sha256"]) == 64 for r in snapshot.rows)
    # The diff names the rescoring under v2.
    html = client.get(reverse("snapshots:diff", args=[snapshot.key])).content.decode()
    assert "Qrels: v1 then, v2 now" in html and "rescored under qrels v2" in html


def test_a_failing_snapshot_never_holds_up_the_switch(test_split, make_submission, monkeypatch,
                                                      django_capture_on_commit_callbacks):
    subs = score_all(test_split, make_submission, ["BM25"])
    v2, _, _ = stage_v2(test_split, django_capture_on_commit_callbacks)

    def broken(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("snapshots.services.snapshot_take", broken)
    services.submission_rescore_on(submission_id=subs["BM25"].pk, qrels_version_id=v2.pk)
    assert Split.objects.get(pk=test_split.pk).current_qrels_id == v2.pk and not Snapshot.objects.exists()

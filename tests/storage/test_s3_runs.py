"""Runs in S3-compatible object storage, scored by a worker that shares no folder with the web.

The web side (this process) stores uploads in a bucket of moto's standalone
server through django-storages and boto3; a real Celery worker, switched to
the same bucket by ``LEXBOARD_S3_*`` in its environment and given an empty
data folder, scores, rescores and fuses them. What a multi-machine deployment
relies on: web and workers share nothing but the database, the broker and the
bucket.
"""

from __future__ import annotations

import io

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from catalogue.models import Split
from catalogue.services import qrels_version_add
from submissions.models import Result, Submission
from submissions.services import qrels_version_publish_and_rescore
from tests.rescoring.conftest import NEW_QRELS, RUNS, core_means
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.own_cache]

#: Bounded waits: generous, the test machines are shared and slow.
TIMEOUT = 120




def api_upload(api: APIClient, system: str) -> int:
    data = {"dataset": "tiny", "split": "test", "system_name": system, "visibility": "public",
            "run_file": io.BytesIO(RUNS[system].encode())}
    data["run_file"].name = f"{system.lower()}.txt"
    response = api.post(reverse("api:submissions"), data, format="multipart")
    assert response.status_code == 202, response.content
    return response.json()["id"]


def wait_for(ids: list[int], worker, done) -> None:
    def finished() -> bool:
        failed = list(Submission.objects.filter(pk__in=ids, status=Submission.Status.FAILED).values("pk", "error"))
        assert not failed, (failed, worker.log()[-3000:])
        return done()

    wait_until(finished, timeout=TIMEOUT, what=f"submissions {ids} done", worker=worker)


def all_scored(ids: list[int]):
    return lambda: set(Submission.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"scored"}


def files_under(folder) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file()]


def test_uploads_go_to_the_bucket_and_a_worker_with_no_shared_folder_scores_and_rescores_them(
    transactional_db, s3_run_storage, s3_worker, tiny_dataset, alice, private_data_dir
):
    bucket = s3_run_storage
    api = APIClient()
    api.force_authenticate(alice)
    before = set(files_under(private_data_dir))
    ids = {system: api_upload(api, system) for system in RUNS}

    # Every run is an object under private/ in the bucket; none is a local file.
    names = {system: Submission.objects.get(pk=pk).run_file.name for system, pk in ids.items()}
    assert sorted(f"private/{name}" for name in names.values()) == bucket.keys("private/")
    assert set(files_under(private_data_dir)) == before
    acl = bucket.client.get_object_acl(Bucket=bucket.name, Key=f"private/{names['BM25']}")
    assert not [g for g in acl["Grants"] if "AllUsers" in str(g["Grantee"])], "a run must never be public"

    wait_for(list(ids.values()), s3_worker, all_scored(list(ids.values())))
    split = Split.objects.get(pk=tiny_dataset.splits.get(name="test").pk)
    v1 = split.current_qrels
    for system, pk in ids.items():
        # Stored at full precision, exactly the metric core's (the hidden split's pages release less: not tested here).
        assert Result.objects.get(submission_id=pk).scores == pytest.approx(
            core_means(split, v1, RUNS[system])[0], rel=1e-12, abs=1e-12)
    assert files_under(s3_worker.data_dir) == []

    # The web reads the runs back from the bucket too (the compare view's top documents).
    compared = api.get(reverse("api:compare"), {"submissions": f"{ids['BM25']},{ids['Dense']}"})
    assert compared.status_code == 200, compared.content

    # New judgments: the worker rescores every run from the bucket.
    v2, _ = qrels_version_add(split=split, qrels=NEW_QRELS, note="errata")
    assert qrels_version_publish_and_rescore(split=split, version=v2, small_change_reason="errata") == len(RUNS)
    wait_for(list(ids.values()), s3_worker,
             lambda: Result.objects.filter(submission_id__in=ids.values(), qrels_version=v2).count() == len(RUNS))
    for system, pk in ids.items():
        assert Result.objects.get(submission_id=pk, qrels_version=v2).scores == pytest.approx(
            core_means(split, v2, RUNS[system])[0], rel=1e-12, abs=1e-12)


def test_a_fusion_is_written_to_the_bucket_and_scored_by_a_worker_with_no_shared_folder(
    transactional_db, s3_run_storage, s3_worker, tiny_dataset, alice, bob, private_data_dir
):
    bucket = s3_run_storage
    api = APIClient()
    api.force_authenticate(alice)
    parts = [api_upload(api, "BM25"), api_upload(api, "Hybrid")]
    wait_for(parts, s3_worker, all_scored(parts))

    api.force_authenticate(bob)
    response = api.post(reverse("api:fusions"), {"submissions": parts, "k": 60}, format="json")
    assert response.status_code == 202, response.content
    fused = response.json()["id"]
    wait_for([fused], s3_worker, all_scored([fused]))

    fusion = Submission.objects.get(pk=fused)
    # The worker wrote the fused run into the bucket (kept for rescoring), nowhere else.
    assert fusion.run_file.name and f"private/{fusion.run_file.name}" in bucket.keys("private/")
    assert files_under(s3_worker.data_dir) == []
    assert set(fusion.results.get().scores) == set(tiny_dataset.measures)
    with fusion.run_file.open("rb") as fh:
        assert fh.read().startswith(b"q")

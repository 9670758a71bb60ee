"""What a researcher scripts besides uploading (issue #28, item 5): per-query values, PATCH, withdraw, tasks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from submissions.models import Submission
from submissions.services import submission_create, submission_score_now

from .conftest import PERFECT, WEAK, run_bytes

pytestmark = pytest.mark.django_db


def scored(user, split, ranking=PERFECT, **metadata) -> Submission:
    submission = submission_create(user=user, split=split, upload=SimpleUploadedFile("run.txt", run_bytes(ranking)),
                                   metadata={"system_name": "run", **metadata}, enqueue=False)
    return submission_score_now(submission.pk)


def token_client(user) -> APIClient:
    from accounts.models import ApiToken

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def test_per_query_values_of_a_public_dev_run(alice, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), WEAK, visibility="public")
    body = APIClient().get(f"/api/v1/submissions/{run.pk}/per-query").json()
    assert body["measures"] == ["R@10", "MAP@10", "MRR@10", "nDCG@10"] and body["split"] == "dev"
    rows = {row["qid"]: row for row in body["queries"]}
    assert set(rows) == {"q1", "q2", "q3"}  # q4 has no relevant document: not evaluated
    assert rows["q2"]["values"]["MRR@10"] == 0.5 and rows["q2"]["first_relevant_rank"] == 2
    assert rows["q1"]["n_relevant"] == 2 and body["scores_are"].startswith("fractions")


def test_per_query_values_are_refused_on_a_hidden_split_even_to_the_owner(api, alice, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="test"), visibility="public")
    response = api.get(f"/api/v1/submissions/{run.pk}/per-query")
    assert response.status_code == 403 and "hidden split" in response.json()["error"]["message"]
    assert "q1" not in response.content.decode()


def test_per_query_of_a_private_run_is_a_404_for_others(alice, bob, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), visibility="private")
    assert token_client(bob).get(f"/api/v1/submissions/{run.pk}/per-query").status_code == 404
    assert token_client(alice).get(f"/api/v1/submissions/{run.pk}/per-query").status_code == 200


def test_the_owner_patches_visibility_and_metadata(api, alice, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), visibility="private")
    response = api.patch(f"/api/v1/submissions/{run.pk}/", {"visibility": "public", "system_name": "BM25 k1=0.9",
                                                             "code_url": "https://github.com/a/b"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["visibility"] == "public" and response.json()["system_name"] == "BM25 k1=0.9"
    run.refresh_from_db()
    assert (run.visibility, run.code_url, run.description) == ("public", "https://github.com/a/b", "")


def test_a_patch_of_one_field_keeps_the_others(api, alice, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), visibility="private", description="tuned")
    response = api.patch(f"/api/v1/submissions/{run.pk}/", {"visibility": "public"}, format="json")
    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert (run.visibility, run.system_name, run.description) == ("public", "run", "tuned")


@pytest.mark.parametrize("body,field", [
    ('{"visibility": "everyone"}', "visibility"), ('{"system_name": ""}', "system_name"),
    ('{"paper_url": "https://example.a"}', "paper_url"), ('{"run_file": "x"}', "run_file"),
    ('{"id": 7}', "id"), ("[]", None), ("null", None), ("1", None),
    ('{"hardware": 0}', "hardware"), ('{"used_training_data": true}', "used_training_data"),
    ('{"training_data": "yes"}', "training_data"), ('{"could_have_seen": true}', "could_have_seen"),
    ('{"models_used": "bge"}', "models_used"),
    ('{"latency_ms": "12"}', "latency_ms"),
])
def test_a_patch_it_cannot_apply_is_a_400_naming_the_field(api, alice, tiny_dataset, body, field):
    run = scored(alice, tiny_dataset.splits.get(name="dev"))
    response = api.patch(f"/api/v1/submissions/{run.pk}/", body, content_type="application/json")
    assert response.status_code == 400, response.content
    if field:
        assert any(d["reason"].startswith(field) for d in response.json()["error"]["details"]), response.json()
    assert Submission.objects.get(pk=run.pk).system_name == "run"


def test_only_the_owner_patches_or_withdraws(alice, bob, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), visibility="public")
    other = token_client(bob)
    assert other.patch(f"/api/v1/submissions/{run.pk}/", {"visibility": "private"}, format="json").status_code == 403
    assert other.post(f"/api/v1/submissions/{run.pk}/withdraw").status_code == 403
    assert APIClient().post(f"/api/v1/submissions/{run.pk}/withdraw").status_code == 401
    assert Submission.objects.get(pk=run.pk).visibility == "public"


def test_withdraw_takes_the_run_off_the_board_once(api, alice, tiny_dataset):
    run = scored(alice, tiny_dataset.splits.get(name="dev"), visibility="public")
    board = "/api/v1/datasets/tiny/leaderboard?split=dev"
    assert [e["submission_id"] for e in APIClient().get(board).json()["entries"]] == [run.pk]
    response = api.post(f"/api/v1/submissions/{run.pk}/withdraw")
    assert response.status_code == 200 and response.json()["withdrawn"] is True
    assert APIClient().get(board).json()["entries"] == []
    again = api.post(f"/api/v1/submissions/{run.pk}/withdraw")
    assert again.status_code == 409 and "already withdrawn" in again.json()["error"]["message"]


def test_a_datasets_tasks_with_the_callers_team(api, alice, bob, tiny_dataset):
    from campaigns.models import Phase
    from campaigns.services import team_create

    now = timezone.now()
    phase = Phase.objects.create(split=tiny_dataset.splits.get(name="test"), title="Tiny task",
                                 opens_at=now - timedelta(days=1), closes_at=now + timedelta(days=1),
                                 daily_cap=2, total_cap=9, max_final_runs=2)
    team_create(phase=phase, user=alice, name="Red")
    mine = api.get("/api/v1/datasets/tiny/tasks").json()
    assert mine == [{**mine[0], "title": "Tiny task", "split": "test", "state": "open", "daily_cap": 2,
                     "total_cap": 9, "max_final_runs": 2, "my_team": {"name": "Red", "members": ["alice"]}}]
    assert token_client(bob).get("/api/v1/datasets/tiny/tasks").json()[0]["my_team"] is None
    left = {s["name"]: s["uploads_left"] for s in api.get("/api/v1/datasets/tiny/").json()["splits"]}
    assert left["test"] == {"today": 2, "total": 9, "month": None, "next_allowed_at": None, "team": "Red"}


def _json_run(ranking) -> bytes:
    import json

    return json.dumps({qid: {doc: 100.0 - rank for rank, doc in enumerate(docs, 1)} for qid, docs in ranking.items()
                       }).encode()


@pytest.mark.parametrize("gzipped", [False, True])
def test_an_mteb_or_ranx_json_run_is_scored_as_the_trec_run_it_stands_for(api, alice, tiny_dataset, gzipped):
    import gzip

    data = _json_run(WEAK)
    sent = gzip.compress(data) if gzipped else data
    upload = SimpleUploadedFile("predictions.json.gz" if gzipped else "predictions.json", sent)
    response = api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "dev", "system_name": "mteb",
                                                 "run_file": upload}, format="multipart")
    assert response.status_code == 202, response.content
    from_json = submission_score_now(response.json()["id"])
    from_trec = scored(alice, tiny_dataset.splits.get(name="dev"), WEAK)
    assert from_json.results.get().scores == from_trec.results.get().scores
    assert from_json.run_file.open("rb").read().startswith(b"q1 Q0 d9 1 99.0 predictions\n")
    # The uploaded JSON is kept as sent, and the double entry read it (not the converted run) with its own reader.
    assert from_json.json_file.open("rb").read() == sent
    assert from_json.results.get().verified_by["source"] == "json"
    assert from_trec.results.get().verified_by["source"] == "trec" and not from_trec.json_file


def test_a_json_run_with_problems_is_refused_naming_the_keys(api, tiny_dataset):
    upload = SimpleUploadedFile("run.json", b'{"q1": {"d1": "high", "d2": 0.3}, "q2": [1, 2]}')
    response = api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "dev", "system_name": "bad",
                                                 "run_file": upload}, format="multipart")
    assert response.status_code == 400
    error = response.json()["error"]
    assert "starts like a JSON run" in error["message"] and "2 problems" in error["message"]
    assert [d["reason"] for d in error["details"]] == [
        "query 'q1', document 'd1': the score 'high' is a string, not a number.",
        "query 'q2': a list of numbers where {docid: score} belongs; write {qid: {docid: score}}."]
    assert not Submission.objects.exists()

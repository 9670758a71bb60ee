"""The fusion explorer: fused runs scored through the normal path equal the command line's fuse + score."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from evaluation import cli
from submissions import disclosure
from submissions.models import Submission
from submissions.services import fusion_create, submission_score_now
from tests.users import participant
from tests.waiting import wait_until_final

from .conftest import N_TOPICS, qid, relevant_docs

BASE_DIR = Path(__file__).resolve().parents[2]


def write_inputs(tmp_path: Path, parts: list[Submission]) -> tuple[Path, list[Path]]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{qid(i)} 0 {d} 1\n" for i in range(N_TOPICS) for d in relevant_docs(i)))
    runs = []
    for part in parts:
        path = tmp_path / f"run{part.pk}.txt"
        with part.run_file.open("rb") as fh:
            path.write_bytes(fh.read())
        runs.append(path)
    return qrels, runs


def cli_scores(*args: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(list(args), stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


def stored_scores(submission: Submission) -> dict[str, float]:
    return submission.results.get().scores


def test_a_fusion_from_the_page_is_scored_like_the_command_lines_fuse_and_score(client, scored, alice, bob, tmp_path):
    a = scored("dev", alice, "shifted")
    b = scored("dev", bob, "random", seed=3)
    client.force_login(bob)
    response = client.post(reverse("participants:fusion"), {"ids": [a.pk, b.pk], "method": "rrf", "k": "60"})
    assert response.status_code == 302, response.content.decode()[:2000]
    fusion = Submission.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[-1]))
    assert fusion.user == bob and fusion.visibility == "private" and fusion.status == "queued"
    assert set(fusion.fusion_of.values_list("pk", flat=True)) == {a.pk, b.pk}
    assert fusion.fusion_params == {"method": "rrf", "parts": [a.pk, b.pk], "k": 60}
    assert not fusion.run_file and fusion.file_size == 0  # the worker fuses, not the web request
    html = client.get(fusion.get_absolute_url()).content.decode()
    assert "Waiting for a worker, which fuses the chosen runs and scores the result" in html
    assert "not written yet: the worker writes the fused run" in html
    fusion = submission_score_now(fusion.pk)
    assert fusion.status == "scored", fusion.error
    assert fusion.run_file and fusion.file_size > 0  # kept for rescoring and the top-k overlap

    qrels, runs = write_inputs(tmp_path, [a, b])
    with fusion.run_file.open("rb") as fh:
        stored_run = fh.read()
    fused = subprocess.run([sys.executable, "-m", "evaluation", "fuse", *map(str, runs), "--method", "rrf",
                            "--k", "60", "--depth", "100"], cwd=BASE_DIR, capture_output=True, text=True, timeout=120)
    assert fused.returncode == 0, fused.stderr
    (tmp_path / "fused.txt").write_text(fused.stdout)
    assert stored_run.decode() == fused.stdout  # the stored file is the command line's fused run
    assert fusion.sha256 == hashlib.sha256(stored_run).hexdigest()
    expected = json.loads(cli_scores("score", "--qrels", str(qrels), "--run", str(tmp_path / "fused.txt"),
                                     "--measures", "R@10,MAP@10,nDCG@10", "--depth", "100", "--json"))["measures"]
    assert stored_scores(fusion) == pytest.approx(expected, abs=1e-12)

    html = client.get(fusion.get_absolute_url()).content.decode()
    assert f"#{a.pk} shifted" in html and "Save as a public submission naming its parts" in html
    client.post(reverse("participants:visibility", args=[fusion.pk]), {"visibility": "public"})
    fusion.refresh_from_db()
    assert fusion.is_public


def test_a_combsum_fusion_through_the_api_is_pollable_and_matches_the_command_line(scored, alice, bob, tmp_path,
                                                                                   django_user_model):
    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")
    # Carol's first submission on the hidden split: the Ladder releases it (it beats an empty run), rounded.
    carol = participant("carol")
    api = APIClient()
    api.force_authenticate(carol)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk], "method": "combsum"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert set(body) == {"id", "status", "url"} and body["status"] == "queued"
    assert body["url"].endswith(reverse("api:submission", args=[body["id"]]))
    submission_score_now(body["id"])
    polled = api.get(body["url"]).json()
    assert polled["status"] == "scored"

    qrels, runs = write_inputs(tmp_path, [a, b])
    fused = cli_scores("fuse", *map(str, runs), "--method", "combsum", "--depth", "100")
    (tmp_path / "fused.txt").write_text(fused)
    expected = json.loads(cli_scores("score", "--qrels", str(qrels), "--run", str(tmp_path / "fused.txt"),
                                     "--measures", "R@10,MAP@10,nDCG@10", "--depth", "100", "--json"))["measures"]
    assert polled["released"] is True
    # A hidden split releases its primary measure only, on its grid (24 topics: 5 points).
    assert polled["scores"] == {"R@10": disclosure.on_grid(expected["R@10"], 0.05)} and polled["grid"] == 0.05
    # A fusion on a hidden split shows aggregates only, like any hidden-split submission.
    client = api
    client.force_authenticate(None)
    from django.test import Client

    web = Client()
    web.force_login(carol)
    html = web.get(reverse("participants:detail", args=[body["id"]])).content.decode()
    assert "Analyses" in html and "95% bootstrap intervals" not in html and "secretq" not in html


def test_the_web_request_does_not_read_the_parts_run_files(scored, alice, bob):
    a = scored("dev", alice, "shifted")
    b = scored("dev", bob, "random", seed=3)
    lost = a.run_file.name
    a.run_file.storage.delete(lost)  # were the request to read the parts, it would fail here
    api = APIClient()
    api.force_authenticate(bob)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk], "k": 60}, format="json")
    assert response.status_code == 202, response.content
    fusion = Submission.objects.get(pk=response.json()["id"])
    assert fusion.status == "queued" and not fusion.run_file and fusion.sha256 == ""

    # The worker finds the part's file gone: the fusion fails as the service's fault (no quota used).
    fusion = submission_score_now(fusion.pk)
    assert fusion.status == "failed" and fusion.failure_kind == "service"
    assert fusion.error["message"].startswith(f"The run file of #{a.pk} (")
    assert "cannot be read (it is missing)" in fusion.error["message"]
    assert "does not count against your quota" in fusion.error["message"]
    assert not fusion.run_file and not fusion.results.exists()


def test_a_fused_run_is_written_once_and_kept_for_rescoring(scored, alice, bob):
    from submissions.services.fusion import fused_run_ensure

    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted")
    api = APIClient()
    api.force_authenticate(bob)
    fusion_id = api.post(reverse("api:fusions"), {"submissions": [b.pk, a.pk], "method": "combsum"},
                         format="json").json()["id"]
    fusion = Submission.objects.get(pk=fusion_id)
    assert fused_run_ensure(submission=fusion) is True
    stored = fusion.run_file.name
    # A second attempt (a redelivered message) keeps the first file.
    again = Submission.objects.get(pk=fusion_id)
    assert fused_run_ensure(submission=again) is False and again.run_file.name == stored
    storage, folder = fusion.run_file.storage, str(Path(stored).parent)
    files_before = set(storage.listdir(folder)[1])
    stale = Submission.objects.get(pk=fusion_id)
    stale.run_file = ""  # an attempt that loaded the row before the file was recorded
    assert fused_run_ensure(submission=stale) is False and stale.run_file.name == stored
    assert set(storage.listdir(folder)[1]) == files_before  # its own copy removed again
    fusion = submission_score_now(fusion_id)
    assert fusion.status == "scored" and fusion.run_file.name == stored


def test_fusion_refuses_other_peoples_private_runs_and_wrong_counts(scored, alice, bob):
    a = scored("test", alice, "perfect")
    private = scored("test", alice, "shifted", visibility="private")
    api = APIClient()
    api.force_authenticate(bob)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, private.pk]}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == f"No public submission #{private.pk} is available to fuse."
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk]}, format="json")
    assert response.status_code == 400 and "submissions" in response.json()["error"]["message"]
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, a.pk]}, format="json")
    assert response.status_code == 400 and "twice" in response.json()["error"]["message"]
    assert Submission.objects.filter(user=bob).count() == 0
    # Her own private run is hers to fuse.
    api.force_authenticate(alice)
    assert api.post(reverse("api:fusions"), {"submissions": [a.pk, private.pk]}, format="json").status_code == 202


def test_a_fusion_counts_against_the_quota(scored, alice, bob, analysis_dataset):
    a = scored("test", alice, "perfect")
    b = scored("test", bob, "shifted")  # each one's first: released, so others may fuse them
    analysis_dataset.splits.filter(name="test").update(total_limit=2)
    api = APIClient()
    api.force_authenticate(bob)
    assert api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk]}, format="json").status_code == 202
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk], "k": 10}, format="json")
    assert response.status_code == 429 and "A fusion counts as a submission" in response.json()["error"]["message"]


def test_a_split_closed_to_submissions_is_closed_to_fusions(client, scored, alice, bob, analysis_dataset):
    a = scored("dev", alice, "perfect")
    b = scored("dev", bob, "shifted")
    analysis_dataset.splits.filter(name="dev").update(accepts_submissions=False)
    api = APIClient()
    api.force_authenticate(bob)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk]}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["message"] == "anal/dev does not accept submissions at the moment."
    client.force_login(bob)
    response = client.post(reverse("participants:fusion"), {"ids": [a.pk, b.pk], "method": "rrf", "k": "60"})
    assert response.status_code == 400 and "does not accept submissions" in response.content.decode()
    assert not Submission.objects.filter(user=bob).exclude(pk=b.pk).exists()


def test_the_fusion_page_lists_public_runs_of_the_split(client, scored, alice, bob):
    a = scored("dev", alice, "perfect", name="Visible run")
    scored("dev", alice, "shifted", name="Alice private run", visibility="private")
    client.force_login(bob)
    html = client.get(reverse("participants:fusion"), {"ids": str(a.pk)}).content.decode()
    assert "Visible run" in html and "Alice private run" not in html
    assert client.get(reverse("participants:fusion")).status_code == 200


def test_the_fusion_page_costs_the_same_queries_whatever_the_number_of_runs(client, scored, alice, bob,
                                                                           analysis_dataset,
                                                                           django_assert_max_num_queries):
    split = analysis_dataset.splits.get(name="test")
    first = scored("test", alice, "perfect", name="run 0")
    client.force_login(bob)
    with CaptureQueriesContext(connection) as one:
        assert client.get(reverse("participants:fusion"), {"split": split.pk}).status_code == 200
    for i in range(1, 6):
        scored("test", alice, "perfect", name=f"run {i}", tag=str(i))
    with django_assert_max_num_queries(len(one.captured_queries)):
        html = client.get(reverse("participants:fusion"), {"split": split.pk}).content.decode()
    assert f"#{first.pk} run 0" in html


@pytest.mark.e2e
@pytest.mark.slow
def test_a_fusion_is_scored_by_a_real_worker(transactional_db, celery_worker_process, scored, alice, bob):
    a = scored("dev", alice, "shifted")
    b = scored("dev", bob, "random", seed=3)
    api = APIClient()
    api.force_authenticate(bob)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk], "k": 60}, format="json")
    assert response.status_code == 202
    fusion = wait_until_final(response.json()["id"], celery_worker_process)
    assert fusion.status == "scored", (fusion.error, celery_worker_process.log()[-3000:])
    assert set(fusion.results.get().scores) == {"R@10", "MAP@10", "nDCG@10"}


def test_fusion_refuses_a_run_whose_file_was_removed_after_the_retention_period(scored, alice):
    a = scored("test", alice, "perfect")
    b = scored("test", alice, "shifted")
    Submission.objects.filter(pk=b.pk).update(file_removed_at=timezone.now())
    api = APIClient()
    api.force_authenticate(alice)
    response = api.post(reverse("api:fusions"), {"submissions": [a.pk, b.pk]}, format="json")
    assert response.status_code == 409
    assert f"#{b.pk} cannot be fused: its file removed after" in response.json()["error"]["message"]
    assert Submission.objects.filter(user=alice).count() == 2


def test_a_public_fusion_does_not_name_its_owners_private_parts(client, scored, alice, bob):
    """A private entry's name is its owner's: a fusion made public shows that part by its number only."""
    secret = scored("dev", bob, "shifted", name="Secret system v7", visibility="private")
    other = scored("dev", alice, "random", seed=3)
    fusion = fusion_create(user=bob, parts=[secret, other], method="rrf", k=60)
    fusion = submission_score_now(fusion.pk)
    assert "Secret system v7" not in fusion.description and f"#{secret.pk}" in fusion.description
    Submission.objects.filter(pk=fusion.pk).update(visibility="public")
    html = client.get(fusion.get_absolute_url()).content.decode()  # a visitor
    assert "Secret system v7" not in html
    assert f"#{secret.pk} " in html and "(a private entry)" in html
    assert f"#{other.pk} random" in html


def test_the_fusion_form_is_throttled_like_uploads(client, scored, alice, bob, settings):
    a = scored("dev", alice, "shifted")
    b = scored("dev", bob, "random", seed=3)
    settings.LEXBOARD_UPLOAD_RATE = "1/h"
    client.force_login(bob)
    first = client.post(reverse("participants:fusion"), {"ids": [a.pk, b.pk], "method": "rrf", "k": "60"})
    assert first.status_code == 302
    second = client.post(reverse("participants:fusion"), {"ids": [a.pk, b.pk], "method": "combsum"})
    assert second.status_code == 429 and "Too many uploads in a short time" in second.content.decode()
    assert Submission.objects.filter(user=bob, fusion_params__method="combsum").count() == 0

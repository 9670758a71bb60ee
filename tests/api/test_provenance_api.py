"""Provenance through the API and the client: written at upload and by PATCH, read back, refused where a split
requires it (naming the field, before any slot is used), and stated in the schema with static enums."""

from __future__ import annotations

import io

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from submissions.models import Submission
from submissions.provenance import CouldHaveSeen, TrainingData
from submissions.selectors import submission_quota
from submissions.services import submission_score_now

from .conftest import PERFECT, WEAK, run_bytes
from .test_client import run_client

STATED = {"training_data": "web_scale", "could_have_seen": "corpus",
          "models_used": "intfloat/multilingual-e5-large MIT\nopenai:gpt-4o proprietary"}


def upload(api, ranking=PERFECT, **fields):
    data = {"dataset": "tiny", "system_name": "e5", "run_file": io.BytesIO(run_bytes(ranking)), **fields}
    data["run_file"].name = "run.txt"
    return api.post(reverse("api:submissions"), data, format="multipart")


@pytest.fixture(autouse=True)
def _own_cache(own_cache_namespace):
    """Ids and cache versions repeat across runs: each test reads its own boards."""


@pytest.fixture
def requiring(tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    split.requires_provenance = True
    split.save()
    return split


@pytest.mark.django_db
def test_an_upload_states_provenance_and_reads_it_back(api, tiny_dataset):
    response = upload(api, training_data_note="e5 as released; no tuning", **STATED)
    assert response.status_code == 202, response.content
    body = api.get(response.json()["url"]).json()
    assert (body["training_data"], body["could_have_seen"], body["disclosed"], body["missing_provenance"]) == (
        "web_scale", "corpus", True, [])
    assert body["models"] == [{"id": "intfloat/multilingual-e5-large", "licence": "MIT"},
                              {"id": "openai:gpt-4o", "licence": "proprietary"}]
    assert body["training_data_note"] == "e5 as released; no tuning"


@pytest.mark.django_db
def test_a_split_that_requires_provenance_refuses_an_api_upload_without_it(api, alice, requiring):
    before = submission_quota(user=alice, split=requiring).daily_remaining
    response = upload(api, training_data="web_scale")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert "asks every entry to state its provenance" in error["message"]
    assert [d["reason"].split(":")[0] for d in error["details"]] == ["could_have_seen", "models_used"]
    assert not Submission.objects.exists()
    assert submission_quota(user=alice, split=requiring).daily_remaining == before
    split = api.get(reverse("api:dataset", args=["tiny"])).json()["splits"]
    assert {s["name"]: s["requires_provenance"] for s in split} == {"test": True, "dev": False}
    assert upload(api, **STATED).status_code == 202


@pytest.mark.django_db
def test_a_patch_states_provenance_and_rescores_nothing(api, alice, tiny_dataset):
    created = upload(api, split="dev").json()
    sub = Submission.objects.get(pk=created["id"])
    response = api.patch(created["url"], {"could_have_seen": "no", "training_data": "none"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["disclosed"] is True
    sub.refresh_from_db()
    assert (sub.status, sub.training_data, sub.could_have_seen) == ("queued", "none", "no")
    bad = api.patch(created["url"], {"models_used": "e5"}, format="json")
    assert bad.status_code == 400 and "models_used: line 1: 'e5' has no licence" in bad.json()["error"]["details"][0][
        "reason"]


@pytest.mark.django_db
def test_the_leaderboard_entries_carry_provenance(api, tiny_dataset, client):
    sub = submission_score_now(upload(api, split="dev", visibility="public", **STATED).json()["id"])
    # (Another address than the requests below: a score's commit renews cached pages, and this test never commits.)
    entries = client.get(reverse("api:leaderboard", args=["tiny"]) + "?split=dev&sort=R@10").json()["entries"]
    entry = next(e for e in entries if e["submission_id"] == sub.pk)
    assert (entry["training_data"], entry["could_have_seen"], entry["disclosed"]) == ("web_scale", "corpus", True)
    assert entry["models"][0] == {"id": "intfloat/multilingual-e5-large", "licence": "MIT"}
    silent = submission_score_now(upload(api, WEAK, split="dev", visibility="public", system_name="silent").json()["id"])
    board = reverse("api:leaderboard", args=["tiny"]) + "?split=dev"
    ids = lambda query: [e["submission_id"] for e in client.get(board + query).json()["entries"]]  # noqa: E731
    assert set(ids("")) >= {sub.pk, silent.pk}
    assert ids("&disclosed=true") == [sub.pk]
    assert ids("&training_data=unknown") == [silent.pk]
    assert ids("&could_have_seen=no&could_have_seen=corpus") == [sub.pk]
    refused = client.get(board + "&training_data=yes")
    assert refused.status_code == 400 and "training_data: 'yes' is not one of none, train_split" in refused.json()[
        "error"]["message"]


@pytest.mark.django_db
def test_the_schema_states_the_vocabulary_as_static_enums(client):
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    assert not [q for q in queries.captured_queries if "submission" in q["sql"].lower()]  # not read from the rows
    schema = response.json() if response["Content-Type"].endswith("json") else yaml.safe_load(response.content)
    components = schema["components"]["schemas"]

    def enum(component: str, prop: str) -> set[str]:
        spec = components[component]["properties"][prop]
        while "enum" not in spec:
            ref = spec.get("$ref") or next(p["$ref"] for p in spec.get("allOf", []) + spec.get("oneOf", [])
                                           if "$ref" in p)
            spec = components[ref.rsplit("/", 1)[-1]]
        return set(spec["enum"]) - {None, ""}

    form = schema["paths"]["/api/v1/submissions/"]["post"]["requestBody"]["content"]["multipart/form-data"]
    upload_form = form["schema"]["$ref"].rsplit("/", 1)[-1]
    for component in (upload_form, "Submission", "LeaderboardEntry"):
        assert enum(component, "training_data") == set(TrainingData.values), component
        assert enum(component, "could_have_seen") == set(CouldHaveSeen.values), component
    assert "models_used" in components[upload_form]["properties"]
    assert components["Submission"]["properties"]["models"]["type"] == "array"


@pytest.mark.django_db(transaction=True)
def test_the_client_is_refused_on_a_split_that_requires_provenance_in_its_own_terms(
        live_server, requiring, alice_token, tmp_path):
    run = tmp_path / "run.txt"
    run.write_bytes(run_bytes(PERFECT))
    base = ["submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--run", run,
            "--system-name", "e5"]
    code, _, err = run_client(*base, "--training-data", "web_scale")
    assert code == 2, err
    assert "HTTP 400" in err and "--could-have-seen: say whether" in err and "--model: list the models" in err
    assert not Submission.objects.exists()
    code, out, err = run_client(*base, "--training-data", "web_scale", "--could-have-seen", "corpus",
                                "--model", "intfloat/multilingual-e5-large MIT")
    assert code == 0, err
    assert Submission.objects.get(pk=int(out.split()[1])).disclosed
    # The deprecated flag still reads as the train split (and says it is deprecated).
    tuned = tmp_path / "tuned.txt"
    tuned.write_bytes(run_bytes(WEAK))
    code, out, err = run_client(*base[:-3], tuned, "--system-name", "e5 tuned", "--used-training-data",
                                "--could-have-seen", "no", "--model", "intfloat/multilingual-e5-large MIT")
    assert code == 0, err
    assert "--used-training-data is deprecated" in err
    assert Submission.objects.get(pk=int(out.split()[1])).training_data == "train_split"


def test_the_client_refuses_a_value_outside_the_vocabulary_before_sending(tmp_path, capsys):
    code, _, _ = run_client("submit", "--url", "http://127.0.0.1:9", "--token", "x", "--dataset", "tiny",
                              "--run", tmp_path / "none.txt", "--system-name", "x", "--training-data", "yes")
    assert code == 2 and "invalid choice: 'yes'" in capsys.readouterr().err

"""What a participant can PATCH, the API returns (issue #38, item 8): every field of ``METADATA_FIELDS`` comes
back in the answer to the PATCH, in a later GET and in the schema's Submission; an anonymous entry's team and links
only to its owner."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from submissions.services import METADATA_FIELDS, submission_create

from .conftest import PERFECT, run_bytes

pytestmark = pytest.mark.django_db

#: A value for each field a PATCH takes, none of them the field's default.
CHANGED = {
    "system_name": "BM25 k1=0.9",
    "description": "Tuned on the dev split.",
    "team": "Example Lab",
    "paper_url": "https://arxiv.org/abs/2301.00001",
    "code_url": "https://github.com/example/bm25",
    "family": "lexical",
    "training_data": "web_scale",
    "training_data_note": "MS MARCO passages.",
    "models_used": "bm25-anserini (Apache-2.0)",
    "could_have_seen": "no",
    "params": "2",
    "latency_ms": 12.5,
    "llm_calls_per_query": 0.0,
    "llm_tokens_per_query": 0.0,
    "hardware": "one CPU core",
    "visibility": "public",
}


def client_of(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def upload(user, split, **metadata):
    return submission_create(user=user, split=split, upload=SimpleUploadedFile("run.txt", run_bytes(PERFECT)),
                             metadata={"system_name": "run", **metadata}, enqueue=False)


def test_every_field_a_patch_changes_comes_back_in_the_answer_and_in_a_get(alice, tiny_dataset):
    assert set(CHANGED) == set(METADATA_FIELDS), "a new PATCH field needs a value here"
    run = upload(alice, tiny_dataset.splits.get(name="dev"), visibility="private")
    api = client_of(alice)
    patched = api.patch(f"/api/v1/submissions/{run.pk}/", CHANGED, format="json")
    assert patched.status_code == 200, patched.content
    read = api.get(f"/api/v1/submissions/{run.pk}/").json()
    for name, value in CHANGED.items():
        assert patched.json().get(name) == value, (name, patched.json().get(name, "(missing)"))
        assert read.get(name) == value, (name, read.get(name, "(missing)"))


def test_the_schemas_submission_lists_every_field_a_patch_changes(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    patch = schema["paths"]["/api/v1/submissions/{id}/"]["patch"]
    ref = patch["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    returned = set(schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"])
    body = patch["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    patchable = set(schema["components"]["schemas"][body.rsplit("/", 1)[-1]]["properties"])
    assert patchable == set(METADATA_FIELDS) and not patchable - returned, sorted(patchable - returned)


def test_an_anonymous_entrys_team_and_links_are_its_owners_only(alice, bob, tiny_dataset):
    run = upload(alice, tiny_dataset.splits.get(name="dev"), visibility="anonymous", team="Example Lab",
                 paper_url="https://arxiv.org/abs/2301.00001", code_url="https://github.com/example/bm25")
    mine = client_of(alice).get(f"/api/v1/submissions/{run.pk}/").json()
    assert (mine["team"], mine["paper_url"], mine["code_url"]) == (
        "Example Lab", "https://arxiv.org/abs/2301.00001", "https://github.com/example/bm25")
    for reader in (client_of(bob), APIClient()):
        theirs = reader.get(f"/api/v1/submissions/{run.pk}/").json()
        assert (theirs["team"], theirs["paper_url"], theirs["code_url"]) == (None, "", ""), theirs

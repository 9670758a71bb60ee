"""A run too large for the proxy goes straight to object storage: a presigned PUT, then the upload names its key.

moto's server is the bucket (a real process, boto3 unpatched); the file is PUT to the presigned address over HTTP
by urllib, as any client would; the upload that names the key gets the same checks and storage as any other.
"""

from __future__ import annotations

import urllib.request

import pytest
from rest_framework.test import APIClient

from submissions.models import Submission
from submissions.services import submission_score_now
from tests.api.conftest import PERFECT, run_bytes

pytestmark = [pytest.mark.e2e, pytest.mark.django_db]


def token_client(user) -> APIClient:
    from accounts.models import ApiToken

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


@pytest.fixture
def api(alice, own_cache_namespace, private_run_storage):
    return token_client(alice)


def slot(api, name="bm25.trec") -> dict:
    response = api.post("/api/v1/uploads/", {"file_name": name}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def put(url: str, data: bytes) -> None:
    """As ``curl --upload-file`` does: the bytes, no content type (urllib would call them a form, which S3 signs)."""
    request = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": ""})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def upload(api, key: str):
    return api.post("/api/v1/submissions/from-upload", {"dataset": "tiny", "split": "dev", "system_name": "big",
                                                        "upload_key": key}, format="json")


def test_a_run_put_to_a_presigned_address_is_checked_stored_and_scored(api, alice, tiny_dataset, s3_run_storage):
    given = slot(api)
    assert given["upload_key"].startswith(f"incoming/{alice.pk}/") and "Signature=" in given["upload_url"]
    put(given["upload_url"], run_bytes(PERFECT))
    response = upload(api, given["upload_key"])
    assert response.status_code == 202, response.content
    submission = submission_score_now(response.json()["id"])
    assert submission.status == Submission.Status.SCORED and submission.original_name == "bm25.trec"
    assert submission.results.get().scores["R@10"] == 1.0
    keys = s3_run_storage.keys()
    assert not [k for k in keys if "/incoming/" in k], keys  # the incoming object is removed once copied
    assert [k for k in keys if k.startswith("private/")], keys


def test_a_key_not_yours_or_not_uploaded_is_refused(api, bob, tiny_dataset, s3_run_storage):
    given = slot(api)
    other = token_client(bob)
    put(given["upload_url"], run_bytes(PERFECT))
    response = upload(other, given["upload_key"])
    assert response.status_code == 400 and "not one this site gave you" in response.json()["error"]["message"]
    empty = slot(api)
    response = upload(api, empty["upload_key"])
    assert response.status_code == 400 and "Nothing was uploaded" in response.json()["error"]["message"]
    assert not Submission.objects.exists()


def test_a_bad_file_in_the_bucket_is_refused_with_its_lines(api, tiny_dataset, s3_run_storage):
    given = slot(api, "broken.trec")
    put(given["upload_url"], b"q1 Q0 d1 1 notanumber run\n")
    response = upload(api, given["upload_key"])
    assert response.status_code == 400 and response.json()["error"]["details"][0]["line"] == 1


def test_without_object_storage_there_is_no_slot(api, tiny_dataset):
    response = api.post("/api/v1/uploads/", {"file_name": "run.trec"}, format="json")
    assert response.status_code == 409 and "run_file" in response.json()["error"]["message"]
    response = upload(api, "incoming/1/" + "0" * 32 + "/run.trec")
    assert response.status_code == 409



"""Container images through the API (``/api/v1/sandbox/runs/``): the web form's checks and refusals, the run's status
and its cancel. The run itself (podman, a sandbox worker) is tests/sandbox/test_api_and_client.py's."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from accounts.models import ApiToken
from sandbox.models import SandboxRun, SoftwareImage, SplitSandbox
from submissions.models import Submission

pytestmark = pytest.mark.django_db

URL = "/api/v1/sandbox/runs/"


def oci_archive(padding: int = 0) -> bytes:
    """The top of an OCI archive (the layout files the upload checks); a sandbox worker would refuse to load it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'), ("index.json", b'{"manifests": []}'),
                           ("pad", b"\0" * padding)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def dev(tiny_dataset, settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "private": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                          "OPTIONS": {"location": str(tmp_path)}}}
    split = tiny_dataset.splits.get(name="dev")
    SplitSandbox.objects.create(split=split, max_pending_per_participant=1, memory_mb=512, wall_seconds=300)
    return split


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=user, name='t')[1]}")
    return client


def send(api, data: bytes, *, split="dev", name="bm25 image", **fields):
    form = {"dataset": "tiny", "split": split, "system_name": name, "archive": SimpleUploadedFile("image.tar", data),
            **fields}
    return api.post(URL, form, format="multipart")


def error(response) -> str:
    return response.json()["error"]["message"]


def test_an_image_is_queued_and_its_run_read_and_cancelled(api, alice, bob, dev):
    archive = oci_archive()
    response = send(api, archive, description="BM25 in a box", visibility="public")
    assert response.status_code == 202, response.content
    body = response.json()
    run = SandboxRun.objects.get()
    assert body["id"] == run.pk and response["Location"] == body["url"] and body["url"].endswith(f"{URL}{run.pk}/")
    assert body["status"] == "queued" and body["queue"]["position"] == 1
    assert body["queue"]["text"] == "next in the sandbox queue"
    assert body["digest"] == f"sha256:{hashlib.sha256(archive).hexdigest()}" == run.image.digest
    assert body["limits"]["memory_mb"] == 512 and body["limits"]["wall_seconds"] == 300
    assert body["submission"] is None and body["seconds"] is None and body["page"].endswith(f"/sandbox/runs/{run.pk}/")
    # The web form's metadata, cleaned as the form cleans it.
    assert run.metadata["system_name"] == "bm25 image" and run.metadata["visibility"] == "public"
    assert run.metadata["description"] == "BM25 in a box"
    status = api.get(body["url"])
    assert status.status_code == 200 and status.json()["queue"]["position"] == 1
    # Someone else's run is not there for them; staff see it.
    other = token_client(bob)
    assert other.get(body["url"]).status_code == 404
    assert other.post(f"{body['url']}cancel").status_code == 404
    assert api.get(f"{URL}999999/").status_code == 404
    cancelled = api.post(f"{body['url']}cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["queue"] is None and cancelled.json()["message"] == "Cancelled before it ran."
    again = api.post(f"{body['url']}cancel")
    assert again.status_code == 409 and "nothing to cancel" in error(again)


def test_a_ran_run_names_its_submission_time_and_memory(api, alice, dev):
    from submissions.services import submission_create
    from tests.api.conftest import PERFECT, run_bytes

    submission = submission_create(user=alice, split=dev, upload=SimpleUploadedFile("run.trec", run_bytes(PERFECT)),
                                   metadata={"system_name": "made"}, enqueue=False, made_by_platform=True)
    image = SoftwareImage.objects.create(sha256="e" * 64, size=2048, image_id="f" * 64)
    run = SandboxRun.objects.create(user=alice, split=dev, image=image, status=SandboxRun.Status.RAN, outcome="ok",
                                    message="The image ran; its run went to scoring.", submission=submission,
                                    seconds=12.5, peak_memory_bytes=50 * 2**20, limits={"memory_mb": 2048})
    body = api.get(f"{URL}{run.pk}/").json()
    assert body["status"] == "ran" and body["outcome"] == "ok" and body["digest"] == f"sha256:{'f' * 64}"
    assert body["submission"] == submission.pk and body["submission_url"].endswith(f"/submissions/{submission.pk}/")
    assert body["seconds"] == 12.5 and body["peak_memory_bytes"] == 50 * 2**20 and body["queue"] is None
    assert api.post(f"{URL}{run.pk}/cancel").status_code == 409


def test_the_web_forms_refusals_with_its_messages_and_nothing_stored(api, alice, dev, settings):
    response = send(api, b"q1 Q0 d1 1 1.0 run\n")
    assert response.status_code == 400 and "podman save" in error(response)
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 100
    response = send(api, oci_archive())
    assert response.status_code == 400 and "the limit is 100 bytes" in error(response)
    assert not SoftwareImage.objects.exists()
    # Far over the cap: refused on the request's declared length, before the body is read.
    big = send(api, oci_archive(padding=200 * 1024))
    assert big.status_code == 413 and "the limit is 100 bytes" in error(big)
    assert big.json()["error"]["details"][0]["reason"].startswith("archive: ")
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 10**9
    response = send(api, b"")
    assert response.status_code == 400 and "The file is empty" in error(response)
    first = send(api, oci_archive())
    assert first.status_code == 202
    response = send(api, oci_archive(padding=512), name="another")  # the split allows one at a time
    assert response.status_code == 400 and "the limit is 1 at once" in error(response)
    SandboxRun.objects.update(status=SandboxRun.Status.RAN)
    response = send(api, oci_archive(), name="the same bytes")
    assert response.status_code == 400 and f"sandbox run #{first.json()['id']}" in error(response)
    assert "already sent this image" in error(response)
    assert SoftwareImage.objects.count() == 1 and SandboxRun.objects.count() == 1


def test_a_split_without_images_and_the_account_policy_refuse_as_uploads_do(api, alice, dev, tiny_dataset):
    response = send(api, oci_archive(), split="test")
    assert response.status_code == 400 and "does not take container images" in error(response)
    from allauth.account.models import EmailAddress

    EmailAddress.objects.filter(user=alice).update(verified=False)
    dev.verified_email = dev.VerifiedEmail.ALWAYS
    dev.save()
    response = send(api, oci_archive())
    assert response.status_code == 403 and "Verify your e-mail address" in error(response)
    dev.verified_email = dev.VerifiedEmail.IF_HIDDEN
    dev.accepts_submissions = False
    dev.save()
    response = send(api, oci_archive())
    assert response.status_code == 409 and "does not accept submissions" in error(response)
    assert not SandboxRun.objects.exists() and not SoftwareImage.objects.exists()


def test_fields_are_checked_by_name(api, alice, dev):
    response = send(api, oci_archive(), name="", colour="blue")
    assert response.status_code == 400
    reasons = " ".join(d["reason"] for d in response.json()["error"]["details"])
    assert "colour: not a field of this request" in reasons
    response = send(api, oci_archive(), code_url="ftp://example.org/x")
    assert response.status_code == 400 and "code_url" in response.json()["error"]["details"][0]["reason"]
    response = api.post(URL, {"dataset": "tiny", "split": "dev", "system_name": "x"}, format="multipart")
    assert response.status_code == 400 and "archive" in response.json()["error"]["details"][0]["reason"]
    assert APIClient().post(URL, {}, format="multipart").status_code == 401
    assert not SandboxRun.objects.exists()


def test_a_software_only_split_takes_the_image_and_refuses_the_run_file(api, alice, tiny_dataset, settings, tmp_path):
    from tests.api.conftest import PERFECT, run_bytes

    settings.STORAGES = {**settings.STORAGES, "private": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                          "OPTIONS": {"location": str(tmp_path)}}}
    test = tiny_dataset.splits.get(name="test")
    SplitSandbox.objects.create(split=test, software_only=True)
    run = api.post("/api/v1/submissions/", {"dataset": "tiny", "split": "test", "system_name": "file",
                                            "run_file": SimpleUploadedFile("run.trec", run_bytes(PERFECT))},
                   format="multipart")
    assert run.status_code == 409 and "takes software only" in error(run)
    assert send(api, oci_archive(), split="test").status_code == 202
    assert not Submission.objects.exists()


def test_a_reference_is_refused_where_the_site_has_no_registry_and_from_another_registry(api, dev, settings):
    settings.LEXBOARD_SANDBOX_REGISTRY = ""
    form = {"dataset": "tiny", "split": "dev", "system_name": "from a registry", "reference": "bm25-example:v1"}
    response = api.post(URL, form, format="multipart")
    assert response.status_code == 400 and "This site has no image registry" in str(response.json())
    assert api.post(URL, {k: v for k, v in form.items() if k != "reference"}, format="multipart").json()[
        "error"]["details"][0]["reason"].startswith("archive or reference: Give the image")
    settings.LEXBOARD_SANDBOX_REGISTRY = "127.0.0.1:5999"
    response = api.post(URL, {**form, "reference": "ghcr.io/someone/bm25:v1"}, format="multipart")
    assert response.status_code == 400 and "only takes images from its own registry, 127.0.0.1:5999" in error(response)
    # Nothing answers on that port: the platform says so, and stores nothing.
    response = api.post(URL, form, format="multipart")
    assert response.status_code == 400 and "could not reach its registry 127.0.0.1:5999" in error(response)
    assert SoftwareImage.objects.count() == 0 and SandboxRun.objects.count() == 0

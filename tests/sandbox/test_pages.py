"""The participant's sandbox pages: the image form and its refusals, a run's page (queue place), cancel."""

from __future__ import annotations

import io
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from sandbox.models import SandboxRun, SoftwareImage, SplitSandbox

pytestmark = pytest.mark.django_db


def oci_archive() -> bytes:
    """The top of an OCI archive (the layout files the upload checks); a sandbox worker would refuse to load it."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'), ("index.json", b'{"manifests": []}')):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def dev(tiny_dataset, settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "private": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                          "OPTIONS": {"location": str(tmp_path)}}}
    split = tiny_dataset.splits.get(name="dev")
    SplitSandbox.objects.create(split=split, max_pending_per_participant=1)
    return split


def post(client, split, data: bytes, name="my image"):
    return client.post(reverse("sandbox:upload", args=[split.pk]), {
        "archive": SimpleUploadedFile("image.tar", data), "system_name": name, "visibility": "private"})


def test_it_takes_an_image_and_shows_its_place_in_the_queue(client, alice, bob, dev):
    client.force_login(alice)
    response = post(client, dev, oci_archive())
    run = SandboxRun.objects.get()
    assert response.status_code == 302 and response.url == reverse("sandbox:run", args=[run.pk])
    page = client.get(response.url).content.decode()
    assert "next in the sandbox queue" in page and run.image.digest in page and "Cancel this run" in page
    client.force_login(bob)
    assert client.get(reverse("sandbox:run", args=[run.pk])).status_code == 404
    assert client.post(reverse("sandbox:cancel", args=[run.pk])).status_code == 404
    client.force_login(alice)
    client.post(reverse("sandbox:cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == SandboxRun.Status.CANCELLED
    assert "Cancelled before it ran" in client.get(reverse("sandbox:run", args=[run.pk])).content.decode()


def test_it_refuses_with_the_reason_on_the_form(client, alice, dev, settings):
    client.force_login(alice)
    response = post(client, dev, b"q1 Q0 d1 1 1.0 run\n")
    assert response.status_code == 400 and "podman save" in response.content.decode()
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 100
    response = post(client, dev, oci_archive())
    assert response.status_code == 400 and "the limit is 100 bytes" in response.content.decode()
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 10**9
    assert post(client, dev, oci_archive()).status_code == 302
    response = post(client, dev, oci_archive() + b"\0" * 512, name="another")  # the split allows one at a time
    assert response.status_code == 400 and "the limit is 1 at once" in response.content.decode()
    assert SoftwareImage.objects.count() == 1


def test_the_image_form_counts_against_the_upload_throttle_per_ipv6_64(client, alice, bob, dev, settings):
    """#24 item 5: the form, the API and fusions count uploads per account and per client network (an IPv6 /64);
    the image form did not, so accounts made on one /64 sent images there without limit."""
    settings.LEXBOARD_UPLOAD_RATE, settings.LEXBOARD_UPLOAD_NETWORK_RATE = "10/h", "1/h"
    client.force_login(alice)
    first = client.post(reverse("sandbox:upload", args=[dev.pk]), {
        "archive": SimpleUploadedFile("image.tar", oci_archive()), "system_name": "a", "visibility": "private"},
        REMOTE_ADDR="2001:db8:24:5::1")
    assert first.status_code == 302
    client.force_login(bob)  # another account, another address, the same /64
    second = client.post(reverse("sandbox:upload", args=[dev.pk]), {
        "archive": SimpleUploadedFile("image.tar", oci_archive()), "system_name": "b", "visibility": "private"},
        REMOTE_ADDR="2001:db8:24:5:ffff::2")
    assert second.status_code == 429 and "2001:db8:24:5::/64" in second.content.decode()
    assert SandboxRun.objects.count() == 1


def test_a_split_without_images_says_so(client, alice, tiny_dataset):
    client.force_login(alice)
    split = tiny_dataset.splits.get(name="test")
    response = client.get(reverse("sandbox:upload", args=[split.pk]))
    assert response.status_code == 200 and "does not take container images" in response.content.decode()


def _scored(user, split, name: str, run: bytes):
    from submissions.services import submission_create, submission_score_now

    submission = submission_create(user=user, split=split, upload=SimpleUploadedFile("run.txt", run),
                                   metadata={"system_name": name, "visibility": "public"}, enqueue=False)
    return submission_score_now(submission.pk)


def test_the_board_marks_reproduced_entries_and_filters_them(client, alice, bob, dev, fresh_cache):
    made = _scored(alice, dev, "sandboxed bm25", b"q1 Q0 d1 1 9 a\nq2 Q0 d3 1 9 a\nq3 Q0 d4 1 9 a\n")
    _scored(bob, dev, "uploaded run", b"q1 Q0 d2 1 9 b\nq2 Q0 d3 1 9 b\nq3 Q0 d5 1 9 b\n")
    image = SoftwareImage.objects.create(sha256="b" * 64, size=10, image_id="c" * 64)
    run = SandboxRun.objects.create(user=alice, split=dev, image=image, status=SandboxRun.Status.RAN, submission=made,
                                    seconds=12.5, limits={"memory_mb": 2048, "cpus": 1, "pids": 256})
    fresh_cache()
    board = client.get(dev.get_absolute_url()).content.decode()
    assert board.count("reproduced on the platform</span>") == 1
    row = board.split("sandboxed bm25", 1)[1].split("</tr>", 1)[0]
    assert "badge-reproduced" in row
    url = dev.get_absolute_url()
    only = client.get(url + ("&" if "?" in url else "?") + "kind=reproduced").content.decode()
    assert "sandboxed bm25" in only and "uploaded run" not in only
    page = client.get(made.get_absolute_url()).content.decode()
    assert f"sha256:{'c' * 64}" in page and "12.5 s" in page
    SandboxRun.objects.create(user=alice, split=dev, image=image, status=SandboxRun.Status.RAN, rerun_of=run,
                              finished_at=run.created_at, comparison={"identical": True})
    assert "identical run" in client.get(made.get_absolute_url()).content.decode()
    assert "badge-reproduced" not in client.get(
        _scored(bob, dev, "again", b"q1 Q0 d1 1 9 b\n").get_absolute_url()).content.decode()


def test_a_software_only_split_offers_no_topics_and_takes_no_run_file(alice, tiny_dataset):
    from django.core.exceptions import ValidationError

    from leaderboard.downloads import dataset_file_chunks, dataset_files
    from submissions.errors import UploadRefused
    from submissions.services import submission_create

    test, dev = tiny_dataset.splits.get(name="test"), tiny_dataset.splits.get(name="dev")
    assert {f.name for f in dataset_files(tiny_dataset)} >= {"topics-test.tsv.gz", "topics-dev.tsv.gz"}
    SplitSandbox(split=test, software_only=True).full_clean()
    SplitSandbox.objects.create(split=test, software_only=True)
    names = {f.name for f in dataset_files(tiny_dataset)}
    assert "topics-test.tsv.gz" not in names and "topics-dev.tsv.gz" in names
    assert dataset_file_chunks(tiny_dataset, "topics-test.tsv.gz") is None
    with pytest.raises(UploadRefused, match=f"takes software only: submit a container image \\(/sandbox/splits/{test.pk}/"):
        submission_create(user=alice, split=test, upload=SimpleUploadedFile("run.txt", b"q1 Q0 d1 1 1 x\n"),
                          metadata={"system_name": "by hand"}, enqueue=False)
    made = submission_create(user=alice, split=test, upload=SimpleUploadedFile(
        "run.trec", b"q1 Q0 d1 1 1 x\nq2 Q0 d3 1 1 x\nq3 Q0 d4 1 1 x\n"), metadata={"system_name": "sandboxed"},
        enqueue=False, made_by_platform=True)  # the run the sandbox made from the participant's image
    assert made.pk
    with pytest.raises(ValidationError, match="Only a hidden split can be software-only"):
        SplitSandbox(split=dev, software_only=True).full_clean()


def test_without_a_registry_the_form_says_so_and_refuses_a_reference(client, alice, dev, settings):
    settings.LEXBOARD_SANDBOX_REGISTRY = ""
    client.force_login(alice)
    page = client.get(reverse("sandbox:upload", args=[dev.pk])).content.decode()
    assert "This site has no image registry: upload an archive." in page
    response = client.post(reverse("sandbox:upload", args=[dev.pk]), {
        "reference": "bm25-example:v1", "system_name": "from a registry", "visibility": "private"})
    assert response.status_code == 400
    assert "This site has no image registry, so it takes images as archives only" in response.content.decode()
    assert SoftwareImage.objects.count() == 0 and SandboxRun.objects.count() == 0


def test_with_a_registry_the_form_names_it_and_refuses_another(client, alice, dev, settings):
    settings.LEXBOARD_SANDBOX_REGISTRY = "registry.lexboard.example:5000"
    client.force_login(alice)
    page = client.get(reverse("sandbox:upload", args=[dev.pk])).content.decode()
    assert "podman push IMAGE registry.lexboard.example:5000/NAME:TAG" in page
    response = client.post(reverse("sandbox:upload", args=[dev.pk]), {
        "reference": "quay.io/someone/bm25:v1", "system_name": "from elsewhere", "visibility": "private"})
    text = response.content.decode()
    assert response.status_code == 400 and "names the registry quay.io" in text
    assert "only takes images from its own registry, registry.lexboard.example:5000" in text
    both = client.post(reverse("sandbox:upload", args=[dev.pk]), {
        "archive": SimpleUploadedFile("image.tar", oci_archive()), "reference": "bm25:v1", "system_name": "x",
        "visibility": "private"})
    assert both.status_code == 400 and "not both" in both.content.decode()
    assert SoftwareImage.objects.count() == 0 and SandboxRun.objects.count() == 0


def test_the_image_form_counts_against_the_api_s_upload_limit(client, alice, dev, settings, fresh_cache):
    """One limit for images, from the form and the API alike: ``submissions.throttling.upload_check``."""
    from rest_framework.test import APIClient

    from accounts.models import ApiToken

    fresh_cache()  # the upload counters start at zero
    settings.LEXBOARD_UPLOAD_RATE = "2/h"
    settings.LEXBOARD_UPLOAD_NETWORK_RATE = "100/h"
    client.force_login(alice)
    assert post(client, dev, oci_archive()).status_code == 302
    response = post(client, dev, oci_archive() + b"\0" * 512, name="too soon")
    # The second counts (refused by the split's one-at-a-time rule, after the limit's count)...
    assert response.status_code == 400 and "the limit is 1 at once" in response.content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=alice, name='t')[1]}")
    answer = api.post("/api/v1/sandbox/runs/", {"dataset": dev.dataset.slug, "split": dev.name, "system_name": "api",
                                                "archive": SimpleUploadedFile("image.tar", oci_archive())},
                      format="multipart")
    assert answer.status_code == 429, answer.content  # ... so the API's third is over the limit
    response = post(client, dev, oci_archive() + b"\0" * 1024, name="and the form's fourth")
    assert response.status_code == 429 and "Too many uploads in a short time" in response.content.decode()
    assert SandboxRun.objects.count() == 1


def test_a_registry_image_s_run_page_shows_the_pinned_reference(client, alice, dev):
    pinned = "127.0.0.1:5000/bm25-example@sha256:" + "d" * 64
    image = SoftwareImage.objects.create(sha256="d" * 64, size=150 * 1024 * 1024, image_id="e" * 64, reference=pinned)
    run = SandboxRun.objects.create(user=alice, split=dev, image=image)
    client.force_login(alice)
    page = client.get(reverse("sandbox:run", args=[run.pk])).content.decode()
    assert "From the registry" in page and pinned in page and f"sha256:{'e' * 64}" in page
    assert "150.0\xa0MB compressed" in page and "<dt>Archive</dt>" not in page

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


def test_a_split_without_images_says_so(client, alice, tiny_dataset):
    client.force_login(alice)
    split = tiny_dataset.splits.get(name="test")
    response = client.get(reverse("sandbox:upload", args=[split.pk]))
    assert response.status_code == 200 and "does not take container images" in response.content.decode()

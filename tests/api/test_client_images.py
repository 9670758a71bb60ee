"""``submit-image``, ``image-status`` and ``image-cancel`` of the command-line client against a live server.

What needs no podman: the image taken and queued, its status and queue place, its cancel, the refusals with the
client's own flags in the messages. The run itself (a sandbox worker, then the scoring worker) is
tests/sandbox/test_api_and_client.py's.
"""

from __future__ import annotations

import json

import pytest

from sandbox.models import SandboxRun, SoftwareImage, SplitSandbox

from .test_client import run_client
from .test_sandbox_api import oci_archive

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def dev(tiny_dataset, settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "private": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                          "OPTIONS": {"location": str(tmp_path / "images")}}}
    split = tiny_dataset.splits.get(name="dev")
    SplitSandbox.objects.create(split=split, max_pending_per_participant=1, wall_seconds=300)
    return split


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "image.tar"
    path.write_bytes(oci_archive())
    return path


def image_args(live_server, token, archive, *more):
    return ("submit-image", "--url", live_server.url, "--token", token, "--dataset", "tiny", "--split", "dev",
            "--archive", archive, "--system-name", "bm25 image", *more)


def test_it_sends_an_image_and_follows_and_cancels_its_run(live_server, dev, alice_token, archive, unread_queue):
    code, out, err = run_client(*image_args(live_server, alice_token, archive, "--visibility", "public"))
    assert code == 0, err
    run = SandboxRun.objects.get()
    assert out.strip() == f"sandbox run {run.pk}"
    assert f"accepted: sandbox run {run.pk} is next in the sandbox queue" in err
    assert run.metadata["visibility"] == "public"
    common = ("--url", live_server.url, "--token", alice_token)
    code, out, err = run_client("image-status", run.pk, *common)
    assert code == 0, err
    assert f"sandbox run {run.pk} on tiny/dev: queued, next in the sandbox queue" in out
    assert f"image: {run.image.digest}" in out and "300 s wall time" in out
    code, out, _ = run_client("image-status", run.pk, "--json", *common)
    assert json.loads(out)["queue"]["position"] == 1
    code, out, err = run_client("image-cancel", run.pk, *common)
    assert code == 0 and ": cancelled" in out and "Cancelled before it ran." in out, err
    code, out, err = run_client("image-cancel", run.pk, *common)
    assert code == 2 and "HTTP 409" in err and "nothing to cancel" in err
    code, out, _ = run_client("image-status", run.pk, *common)
    assert code == 1 and ": cancelled" in out  # a cancelled run made no entry
    code, _, err = run_client("image-status", run.pk, *common, "--wait", "--timeout", "5")
    assert code == 1


def test_it_prints_the_servers_refusals_in_its_own_terms(live_server, dev, alice_token, archive, tmp_path,
                                                         settings, unread_queue):
    not_an_image = tmp_path / "run.trec"
    not_an_image.write_bytes(b"q1 Q0 d1 1 1.0 run\n")
    code, _, err = run_client(*image_args(live_server, alice_token, not_an_image))
    assert code == 2 and "HTTP 400" in err and "podman save --format oci-archive" in err
    code, _, err = run_client(*image_args(live_server, alice_token, tmp_path / "missing.tar"))
    assert code == 2 and "--archive" in err and "no such file" in err
    code, _, err = run_client(*image_args(live_server, alice_token, archive, "--code-url", "ftp://example.org/x"))
    assert code == 2 and "--code-url:" in err and "code_url" not in err
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 100
    code, _, err = run_client(*image_args(live_server, alice_token, archive))
    assert code == 2 and "the limit is 100 bytes" in err
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = 10**9
    assert run_client(*image_args(live_server, alice_token, archive))[0] == 0
    SandboxRun.objects.update(status=SandboxRun.Status.RAN)
    code, _, err = run_client(*image_args(live_server, alice_token, archive))
    assert code == 2 and "already sent this image to this split" in err
    code, _, err = run_client("submit-image", "--url", live_server.url, "--dataset", "tiny", "--archive", archive,
                              "--system-name", "x")
    assert code == 2 and "--token is required to upload" in err
    code, _, err = run_client("image-status", "999999", "--url", live_server.url, "--token", alice_token)
    assert code == 2 and "HTTP 404" in err
    assert SoftwareImage.objects.count() == 1


def test_an_image_too_large_for_the_proxy_is_told_what_to_do(live_server, dev, alice_token, tmp_path, unread_queue):
    """Behind a proxy whose body limit is below the image cap (nginx's 413), the message is about images, not runs."""
    from tests.storage.test_presigned_upload import BodyLimitProxy

    big = tmp_path / "big.tar"
    big.write_bytes(oci_archive(padding=4096))
    proxy = BodyLimitProxy(live_server.url, limit=1024)
    try:
        code, _, err = run_client("submit-image", "--url", proxy.url, "--token", alice_token, "--dataset", "tiny",
                                  "--split", "dev", "--archive", big, "--system-name", "big")
    finally:
        proxy.close()
    assert code == 2 and "HTTP 413" in err and "gzip does not apply" in err and "smaller image" in err
    assert not SandboxRun.objects.exists()

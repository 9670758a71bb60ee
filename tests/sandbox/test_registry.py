"""Images by reference, against a live registry: Debian's ``docker-registry`` (distribution 2.8) on a free localhost
port, plain HTTP (``LEXBOARD_SANDBOX_REGISTRY_INSECURE``), the example image pushed there with podman.

The web side resolves the reference through the registry's API v2 before anything is stored (an unknown tag, an
image over the size cap, another registry: refused, nothing stored); the sandbox worker pulls the pinned digest
into the sandbox's own store, checks it, runs it as an archive's image, and the entry shows on the board with the
"reproduced on the platform" mark and the image's digest; the image collection removes the pulled image too.
Real processes throughout (tests/sandbox/test_e2e.py's fixtures): the registry, a live server, the command-line
client, a Celery worker serving only this test's sandbox queue, the session's scoring worker, podman.
"""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from lexboard_cli import client as lexclient
from sandbox import registry, services
from sandbox.models import SandboxRun, SoftwareImage
from sandbox.runner import SandboxUnavailable, podman
from submissions.errors import UploadRefused
from submissions.models import Submission

from . import test_e2e
from .conftest import SANDBOX

# test_e2e's fixtures: the split (public dev, small limits), archives stored where the workers look.
statutes, archive_storage = test_e2e.statutes, test_e2e.archive_storage

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.slow]

REGISTRY_CONFIG = """version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def local_registry(tmp_path_factory):
    """``127.0.0.1:<port>``: a registry of this session's own, its blobs in a temporary folder, stopped after."""
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.skip("Debian's docker-registry is not installed (apt-get install -y docker-registry; .ci/run's "
                    "sandbox block installs it): the tests of images by reference need a live registry")
    folder = tmp_path_factory.mktemp("registry")
    port = _free_port()
    (folder / "config.yml").write_text(REGISTRY_CONFIG.format(root=folder / "blobs", port=port))
    log = open(folder / "registry.log", "wb")
    proc = subprocess.Popen([binary, "serve", str(folder / "config.yml")], stdout=log, stderr=subprocess.STDOUT)
    host = f"127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"http://{host}/v2/", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    deadline = time.monotonic() + 60
    while not up():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"docker-registry did not start:\n{(folder / 'registry.log').read_text()[-2000:]}")
        time.sleep(0.3)
    yield host
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def push(image: str, target: str) -> str:
    """``podman push --tls-verify=false``, as a participant does to a local registry; the manifest's digest."""
    digestfile = Path(f"/tmp/lexboard-registry-test-{uuid.uuid4().hex}.digest")
    try:
        subprocess.run([SANDBOX.podman, "push", "--quiet", "--tls-verify=false", "--digestfile", str(digestfile),
                        image, f"docker://{target}"], check=True, capture_output=True, env=SANDBOX.env(),
                       timeout=600)
        return digestfile.read_text().strip()
    finally:
        digestfile.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def pushed(local_registry, example_image) -> dict[str, str]:
    """The worked example pushed as ``bm25-example:v1``: its manifest digest and podman's image id."""
    image_id = podman(SANDBOX, "image", "inspect", "--format", "{{.Id}}", example_image).stdout.strip()
    return {"digest": push(example_image, f"{local_registry}/bm25-example:v1"), "image_id": image_id}


@pytest.fixture
def site_registry(settings, local_registry):
    settings.LEXBOARD_SANDBOX_REGISTRY = local_registry
    settings.LEXBOARD_SANDBOX_REGISTRY_INSECURE = True
    return local_registry


@pytest.fixture
def registry_worker(settings, worker_factory, worker_queue, site_registry):
    """``registry_worker()``: a sandbox worker on this test's own queue, told the site's registry."""
    queue = f"{worker_queue}-sandbox-{uuid.uuid4().hex[:8]}"
    settings.LEXBOARD_SANDBOX_QUEUE = queue
    env = {"LEXBOARD_SANDBOX_QUEUE": queue, "LEXBOARD_SANDBOX_REGISTRY": site_registry,
           "LEXBOARD_SANDBOX_REGISTRY_INSECURE": "true"}
    return lambda: worker_factory(queues=[queue], extra_env=env)


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = lexclient.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def by_reference(user, split, reference: str, name="bm25 from the registry") -> SandboxRun:
    return services.image_submission_create(user=user, split=split, reference=reference,
                                            metadata={"system_name": name})


def test_an_image_named_in_the_registry_is_pulled_run_and_marked_on_the_board(
        live_server, alice, statutes, pushed, site_registry, registry_worker, celery_worker_process):
    sandbox = services.sandbox_config()
    # Not in the sandbox's store yet (an archive test of this session may have loaded the same image): pulled.
    podman(sandbox, "rmi", "--force", pushed["image_id"], check=False)
    token = ApiToken.issue(user=alice, name="cli")[1]
    worker = registry_worker()
    code, out, err = cli("submit-image", "--url", live_server.url, "--token", token, "--dataset", "statutes",
                         "--split", "dev", "--reference", "bm25-example:v1", "--system-name", "bm25 from the registry",
                         "--visibility", "public", "--wait", "--timeout", "400")
    assert code == 0, err + worker.log()[-3000:] + celery_worker_process.log()[-2000:]
    run = SandboxRun.objects.select_related("image").get()
    image = run.image
    assert image.reference == f"{site_registry}/bm25-example@{pushed['digest']}" and not image.archive
    assert image.sha256 == pushed["digest"].removeprefix("sha256:") and image.image_id == pushed["image_id"]
    assert f"{site_registry}/bm25-example@{pushed['digest']}" in err  # the client prints the pinned reference
    # Pulled by its digest into the sandbox's own store, never the host's name for it.
    found = podman(sandbox, "image", "inspect", "--format", "{{.Id}} {{json .RepoDigests}}", pushed["image_id"])
    assert found.stdout.startswith(pushed["image_id"]) and image.reference in found.stdout
    submission = Submission.objects.get(pk=run.submission_id)
    assert submission.status == Submission.Status.SCORED and submission.results.get().scores["R@10"] == 1.0
    browser = Client()
    board = browser.get(statutes.get_absolute_url()).content.decode()
    row = board.split("bm25 from the registry", 1)[1].split("</tr>", 1)[0]
    assert "reproduced on the platform" in row
    entry = browser.get(submission.get_absolute_url()).content.decode()
    # The same digest as the image the participant built and pushed (and as its archive would have shown).
    assert f"sha256:{pushed['image_id']}" in entry and "reproduced on the platform" in entry
    # The same image again by its digest: the same stored image, refused as the same run.
    with pytest.raises(UploadRefused, match=f"already sent this image to this split \\(sandbox run #{run.pk}"):
        by_reference(alice, statutes, f"bm25-example@{pushed['digest']}")
    assert SoftwareImage.objects.count() == 1
    # Collected like an archive's image once no entry needs it: the row and the pulled image go.
    Submission.objects.filter(pk=submission.pk).update(withdrawn_at=timezone.now())
    SoftwareImage.objects.filter(pk=image.pk).update(last_used_at=timezone.now() - timedelta(days=400))
    assert services.sandbox_images_collect() == 1
    assert podman(sandbox, "image", "exists", pushed["image_id"], check=False).returncode == 1
    assert not SoftwareImage.objects.exists()


def test_a_reference_the_registry_lacks_is_refused_naming_it(alice, statutes, pushed, site_registry):
    with pytest.raises(UploadRefused) as refused:
        by_reference(alice, statutes, "bm25-example:no-such-tag")
    assert f"The registry {site_registry} has no image bm25-example:no-such-tag" in refused.value.message
    assert f"podman push IMAGE {site_registry}/bm25-example:no-such-tag" in refused.value.message
    with pytest.raises(UploadRefused, match="has no image nobody/nothing:v1"):
        by_reference(alice, statutes, "nobody/nothing:v1")
    with pytest.raises(UploadRefused, match=f"has no image bm25-example@sha256:{'0' * 64}"):
        by_reference(alice, statutes, f"bm25-example@sha256:{'0' * 64}")
    assert not SoftwareImage.objects.exists() and not SandboxRun.objects.exists()


def test_an_image_over_the_cap_is_refused_before_anything_is_stored(alice, statutes, pushed, site_registry,
                                                                     settings):
    size = registry.resolve("bm25-example:v1", registry=services.registry_config()).compressed_bytes
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = size - 1
    with pytest.raises(UploadRefused, match="The image bm25-example:v1 is, its layers compressed, .* the limit is"):
        by_reference(alice, statutes, "bm25-example:v1")
    assert not SoftwareImage.objects.exists() and not SandboxRun.objects.exists()
    settings.LEXBOARD_SANDBOX_MAX_IMAGE_BYTES = size
    assert by_reference(alice, statutes, "bm25-example:v1").image.size == size


def test_another_registry_is_refused_naming_the_site_s(alice, statutes, site_registry):
    for elsewhere in ("docker.io/library/python:3.11", "localhost:5000/bm25-example:v1"):
        with pytest.raises(UploadRefused, match=f"only takes images from its own registry, {site_registry}"):
            by_reference(alice, statutes, elsewhere)
    assert not SoftwareImage.objects.exists() and not SandboxRun.objects.exists()


def test_an_image_index_is_narrowed_to_linux_amd64(pushed, local_registry, example_image):
    """A manifest list (what `podman manifest push --all` writes) resolves to its linux/amd64 image."""
    listing = f"localhost/lexboard-registry-test-list-{uuid.uuid4().hex[:8]}"
    subprocess.run([SANDBOX.podman, "manifest", "create", listing], check=True, capture_output=True,
                   env=SANDBOX.env(), timeout=120)
    try:
        subprocess.run([SANDBOX.podman, "manifest", "add", listing, f"containers-storage:{example_image}"],
                       check=True, capture_output=True, env=SANDBOX.env(), timeout=120)
        subprocess.run([SANDBOX.podman, "manifest", "push", "--all", "--tls-verify=false", listing,
                        f"docker://{local_registry}/bm25-index:v1"], check=True, capture_output=True,
                       env=SANDBOX.env(), timeout=600)
    finally:
        subprocess.run([SANDBOX.podman, "manifest", "rm", listing], capture_output=True, env=SANDBOX.env(),
                       timeout=120)
    resolved = registry.resolve("bm25-index:v1", registry=registry.Registry(local_registry, insecure=True))
    assert resolved.config_digest == f"sha256:{pushed['image_id']}"
    assert resolved.media_type in registry.MANIFESTS


def test_the_worker_s_pull_checks_the_image_and_asks_for_no_tls_only_when_told(pushed, local_registry):
    sandbox = services.sandbox_config()
    pinned = f"{local_registry}/bm25-example@{pushed['digest']}"
    podman(sandbox, "rmi", "--force", pushed["image_id"], check=False)
    with pytest.raises(SandboxUnavailable, match="podman pull failed"):  # HTTPS, verified: a plain-HTTP registry fails
        registry.image_pull(sandbox, pinned=pinned, image_id=pushed["image_id"], insecure=False)
    with pytest.raises(SandboxUnavailable, match=f"the pulled image's id is {pushed['image_id']}, not 0000"):
        registry.image_pull(sandbox, pinned=pinned, image_id="0" * 64, insecure=True)
    assert podman(sandbox, "image", "exists", pushed["image_id"], check=False).returncode == 1  # not kept
    assert registry.image_pull(sandbox, pinned=pinned, image_id=pushed["image_id"], insecure=True) == \
        pushed["image_id"]
    podman(sandbox, "rmi", "--force", pushed["image_id"], check=False)

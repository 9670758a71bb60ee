"""Where no sandbox worker runs, the site says so before the upload, and a queued run says nothing runs it.

Each sandbox worker writes a heartbeat row (``sandbox.worker_steps``); with none newer than
``LEXBOARD_SANDBOX_WORKER_STALE_SECONDS`` (set here as the shipped settings have it: the test settings turn the
check off) the image form warns on the page and refuses a post, the API refuses the request with 409 before its
body is read, nothing is stored; a run queued earlier says, on its page, in the API and in the client, for how long
no sandbox worker has answered. ``manage.py sandbox_ready --check`` (what make run asks before it starts a sandbox
worker) names the reason on a host without podman. Before, an image was taken and waited for ever in silence.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from lexboard_cli.client import format_image
from sandbox.models import SandboxRun, SandboxWorker, SoftwareImage
from sandbox.selectors import NO_SANDBOX_WORKER
from tests.api.test_sandbox_api import URL, dev, error, oci_archive, send, token_client  # noqa: F401 (dev: a fixture)
from tests.sandbox.test_pages import post

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
SAYS = "this site runs no sandbox worker now: images would wait"


@pytest.fixture
def api(alice):
    return token_client(alice)


@pytest.fixture
def shipped(settings):
    settings.LEXBOARD_SANDBOX_WORKER_STALE_SECONDS = 30  # the shipped default (the test settings: 0, unchecked)


def test_the_form_and_the_api_say_so_before_the_upload_and_store_nothing(client, api, alice, dev, shipped):  # noqa: F811
    client.force_login(alice)
    page = client.get(reverse("sandbox:upload", args=[dev.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and SAYS in text.lower() and 'id="no-sandbox-worker"' in text
    assert 'class="button primary" disabled' in text  # the submit button is off before anything is chosen
    refused = post(client, dev, oci_archive())
    assert refused.status_code == 409 and SAYS in refused.content.decode().lower()
    response = send(api, oci_archive())
    assert response.status_code == 409 and error(response) == NO_SANDBOX_WORKER and SAYS in error(response).lower()
    assert not SandboxRun.objects.exists() and not SoftwareImage.objects.exists()
    # A sandbox worker's heartbeat, fresh: the same form and API take the image.
    SandboxWorker.objects.create(hostname="sandbox@host", seen_at=timezone.now(), started_at=timezone.now())
    assert SAYS not in client.get(reverse("sandbox:upload", args=[dev.pk])).content.decode().lower()
    assert send(api, oci_archive()).status_code == 202
    assert SandboxRun.objects.count() == 1


def test_a_queued_run_says_for_how_long_no_sandbox_worker_has_answered(client, api, alice, dev, shipped):  # noqa: F811
    beat = SandboxWorker.objects.create(hostname="sandbox@host", seen_at=timezone.now(), started_at=timezone.now())
    created = send(api, oci_archive()).json()
    assert created["status"] == "queued" and created["no_worker"] == ""
    run = SandboxRun.objects.get()
    # The worker stops (its heartbeat stands still): 45 s later the run's page, the API and the client say so.
    SandboxWorker.objects.filter(pk=beat.pk).update(seen_at=timezone.now() - timedelta(seconds=45))
    client.force_login(alice)
    page = client.get(reverse("sandbox:run", args=[run.pk])).content.decode()
    assert "No sandbox worker has answered for 45 s" in page and "nothing runs it now" in page
    body = api.get(f"{URL}{run.pk}/").json()
    assert body["no_worker"].startswith("No sandbox worker has answered for 45 s")
    assert "WARNING: No sandbox worker has answered for 45 s" in format_image(body)  # image-status prints this
    # None ever answered on this site.
    SandboxWorker.objects.all().delete()
    assert "No sandbox worker has ever answered" in api.get(f"{URL}{run.pk}/").json()["no_worker"]
    # A worker beats again: nothing to say.
    SandboxWorker.objects.create(hostname="sandbox@host", seen_at=timezone.now(), started_at=timezone.now())
    assert api.get(f"{URL}{run.pk}/").json()["no_worker"] == ""
    assert "No sandbox worker" not in client.get(reverse("sandbox:run", args=[run.pk])).content.decode()


def test_make_run_s_check_names_the_reason_where_podman_is_missing(tmp_path):
    """What scripts/run.sh asks before it starts a sandbox worker, on a PATH without podman."""
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_SETTINGS_MODULE", "DATABASE_URL"}}
    env.update(PATH=str(tmp_path), LEXBOARD_VAR_DIR=str(tmp_path / "var"))
    done = subprocess.run([sys.executable, "manage.py", "sandbox_ready", "--check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "podman is not installed" in done.stdout, done.stdout + done.stderr
    run_sh = (ROOT / "scripts/run.sh").read_text()
    assert 'echo "==> no sandbox worker: ${sandbox_reason' in run_sh

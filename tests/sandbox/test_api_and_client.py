"""An image sent through the API by the command-line client (``submit-image --wait``), run by a sandbox worker,
its run scored by a scoring worker: the client follows the sandbox run, then the submission, and prints the scores.

Real processes throughout (tests/sandbox/test_e2e.py's fixtures): a live server, a Celery worker serving only
this test's sandbox queue, the session's scoring worker, podman.
"""

from __future__ import annotations

import io
import json

import pytest

from accounts.models import ApiToken
from lexboard_cli import client as lexclient
from sandbox.models import SandboxRun
from submissions.models import Submission

from . import test_e2e

# test_e2e's fixtures: the split, the archives, archives stored where workers look, this test's sandbox worker.
statutes, archives, sandbox_worker = test_e2e.statutes, test_e2e.archives, test_e2e.sandbox_worker
archive_storage = test_e2e.archive_storage

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.slow]


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = lexclient.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_submit_image_waits_for_the_sandbox_then_the_scores(live_server, alice, statutes, archives, example_image,
                                                            sandbox_worker, celery_worker_process):
    token = ApiToken.issue(user=alice, name="cli")[1]
    worker = sandbox_worker()
    code, out, err = cli("submit-image", "--url", live_server.url, "--token", token, "--dataset", "statutes",
                         "--split", "dev", "--archive", archives(example_image), "--system-name", "bm25 via the API",
                         "--visibility", "public", "--wait", "--timeout", "400")
    assert code == 0, err + worker.log()[-3000:] + celery_worker_process.log()[-2000:]
    run = SandboxRun.objects.get()
    assert out.startswith(f"sandbox run {run.pk}\n")
    assert run.status == SandboxRun.Status.RAN and run.submission is not None
    submission = Submission.objects.get(pk=run.submission_id)
    assert submission.status == Submission.Status.SCORED and submission.system_name == "bm25 via the API"
    assert f"submission {submission.pk} on statutes/dev: scored" in out and "R@10" in out and "100.00" in out
    assert f"its run: submission {submission.pk}" in err and "run time:" in err
    code, out, _ = cli("image-status", run.pk, "--json", "--url", live_server.url, "--token", token)
    body = json.loads(out)
    assert code == 0 and body["status"] == "ran" and body["outcome"] == "ok"
    assert body["digest"] == run.image.digest and body["digest"] != f"sha256:{run.image.sha256}"  # podman's id
    assert body["seconds"] > 0 and body["submission"] == submission.pk
    assert body["limits"]["memory_mb"] == 256


def test_the_pages_curl_session_runs_as_written(live_server, alice, statutes, example_image, sandbox_worker,
                                                celery_worker_process, tmp_path):
    """docs/api.md's ``sh image-session`` block, as written, with curl and jq, against a real sandbox worker."""
    import os
    import re
    import shutil
    import subprocess
    from pathlib import Path

    from .conftest import SANDBOX

    if not (shutil.which("curl") and shutil.which("jq")):
        pytest.skip("the page's session uses curl and jq")
    page = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    (block,) = re.findall(r"```sh image-session\n(.*?)```", page, flags=re.S)
    token = ApiToken.issue(user=alice, name="docs")[1]
    worker = sandbox_worker()
    env = {**SANDBOX.env(), "LEXBOARD": live_server.url, "TOKEN": token, "IMAGE": example_image,
           "DATASET": "statutes", "SPLIT": "dev"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr + worker.log()[-3000:]
    out = done.stdout
    run = SandboxRun.objects.get()
    # The worker may have taken it before the first look: queued in place 1, or already running.
    assert f"sandbox run {run.pk}" in out, out
    assert '{"status":"queued","queue":{"position":1' in out or '{"status":"running","queue":null}' in out, out
    assert '"status":"ran","outcome":"ok"' in out and f'"submission":{run.submission_id}' in out, out
    assert '"status":"scored","scores":{"R@10":1' in out, out
    assert os.path.exists(tmp_path / "image.tar")

"""``make run`` runs participants' images: an image sent through the API is run by the sandbox worker make run
started, its run scored by make run's scoring worker, and its entry marked reproduced on the board.

scripts/run.sh as tests/ops/test_make_run.py starts it (a temporary var/, the filesystem broker, a free port, the
project's virtualenv through links), on a host with podman and root; the sandbox's image store is the test's own
(``LEXBOARD_SANDBOX_STORAGE_ROOT``), so the worker's start-up clean-up (``sandbox_leftovers``) touches no other
test's containers. A curator lets the demo's dev split take images (its sandbox policy, as in the admin); the
worked example (docker/sandbox-example) goes through the client, ``submit-image --wait``. Before, make run started
no sandbox worker: the image waited in the queue for ever, and the site said nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.ops.test_make_run import _env, _manage, _start, _stop, _wait_announced
from tests.ports import free_port

from .conftest import SANDBOX
from .test_e2e import save_archive

pytestmark = [pytest.mark.sandbox, pytest.mark.e2e, pytest.mark.slow]

CURATOR_TAKES_IMAGES = """
from catalogue.models import Split
from sandbox.models import SplitSandbox
split = Split.objects.get(dataset__slug="demo", name="dev")
SplitSandbox.objects.update_or_create(split=split, defaults=dict(memory_mb=512, wall_seconds=300, pids=64))
print("images taken on", split.pk)
"""
REPRODUCED = """
import json
from sandbox.models import SandboxRun
from sandbox.selectors import reproduced_submission_ids
run = SandboxRun.objects.get(pk={run})
print(json.dumps(dict(status=run.status, outcome=run.outcome, submission=run.submission_id,
                      scored=run.submission.status,
                      reproduced=run.submission_id in reproduced_submission_ids(split_id=run.split_id))))
"""


@pytest.fixture
def store():
    """The sandbox's own image store for this test: a short path (podman refuses a runroot over 50 characters)."""
    path = Path(tempfile.mkdtemp(prefix="lxb-sbx-", dir="/tmp"))
    yield path
    subprocess.run([SANDBOX.podman, f"--root={path}/storage", f"--runroot={path}/run", "system", "reset", "--force"],
                   capture_output=True, env=SANDBOX.env(), timeout=300, check=False)
    shutil.rmtree(path, ignore_errors=True)


def test_an_image_sent_to_make_run_is_run_scored_and_marked_reproduced(tmp_path, example_image, store):
    port = free_port()
    env = _env(tmp_path, port)
    env.update(LEXBOARD_SANDBOX_WORKER="1", LEXBOARD_SANDBOX_STORAGE_ROOT=str(store),
               LEXBOARD_SANDBOX_WORKER_STALE_SECONDS="30")
    archive = save_archive(example_image, tmp_path)
    log = tmp_path / "run.log"
    process = _start(env, log)
    try:
        text = _wait_announced(process, log)
        # Started under the supervisor like the other workers, its leftovers cleaned first, and answering.
        assert "no sandbox worker" not in text, text[-3000:]
        assert re.search(r"removed \d+ leftover", text) and "sandbox worker ready: sandbox@" in text, text[-3000:]
        assert text.index("sandbox worker ready") < text.index("==> Lexboard is at")
        assert "images taken on" in _manage(env, "shell", "-c", CURATOR_TAKES_IMAGES)
        token = _manage(env, "create_api_token", "admin").strip().splitlines()[-1]
        done = subprocess.run(
            [sys.executable, "-m", "lexboard_cli", "submit-image", "--url", f"http://127.0.0.1:{port}",
             "--token", token, "--dataset", "demo", "--split", "dev", "--archive", str(archive),
             "--system-name", "BM25 (image, make run)", "--visibility", "public", "--wait", "--timeout", "600"],
            env=env, capture_output=True, text=True, timeout=700)
        assert done.returncode == 0, "\n" + done.stdout + done.stderr + log.read_text(errors="replace")[-4000:]
        run_id = int(re.search(r"^sandbox run (\d+)", done.stdout, flags=re.M).group(1))
        state = json.loads(_manage(env, "shell", "-c", REPRODUCED.format(run=run_id)).strip().splitlines()[-1])
        assert state["status"] == "ran" and state["outcome"] == "ok" and state["scored"] == "scored", state
        assert state["reproduced"], state
        assert "WARNING" not in done.stderr  # a sandbox worker answered all along
    finally:
        stopped = _stop(process)
    # The sandbox worker stopped with the rest on Ctrl-C, leaving no container in its store.
    assert stopped == 0, log.read_text(errors="replace")[-3000:]
    left = subprocess.run([SANDBOX.podman, f"--root={store}/storage", f"--runroot={store}/run", "ps", "--all",
                           "--format", "{{.Names}}"], capture_output=True, text=True, env=SANDBOX.env(), timeout=120)
    assert left.stdout.strip() == "", left.stdout

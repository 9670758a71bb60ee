"""docker/compose.yml with docker/compose.s3.yml: runs in an S3 bucket, scored by a worker with no volume.

The override adds an S3-compatible server and `remote-worker`, the same image
with no volume at all, as a worker on another machine. The stack is started
without the `worker` service that shares web's volumes, so a run can only
reach a worker through the bucket. Taken down with its volumes.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from lexboard_cli.client import Client

from .stack import SCORE_TIMEOUT, prepare_site, running_stack, say, upload

pytestmark = [pytest.mark.deploy, pytest.mark.slow]


@pytest.fixture(scope="module")
def s3_stack(project_image, tmp_path_factory):
    # Everything but the worker sharing web's volumes: runs reach `remote-worker` through the bucket only.
    with running_stack("lexboard-deploy-s3", tmp_path_factory.mktemp("s3-stack"),
                       files=["docker/compose.yml", "docker/compose.s3.yml"],
                       services=("proxy", "web", "beat", "remote-worker")) as site:
        yield site


def test_with_object_storage_a_worker_without_volumes_scores_a_run_from_the_bucket(s3_stack, demo_runs, tmp_path):
    token = prepare_site(s3_stack)
    running = subprocess.run(["podman", "ps", "--filter", f"label=com.docker.compose.project={s3_stack.name}",
                              "--format", "{{.Labels}}"], env=s3_stack.env, capture_output=True, text=True).stdout
    assert "com.docker.compose.service:worker " not in running + " " and "remote-worker" in running
    mounts = subprocess.run(["podman", "inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}",
                             s3_stack.container("remote-worker")], env=s3_stack.env, capture_output=True,
                            text=True).stdout
    assert f"{s3_stack.name}_data" not in mounts and f"{s3_stack.name}_media" not in mounts, mounts

    client = Client(s3_stack.url, token, timeout=120)
    t0 = time.monotonic()
    submission_id = upload(client, tmp_path, demo_runs["bm25"], "bm25-s3")
    final = client.wait(submission_id, timeout=SCORE_TIMEOUT, interval=1)
    assert final["status"] == "scored", (final, s3_stack.logs("remote-worker", "web"))
    say(f"S3: upload → scored by the worker with no volume in {time.monotonic() - t0:.0f}s")
    where = s3_stack.python(
        "import json; from submissions.models import Submission; "
        f"s = Submission.objects.get(pk={submission_id}); b = s.run_file.storage.bucket; "
        "print(json.dumps([type(s.run_file.storage).__name__, b.name, "
        "[o.key for o in b.objects.filter(Prefix='private/')]]))")
    assert where[0] == "S3Storage" and any(key.endswith(".trec") for key in where[2]), where

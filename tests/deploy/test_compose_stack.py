"""docker/compose.yml built and started with podman, used as a participant would, upgraded, taken down.

1. The stack (nginx, web, worker, beat, PostgreSQL, Redis) from the project's
   image on a free port: /healthz through the proxy, a user and an API token
   made with the image's entry point, a run uploaded with the project's client
   and scored by the composed worker, beat healthy.
2. A rolling upgrade: uploads queued, the image rebuilt as version 2, web and
   worker recreated from it; every upload ends scored exactly once.
With object storage: test_compose_s3.py. Each stack is taken down with its volumes. The time of every step is printed.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from submissions.client import Client

from .stack import SCORE_TIMEOUT, build_image, prepare_site, running_stack, say, upload, wait_scored

pytestmark = [pytest.mark.deploy, pytest.mark.slow]


@pytest.fixture(scope="module")
def stack(project_image, tmp_path_factory):
    with running_stack("lexboard-deploy", tmp_path_factory.mktemp("stack")) as site:
        yield site


def test_a_run_uploaded_through_the_proxy_is_scored_by_the_composed_worker_and_beat_is_healthy(
    stack, demo_runs, tmp_path
):
    token = prepare_site(stack)
    stack.token = token
    client = Client(stack.url, token, timeout=120)
    t0 = time.monotonic()
    submission_id = upload(client, tmp_path, demo_runs["bm25"], "bm25-deploy")
    final = client.wait(submission_id, timeout=SCORE_TIMEOUT, interval=1)
    assert final["status"] == "scored", (final, stack.logs("worker"))
    assert final["scores"], final
    say(f"upload → scored by the composed worker in {time.monotonic() - t0:.0f}s: {final['scores']}")

    t0 = time.monotonic()
    stack.healthcheck("beat")
    stack.healthcheck("worker")
    stack.healthcheck("web")
    say(f"beat, worker and web health checks pass ({time.monotonic() - t0:.0f}s)")
    logs = stack.logs("web")
    assert "Control server error" not in logs and "Permission denied" not in logs, logs


def test_a_rolling_upgrade_scores_every_queued_upload_exactly_once(stack, project_image, demo_runs, tmp_path):
    client = Client(stack.url, stack.token, timeout=120)
    runs = [demo_runs[name] for name in ("bm25", "tfidf", "random")]
    # Version 1's worker takes the first uploads; the rest wait in Redis for version 2's.
    before = [upload(client, tmp_path, runs[i % 3], f"before-upgrade-{i}") for i in range(2)]
    stack.compose("stop", "worker")
    before += [upload(client, tmp_path, runs[i % 3], f"queued-{i}") for i in range(4)]
    statuses = stack.python("import json; from submissions.models import Submission; "
                            f"print(json.dumps(list(Submission.objects.filter(pk__in={before!r})"
                            ".values_list('status', flat=True))))")
    say(f"6 uploads; at the upgrade: {sorted(statuses)}")
    assert statuses.count("queued") >= 4, statuses

    t0 = time.monotonic()
    build_image(project_image, version="2")
    stack.compose("up", "-d", "--no-build", "--pull", "never", "--no-deps", "--force-recreate", "web", "worker")
    # nginx resolved `web` when it started; the new container has a new address.
    subprocess.run(["podman", "exec", stack.container("proxy"), "nginx", "-s", "reload"], env=stack.env, check=True,
                   capture_output=True)
    stack.wait_healthz()
    say(f"version 2 built, web and worker recreated, /healthz ok in {time.monotonic() - t0:.0f}s")
    assert stack.image_version("web") == "2" and stack.image_version("worker") == "2"

    after = [upload(client, tmp_path, runs[i % 3], f"after-upgrade-{i}") for i in range(2)]
    t0 = time.monotonic()
    rows = wait_scored(stack, before + after)
    say(f"all 8 scored {time.monotonic() - t0:.0f}s after the upgrade: {rows}")
    assert [row[1:] for row in rows] == [["scored", 1, 1]] * len(before + after), rows

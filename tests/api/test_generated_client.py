"""A client generated from the schema works (issue #20, item 5).

The schema is fetched from a live server, openapi-python-client (pinned in
requirements-dev.txt) generates a Python package from it into a temporary
folder, and that package — nothing of ours — uploads a run, waits for a real
Celery worker to score it and reads the leaderboard. The command is the one
the API page and the README give.
"""

from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .conftest import WEAK, run_bytes

GENERATOR = Path(sys.executable).parent / "openapi-python-client"


def generate_client(base_url: str, into: Path, name: str = "lexboard_client"):
    """Generate the client package ``name`` under ``into`` from the server's schema and import it."""
    schema = into / "lexboard-openapi.json"
    with urllib.request.urlopen(f"{base_url}/api/v1/schema/?format=json", timeout=30) as response:
        schema.write_bytes(response.read())
    env = {**os.environ, "PATH": f"{GENERATOR.parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its ruff hook
    result = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(schema), "--output-path", str(into / name), "--meta", "none"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout, result.stdout  # every operation and model was generated
    sys.path.insert(0, str(into))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(into))


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_a_generated_client_uploads_waits_and_reads_the_leaderboard(
    celery_worker_process, live_server, tiny_dataset, alice_token, tmp_path
):
    package = generate_client(live_server.url, tmp_path)
    from lexboard_client.api.datasets import leaderboard_retrieve
    from lexboard_client.api.submissions import submission_create, submission_retrieve
    from lexboard_client.models import SubmissionCreateInputRequest, SubmissionStatusEnum
    from lexboard_client.types import File

    client = package.AuthenticatedClient(base_url=live_server.url, token=alice_token, prefix="Token")
    form = SubmissionCreateInputRequest(
        dataset="tiny",
        run_file=File(payload=io.BytesIO(run_bytes(WEAK)), file_name="weak.txt"),
        system_name="generated client",
    )
    created = submission_create.sync(client=client, body=form)
    assert created.status in (SubmissionStatusEnum.QUEUED, SubmissionStatusEnum.SCORING), created

    deadline = time.monotonic() + 120
    while True:
        submission = submission_retrieve.sync(created.id, client=client, wait=4)  # held until final, up to 4 s
        if submission.status in (SubmissionStatusEnum.SCORED, SubmissionStatusEnum.FAILED) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert submission.status == SubmissionStatusEnum.SCORED, celery_worker_process.log()[-3000:]

    board = leaderboard_retrieve.sync("tiny", client=client)
    assert board.dataset == "tiny" and board.sort == "R@10"
    entry = next(e for e in board.entries if e.submission_id == created.id)
    assert entry.system == "generated client"
    # (1/2 + 1 + 1/3) / 3 = 0.61 on the hidden split's grid (4 judged topics: 0.5).
    assert entry.scores["R@10"] == 0.5

    # Errors come back as the documented model, not as an exception or raw bytes.
    missing = submission_retrieve.sync_detailed(2**62, client=client)
    assert missing.status_code == 404 and missing.parsed.error.message

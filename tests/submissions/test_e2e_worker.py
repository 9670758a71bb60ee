"""End to end through a real Celery worker process, broker and database (no eager mode).

Browser form (Django test client) → cheap checks → queued row and file →
task sent after commit → the worker process claims and scores it → the page
and the leaderboard read the stored scores, which must equal exactly what the
command line (``python -m evaluation score --json``) gives for the same file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from submissions.models import Result, Submission
from tests.waiting import wait_until_final

from .conftest import GOOD_RUN, upload

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

BASE_DIR = Path(__file__).resolve().parents[2]
FINAL = (Submission.Status.SCORED, Submission.Status.FAILED)
#: Bounded wait for the worker: generous, the test machines are shared and slow.
TIMEOUT = 90


def post_run(client, split, content, name="run.txt", **fields):
    data = {"run": upload(content, name), "system_name": "BM25 e2e", "family": "lexical", "visibility": "public"}
    data.update(fields)
    url = reverse("participants:upload", args=[split.dataset.slug]) + f"?split={split.name}"
    return client.post(url, data)


def cli_scores(split, run_path: Path, qrels_path: Path) -> dict[str, float]:
    """The command line's scores for the file, with the dataset's depth, threshold and corpus.

    The command line is called as a researcher calls it; if it cannot be (a
    flag missing, an error), the test fails: comparing the server with
    ``evaluate`` itself would compare the code with itself.
    """
    dataset = split.dataset
    command = [sys.executable, "-m", "evaluation", "score", "--qrels", str(qrels_path), "--run", str(run_path),
               "--measures", ",".join(dataset.measures), "--json", "--depth", str(dataset.depth),
               "--threshold", str(dataset.relevance_threshold)]
    if hasattr(dataset, "corpus"):
        corpus_path = run_path.with_name("corpus.txt")
        corpus_path.write_text("\n".join(dataset.corpus.ids()) + "\n")
        command += ["--corpus", str(corpus_path)]
    done = subprocess.run(command, cwd=BASE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return {name: float(value) for name, value in data.get("measures", data).items()}


def test_an_upload_is_scored_by_the_worker_with_exactly_the_command_lines_numbers(
    transactional_db, celery_worker_process, client, alice, tiny_dataset, tmp_path
):
    # The public dev split: its pages and board show every measure at full precision, so the numbers compared are
    # the stored ones (a hidden split releases the primary measure only, on the grid: submissions/disclosure.py).
    split = tiny_dataset.splits.get(name="dev")
    client.force_login(alice)
    response = post_run(client, split, GOOD_RUN)
    assert response.status_code == 302, response.content.decode()[:2000]
    submission = Submission.objects.get()
    assert response["Location"] == submission.get_absolute_url()

    submission = wait_until_final(submission.pk, celery_worker_process)
    assert submission.status == Submission.Status.SCORED, submission.error
    result = Result.objects.get(submission=submission)

    run_path = tmp_path / "run.txt"
    run_path.write_text(GOOD_RUN)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text(split.current_qrels.text())
    assert result.scores == cli_scores(split, run_path, qrels_path)
    assert result.qrels_version_id == split.current_qrels_id
    assert [e.status for e in submission.events.all()] == ["scoring", "scored"]

    # The page shows the scores, and the entry is on the leaderboard.
    page = client.get(submission.get_absolute_url()).content.decode()
    assert tiny_dataset.format_value(result.scores["R@10"]) in page
    from leaderboard.selectors import leaderboard_rows

    rows = [row for row in leaderboard_rows(split=split) if row.submission_id == submission.pk]
    # A public split: the leaderboard shows every measure as stored.
    assert len(rows) == 1 and rows[0].scores == result.scores


def test_a_bad_file_fails_with_its_line_numbers(transactional_db, celery_worker_process, client, alice, tiny_dataset,
                                                settings):
    # Lines past the request's budget are checked by the worker (earlier ones are refused at upload).
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 1000
    split = tiny_dataset.splits.get(name="test")
    # The first 50 lines are fine (they pass the cheap checks); lines 61 and 63 are not.
    good = "".join(f"q{100 + i} Q0 d{1 + i % 20} 1 1.0 sys\n" for i in range(60))
    content = good + "q1 Q0 d1 1 inf sys\nq1 Q0 d2 2 1.0 sys\nq2 Q0 d3 3 sys\n"
    client.force_login(alice)
    assert post_run(client, split, content).status_code == 302
    submission = wait_until_final(Submission.objects.get().pk, celery_worker_process)
    assert submission.status == Submission.Status.FAILED
    assert submission.failure_kind == Submission.FailureKind.INPUT
    lines = [d["line"] for d in submission.error["details"]]
    assert 61 in lines and 63 in lines, submission.error
    assert not Result.objects.exists()
    page = client.get(submission.get_absolute_url()).content.decode()
    assert "<td>61</td>" in page and "<td>63</td>" in page


def test_quota_reached_is_refused_at_upload(transactional_db, celery_worker_process, client, alice, tiny_dataset):
    split = tiny_dataset.splits.get(name="test")
    split.daily_limit = 1
    split.save()
    client.force_login(alice)
    assert post_run(client, split, GOOD_RUN).status_code == 302
    refused = post_run(client, split, GOOD_RUN)
    assert refused.status_code == 400
    assert "Your next submission will be accepted from" in refused.content.decode()
    assert Submission.objects.count() == 1
    assert wait_until_final(Submission.objects.get().pk, celery_worker_process).status == Submission.Status.SCORED


def test_uploads_made_while_the_broker_is_down_are_scored_once_the_sweep_resends_them(
    transactional_db, celery_worker_process, client, alice, tiny_dataset, broker_down
):
    from datetime import timedelta

    from django.utils import timezone

    from submissions.services import submissions_sweep

    split = tiny_dataset.splits.get(name="test")
    client.force_login(alice)
    for i in range(3):  # three distinct runs: the same content twice is refused
        assert post_run(client, split, GOOD_RUN.replace(" sys\n", f" sys{i}\n")).status_code == 302
    assert list(Submission.objects.values_list("enqueued_at", flat=True)) == [None] * 3

    broker_down.restore()
    counts = submissions_sweep(now=timezone.now() + timedelta(seconds=60))
    assert counts["resent"] == 3
    for submission in Submission.objects.all():
        assert wait_until_final(submission.pk, celery_worker_process).status == Submission.Status.SCORED
    assert Result.objects.count() == 3

"""The command-line client (``python -m lexboard_cli``) against a live server.

The client is standard library only: the multipart encoding is checked by
Django's own parser, and the commands run against ``live_server`` — with a
real Celery worker process for ``--wait`` (marked e2e).
"""

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http.multipartparser import MultiPartParser
from django.test import RequestFactory

from accounts.models import ApiToken, TermsAcceptance
from catalogue.services import data_terms_publish
from lexboard_cli import client as lexclient
from submissions.models import Submission
from submissions.services import submission_create, submission_score_now

from .conftest import PERFECT, WEAK, run_bytes

BASE_DIR = Path(__file__).resolve().parents[2]


def run_client(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = lexclient.main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def run_file(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(run_bytes(PERFECT))
    return path


# --- without a server ----------------------------------------------------------------------


def test_the_multipart_body_parses_back_with_djangos_parser(tmp_path, settings):
    path = tmp_path / 'odd "name"\nwith break.txt'
    content = bytes(range(256)) * 300  # binary, larger than one chunk, with CR and LF bytes
    path.write_bytes(content)
    fields = {"system_name": "BM25 « k1=0.9 »", "description": "line one\r\nline two", "dataset": "tiny"}
    ctype, length, body = lexclient.encode_multipart(fields, {"run_file": str(path)})
    raw = b"".join(body)
    assert len(raw) == length

    request = RequestFactory().post("/", data=raw, content_type=ctype)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
    post, files = MultiPartParser(request.META, io.BytesIO(raw), request.upload_handlers, "utf-8").parse()
    assert {k: post[k] for k in fields} == fields
    assert files["run_file"].read() == content
    assert files["run_file"].name == 'odd %22name%22%0Awith break.txt'


def test_it_exits_2_on_usage_errors(run_file):
    code, _, _ = run_client("submit", "--url", "http://127.0.0.1:9", "--token", "t", "--run", run_file)
    assert code == 2  # --dataset and --system-name missing
    code, _, err = run_client("status", "1")
    assert code == 2 and "--url is required" in err
    code, _, err = run_client("submit", "--url", "ftp://x", "--token", "t", "--dataset", "d", "--run", run_file,
                              "--system-name", "s")
    assert code == 2 and "http://" in err


def test_it_exits_2_when_the_server_cannot_be_reached(run_file):
    code, _, err = run_client("submit", "--url", "http://127.0.0.1:9", "--token", "t", "--dataset", "tiny",
                              "--run", run_file, "--system-name", "s")
    assert code == 2 and "cannot reach" in err


def test_it_runs_as_a_standalone_copied_file(tmp_path):
    """Researchers copy the file: it must run without Django or the repository."""
    copy = tmp_path / "lexboard_client.py"
    shutil.copy(BASE_DIR / "lexboard_cli" / "client.py", copy)
    result = subprocess.run([sys.executable, "-I", str(copy), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "submit" in result.stdout and "status" in result.stdout
    result = subprocess.run([sys.executable, "-I", str(copy), "status"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2


# --- against a live server ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_it_submits_a_run_and_prints_its_id(live_server, tiny_dataset, alice, alice_token, run_file):
    code, out, err = run_client(
        "submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--run", run_file,
        "--system-name", "BM25 client", "--family", "lexical", "--visibility", "private",
        "--description", "from the client", "--training-data", "other_legal", "--could-have-seen", "corpus",
        "--model", "BAAI/bge-m3 MIT", "--model", "openai:gpt-4o  proprietary", "--training-data-note", "EUR-Lex",
    )
    assert code == 0, err
    assert out.startswith("submission ")  # says what the number is
    submission = Submission.objects.get(pk=int(out.split()[1]))
    assert submission.user == alice
    assert (submission.system_name, submission.family, submission.visibility) == ("BM25 client", "lexical", "private")
    assert submission.description == "from the client"
    assert (submission.training_data, submission.could_have_seen, submission.training_data_note) == (
        "other_legal", "corpus", "EUR-Lex")
    assert submission.models_used == "BAAI/bge-m3 MIT\nopenai:gpt-4o proprietary" and submission.disclosed
    assert submission.split.name == "test"
    with submission.run_file.open("rb") as fh:
        assert fh.read() == run_file.read_bytes()
    assert f"/api/v1/submissions/{submission.pk}/" in err


def test_data_terms_are_shown_and_accepted_with_accept_terms_only(live_server, tiny_dataset, alice, alice_token,
                                                                   run_file):
    data_terms_publish(dataset=tiny_dataset, title="Tiny licence", text="Research use only.")
    base = ("submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--split", "dev",
            "--run", run_file, "--system-name", "with terms")
    code, out, err = run_client(*base)
    assert code == 2 and not Submission.objects.exists()
    assert "\u201cTiny licence\u201d, version 1" in err and f"{live_server.url}/d/tiny/terms/" in err
    assert "--accept-terms" in err
    code, out, err = run_client(*base, "--accept-terms")
    assert code == 0, err
    assert "Data terms of tiny, version 1: Tiny licence\n\nResearch use only." in err
    assert "accepted version 1 of tiny's data terms" in err
    assert TermsAcceptance.objects.get(user=alice).version == 1
    code, out, err = run_client(*base[:-1], "again", "--accept-terms")  # accepted already: not shown again
    assert code == 2 and "Data terms of" not in err  # (refused as the same file, after the terms)


@pytest.mark.django_db(transaction=True)
def test_it_prints_the_servers_reasons_on_a_refused_file(live_server, tiny_dataset, alice_token, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"q1 Q0 d1 1 3.0 sys\nq1 Q0 d2 2\n")
    code, out, err = run_client("submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny",
                                "--run", bad, "--system-name", "bad")
    assert code == 2
    assert "HTTP 400" in err and "line 2:" in err
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_says_when_the_token_is_wrong(live_server, tiny_dataset, run_file):
    code, _, err = run_client("submit", "--url", live_server.url, "--token", "lxb_wrong", "--dataset", "tiny",
                              "--run", run_file, "--system-name", "x")
    assert code == 2 and "HTTP 401" in err and "profile page" in err


@pytest.mark.django_db(transaction=True)
def test_status_prints_a_failure_with_its_lines_and_exits_1(live_server, tiny_dataset, alice, alice_token):
    split = tiny_dataset.splits.get(name="test")
    upload = SimpleUploadedFile("run.txt", run_bytes(PERFECT))
    submission = submission_create(user=alice, split=split, upload=upload, metadata={"system_name": "x"},
                                   enqueue=False)
    details = [{"line": 61, "reason": "query q1 lists document d1 twice; keep one line per (query, document)"}]
    assert submission.mark_failed(kind="input", message="The run has 1 problem.", details=details)

    code, out, _ = run_client("status", submission.pk, "--url", live_server.url, "--token", alice_token)
    assert code == 1
    assert "failed: The run has 1 problem." in out
    assert "line 61: query q1 lists document d1 twice" in out

    code, out, _ = run_client("status", submission.pk, "--url", live_server.url, "--token", alice_token, "--json")
    assert code == 1 and '"status": "failed"' in out


@pytest.mark.django_db(transaction=True)
def test_a_run_waiting_for_judgments_is_said_to_wait_and_exits_4(live_server, tiny_dataset, alice, alice_token):
    split = tiny_dataset.splits.get(name="test")
    upload = SimpleUploadedFile("run.txt", run_bytes(PERFECT))
    submission = submission_create(user=alice, split=split, upload=upload, metadata={"system_name": "x"},
                                   enqueue=False)
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.WAITING)

    code, out, _ = run_client("status", submission.pk, "--url", live_server.url, "--token", alice_token, "--wait")
    assert code == 4
    assert "waiting: the split's judgments are not published yet" in out


@pytest.mark.django_db(transaction=True)
def test_waiting_asks_the_server_to_hold_and_sees_the_score_as_it_lands(live_server, tiny_dataset, alice,
                                                                        alice_token, monkeypatch):
    """``submit --wait`` / ``status --wait``: one question held by the server (``?wait=``) until the run is scored,
    not a poll every 2 s and more."""
    import threading
    import time

    split = tiny_dataset.splits.get(name="test")
    submission = submission_create(user=alice, split=split, upload=SimpleUploadedFile("run.txt", run_bytes(PERFECT)),
                                   metadata={"system_name": "held"}, enqueue=False)
    client = lexclient.Client(live_server.url, alice_token)
    asked: list[str] = []
    request = client.request
    monkeypatch.setattr(client, "request", lambda method, path, *a, **k: asked.append(path) or request(method, path,
                                                                                                         *a, **k))
    def score() -> None:
        time.sleep(1.0)
        try:
            submission_score_now(submission.pk)
        finally:
            from django.db import connections

            connections.close_all()

    scorer = threading.Thread(target=score, daemon=True)
    scorer.start()
    info = client.wait(submission.pk, timeout=30)
    seen = time.time()
    scorer.join(30)
    assert info["status"] == "scored"
    late = seen - Submission.objects.get(pk=submission.pk).scored_at.timestamp()
    assert late < 1.0, late  # polling every 2 s would have seen it about 1 s later
    assert asked == [f"submissions/{submission.pk}/?wait=10.000"], asked


@pytest.mark.django_db(transaction=True)
def test_status_of_someone_elses_private_submission_is_not_found(live_server, tiny_dataset, alice, bob):
    split = tiny_dataset.splits.get(name="test")
    submission = submission_create(user=alice, split=split, upload=SimpleUploadedFile("r.txt", run_bytes(PERFECT)),
                                   metadata={"system_name": "x", "visibility": "private"}, enqueue=False)
    _, bob_key = ApiToken.issue(user=bob)
    code, _, err = run_client("status", submission.pk, "--url", live_server.url, "--token", bob_key)
    assert code == 2 and "HTTP 404" in err


@pytest.mark.django_db(transaction=True)
def test_the_researchers_commands_name_their_own_flags(live_server, tiny_dataset, alice, alice_token, run_file):
    from submissions.services import submission_score_now

    code, out, err = run_client("submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny",
                                "--split", "dev", "--run", run_file, "--system-name", "mine")
    assert code == 0 and out.startswith("submission ")
    submission_id = int(out.split()[1])
    assert f"set {submission_id} --visibility public" in err and "visibility=public" not in err
    submission_score_now(submission_id)
    base = ("--url", live_server.url, "--token", alice_token)

    code, out, err = run_client("set", submission_id, "--visibility", "everyone", *base)
    assert code == 2 and "--visibility" in err and "visibility:" not in err.replace("--visibility:", "")
    code, out, err = run_client("set", submission_id, *base)
    assert code == 2 and "give at least one option, e.g. --visibility public" in err
    code, out, err = run_client("set", submission_id, "--visibility", "public", "--description", "tuned", *base)
    assert code == 0, err
    assert Submission.objects.get(pk=submission_id).visibility == "public"

    code, out, err = run_client("per-query", submission_id, *base)
    assert code == 0 and out.splitlines()[1].split() == ["query", "R@10", "MAP@10", "MRR@10", "nDCG@10"]
    assert out.splitlines()[2].split()[0] == "q1" and "100.00" in out

    tiny_dataset.splits.filter(name="dev").update(monthly_limit=10)
    code, out, err = run_client("dataset", "tiny", *base)
    assert code == 0 and "measures R@10, MAP@10, MRR@10, nDCG@10" in out
    assert "split dev (public labels): 4 uploads left today, 99 left in all, 9 left this month (UTC)" in out
    code, out, err = run_client("tasks", "tiny", *base)
    assert code == 0 and out.strip() == "no shared task on this dataset"

    code, out, err = run_client("withdraw", submission_id, *base)
    assert code == 0 and f"submission {submission_id} withdrawn" in out
    code, out, err = run_client("withdraw", submission_id, *base)
    assert code == 2 and "HTTP 409" in err and "already withdrawn" in err


# --- with a real worker ----------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_it_waits_for_the_scores_of_a_real_worker(
    celery_worker_process, live_server, tiny_dataset, alice_token, tmp_path
):
    path = tmp_path / "weak.txt"
    path.write_bytes(run_bytes(WEAK))
    code, out, err = run_client(
        "submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--run", path,
        "--system-name", "weak", "--wait", "--timeout", "120",
    )
    assert code == 0, err + celery_worker_process.log()[-3000:]
    submission_id = int(out.splitlines()[0].split()[1])
    submission = Submission.objects.get(pk=submission_id)
    assert submission.status == "scored"
    scores = submission.results.get().scores
    assert scores["R@10"] == pytest.approx((1 / 2 + 1 + 1 / 3) / 3)  # one relevant document found per query
    # The hidden split releases R@10 only, on its grid (4 judged topics: 50 points), in percent as the site shows it,
    # at the grid's precision (whole points: "50", not "50.00").
    assert re.search(r"^R@10 +50$", out, re.M) and "50.00" not in out and "MAP@10" not in out
    assert ": scored" in out


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_it_exits_1_with_the_lines_when_the_worker_fails_the_run(
    celery_worker_process, live_server, tiny_dataset, alice_token, tmp_path
):
    # The cheap checks read only the format of the first lines: a duplicate (query, document)
    # pair is found by the worker's full parse.
    body = run_bytes(PERFECT) + b"q1 Q0 d1 9 -9 sys\n"
    n_bad = body.count(b"\n")
    path = tmp_path / "dup.txt"
    path.write_bytes(body)
    code, out, err = run_client(
        "submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--run", path,
        "--system-name", "dup", "--wait", "--timeout", "120",
    )
    assert code == 1, out + err + celery_worker_process.log()[-3000:]
    assert "failed:" in out
    assert f"line {n_bad}" in out


@pytest.mark.django_db(transaction=True)
def test_it_exits_non_zero_on_every_refusal(live_server, tiny_dataset, alice_token, tmp_path, unread_queue):
    """Runs that cannot mean anything: no query of the split, or the same content twice.

    (The accepted run is sent to a queue no worker reads: ``unread_queue``.)
    """
    foreign = tmp_path / "foreign.txt"
    foreign.write_bytes(b"x1 Q0 d1 1 3.0 sys\n")
    code, _, err = run_client("submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny",
                              "--split", "dev", "--run", foreign, "--system-name", "foreign")
    assert code == 2 and "not in this split" in err
    good = tmp_path / "good.txt"
    good.write_bytes(run_bytes(PERFECT))
    argv = ("submit", "--url", live_server.url, "--token", alice_token, "--dataset", "tiny", "--split", "dev",
            "--run", good, "--system-name", "good")
    assert run_client(*argv)[0] == 0
    code, _, err = run_client(*argv)
    assert code == 2 and "same content" in err
    assert Submission.objects.count() == 1


def _make(user, split_name, dataset, ranking, name, *, visibility="private", score=True):
    split = dataset.splits.get(name=split_name)
    upload = SimpleUploadedFile("run.txt", run_bytes(ranking))
    submission = submission_create(user=user, split=split, upload=upload,
                                   metadata={"system_name": name, "visibility": visibility}, enqueue=False)
    return submission_score_now(submission.pk) if score else submission


@pytest.mark.django_db(transaction=True)
def test_list_prints_ones_own_submissions_filtered_by_dataset_split_and_status(
        live_server, tiny_dataset, alice, bob, alice_token):
    scored_dev = _make(alice, "dev", tiny_dataset, PERFECT, "BM25 dev")
    queued_dev = _make(alice, "dev", tiny_dataset, WEAK, "Weak dev", score=False)
    queued_test = _make(alice, "test", tiny_dataset, WEAK, "Weak test", score=False)
    _make(bob, "dev", tiny_dataset, PERFECT, "Bob's", visibility="public")
    base = ("--url", live_server.url, "--token", alice_token)

    code, out, _ = run_client("list", *base)
    assert code == 0, out
    ids = [int(line.split()[0]) for line in out.splitlines()]
    assert ids == [queued_test.pk, queued_dev.pk, scored_dev.pk]  # newest first, never bob's
    assert re.search(rf"^\s*{scored_dev.pk}  tiny/dev  scored  'BM25 dev' \(private\)  \S+ \d+\.\d\d$", out, re.M), out

    code, out, _ = run_client("list", *base, "--dataset", "tiny", "--split", "dev", "--status", "queued")
    assert code == 0 and [int(line.split()[0]) for line in out.splitlines()] == [queued_dev.pk], out
    code, out, _ = run_client("list", *base, "--split", "test", "--json")
    assert code == 0 and [s["id"] for s in json.loads(out)] == [queued_test.pk]
    code, out, _ = run_client("list", *base, "--status", "failed")
    assert code == 0 and "no submission" in out

    code, _, err = run_client("list", *base, "--dataset", "tiny", "--split", "nosuch")
    assert code == 2 and "404" in err
    code, _, err = run_client("list", "--url", live_server.url)
    assert code == 2 and "--token is required to list your submissions" in err


@pytest.mark.django_db(transaction=True)
def test_leaderboard_prints_the_public_board_without_a_token(live_server, tiny_dataset, alice, bob):
    _make(alice, "dev", tiny_dataset, WEAK, "Weak", visibility="public")
    _make(bob, "dev", tiny_dataset, PERFECT, "Perfect", visibility="public")
    _make(bob, "dev", tiny_dataset, {**PERFECT, "q2": ["d3", "d7"]}, "Hidden away")  # private: not on the board

    code, out, err = run_client("leaderboard", "tiny", "--split", "dev", "--url", live_server.url)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("leaderboard tiny/dev (public labels), sorted by ")
    systems = [line.split()[1] for line in lines[2:]]
    assert systems.index("Perfect") < systems.index("Weak") and "Hidden" not in out
    assert re.search(r"^\s+1  Perfect\s+bob\s+\d+\.\d\d", out, re.M), out

    code, out, _ = run_client("leaderboard", "tiny", "--split", "dev", "--url", live_server.url, "--json")
    body = json.loads(out)
    assert code == 0 and body["split"] == "dev" and [e["system"] for e in body["entries"]][:1] == ["Perfect"]
    code, _, err = run_client("leaderboard", "nosuch", "--url", live_server.url)
    assert code == 2 and "404" in err

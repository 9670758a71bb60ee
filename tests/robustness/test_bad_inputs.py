"""Every file of the bad-input corpus through every door: metric core, command line, browser form, API, importers.

The expectations are the table in ``cases.py`` (and ``tests/data/bad/README.md``):
common, unambiguous variants (CRLF, tabs, trailing spaces, a BOM, gzip) are
accepted; everything else is refused with the line and what to do — never a
500, and nothing half-written: a refused upload leaves no Submission row and
no file in the private storage; a refused import leaves no topic, split,
corpus or qrels version. A run refused only by the full parse (after the
upload checks passed) ends as a failed submission whose details name the line;
its file is kept, like every accepted upload.
"""

from __future__ import annotations

import html
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from catalogue.models import Corpus, Dataset, QrelsVersion, Split, Topic
from evaluation import cli
from evaluation.corpus import CorpusIds
from evaluation.errors import MAX_PROBLEMS, InputError
from evaluation.measures import parse_measures
from evaluation.qrels import Qrels, read_qrels
from evaluation.runs import read_run
from evaluation.scoring import evaluate
from submissions.models import Submission
from submissions.services import submission_score_now

from .cases import IMPORTS, QRELS, RUNS, Case
from .conftest import CORPUS_SIZE, DATA, TEST_QRELS, files_in

BASE_DIR = Path(__file__).resolve().parents[2]
GOOD_RUN = DATA / "runs" / "ok_plain.txt"
GOOD_QRELS = DATA / "qrels" / "ok_plain.qrels"
GOOD_TOPICS = DATA / "import" / "ok_topics.tsv"
METADATA = {"system_name": "robust-bm25", "family": "lexical", "visibility": "public"}
CURATED = (Dataset, Split, Topic, QrelsVersion, Corpus)


def param(cases: list[Case]):
    return [pytest.param(c, id=c.id) for c in cases]


def core_score(path: Path):
    """What a worker does with a stored run: parse it, then evaluate against the split's qrels and corpus."""
    run = read_run(str(path))
    qrels = Qrels.from_dict(TEST_QRELS)
    corpus = CorpusIds.from_iterable(str(i) for i in range(1, CORPUS_SIZE + 1))
    return evaluate(qrels, run, parse_measures("R@100,MAP@100,MRR@100"), corpus=corpus, docid_example="1234")


def assert_names_line(err: InputError, case: Case, path: Path | str) -> None:
    text = str(err)
    if case.line is not None:
        assert f"{path}:{case.line}: " in text, text
    else:
        assert any(p.line is None for p in err.problems), text
    assert case.hint in text, f"no fix hint {case.hint!r} in: {text}"


# --- door (a): the metric core and its command line ---------------------------------------------


@pytest.mark.parametrize("case", param(RUNS))
def test_core_answers_each_run(case):
    path = DATA / case.path
    if case.accepted:
        evaluation = core_score(path)
        assert len(evaluation.qids) == 3
        codes = {w.code for w in evaluation.warnings}
        assert not case.warning or case.warning in codes, codes
        return
    with pytest.raises(InputError) as caught:
        core_score(path)
    assert_names_line(caught.value, case, path)
    assert len(caught.value.problems) <= MAX_PROBLEMS


def test_core_stops_at_twenty_problems():
    with pytest.raises(InputError) as caught:
        read_run(str(DATA / "runs" / "many_bad_lines.txt"))
    assert len(caught.value.problems) == MAX_PROBLEMS
    assert [p.line for p in caught.value.problems] == list(range(1, MAX_PROBLEMS + 1))


@pytest.mark.parametrize("case", param(QRELS))
def test_core_answers_each_qrels(case):
    path = DATA / case.path
    if case.accepted:
        assert len(read_qrels(str(path))) == 7
        return
    with pytest.raises(InputError) as caught:
        read_qrels(str(path))
    assert_names_line(caught.value, case, path)


@pytest.mark.parametrize("case", param([c for c in RUNS if not c.needs_corpus] + QRELS))
def test_command_line_exits_2_naming_the_line(case, capsys):
    path = DATA / case.path
    is_run = case.path.startswith("runs/")
    qrels, run = (GOOD_QRELS, path) if is_run else (path, GOOD_RUN)
    code = cli.main(["score", "--qrels", str(qrels), "--run", str(run)])
    out, err = capsys.readouterr()
    if case.accepted or case.command_line_scores:
        assert code == 0, err
        return
    assert code == 2, (out, err)
    if case.line is not None:
        assert f"{path}:{case.line}: " in err, err
    assert case.hint in err, err
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["runs/latin1_tag.txt", "runs/truncated.txt.gz", "qrels/float_grade.qrels"])
def test_command_line_in_a_subprocess(name):
    path = DATA / name
    qrels, run = (GOOD_QRELS, path) if name.startswith("runs/") else (path, GOOD_RUN)
    done = subprocess.run([sys.executable, "-m", "evaluation", "score", "--qrels", str(qrels), "--run", str(run)],
                          cwd=BASE_DIR, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "Traceback" not in done.stderr


# --- doors (b) and (c): the browser form and the API ------------------------------------------------


def _upload(path: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/octet-stream")


def _refusal_text(message: str, details: list[dict]) -> str:
    return message + "\n" + "\n".join(f"line {d.get('line')}: {d.get('reason')}" for d in details)


def _check_failed_submission(submission: Submission, case: Case) -> None:
    submission = submission_score_now(submission.pk)
    assert submission.status == Submission.Status.FAILED, (submission.status, submission.error)
    assert submission.failure_kind == Submission.FailureKind.INPUT  # the file's fault, not ours
    details = submission.error["details"]
    if case.line is not None:
        assert case.line in [d["line"] for d in details], details
    assert case.hint in _refusal_text(submission.error["message"], details)


def _check_scored(submission: Submission, case: Case) -> None:
    submission = submission_score_now(submission.pk)
    assert submission.status == Submission.Status.SCORED, submission.error
    codes = {w["code"] for w in submission.warnings or []}
    assert not case.warning or case.warning in codes, codes


@pytest.mark.parametrize("case", param(RUNS))
def test_upload_form_answers_each_run(case, client, alice, test_split, data_dir):
    client.force_login(alice)
    url = reverse("participants:upload", args=["robust"]) + "?split=test"
    before = Submission.objects.count()
    response = client.post(url, {**METADATA, "run": _upload(DATA / case.path)})
    assert response.status_code in (200, 302, 400), response.status_code
    if case.web == "cheap":
        assert response.status_code in (200, 400)
        form = response.context["form"]
        errors = "\n".join(str(e) for errs in form.errors.values() for e in errs)
        if case.line is not None:
            assert f"line {case.line}: " in errors, errors
        assert (case.web_hint or case.hint) in errors, errors
        body = html.unescape(response.content.decode())
        # The page renders `code` spans as <code> (the code_spans filter).
        assert re.sub(r"`([^`]+)`", r"<code>\1</code>", case.web_hint or case.hint) in body
        assert Submission.objects.count() == before
        assert files_in(data_dir) == []
        return
    assert response.status_code == 302, response.context["form"].errors if response.context else response
    submission = Submission.objects.get(user=alice)
    assert files_in(data_dir) != []  # accepted: the file is kept, whatever scoring finds
    if case.web == "scoring":
        _check_failed_submission(submission, case)
        page = client.get(submission.get_absolute_url())
        assert page.status_code == 200
        if case.line is not None:
            assert f"<td>{case.line}</td>" in page.content.decode()
    else:
        _check_scored(submission, case)


@pytest.fixture
def api(alice):
    _, key = ApiToken.issue(user=alice, name="robustness")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.mark.parametrize("case", param(RUNS))
def test_api_answers_each_run(case, api, alice, test_split, data_dir):
    response = api.post(
        reverse("api:submissions"),
        {"dataset": "robust", "split": "test", "run_file": _upload(DATA / case.path), **METADATA},
        format="multipart",
    )
    assert response.status_code in (202, 400), response.content
    if case.web == "cheap":
        assert response.status_code == 400
        error = response.json()["error"]
        assert set(error) >= {"message", "details"}
        assert all(set(d) in ({"line", "reason"}, {"line", "reason", "lines", "count"}) for d in error["details"])
        if case.line is not None:
            assert case.line in [d["line"] for d in error["details"]], error
        assert (case.web_hint or case.hint) in _refusal_text(error["message"], error["details"])
        assert not Submission.objects.exists()
        assert files_in(data_dir) == []
        return
    assert response.status_code == 202
    submission = Submission.objects.get(pk=response.json()["id"])
    if case.web == "scoring":
        _check_failed_submission(submission, case)
        body = api.get(reverse("api:submission", args=[submission.pk])).json()
        assert body["status"] == "failed"
        if case.line is not None:
            assert case.line in [d["line"] for d in body["error"]["details"]]
    else:
        _check_scored(submission, case)


# --- the importers: manage.py import_dataset and the admin's import form -------------------------


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in CURATED}


def _trec_files(kind: str, path: Path) -> dict[str, Path]:
    files = {"topics": GOOD_TOPICS, "qrels": GOOD_QRELS}
    files[kind] = path
    return files


IMPORT_TREC = [("qrels", c) for c in QRELS] + [(k, c) for k, c in IMPORTS if k in ("topics", "corpus_ids")]


@pytest.mark.parametrize("kind, case", [pytest.param(k, c, id=f"{k}-{c.id}") for k, c in IMPORT_TREC])
def test_import_command_answers_each_file(kind, case, robust_dataset):
    files = _trec_files(kind, DATA / case.path)
    args = ["import_dataset", "--format", "trec", "--dataset", "robust", "--split", "extra", "--hidden"]
    args += [f"--{name.replace('_', '-')}={path}" for name, path in files.items()]
    before = _counts()
    if case.accepted:
        call_command(*args, stdout=io.StringIO())
        assert Split.objects.filter(dataset=robust_dataset, name="extra").exists()
        return
    with pytest.raises(CommandError) as caught:
        call_command(*args, stdout=io.StringIO())
    text = str(caught.value)
    name = Path(case.path).name
    assert (f"{name}:{case.line}: " if case.line is not None else f"{name}: ") in text, text
    assert case.hint in text, text
    assert _counts() == before


@pytest.mark.parametrize("kind, case", [pytest.param(k, c, id=f"{k}-{c.id}") for k, c in IMPORT_TREC])
def test_admin_import_form_answers_each_file(kind, case, client, staff, robust_dataset):
    client.force_login(staff)
    files = _trec_files(kind, DATA / case.path)
    form = {"format": "trec", "split": "extra", "hidden": "on"}
    form.update({name: _upload(path) for name, path in files.items()})
    before = _counts()
    response = client.post(reverse("admin:catalogue_dataset_import", args=[robust_dataset.pk]), form)
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    if case.accepted:
        assert "were refused" not in body
        assert Split.objects.filter(dataset=robust_dataset, name="extra").exists()
        return
    name = Path(case.path).name
    # Empty files too reach the importer, whose refusal names the file and the fix.
    assert (f"{name}:{case.line}: " if case.line is not None else f"{name}: ") in body
    assert case.hint in body
    assert _counts() == before


RELEASES = [c for k, c in IMPORTS if k in ("beir", "bsard")]


@pytest.mark.parametrize("case", param(RELEASES))
def test_import_command_refuses_broken_releases(case, robust_dataset):
    fmt = "beir" if "beir" in case.path else "bsard"
    before = _counts()
    with pytest.raises(CommandError) as caught:
        call_command("import_dataset", "--format", fmt, "--dataset", "robust", str(DATA / case.path),
                     stdout=io.StringIO())
    assert f":{case.line}: " in str(caught.value) and case.hint in str(caught.value)
    assert _counts() == before


@pytest.mark.parametrize("case", param(RELEASES + [c for k, c in IMPORTS if k == "zip"]))
def test_admin_import_refuses_broken_releases(case, client, staff, robust_dataset):
    client.force_login(staff)
    folder = DATA / case.path
    uploads = [_upload(p) for p in sorted(folder.rglob("*")) if p.is_file()] if folder.is_dir() else [_upload(folder)]
    fmt = "bsard" if "bsard" in case.path else "beir"
    before = _counts()
    response = client.post(reverse("admin:catalogue_dataset_import", args=[robust_dataset.pk]),
                           {"format": fmt, "files": uploads, "hidden_splits": "test"})
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    if case.line is not None:
        assert f":{case.line}: " in body
    assert case.hint in body
    assert _counts() == before


# --- the corpus itself ------------------------------------------------------------------------------


def test_corpus_is_complete_and_documented():
    """Every file has an expectation, every expectation a file, and the README lists them all."""
    readme = (DATA / "README.md").read_text()
    listed = {c.path for c in RUNS + QRELS} | {c.path for _, c in IMPORTS}
    on_disk = set()
    for path in DATA.rglob("*"):
        rel = path.relative_to(DATA).as_posix()
        if path.is_file() and rel not in ("README.md", "make_big.py") and "__pycache__" not in rel:
            # A release folder is one case.
            top = "/".join(rel.split("/")[:2])
            on_disk.add(top if (DATA / top).is_dir() else rel)
    assert on_disk == listed
    for rel in listed:
        assert f"`{rel.split('/', 1)[1]}`" in readme, rel
        assert (DATA / rel).stat().st_size < 200_000 or (DATA / rel).is_dir()
    assert len(listed) >= 40

"""The big cases of the bad-input corpus, generated at test time by ``tests/data/bad/make_big.py``.

A million queries, 100,000 documents for one query, a gzip bomb, a 2 MB line
and a zip bomb: each answered through the metric core and a web door, within
caps set by settings (lowered here so the tests stay fast), with nothing
half-written.
"""

from __future__ import annotations

import html
import importlib.util
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import ApiToken
from catalogue.models import QrelsVersion, Split, Topic
from evaluation.errors import InputError
from evaluation.runs import read_run
from submissions.models import Submission
from submissions.services import submission_score_now

from .conftest import DATA, files_in
from .test_bad_inputs import METADATA, core_score

pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("make_big", DATA / "make_big.py")
make_big = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_big)

CAP = 8 << 20  # decompressed bytes, for the bombs


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """The generated files, made once for the module."""
    folder = tmp_path_factory.mktemp("big-inputs")
    return {make.__name__: make(folder) for make in make_big.ALL}


@pytest.fixture
def api(alice):
    _, key = ApiToken.issue(user=alice, name="robustness")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def _upload(path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/octet-stream")


def test_a_million_queries_are_read_and_warned_about(big):
    evaluation = core_score(big["million_queries"])
    codes = {w.code: w for w in evaluation.warnings}
    assert codes["unknown_queries"].count == 1_000_000
    assert len(evaluation.qids) == 3


def test_a_million_queries_are_refused_past_the_line_cap(big):
    with pytest.raises(InputError) as caught:
        read_run(str(big["million_queries"]), max_lines=100_000)
    assert ":100001: " in str(caught.value) and "the limit" in str(caught.value)


def test_the_api_fails_a_run_past_the_line_cap_naming_the_line(big, api, test_split, settings, data_dir):
    settings.LEXBOARD_MAX_RUN_LINES = 100_000
    response = api.post(reverse("api:submissions"), {"dataset": "robust", "split": "test",
                                                     "run_file": _upload(big["million_queries"]), **METADATA},
                        format="multipart")
    # Every line is read at upload now: refused there, naming the line, no slot used.
    assert response.status_code == 400, response.content
    assert 100_001 in [d["line"] for d in response.json()["error"]["details"]]
    assert not Submission.objects.exists()


def test_a_hundred_thousand_documents_for_one_query_are_cut_at_the_depth(big, client, alice, test_split):
    test_split.min_coverage = 0  # one query of four: the coverage rule is tested in tests/submissions
    test_split.save()
    evaluation = core_score(big["many_docs_one_query"])
    assert "depth_cut" in {w.code for w in evaluation.warnings}
    client.force_login(alice)
    response = client.post(reverse("participants:upload", args=["robust"]) + "?split=test",
                           {**METADATA, "run": _upload(big["many_docs_one_query"])})
    assert response.status_code == 302
    submission = submission_score_now(Submission.objects.get(user=alice).pk)
    assert submission.status == Submission.Status.SCORED, submission.error
    assert "depth_cut" in {w["code"] for w in submission.warnings}


def test_a_gzip_bomb_is_refused_by_the_core_without_inflating_it(big):
    started = time.monotonic()
    with pytest.raises(InputError) as caught:
        read_run(str(big["gzip_bomb"]), max_bytes=CAP)
    assert "larger than" in str(caught.value)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("door", ["form", "api"])
def test_a_gzip_bomb_is_refused_at_upload(door, big, client, alice, api, test_split, settings, data_dir):
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = CAP
    started = time.monotonic()
    if door == "form":
        client.force_login(alice)
        response = client.post(reverse("participants:upload", args=["robust"]) + "?split=test",
                               {**METADATA, "run": _upload(big["gzip_bomb"])})
        assert response.status_code == 400
        assert "expands more than" in html.unescape(response.content.decode())
    else:
        response = api.post(reverse("api:submissions"), {"dataset": "robust", "split": "test",
                                                         "run_file": _upload(big["gzip_bomb"]), **METADATA},
                            format="multipart")
        assert response.status_code == 400
        assert "expands more than" in response.json()["error"]["message"]
    assert time.monotonic() - started < 10
    assert not Submission.objects.exists()
    assert files_in(data_dir) == []


def test_a_two_megabyte_line_is_refused_everywhere(big, api, test_split, data_dir):
    with pytest.raises(InputError) as caught:
        read_run(str(big["long_line"]))
    assert ":1: line is longer than" in str(caught.value)
    response = api.post(reverse("api:submissions"), {"dataset": "robust", "split": "test",
                                                     "run_file": _upload(big["long_line"]), **METADATA},
                        format="multipart")
    assert response.status_code == 400
    assert 1 in [d["line"] for d in response.json()["error"]["details"]]
    assert not Submission.objects.exists() and files_in(data_dir) == []


def test_a_zip_bomb_is_refused_by_the_admin_import(big, client, staff, robust_dataset, settings):
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = CAP
    client.force_login(staff)
    before = (Split.objects.count(), Topic.objects.count(), QrelsVersion.objects.count())
    response = client.post(reverse("admin:catalogue_dataset_import", args=[robust_dataset.pk]),
                           {"format": "beir", "files": [_upload(big["zip_bomb"])], "hidden_splits": "test"})
    assert response.status_code == 200
    assert "more than the limit" in html.unescape(response.content.decode())
    assert (Split.objects.count(), Topic.objects.count(), QrelsVersion.objects.count()) == before

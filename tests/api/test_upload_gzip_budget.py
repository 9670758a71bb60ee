"""The gzip running budget at the door (#36 item 5): an upload that inflates past
``LEXBOARD_MAX_DECOMPRESSED_BYTES`` is refused at once with the cap in the message, before any Submission row or
quota use, whether it is a run (TREC or JSON) or a prediction file.

Before, once ``LEXBOARD_UPLOAD_SCAN_BYTES`` were read the stream ended and the rest was never inflated: a 75 MB
gzip inflating to 230 MB was accepted, counted and failed 30 s later in the worker (a JSON run was refused as
too large to read, not for its size).
"""

from __future__ import annotations

import gzip
import zlib

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission

from ..classification.conftest import make_clf_dataset
from .test_upload_attacks import _refusal, post

pytestmark = pytest.mark.django_db


def _lines(n: int) -> bytes:
    """``n`` run lines of the tiny corpus's documents, 20 per query."""
    return "".join(f"q{i // 20 + 1} Q0 d{i % 20 + 1} {i % 20 + 1} {100 - i % 20} sys\n" for i in range(n)).encode()


def _bomb(decompressed: int) -> bytes:
    """A gzip whose run lines inflate to ``decompressed`` bytes (valid lines: only the size is wrong)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    lines = _lines(2000)
    out = [comp.compress(lines * (decompressed // len(lines) + 1)), comp.flush()]
    return b"".join(out)


def _json_bomb(decompressed: int) -> bytes:
    entries = ", ".join(f'"d{i}": {i}' for i in range(decompressed // 8))
    return gzip.compress(('{"q1": {' + entries + "}}").encode())


@pytest.mark.parametrize("name", ["run.txt.gz", "run.json.gz"])
def test_a_gzip_past_the_decompressed_cap_is_refused_at_the_door_naming_the_cap(api, tiny_dataset, settings, name):
    """Past the scan budget the rest was never inflated: the upload was accepted, counted and failed in the worker
    (a JSON run was refused as too large to read, not for its size)."""
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 64 * 1024
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    settings.LEXBOARD_MAX_GZIP_RATIO = 10_000
    data = _bomb(3 * 1024 * 1024) if name == "run.txt.gz" else _json_bomb(3 * 1024 * 1024)
    assert len(gzip.decompress(data)) > settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
    text = _refusal(post(api, data, name=name))
    assert "more than 1.0 MB" in text, text


def test_a_gzip_within_the_cap_but_past_the_scan_budget_is_still_taken(api, tiny_dataset, settings):
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 64 * 1024
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = 4 * 1024 * 1024
    settings.LEXBOARD_MAX_GZIP_RATIO = 10_000
    response = post(api, gzip.compress(_lines(20_000)), name="run.txt.gz")
    assert response.status_code == 202, response.content[:500]
    assert Submission.objects.get().checked_in_worker


def test_a_prediction_gzip_past_the_decompressed_cap_is_refused_at_the_door(api, alice, settings):
    areas = make_clf_dataset()
    settings.LEXBOARD_UPLOAD_SCAN_BYTES = 64 * 1024
    settings.LEXBOARD_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    settings.LEXBOARD_MAX_GZIP_RATIO = 10_000
    line = b'{"id": "x1", "label": "civil"}\n'
    data = gzip.compress(line * (3 * 1024 * 1024 // len(line)))
    response = api.post("/api/v1/submissions/", {"dataset": areas.slug, "split": "train",
                                                 "system_name": "cls",
                                                 "run_file": SimpleUploadedFile("pred.jsonl.gz", data)},
                        format="multipart")
    text = _refusal(response)
    assert "more than 1.0 MB" in text, text

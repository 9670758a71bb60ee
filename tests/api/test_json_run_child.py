"""A JSON run is converted away from the web process (#36 item 3): a child with its own bounds, each named.

The web process copies the upload's bounded content to a file and a child (``evaluation.run_json_child``)
converts it. A run that needs more memory, CPU time, wall-clock time or output than the child may have is
refused in the same request, before a Submission row or a slot, naming the limit and the fix, never a 500; the
memory is the child's, not the process handling the request (its peak resident set, VmHWM, is read around the
conversion). Before, the conversion ran in the request's process: the same run was converted there, its peak
grew by the query's documents, and nothing bounded its CPU.
"""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import UploadedFile

from catalogue.models import Dataset
from submissions.errors import UploadRefused
from submissions.services.inspection import json_run_as_trec
from tests.evaluation.json_runs import SLOW, many_queries, one_query

from .test_upload_attacks import _refusal, post

pytestmark = pytest.mark.django_db

MIB = 1024 * 1024


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        match = re.search(rf"^{field}:\s+(\d+) kB", fh.read(), re.M)
    assert match is not None, field
    return int(match.group(1))


def test_a_query_over_the_childs_memory_is_refused_and_the_web_process_did_not_grow(settings, tmp_path):
    settings.LEXBOARD_JSON_RUN_MEMORY_BYTES = 64 * MIB
    path = tmp_path / "run.json"
    path.write_bytes(one_query(1_000_000))  # 22 MB of JSON; about 300 MiB to hold and rank in one process
    with path.open("rb") as fh:
        upload = UploadedFile(fh, name="run.json", size=path.stat().st_size)  # on disk, as Django hands it over
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # the peak resident set (VmHWM) starts again from the current one
        before = _status_kib("VmRSS")
        with pytest.raises(UploadRefused) as refused:
            json_run_as_trec(upload=upload, dataset=Dataset(task=Dataset.Task.RETRIEVAL))
        grown_mib = (_status_kib("VmHWM") - before) / 1024
    message = refused.value.message
    assert "run.json is a JSON run whose conversion needs more than 64.0 MB of memory" in message, message
    assert "depth of documents per query" in message and "upload it as a TREC run" in message
    assert refused.value.details == [{"line": None, "reason": "JSON reader's memory limit"}]
    assert grown_mib < 16, f"the process handling the upload grew by {grown_mib:.0f} MiB"


def test_a_memory_refusal_is_a_400_in_the_request_with_nothing_stored(api, tiny_dataset, settings):
    settings.LEXBOARD_JSON_RUN_MEMORY_BYTES = 48 * MIB
    text = _refusal(post(api, one_query(300_000)))
    assert "more than 48.0 MB of memory, the limit of the JSON reader" in text, text


def test_a_run_over_the_childs_cpu_time_is_refused_naming_it(api, tiny_dataset, settings):
    settings.LEXBOARD_JSON_RUN_CPU_SECONDS = 1
    text = _refusal(post(api, many_queries(*SLOW), name="big.json"))
    assert "big.json is a JSON run whose conversion needs more than 1 s of CPU time" in text, text
    assert "JSON reader's cpu limit" in text


def test_a_run_past_the_childs_wall_clock_is_refused_naming_it(api, tiny_dataset, settings):
    settings.LEXBOARD_JSON_RUN_TIMEOUT_SECONDS = 0.5
    text = _refusal(post(api, many_queries(*SLOW)))
    assert "not converted within 0.5 s, the JSON reader's time limit" in text, text


def test_a_json_run_whose_trec_run_is_past_the_upload_limit_is_refused_naming_it(api, tiny_dataset, settings):
    settings.LEXBOARD_MAX_UPLOAD_BYTES = 100_000
    qid = "q" * 90  # repeated on each of the 5,000 TREC lines: 56 KB of JSON, 530 KB of TREC
    data = ('{"' + qid + '": {' + ", ".join(f'"d{i}": {i}' for i in range(5_000)) + "}}").encode()
    assert len(data) < settings.LEXBOARD_MAX_UPLOAD_BYTES
    text = _refusal(post(api, data))
    assert "whose TREC run is larger than 97.7 KB, the limit of a run" in text, text

"""The JSON reader's child (``evaluation.run_json_child``): real processes, real limits, no secret inherited.

Each limit is reached by a real child on a run that needs more than it (no signal is sent by the test); the
environment the child got is read from ``/proc/<pid>/environ`` while it waits for its input.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
import time

import pytest

from evaluation.errors import RunFormatError
from evaluation.run_json import json_run_convert
from evaluation.run_json_child import (
    CHILD_ENV,
    ChildLimits,
    ContentCut,
    ConversionStopped,
    json_run_convert_in_child,
)

from .json_runs import SLOW, many_queries, one_query

#: Generous bounds: a test lowers the one it reaches.
ROOMY = {"memory_bytes": 256 * 1024 * 1024, "cpu_seconds": 60, "wall_seconds": 120, "output_bytes": 1 << 30}
CANARY = "canary-secret-key-7f3a"


def limits(**lower) -> ChildLimits:
    return ChildLimits(**{**ROOMY, **lower})


def convert(data: bytes, **options):
    src, out = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    src.write(data)
    src.seek(0)
    lim = options.pop("limits", limits())
    stats = json_run_convert_in_child(src, out, path="run.json", tag="t", limits=lim, **options)
    out.seek(0)
    return stats, out.read()


def test_the_child_writes_what_the_reader_writes_in_process():
    data = b'{"q1": {"d1": 0.5, "d2": 0.9, "d3": 0.5}, "q2": {"d9": 3}}'
    stats, trec = convert(data)
    expected = io.BytesIO()
    json_run_convert(io.BytesIO(data), expected, path="run.json", tag="t")
    assert trec == expected.getvalue() == b"q1 Q0 d2 1 0.9 t\nq1 Q0 d3 2 0.5 t\nq1 Q0 d1 3 0.5 t\nq2 Q0 d9 1 3.0 t\n"
    assert (stats.queries, stats.lines, stats.bytes) == (2, 4, len(trec))


def test_the_childs_problems_are_the_readers_problems():
    data = b'{"q1": {"d1": NaN}, "q2": [1, 2]}'
    with pytest.raises(RunFormatError) as in_child:
        convert(data)
    with pytest.raises(RunFormatError) as in_process:
        json_run_convert(io.BytesIO(data), io.BytesIO(), path="run.json", tag="t")
    assert in_child.value.problems == in_process.value.problems and len(in_child.value.problems) == 2


def test_content_cut_at_the_callers_budget_is_too_large_unless_a_problem_stopped_the_reader_first():
    with pytest.raises(ContentCut):
        convert(b'{"q1": {"d1": 1}, "q2": {"d', cut=True)
    with pytest.raises(RunFormatError, match="not valid JSON"):
        convert(b'{"q1": {"d1": 1}} trailing', cut=False)
    # The reader reads ahead (64 KiB pieces): a problem well before the cut stops it before it needs more.
    rest = b", ".join(b'"q%d": {"d1": 1}' % q for q in range(20_000))
    with pytest.raises(RunFormatError, match="not valid JSON"):
        convert(b'{"q0": {"d1": 1,, "d2": 2}, ' + rest, cut=True)
    with pytest.raises(ContentCut):
        convert(b'{"q0": {"d1": 1, "d2": 2}, ' + rest, cut=True)


def test_a_query_needing_more_memory_than_the_cap_stops_the_child_on_memory():
    data = one_query(300_000)  # about 60 MiB in the reader; 6.3 MB of JSON
    with pytest.raises(ConversionStopped) as stopped:
        convert(data, limits=limits(memory_bytes=48 * 1024 * 1024))
    assert stopped.value.limit == "memory"
    stats, _ = convert(data)  # within the roomy cap it converts
    assert stats.lines == 300_000


def test_a_run_needing_more_cpu_than_the_cap_stops_the_child_on_cpu():
    data = many_queries(*SLOW)  # several seconds of CPU where the cap is 1 s
    started = time.monotonic()
    with pytest.raises(ConversionStopped) as stopped:
        convert(data, limits=limits(cpu_seconds=1))
    assert stopped.value.limit == "cpu"
    assert time.monotonic() - started < 60


def test_a_child_past_the_wall_clock_is_killed_and_named():
    data = many_queries(*SLOW)  # several seconds, where it is killed at 0.5 s
    started = time.monotonic()
    with pytest.raises(ConversionStopped) as stopped:
        convert(data, limits=limits(wall_seconds=0.5))
    assert stopped.value.limit == "time"
    assert time.monotonic() - started < 10


def test_a_trec_run_past_the_output_cap_stops_the_child_on_output():
    data = many_queries(100, 100)  # 10,000 lines, about 200 KB of TREC
    with pytest.raises(ConversionStopped) as stopped:
        convert(data, limits=limits(output_bytes=50_000))
    assert stopped.value.limit == "output"


def _children_running(module: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid() and module.encode() in cmdline:
            found.append(int(entry))
    return found


def test_the_child_sees_none_of_the_parents_secrets(monkeypatch):
    for name in ("SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, f"{CANARY}-{name}")
    monkeypatch.setenv("PYTHONPATH", "/nonexistent")  # would be read by a child without -E
    read_end, write_end = os.pipe()
    src = os.fdopen(read_end, "rb")
    out = tempfile.TemporaryFile()
    done: dict = {}

    def run() -> None:  # the child waits on its input, an empty pipe, while its environment is read
        done["stats"] = json_run_convert_in_child(src, out, path="run.json", tag="t", limits=limits())

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not (pids := _children_running("evaluation.run_json_child")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(pids) == 1, pids
        with open(f"/proc/{pids[0]}/environ", "rb") as fh:
            environ = dict(item.split(b"=", 1) for item in fh.read().split(b"\0") if item)
    finally:
        os.write(write_end, b'{"q1": {"d1": 1}}')
        os.close(write_end)
        thread.join(60)
        src.close()
    assert CANARY.encode() not in b"".join(environ.values())
    assert {key.decode(): value.decode() for key, value in environ.items()} == CHILD_ENV == {"PATH": os.defpath}
    assert done["stats"].lines == 1  # and it converted the run it was given

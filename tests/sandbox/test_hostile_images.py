"""Hostile images end with a clear status and message, the host untouched and nothing left behind.

Each image of tests/sandbox/images/ runs through ``sandbox.runner.run_image``
with small limits (conftest.SMALL); each test checks the status a person
reads, that the message names the limit or the image's own words, and that
no container and no /output mount survives the run.
"""

from __future__ import annotations

import os
import uuid

import pytest

from sandbox.runner import Status, run_image

from .conftest import SANDBOX, SMALL, leftovers

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def run(image, sandbox_input, tmp_path, limits=SMALL):
    name = f"test-{uuid.uuid4().hex[:12]}"
    work = tmp_path / "work"
    outcome = run_image(sandbox=SANDBOX, image=image, input_dir=sandbox_input, work_dir=work, limits=limits, name=name)
    assert leftovers(work, name) == []
    return outcome


def test_it_stops_a_fork_bomb_at_the_pids_limit(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("fork-bomb"), sandbox_input, tmp_path)
    assert outcome.status is Status.PIDS, outcome
    assert "limit of 32" in outcome.message and "fork bomb" in outcome.message
    assert outcome.seconds < SMALL.wall_seconds + 10


def test_it_stops_an_endless_loop_at_its_wall_time(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("endless-loop"), sandbox_input, tmp_path)
    assert outcome.status is Status.TIMEOUT, outcome
    assert f"wall time of {SMALL.wall_seconds} s" in outcome.message
    assert SMALL.wall_seconds <= outcome.seconds < SMALL.wall_seconds + 10


def test_it_tells_a_full_disk_and_keeps_the_root_read_only(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("fill-disk"), sandbox_input, tmp_path)
    assert outcome.status is Status.DISK_FULL, outcome
    assert "/tmp (16 MB)" in outcome.message
    assert "wrote to the root file system" not in outcome.stderr_tail


def test_it_caps_a_10_gb_run_at_the_output_limit(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("huge-run"), sandbox_input, tmp_path)
    assert outcome.status is Status.OUTPUT_TOO_LARGE, outcome
    assert "16 MB" in outcome.message
    assert outcome.run_path is None
    assert not list(tmp_path.rglob("run.trec"))


def test_it_has_no_network(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("network"), sandbox_input, tmp_path)
    assert outcome.status is Status.NETWORK, outcome
    assert "network" in outcome.message and "Network is unreachable" in outcome.message


def test_it_reads_nothing_outside_input(hostile_image, sandbox_input, tmp_path, monkeypatch):
    """The image searches the file system, pid 1 and its environment for the host's canaries: none is there."""
    canary = f"LEXBOARD-CANARY-{uuid.uuid4().hex}"
    (tmp_path / "canary-beside-the-input.txt").write_text(canary)
    (sandbox_input.parent / "work").mkdir()
    (sandbox_input.parent / "work" / "canary.txt").write_text(canary)
    monkeypatch.setenv("LEXBOARD_SANDBOX_CANARY", canary)  # the worker's environment (podman's own too)
    assert os.environ["LEXBOARD_SANDBOX_CANARY"] == canary
    outcome = run(hostile_image("read-outside"), sandbox_input, tmp_path)
    assert outcome.status is Status.OK, outcome  # it exits 0 and writes what it found as its "run"
    found = outcome.run_path.read_text()
    assert "== writing to /input" in found  # the script ran to its end
    assert canary not in found
    assert "LEXBOARD_SANDBOX_CANARY" not in found
    assert "Read-only file system" in found  # /input refused the write
    assert not (sandbox_input / "written-by-the-image").exists()
    assert "uid=0(root)" in found  # root inside, and that root is not the host's:
    assert f"{SANDBOX.uid_base}" not in found.split("== mounts")[0]  # (podman's own tmpfs options name the map)


def test_it_names_a_non_zero_exit_with_the_image_s_own_words(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("exit-nonzero"), sandbox_input, tmp_path)
    assert outcome.status is Status.FAILED, outcome
    assert outcome.exit_code == 3
    assert "status 3" in outcome.message
    assert "model file /models/encoder.bin not found" in outcome.message


def test_it_keeps_the_image_s_words_out_of_the_message_when_asked(hostile_image, sandbox_input, tmp_path):
    """A software-only split: the image read the hidden topics and could print them on stderr."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    outcome = run_image(sandbox=SANDBOX, image=hostile_image("exit-nonzero"), input_dir=sandbox_input,
                        work_dir=tmp_path / "work", limits=SMALL, name=name, quote_stderr=False)
    assert outcome.status is Status.FAILED and "status 3" in outcome.message
    assert "encoder.bin" not in outcome.message and "curators can read it" in outcome.message
    assert "encoder.bin" in outcome.stderr_tail


def test_it_tells_an_image_that_ran_out_of_memory(hostile_image, sandbox_input, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run(hostile_image("memory-hog"), sandbox_input, tmp_path)
    assert outcome.status is Status.OOM, outcome
    assert "128 MB of memory" in outcome.message
    assert not (tmp_path / "oom").exists()  # conmon's marker file stays in the run's folder


def test_it_tells_an_image_that_wrote_no_run(hostile_image, sandbox_input, tmp_path):
    outcome = run(hostile_image("no-run"), sandbox_input, tmp_path)
    assert outcome.status is Status.NO_RUN, outcome
    assert "results.txt" in outcome.message and "/output/run.trec" in outcome.message


def test_it_refuses_an_image_the_store_does_not_hold(sandbox_input, tmp_path):
    outcome = run("localhost/lexboard-sandbox-test-never-built:latest", sandbox_input, tmp_path)
    assert outcome.status is Status.PLATFORM
    assert "not in the platform's image store" in outcome.message

"""The worked example (docker/sandbox-example/): the contract followed, the run the same as by hand."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from sandbox.runner import Status, podman_run_args, run_image

from .conftest import ROOT, SANDBOX, SMALL, leftovers

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]


def test_it_runs_the_example_and_gives_the_run_it_gives_by_hand(example_image, sandbox_input, tmp_path):
    name = f"test-{uuid.uuid4().hex[:12]}"
    work = tmp_path / "work"
    outcome = run_image(sandbox=SANDBOX, image=example_image, input_dir=sandbox_input, work_dir=work, limits=SMALL,
                        name=name)
    assert outcome.status is Status.OK, outcome
    assert len(outcome.digest) == 64  # the image id podman reports
    run = outcome.run_path.read_text()
    assert run.splitlines()[0].split()[:4] == ["q1", "Q0", "art-3", "1"]  # loyer, bail, preneur
    by_hand = tmp_path / "by-hand.trec"
    subprocess.run([sys.executable, "-I", str(ROOT / "docker/sandbox-example/bm25.py"), "--input",
                    str(sandbox_input), "--output", str(by_hand), "--depth", "100"], check=True, capture_output=True)
    assert run == by_hand.read_text()
    assert leftovers(work, name) == []


def test_every_restriction_is_on_the_command_line(tmp_path):
    """The flags docs/sandbox.md promises; a flag dropped from the runner fails here."""
    args = podman_run_args(sandbox=SANDBOX, image="img", name="n", input_dir=tmp_path / "in",
                           output_dir=tmp_path / "out", cidfile=tmp_path / "cid", limits=SMALL)
    for flag in ("--network=none", "--read-only", "--read-only-tmpfs=false", "--cap-drop=ALL",
                 "--security-opt=no-new-privileges", "--pull=never", "--memory=128m", "--memory-swap=128m",
                 "--cpus=1", "--pids-limit=32", f"--volume={tmp_path / 'in'}:/input:ro", "--log-driver=none",
                 f"--uidmap=0:{SANDBOX.uid_base}:{SANDBOX.uid_count}"):
        assert flag in args
    assert "--tmpfs=/tmp:rw,size=16m,mode=1777,nosuid,nodev" in args
    assert not any("seccomp" in a or "privileged" in a or "--cap-add" in a or "--env" in a for a in args)
    assert args[-1] == "img"

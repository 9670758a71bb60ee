"""What an image leaves in /output is taken only as a regular file it wrote: never a link, a pipe or a device.

The attack that found this: an image whose ``/output/run.trec`` was a symbolic link to a host path made the
worker (root) copy the host's file as the run, and the refusal quoted its first lines back: a host canary file
came back in full, and a link to ``/proc/self/environ`` returned the worker's environment (``SECRET_KEY``,
``DATABASE_URL``). Each case of tests/sandbox/images/output-tricks runs through the real runner and podman, in a
child process holding canary secrets as a sandbox worker holds its settings, and nothing outside the box may
reach the stored run, the message or the stderr tail. The link cases took the host's bytes before the runner
read the run with ``O_NOFOLLOW`` (``sandbox.runner.take_run``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from sandbox.runner import Status

from .conftest import SANDBOX, SMALL, leftovers

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
#: The host file the link cases point at (the image knows the path; the worker must never read it).
CANARY_FILE = Path("/tmp/lexboard-sandbox-canary.txt")


@pytest.fixture
def canary():
    value = f"LEXBOARD-CANARY-{uuid.uuid4().hex}"
    CANARY_FILE.write_text(f"{value} host file\n")
    CANARY_FILE.chmod(0o644)
    yield value
    CANARY_FILE.unlink(missing_ok=True)


def run_in_child(image: str, input_dir: Path, tmp_path: Path, canary: str, trick: str | None = None) -> dict:
    if trick is not None:
        (input_dir / "trick").write_text(trick)
        (input_dir / "trick").chmod(0o644)
    name = f"test-{uuid.uuid4().hex[:12]}"
    work = tmp_path / "work"
    spec = {"sandbox": dataclasses.asdict(SANDBOX), "image": image, "input": str(input_dir), "work": str(work),
            "limits": dataclasses.asdict(SMALL), "name": name}
    # The secrets a sandbox worker's process holds, as canaries.
    env = {**os.environ, "LEXBOARD_SANDBOX_CANARY": canary, "SECRET_KEY": f"{canary}-secret-key",
           "DATABASE_URL": f"postgres://lexboard:{canary}-password@db/lexboard"}
    proc = subprocess.run([sys.executable, str(HERE / "run_in_child.py"), json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert leftovers(work, name) == []
    return json.loads(proc.stdout)


def outside(result: dict, canary: str, input_dir: Path, *, environ_words: bool = True) -> list[str]:
    """What of the host, the worker or the input reached what the image's owner reads (``environ_words``: an
    environment's lines at all; off where the image prints its own, which is inside the box)."""
    seen = json.dumps(result)
    words = [canary, "LEXBOARD_SANDBOX_CANARY", "SECRET_KEY", "DATABASE_URL"] + (["PATH=", "HOME="] * environ_words)
    found = [word for word in words if word in seen]
    topics = (input_dir / "topics.jsonl").read_text()
    found += [line for line in topics.splitlines() if line and line[:30] in seen]
    return found


LINKS = ["link-host-file", "link-self-env", "link-pid1-env", "link-root", "link-input", "link-dotdot"]


@pytest.mark.parametrize("trick", LINKS)
def test_a_link_left_as_the_run_is_refused_and_never_followed(trick, hostile_image, sandbox_input, tmp_path,
                                                             canary):
    result = run_in_child(hostile_image("output-tricks"), sandbox_input, tmp_path, canary, trick)
    assert result["status"] == Status.NOT_A_FILE, result
    assert "is a symbolic link, not a file it wrote" in result["message"]
    assert result["run"] == "" and result["run_bytes"] == 0
    assert outside(result, canary, sandbox_input) == []


@pytest.mark.parametrize(("trick", "kind"), [
    ("hard-link", "a hard link (a file with more than one name)"), ("fifo", "a named pipe (FIFO)"), ("folder", "a folder"),
    ("device", "a symbolic link"),  # no CAP_MKNOD, so the image's last resort is a link to /dev/zero
])
def test_other_things_left_as_the_run_are_refused_by_kind(trick, kind, hostile_image, sandbox_input, tmp_path,
                                                          canary):
    result = run_in_child(hostile_image("output-tricks"), sandbox_input, tmp_path, canary, trick)
    assert result["status"] == Status.NOT_A_FILE, result
    assert f"is {kind}, not a file it wrote" in result["message"]
    assert result["run"] == ""
    assert outside(result, canary, sandbox_input) == []


def test_a_sparse_10_gb_run_stops_at_the_output_cap(hostile_image, sandbox_input, tmp_path, canary):
    result = run_in_child(hostile_image("output-tricks"), sandbox_input, tmp_path, canary, "sparse")
    assert result["status"] == Status.OUTPUT_TOO_LARGE, result
    assert result["run"] == "" and f"{SMALL.output_mb} MB" in result["message"]


def test_a_setuid_binary_in_the_image_gains_nothing(hostile_image, sandbox_input, tmp_path, canary):
    result = run_in_child(hostile_image("setuid"), sandbox_input, tmp_path, canary)
    assert result["status"] == Status.OK, result
    assert "euid-65534" in result["run"], result["run"]  # no-new-privileges: the bit is not honoured


def test_the_container_sees_no_host_path_in_its_mount_table(hostile_image, sandbox_input, tmp_path, canary):
    result = run_in_child(hostile_image("read-outside"), sandbox_input, tmp_path, canary)
    assert result["status"] == Status.OK, result
    mounts = result["run"].split("== mounts", 1)[1].split("== pid 1", 1)[0]
    input_line = next(line for line in mounts.splitlines() if " /input " in line)
    # The input is a tmpfs of the runner's own: its root is "/", not the host folder the platform wrote.
    assert input_line.split()[3] == "/" and "lexboard-sandbox" in input_line, input_line
    assert str(tmp_path) not in mounts and str(sandbox_input) not in mounts
    # Its own environment is inside the box (PATH, HOME); the worker's secrets are not.
    found = outside(result, canary, sandbox_input, environ_words=False)
    assert found == [] or found == [line for line in sandbox_input.joinpath("topics.jsonl").read_text().splitlines()
                                    if line], found  # it may print /input's own topics: they are its input

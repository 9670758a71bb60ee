"""``make run`` (scripts/run.sh) as a newcomer runs it, twice: the site is announced only once it can score, the
second start keeps what a curator did in between, and Ctrl-C stops every process with exit 0. While the first one
serves, README.md's client block (a token, then ``lexboard_cli submit … --wait``) runs as written in a reader's
folder holding the demo's exported files, with the free port in place of 8000.

The embedded default in a temporary var/ (SQLite, the filesystem broker), one scoring worker, a free port. The
project's virtualenv is reached through a folder of links with the runtime stamp set, so the script installs
nothing. Between the two starts a curator publishes judgments v2 of the demo's hidden split.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.doc_blocks import blocks_run_by, reader_folder, run_block
from tests.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ANNOUNCED = "==> Lexboard is at"
START_TIMEOUT = 900


def _venv(tmp_path: Path) -> Path:
    real = (ROOT / ".venv").resolve()
    venv = tmp_path / "venv"
    venv.mkdir()
    for name in ("bin", "include", "lib", "lib64", "pyvenv.cfg"):
        if (real / name).exists():
            (venv / name).symlink_to(real / name)
    (venv / ".installed-runtime").touch()  # newer than requirements.txt: no pip install
    return venv


def _env(tmp_path: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {
        "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE", "LEXBOARD_QUEUE",
        "LEXBOARD_SITE_URL", "PORT"}}
    env.update(PORT=str(port), VENV=str(_venv(tmp_path)), LEXBOARD_VAR_DIR=str(tmp_path / "var"),
               LEXBOARD_WORKER_CONCURRENCY="1", PYTHONUNBUFFERED="1",
               # No sandbox worker: its start-up clean-up would remove other tests' containers from the host's
               # sandbox store (tests/sandbox/test_make_run.py starts one, on a store of its own).
               LEXBOARD_SANDBOX_WORKER="0")
    return env


def _as_in_a_terminal() -> None:
    """Ctrl-C's signal as a terminal leaves it (a test runner started in the background may ignore it, and a shell
    cannot trap a signal ignored when it started)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def _start(env: dict[str, str], log: Path, command: tuple[str, ...] = ("bash", "scripts/run.sh")) -> subprocess.Popen:
    out = open(log, "wb")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(list(command), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_as_in_a_terminal)


def _wait_announced(process: subprocess.Popen, log: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if ANNOUNCED in text:
            return text
        assert process.poll() is None, f"run.sh exited ({process.returncode}) before serving:\n{text[-4000:]}"
        time.sleep(0.5)
    raise AssertionError(f"not announced within {START_TIMEOUT}s:\n{log.read_text(errors='replace')[-4000:]}")


def _stop(process: subprocess.Popen) -> int | None:
    """Ctrl-C, as the README says: its exit status, once every process it started is gone (None: it had exited)."""
    if process.poll() is not None:
        return None
    os.killpg(process.pid, signal.SIGINT)  # the terminal sends it to the whole foreground group
    try:
        status = process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        raise AssertionError("Ctrl-C did not stop it within 60 s") from None
    deadline = time.monotonic() + 30
    while _group_alive(process.pid):  # web, workers, beat and their supervisors
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            raise AssertionError("processes of make run outlived Ctrl-C")
        time.sleep(0.2)
    return status


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([f"{env['VENV']}/bin/python", "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


CURATOR_PUBLISHES_V2 = """
from catalogue.models import QrelsVersion, Split
from catalogue.services import qrels_version_add
split = Split.objects.get(dataset__slug="demo", name="test")
qrels = {}
for line in QrelsVersion.objects.get(pk=split.current_qrels_id).text().splitlines():
    q, _, d, g = line.split()
    qrels.setdefault(q, {})[d] = int(g)
first = sorted(qrels)[0]
qrels[first]["1"] = 2
version, _ = qrels_version_add(split=split, qrels=qrels, note="assessor round 1", publish=True,
                               small_change_reason="one grade corrected")  # a hidden split's small change
print("published", version.version)
"""
CURRENT = ("from catalogue.models import Split; "
           "print('current', Split.objects.get(dataset__slug='demo', name='test').current_qrels.version)")


def _readme_client_block(request, env: dict[str, str], port: int, reader: Path) -> str:
    """README.md's client block against the running site; what it printed."""
    (block,) = [b for b in blocks_run_by(request.node.nodeid) if "lexboard_cli submit" in b.text]
    assert "http://127.0.0.1:8000" in block.text
    block.text = block.text.replace("http://127.0.0.1:8000", f"http://127.0.0.1:{port}")
    reader_env = {**reader_folder(reader, Path(env["VENV"])), "LEXBOARD_VAR_DIR": env["LEXBOARD_VAR_DIR"]}
    # "the files above": the README's export of the demo (writes files, reads no database)
    subprocess.run([".venv/bin/python", "manage.py", "load_demo", "--export", "demo-files", "--depth", "100"],
                   cwd=reader, env=reader_env, check=True, capture_output=True, timeout=300)
    return run_block(block, reader, reader_env, timeout=300)


def test_make_run_serves_once_it_can_score_and_a_second_start_keeps_the_curators_work(request, tmp_path):
    port = free_port()
    env = _env(tmp_path, port)
    assert any(block.text.startswith("make run") for block in blocks_run_by(request.node.nodeid))
    process = _start(env, tmp_path / "first.log")
    try:
        text = _wait_announced(process, tmp_path / "first.log")
        # Announced after a scoring worker answered and the web answered /healthz: both hold at that moment.
        assert text.index("workers ready: worker1@") < text.index(ANNOUNCED)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
            assert response.status == 200
        assert "workers ready: worker1@" in _manage(env, "workers_ready", "--timeout", "10")
        printed = _readme_client_block(request, env, port, tmp_path / "reader")
        assert "scored" in printed, printed
    finally:
        stopped = _stop(process)
    # Ctrl-C is the way to stop it: every process stopped warmly, exit 0 (it was 130 or 143: make's "Error 143").
    first = (tmp_path / "first.log").read_text(errors="replace")
    assert stopped == 0 and "==> stopped" in first, first[-3000:]
    assert "published 2" in _manage(env, "shell", "-c", CURATOR_PUBLISHES_V2)
    process = _start(env, tmp_path / "second.log", ("make", "--no-print-directory", "run"))  # as the README says
    try:
        _wait_announced(process, tmp_path / "second.log")
        assert "current 2" in _manage(env, "shell", "-c", CURRENT)
    finally:
        stopped = _stop(process)
    # make ends by the Ctrl-C it got itself, as it does for any target, but reports no error of the script's.
    second = (tmp_path / "second.log").read_text(errors="replace")
    assert stopped in (0, -signal.SIGINT) and "==> stopped" in second and "Error" not in second, second[-3000:]

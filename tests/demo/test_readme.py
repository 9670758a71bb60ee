"""The README.md's shell blocks marked as run by this module's fresh-copy test run as written, in a fresh copy of
the checkout.

The copy holds the tracked files only (what a clone has) plus the project's
virtualenv as ``.venv``; the blocks run in order with ``bash -e`` and no
database or broker variables (the embedded default), so a command that only
works on the author's machine, or names a file the export does not write,
fails here.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import ApiToken
from tests.doc_blocks import blocks_in

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent.parent
RUNNABLE = "tests/demo/test_readme.py::test_the_readme_runnable_blocks_run_in_a_fresh_copy"


def runnable_blocks(text: str) -> list[str]:
    return [block.text for block in blocks_in(text, "README.md") if RUNNABLE in block.run_by]


def test_the_marker_finds_the_blocks():
    blocks = runnable_blocks((ROOT / "README.md").read_text())
    assert len(blocks) >= 2 and all(".venv/bin/python" in b for b in blocks)
    assert not any(re.search(r"(^|\s)python (manage\.py|-m)", b) for b in blocks)  # the venv is always named


def test_the_readme_runnable_blocks_run_in_a_fresh_copy(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    clone = tmp_path / "clone"
    for name in filter(None, tracked.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            target = clone / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    venv = Path(sys.prefix)
    (clone / ".venv").symlink_to(venv, target_is_directory=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE", "LEXBOARD_QUEUE")}
    for n, block in enumerate(runnable_blocks((clone / "README.md").read_text()), start=1):
        done = subprocess.run(["bash", "-e", "-c", block], cwd=clone, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"README block {n} failed:\n{block}\n--- stdout\n{done.stdout[-3000:]}" \
                                     f"\n--- stderr\n{done.stderr[-3000:]}"
    assert (clone / "fused.dev.trec").stat().st_size > 0


@pytest.mark.django_db
def test_the_readme_token_command_works_on_a_fresh_install():
    """The README's ``create_api_token`` line runs as written once ``make run`` made its accounts (no user
    named in it may exist only on the author's machine)."""
    lines = re.findall(r"manage\.py (create_api_token [^)#\n]*)", (ROOT / "README.md").read_text())
    assert lines
    call_command("ensure_local_admin", stdout=io.StringIO())  # what scripts/run.sh runs at every start
    for line in lines:
        args = shlex.split(line)
        out = io.StringIO()
        call_command(*args, stdout=out, stderr=io.StringIO())
        assert out.getvalue().strip().startswith("lxb_")
    assert ApiToken.objects.count() == len(lines)


def test_what_the_readme_blocks_write_is_ignored_by_git():
    """``git status`` stays clean after a reader runs the README's blocks in the checkout."""
    written = []
    for block in runnable_blocks((ROOT / "README.md").read_text()):
        written += [m + "/x" for m in re.findall(r"--export (\S+)", block)]
        written += re.findall(r"> (\S+)", block)
    assert "demo-files/x" in written and "fused.dev.trec" in written
    for path in written:
        ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0
        assert ignored, f"{path}, written by a README block, is not in .gitignore"

"""The README's shell blocks marked ``<!-- runnable -->`` run as written, in a fresh copy of the checkout.

The copy holds the tracked files only (what a clone has) plus the project's
virtualenv as ``.venv``; the blocks run in order with ``bash -e`` and no
database or broker variables (the embedded default), so a command that only
works on the author's machine, or names a file the export does not write,
fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent.parent
BLOCK = re.compile(r"<!-- runnable -->\s*\n```(?:sh|bash)\n(.*?)\n```", re.DOTALL)


def runnable_blocks(text: str) -> list[str]:
    return BLOCK.findall(text)


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

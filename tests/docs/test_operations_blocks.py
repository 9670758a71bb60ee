"""docs/operations.md's blocks that run on the embedded default run as written, in a shell, in a reader's folder.

"Move a benchmark to another host": two hosts are two folders, each with its own ``var/`` (SQLite, the filesystem
broker). The old one is migrated and holds the demo (``load_demo``, as ``make run`` loads it); the export block
runs there; the archive, its checksum and the key are copied to the new one, migrated and empty, where the import
block runs. The demo's boards are then on the new host, hidden judgments included (decrypted with the key).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import blocks_run_by, reader_folder, run_block

#: What the new host holds after the import: the demo's splits, each with its judgments, and its entries.
HELD = ("from catalogue.models import Split; from submissions.models import Submission; "
        "splits = Split.objects.filter(dataset__slug='demo').order_by('name'); "
        "print(*[(s.name, s.hidden, s.current_qrels_id is not None) for s in splits], sep='\\n'); "
        "print('entries', Submission.objects.filter(split__dataset__slug='demo').count())")


def _manage(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run([".venv/bin/python", "manage.py", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_the_archive_blocks_move_the_demo_to_a_new_host(request, tmp_path):
    export, import_ = blocks_run_by(request.node.nodeid)
    assert "export_benchmark" in export.text and "import_benchmark" in import_.text
    venv = Path(sys.prefix)
    old, new = tmp_path / "old", tmp_path / "new"
    old_env, new_env = reader_folder(old, venv), reader_folder(new, venv)
    _manage(old_env, old, "migrate", "--verbosity", "0")
    _manage(old_env, old, "load_demo", "--depth", "20")
    before = _manage(old_env, old, "shell", "-c", HELD)
    assert "True, True" in before and "entries 0" not in before, before  # a hidden split with judgments, entries

    printed = run_block(export, old, old_env)
    assert "sha256" in printed, printed

    for name in ("demo.tar", "demo.tar.sha256", "lexboard-archive.key"):
        shutil.copy2(old / name, new / name)
    _manage(new_env, new, "migrate", "--verbosity", "0")
    run_block(import_, new, new_env)
    assert _manage(new_env, new, "shell", "-c", HELD) == before

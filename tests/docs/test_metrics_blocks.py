"""docs/metrics.md's worked LEXTREME example runs as written: the ``json`` block above it saved as ``scores.json``,
each ``$`` line of the ``console`` block run in a shell, and what it prints is the block's output, line for line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.doc_blocks import ROOT, blocks_of, blocks_run_by, reader_folder


def test_the_lextreme_worked_example_prints_as_shown(request, tmp_path):
    (block,) = blocks_run_by(request.node.nodeid)
    assert block.label == "console"
    every = blocks_of(ROOT / block.doc)
    scores = every[every.index(block) - 1]
    assert scores.label == "json", f"{block.where}: the block right above it is scores.json (```json)"
    env = reader_folder(tmp_path, Path(sys.prefix))
    (tmp_path / "scores.json").write_text(scores.text)
    command, *shown = block.text.splitlines()
    assert command.startswith("$ ") and not any(line.startswith("$ ") for line in shown)
    done = subprocess.run(["bash", "-c", command[2:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert [line.rstrip() for line in done.stdout.splitlines()] == [line.rstrip() for line in shown], done.stdout

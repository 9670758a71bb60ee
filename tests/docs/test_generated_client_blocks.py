"""The README.md's and docs/api.md's "generate a typed client" blocks run as written against a live server.

Each block runs in a shell in a folder of its own, with ``LEXBOARD`` the live server's address (docs/api.md) and
the README's ``http://127.0.0.1:8000`` (where ``make run`` serves) read as that address. ``pip install
openapi-python-client`` is the one line not executed: the test checks instead that the package is installed at the
version requirements-dev.txt pins (a test downloads nothing); ``curl`` and ``openapi-python-client generate`` run
as written, and the package they make must be importable.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import ROOT, blocks_run_by, run_block

PIN = re.search(r"^openapi-python-client==(\S+)$", (ROOT / "requirements-dev.txt").read_text(), flags=re.M)
#: ``pip install NAME``: satisfied when NAME is installed at requirements-dev.txt's pin, and nothing is downloaded.
PIP = 'pip() { [ "$1" = install ] && [ "$(python -m pip show "$2" | sed -n "s/^Version: //p")" = "$PINNED" ]; }\n'


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not shutil.which("curl"), reason="the blocks fetch the schema with curl")
def test_the_generate_block_runs_as_written(request, live_server, tmp_path):
    blocks = blocks_run_by(request.node.nodeid)
    assert sorted(block.doc for block in blocks) == ["README.md", "docs/api.md"]
    assert PIN, "requirements-dev.txt pins openapi-python-client"
    venv_bin = Path(sys.executable).parent
    env = {**os.environ, "LEXBOARD": live_server.url, "PINNED": PIN[1],
           "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}"}  # python, and the generator's ruff hook
    for block in blocks:
        folder = tmp_path / block.doc.replace("/", "-")
        folder.mkdir()
        block.text = PIP + block.text.replace("http://127.0.0.1:8000", live_server.url)
        run_block(block, folder, env, timeout=300)
        assert (folder / "lexboard-openapi.json").stat().st_size > 1000
        imported = subprocess.run([sys.executable, "-c", "import lexboard_client; print(lexboard_client.Client)"],
                                  cwd=folder, capture_output=True, text=True, timeout=60)
        assert imported.returncode == 0 and "Client" in imported.stdout, imported.stderr

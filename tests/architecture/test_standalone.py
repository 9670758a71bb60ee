"""The project stands alone: nothing it runs reads outside the repository.

A clone on a new machine has nothing beside it, so no code, test, script,
Makefile rule or CI step may name the shared folder beside the checkout
(the reference material the project was given); facts the tests check against live in the repository
(tests/data/reference/README.md says where each came from).
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What a path outside the repository looks like in our files.
OUTSIDE = re.compile(r"\.\./shared\b|/shared/reference\b|[\"']shared[\"']\s*/\s*[\"']reference|parent\s*/\s*[\"']shared[\"']")
#: Files that run: code, scripts, the Makefile, CI, configuration.
RUNS = re.compile(r"(\.py|\.sh|\.c|\.toml|\.ini|\.cfg|\.ya?ml|\.json|Makefile|\.ci/run|Dockerfile[^/]*)$")


def tracked_files() -> list[Path]:
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listing.decode().split("\0") if name]


def test_no_code_test_script_or_ci_step_reads_outside_the_repository():
    offenders = []
    for path in tracked_files():
        relative = path.relative_to(ROOT).as_posix()
        if not RUNS.search(relative) or not path.is_file() or relative == "tests/architecture/test_standalone.py":
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()[:120]}")
    assert not offenders, "these read outside the repository (copy what they need into it):\n" + "\n".join(offenders)


def test_the_trec_eval_source_kept_in_the_repository_is_the_reference():
    readme = (ROOT / "tests/data/reference/README.md").read_text()
    digest = hashlib.sha256((ROOT / "tests/data/reference/trec_eval-9.0.8-src.tar.gz").read_bytes()).hexdigest()
    assert f"sha256 `{digest}`" in readme

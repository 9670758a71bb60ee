"""Shared helpers for the metric-core tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

# The core is a plain package; keep it importable when pytest runs without Django.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# The suite-wide worker plugin (tests/fixtures_worker.py) purges a Celery queue
# after every session, which needs Django settings. The metric core is tested
# without Django (``pytest -p no:django tests/evaluation``), so it does nothing here.
import pytest  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _purge_test_queue():
    yield


# ---------------------------------------------------------------- a trec_eval binary to compare with

TREC_EVAL_TARBALL = "trec_eval-9.0.8-src.tar.gz"


#: The copy kept in the repository (tests/data/reference/README.md says where it came from).
TREC_EVAL_COPY = ROOT / "tests" / "data" / "reference" / TREC_EVAL_TARBALL


def _trec_eval_tarball() -> Path | None:
    """trec_eval 9.0.8's source: ``LEXBOARD_TREC_EVAL_SRC``, else the copy in ``tests/data/reference/``."""
    given = os.environ.get("LEXBOARD_TREC_EVAL_SRC")
    if given:
        return Path(given)
    return TREC_EVAL_COPY if TREC_EVAL_COPY.exists() else None


@pytest.fixture(scope="session")
def trec_eval_binary(tmp_path_factory) -> str:
    """A trec_eval 9.0.8 binary: ``LEXBOARD_TREC_EVAL``, or built with ``make`` from the reference tarball.

    It is a reference tool, built in a temporary folder and never copied into
    the repository; the tests that need it are skipped, with the reason, when
    neither is available.
    """
    given = os.environ.get("LEXBOARD_TREC_EVAL")
    if given:
        return given
    tarball = _trec_eval_tarball()
    if tarball is None:
        pytest.skip(f"no trec_eval: set LEXBOARD_TREC_EVAL to a binary, or put {TREC_EVAL_TARBALL} in "
                    "tests/data/reference/ (or LEXBOARD_TREC_EVAL_SRC)")
    if shutil.which("make") is None or shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("building trec_eval needs make and a C compiler")
    folder = tmp_path_factory.mktemp("trec_eval")
    with tarfile.open(tarball) as tar:
        tar.extractall(folder, filter="data")
    source = next(p.parent for p in folder.rglob("Makefile"))
    subprocess.run(["make"], cwd=source, check=True, capture_output=True)
    return str(source / "trec_eval")


@pytest.fixture(scope="session")
def trec_eval_test_files(tmp_path_factory) -> Path:
    """The ``test/`` folder of trec_eval 9.0.8's source: its own inputs and the outputs its ``make quicktest`` expects."""
    tarball = _trec_eval_tarball()
    if tarball is None:
        pytest.skip(f"no {TREC_EVAL_TARBALL} in tests/data/reference/ (or LEXBOARD_TREC_EVAL_SRC): its test files "
                    "cannot be read")
    folder = tmp_path_factory.mktemp("trec_eval_src")
    with tarfile.open(tarball) as tar:
        tar.extractall(folder, members=[m for m in tar.getmembers() if "/test/" in f"/{m.name}"], filter="data")
    return next(p.parent for p in folder.rglob("qrels.test"))

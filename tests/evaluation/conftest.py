"""Shared helpers for the metric-core tests."""

from __future__ import annotations

import sys
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

"""Shared helpers for the metric-core tests."""

from __future__ import annotations

import sys
from pathlib import Path

# The core is a plain package; keep it importable when pytest runs without Django.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

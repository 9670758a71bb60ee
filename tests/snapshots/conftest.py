"""Fixtures of the snapshot tests: the page tests' scored entries (written straight into the database)."""

from __future__ import annotations

from tests.pages.conftest import (  # noqa: F401  (fixtures, found by pytest under these names)
    hidden_test,
    make_entry,
    reported,
    split_dev,
    split_test,
)

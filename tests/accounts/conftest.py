"""Fixtures of the account tests: a clean rate-limit state for each test."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_counters():
    # Rate-limit counters live in the cache; a test must not inherit another's failures.
    cache.clear()
    yield
    cache.clear()

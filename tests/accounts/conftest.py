"""Fixtures of the account tests: rate-limit counters of their own for each test."""


import pytest


@pytest.fixture(autouse=True)
def _own_cache_namespace(own_cache_namespace):
    """Every test caches in a key space of its own (see tests/conftest.py)."""

"""Fixtures of the account tests: rate-limit counters of their own for each test."""

import copy
import uuid

import pytest


@pytest.fixture(autouse=True)
def _own_cache_namespace(settings):
    """Rate-limit counters live in the cache: each test counts in its own key space.

    A fresh prefix rather than ``cache.clear()``, which on a shared Redis would
    wipe the caches of other test sessions running at the same time.
    """
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex[:12]}"
    settings.CACHES = caches

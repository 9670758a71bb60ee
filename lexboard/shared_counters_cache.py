"""The embedded default's cache: pages in each process's memory, rate-limit counters in the database.

Without Redis, gunicorn's processes share nothing in memory, so counters kept
there would give a guesser one allowance per process. Counters (allauth's
``allauth:rl:…`` and ours ``lexboard:rl:…``, with their lock keys) go to
Django's database cache table instead — ``lexboard_cache``, created by the
migration accounts/0002 — which every process and container sees. Everything
else stays in process memory, where a page-cache hit costs no SQL query
(docs/performance.md); leaderboard/page_cache.py keys those pages by a digest
of the database, which is why this is still a ``LocMemCache`` to it.
"""

from __future__ import annotations

from django.core.cache.backends.db import DatabaseCache
from django.core.cache.backends.locmem import LocMemCache

SHARED_KEY_PREFIXES = ("allauth:rl:", "lexboard:rl:")


class SharedCountersLocMemCache(LocMemCache):
    """A ``LocMemCache`` that keeps rate-limit keys in a ``DatabaseCache`` table shared by all processes."""

    def __init__(self, name: str, params: dict) -> None:
        super().__init__(name, params)
        options = dict(params.get("OPTIONS", {}))
        table = options.pop("COUNTERS_TABLE", "lexboard_cache")
        self._shared = DatabaseCache(table, {**params, "OPTIONS": {"MAX_ENTRIES": 20000}})

    @staticmethod
    def _is_shared(key: str) -> bool:
        return str(key).startswith(SHARED_KEY_PREFIXES)

    def _backend(self, key):
        return self._shared if self._is_shared(key) else super()

    def add(self, key, value, timeout=300, version=None):
        return self._backend(key).add(key, value, timeout, version)

    def get(self, key, default=None, version=None):
        return self._backend(key).get(key, default, version)

    def set(self, key, value, timeout=300, version=None):
        return self._backend(key).set(key, value, timeout, version)

    def touch(self, key, timeout=300, version=None):
        return self._backend(key).touch(key, timeout, version)

    def incr(self, key, delta=1, version=None):
        return self._backend(key).incr(key, delta, version)

    def has_key(self, key, version=None):
        return self._backend(key).has_key(key, version)

    def delete(self, key, version=None):
        return self._backend(key).delete(key, version)

    def clear(self):
        super().clear()
        self._shared.clear()

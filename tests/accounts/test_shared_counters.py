"""The embedded default's cache: rate-limit counters in the shared database table, pages in process memory."""

import pytest
from django.core.cache import caches
from django.db import connection

from lexboard.shared_counters_cache import SharedCountersLocMemCache

pytestmark = pytest.mark.django_db


@pytest.fixture
def cache():
    return SharedCountersLocMemCache("t-shared", {"KEY_PREFIX": "t-shared", "OPTIONS": {"COUNTERS_TABLE": "lexboard_cache"}})


def _rows(like: str) -> int:
    """Rows of this test's cache (its key prefix): the table also holds other tests' counters, committed by the
    processes they started (seen with the suite in parallel: 9 'lexboard:rl:' rows)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM lexboard_cache WHERE cache_key LIKE %s", [f"%t-shared%{like}%"])
        return cursor.fetchone()[0]


def test_counters_go_to_the_database_table_and_pages_stay_in_memory(cache):
    cache.set("allauth:rl:allauth.account:login_failed:x", [1.0], 60)
    cache.add("lexboard:rl:upload:abc:1", 0, 60)
    assert cache.incr("lexboard:rl:upload:abc:1") == 1
    cache.set("lexboard:page:generation", 7)
    assert _rows("allauth:rl:") == 1 and _rows("lexboard:rl:") == 1
    assert _rows("lexboard:page") == 0
    # Another process's cache object (a new instance: its memory is empty) sees the counters, not the pages.
    other = SharedCountersLocMemCache("t-other", {"KEY_PREFIX": "t-shared", "OPTIONS": {"COUNTERS_TABLE": "lexboard_cache"}})
    assert other.get("allauth:rl:allauth.account:login_failed:x") == [1.0]
    assert other.get("lexboard:rl:upload:abc:1") == 1
    assert other.get("lexboard:page:generation") is None


def test_the_embedded_default_uses_it_unless_redis_is_configured(settings):
    backend = settings.CACHES["default"]["BACKEND"]
    if settings.CACHE_URL.startswith("redis"):
        assert backend == "lexboard.redis_cache.RedisCache"
    else:
        assert backend == "lexboard.shared_counters_cache.SharedCountersLocMemCache"
        assert isinstance(caches["default"], SharedCountersLocMemCache)

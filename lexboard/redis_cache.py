"""Django's Redis cache backend, with one ``redis.Redis`` client per connection pool instead of one per call.

Django 5.2's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` object
for every cache operation; with redis-py 5+ that constructor sets up its table
of ~170 response callbacks each time, about 0.1 ms of Python per call — 40% of
the CPU time of a cached leaderboard page, which makes two cache reads
(docs/performance.md). A client is thread-safe (each command checks a
connection out of the pool) and the pool handles forks, so one per pool is
enough. Behaviour is otherwise Django's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache, RedisCacheClient
from redis import ConnectionPool, Redis


class ReusingRedisCacheClient(RedisCacheClient):
    # The private attributes of Django's client this one uses (set by its __init__; django-stubs leaves them out).
    _servers: list[str]
    _pools: dict[int, ConnectionPool]
    _pool_class: type[ConnectionPool]
    _pool_options: dict[str, Any]
    _client: type[Redis]
    _get_connection_pool_index: Callable[[bool], int]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Redis] = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            if index not in self._pools:
                self._pools[index] = self._pool_class.from_url(self._servers[index], **self._pool_options)
            client = self._clients[index] = self._client(connection_pool=self._pools[index])
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient

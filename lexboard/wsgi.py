"""WSGI entry point for gunicorn: the application, ready before its first request.

Django imports the URL configuration (every view module) on a process's first
request, and the API builds its schema on the first request with a query
string; in a fresh gunicorn process the first upload took 45 ms more and the
first ``?wait=`` status answer 0.1 s more than the next ones (docs/performance.md).
Both are done here, as each web process starts, so no client waits for them,
with the cache's client and the broker's connection that an upload's task is
sent on (``health.broker_ok``, bounded by its timeout: a broker not up yet
costs the start a few seconds and a warning, and the first upload connects).
Then the objects made so far, which live as long as the process, are moved
out of the garbage collector's way (``gc.freeze``): a full collection no longer
walks them.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexboard.settings")

application = get_wsgi_application()

from django.core.cache import caches  # noqa: E402  (after the settings are loaded)
from django.urls import get_resolver  # noqa: E402

from api import contract  # noqa: E402
from lexboard import health  # noqa: E402


def _populate(resolver) -> None:
    """Build the resolver's reverse table and its namespaces' (what ``reverse`` builds on its first call: 60 ms)."""
    resolver.reverse_dict  # noqa: B018
    for _prefix, namespace in resolver.namespace_dict.values():
        _populate(namespace)


_populate(get_resolver())  # imports the URL configuration (every view module) on the way
contract.warm()
caches["default"]  # noqa: B018  (the cache's client, its library imported; no connection yet)
health.broker_ok()
gc.collect()
gc.freeze()

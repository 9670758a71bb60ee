"""Lexboard settings: the environment decides, safe local defaults otherwise.

With no environment variables the project runs embedded: SQLite in ``var/``,
Celery on kombu's ``filesystem://`` transport in ``var/``, files in
``var/media`` and ``var/data``. ``DATABASE_URL`` and ``CELERY_BROKER_URL``
switch to PostgreSQL and Redis. ``lexboard.settings.production`` adds the
hardening a public deployment needs; ``lexboard.settings.test`` the test-only
speed-ups.
"""

from .base import *  # noqa: F401,F403

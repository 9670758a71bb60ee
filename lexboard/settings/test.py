"""Test settings: the base settings plus test-only speed-ups.

Each test session gets its own test database name (``LEXBOARD_TEST_ID``,
inherited by the worker processes a test starts), so parallel test runs on one
machine never drop each other's database.
"""

import os

from .base import *  # noqa: F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

TEST_ID = os.environ.setdefault("LEXBOARD_TEST_ID", str(os.getpid()))

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory, so a real worker process can open the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-lexboard-{TEST_ID}.sqlite3")}  # noqa: F405
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{TEST_ID}"}  # noqa: F405

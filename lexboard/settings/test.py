"""Test settings: the base settings plus test-only speed-ups.

Each test session gets its own test database name (``LEXBOARD_TEST_ID``,
inherited by the worker processes a test starts), so parallel test runs on one
machine never drop each other's database.
"""

import os
import uuid

# Before the base settings read them: a queue of this session's own, inherited
# by the worker processes the tests start.
TEST_ID = os.environ.setdefault("LEXBOARD_TEST_ID", str(os.getpid()))
os.environ.setdefault("LEXBOARD_QUEUE", f"lexboard-test-{TEST_ID}")
# pytest-xdist: the controller imported these settings first, so every xdist process inherited its id,
# queue and cache prefix; each process gets its own (its database is already its own: pytest-django adds
# the suffix), or one process's worker scores another's tasks against the wrong database.
_XDIST = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST and not TEST_ID.endswith(f"-{_XDIST}"):
    inherited_queue = f"lexboard-test-{TEST_ID}"
    TEST_ID = os.environ["LEXBOARD_TEST_ID"] = f"{TEST_ID}-{_XDIST}"
    if os.environ["LEXBOARD_QUEUE"] == inherited_queue:
        os.environ["LEXBOARD_QUEUE"] = f"lexboard-test-{TEST_ID}"
    if "LEXBOARD_TEST_CACHE_PREFIX" in os.environ:
        os.environ["LEXBOARD_TEST_CACHE_PREFIX"] += f"-{_XDIST}"

from .base import *  # noqa: E402,F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A worker process started by a test may send through another backend (the console's, as make run's workers).
EMAIL_BACKEND = os.environ.get("LEXBOARD_TEST_EMAIL_BACKEND") or "django.core.mail.backends.locmem.EmailBackend"
# A worker process started by a test may write its e-mails to files the test reads (locmem is per process).
if os.environ.get("LEXBOARD_TEST_EMAIL_DIR"):
    EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    EMAIL_FILE_PATH = os.environ["LEXBOARD_TEST_EMAIL_DIR"]
# A cache key prefix per session, inherited by the servers and workers a test starts: every test
# database starts its ids and cache versions again, and test sessions may share one Redis.
CACHES["default"]["KEY_PREFIX"] = os.environ.setdefault(  # noqa: F405
    "LEXBOARD_TEST_CACHE_PREFIX", f"test-{uuid.uuid4().hex[:12]}"
)

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory, so a real worker process can open the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-lexboard-{TEST_ID}.sqlite3")}  # noqa: F405
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{TEST_ID}"}  # noqa: F405

# The tests start sandbox workers per test, or none (the services run the task themselves): images are taken
# whether or not a sandbox worker's heartbeat is fresh (tests/ops/test_make_run_sandbox.py sets it back).
LEXBOARD_SANDBOX_WORKER_STALE_SECONDS = 0

# Every test's client is 127.0.0.1, in-process and through the live gunicorn alike, and one cache holds the count:
# the per-network upload limit (100 an hour) would be spent by the suite as a whole, not by the test at hand
# (live security tests were refused with 429 once the suite passed it within one hour's window). The tests of that
# limit set their own rate (tests/accounts/test_throttling.py, tests/sandbox/test_pages.py, the presigned tests).
LEXBOARD_UPLOAD_NETWORK_RATE = os.environ.get("LEXBOARD_UPLOAD_NETWORK_RATE", "100000/h")

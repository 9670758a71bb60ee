"""Test settings: the base settings plus test-only speed-ups."""

from .base import *  # noqa: F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory, so a real worker process can open the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-lexboard.sqlite3")}  # noqa: F405

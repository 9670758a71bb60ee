"""Production settings: the base settings plus the hardening a public deployment needs.

Use with ``DJANGO_SETTINGS_MODULE=lexboard.settings.production``. It refuses
to start without a real ``SECRET_KEY`` and an ``ALLOWED_HOSTS`` list, and with
them ``python manage.py check --deploy`` prints no warning. TLS is expected to
end at a reverse proxy (Caddy, nginx, a load balancer) that sets
``X-Forwarded-Proto``; see docs/deploy.md.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from lexboard.env import env_bool, env_int, env_list, env_str

from .base import *  # noqa: F401,F403
from .base import STORAGES

DEBUG = False

# --- Secret key ---------------------------------------------------------------------
_DEV_SECRET_KEY = "dev-only-insecure-key-change-me-in-production-0123456789"
_HOW_TO_MAKE_ONE = (
    "Generate one with: python -c \"import secrets; print(secrets.token_urlsafe(50))\" "
    "and put it in the environment (or the .env file read by docker/compose.yml)."
)


def _strong_secret(name: str, value: str) -> str:
    """Refuse a missing, default or weak key at start-up, not at the first forged cookie."""
    if not value:
        raise ImproperlyConfigured(f"{name} is not set. {_HOW_TO_MAKE_ONE}")
    if value == _DEV_SECRET_KEY or value.startswith("django-insecure-"):
        raise ImproperlyConfigured(f"{name} is the development default. {_HOW_TO_MAKE_ONE}")
    if len(value) < 50 or len(set(value)) < 5:
        raise ImproperlyConfigured(f"{name} is too short or too simple (at least 50 varied characters). {_HOW_TO_MAKE_ONE}")
    return value


SECRET_KEY = _strong_secret("SECRET_KEY", os.environ.get("SECRET_KEY", ""))
# Rotation: put the old key here for a while, so sessions and password-reset
# links signed with it stay valid (docs/operations.md).
SECRET_KEY_FALLBACKS = [
    _strong_secret("SECRET_KEY_FALLBACKS", key) for key in env_list("SECRET_KEY_FALLBACKS", [])
]

# --- Hosts --------------------------------------------------------------------------
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS is not set: give the public host name(s), comma-separated, e.g. ALLOWED_HOSTS=lexboard.example.org"
    )
if "*" in ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS=* accepts any Host header; name the public host name(s) instead.")

# --- HTTPS --------------------------------------------------------------------------
# TLS ends at the proxy in front; it tells us the original scheme in this
# header. Set SECURE_PROXY_SSL_HEADER to an empty value only when nothing
# stands in front of gunicorn (then a client could claim https itself).
_proxy_header = env_str("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto").strip()
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
# Container health checks speak plain HTTP from inside the container.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# --- Headers ------------------------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The Content-Security-Policy itself comes from lexboard.middleware (in base
# MIDDLEWARE, so development sees the same policy as production).

# --- Static files -------------------------------------------------------------------
# Hashed, compressed files built by `collectstatic` (at image build time) and
# served by whitenoise with far-future cache headers.
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}}
# A template naming a file that collectstatic did not see gets the plain URL
# (a missing stylesheet) instead of a 500 on every page.
WHITENOISE_MANIFEST_STRICT = False

# --- Files in S3-compatible object storage (optional) ------------------------------
# LEXBOARD_S3_BUCKET and friends switch runs and media to a bucket; read by the
# base settings, so tests and every process use the same switch (docs/deploy.md).

# --- Email --------------------------------------------------------------------------
# Password-reset mail must really leave: SMTP unless told otherwise.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL)  # noqa: F405
ADMINS = [("Lexboard admins", addr) for addr in env_list("ADMINS", [])]

"""lexboard.settings.production: `check --deploy` is clean, and it refuses to start half-configured.

Each case runs in a subprocess, because settings are read once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3Y-for-tests-only_" + "aB9xZq2LmN7pR4sT6uV8wY0cE1gH3jK5" * 2


def _run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "SECRET_KEY_FALLBACKS"}}
    base.update(
        DJANGO_SETTINGS_MODULE="lexboard.settings.production",
        LEXBOARD_VAR_DIR=str(tmp_path / "var"),
        PYTHONPATH=str(ROOT),
    )
    base.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=base, capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_it_passes_check_deploy_without_a_single_warning(tmp_path):
    result = _run(["manage.py", "check", "--deploy"], tmp_path, SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="lexboard.example.org")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output, output
    assert "WARNING" not in output, output


def test_it_refuses_to_start_without_a_secret_key(tmp_path):
    result = _run(["manage.py", "check"], tmp_path, ALLOWED_HOSTS="lexboard.example.org")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert "secrets.token_urlsafe" in result.stderr  # says how to make one


def test_it_refuses_the_development_secret_key(tmp_path):
    result = _run(
        ["manage.py", "check"], tmp_path,
        SECRET_KEY="dev-only-insecure-key-change-me-in-production-0123456789", ALLOWED_HOSTS="lexboard.example.org",
    )
    assert result.returncode != 0
    assert "development default" in result.stderr


def test_it_refuses_a_short_secret_key_and_a_weak_fallback(tmp_path):
    short = _run(["manage.py", "check"], tmp_path, SECRET_KEY="short", ALLOWED_HOSTS="lexboard.example.org")
    assert short.returncode != 0 and "too short" in short.stderr
    weak_fallback = _run(
        ["manage.py", "check"], tmp_path,
        SECRET_KEY=STRONG_KEY, SECRET_KEY_FALLBACKS="old", ALLOWED_HOSTS="lexboard.example.org",
    )
    assert weak_fallback.returncode != 0 and "SECRET_KEY_FALLBACKS" in weak_fallback.stderr


def test_it_refuses_to_start_without_allowed_hosts(tmp_path):
    result = _run(["manage.py", "check"], tmp_path, SECRET_KEY=STRONG_KEY)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS is not set" in result.stderr


_PROBE = r"""
import json, django
django.setup()
from django.conf import settings
from django.test import Client
from django.test.utils import setup_test_environment
setup_test_environment()  # lets the test client talk to the production settings
client = Client(HTTP_HOST="lexboard.example.org")
plain = client.get("/")
secure = client.get("/healthz", HTTP_X_FORWARDED_PROTO="https")
insecure_health = client.get("/healthz")
print(json.dumps({
    "debug": settings.DEBUG,
    "redirect_status": plain.status_code,
    "redirect_to": plain.get("Location", ""),
    "health_plain_status": insecure_health.status_code,
    "headers": dict(secure.headers),
    "staticfiles": settings.STORAGES["staticfiles"]["BACKEND"],
}))
"""


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_it_sends_hsts_csp_and_friends_and_redirects_plain_http(tmp_path):
    result = _run(["-c", _PROBE], tmp_path, SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="lexboard.example.org")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["debug"] is False
    assert seen["redirect_status"] == 301 and seen["redirect_to"].startswith("https://lexboard.example.org/")
    assert seen["health_plain_status"] in (200, 503)  # the container health check is not redirected
    headers = seen["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert seen["staticfiles"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"


@pytest.mark.slow  # > 2 s (docs/testing.md)
@pytest.mark.parametrize("header", ["", "X-Forwarded-Proto"])
def test_it_makes_the_proxy_https_header_configurable(tmp_path, header):
    probe = "import django; django.setup(); from django.conf import settings; print(getattr(settings, 'SECURE_PROXY_SSL_HEADER', None))"
    result = _run(["-c", probe], tmp_path, SECRET_KEY=STRONG_KEY, ALLOWED_HOSTS="lexboard.example.org",
                  SECURE_PROXY_SSL_HEADER=header)
    assert result.returncode == 0, result.stderr
    expected = "('HTTP_X_FORWARDED_PROTO', 'https')" if header else "None"
    assert result.stdout.strip() == expected


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_it_passes_check_deploy_with_the_example_env_file_once_a_key_is_set(tmp_path):
    import re

    example = dict(re.findall(r"^([A-Z][A-Z0-9_]*)=(.*)$", (ROOT / ".env.example").read_text(), re.M))
    example["SECRET_KEY"] = STRONG_KEY
    for folder in ("LEXBOARD_VAR_DIR", "MEDIA_ROOT", "LEXBOARD_DATA_DIR", "STATIC_ROOT"):
        example[folder] = str(tmp_path / folder.lower())  # not /var/lib/lexboard of this machine
    result = _run(["manage.py", "check", "--deploy"], tmp_path, **example)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues (0 silenced)." in output, output

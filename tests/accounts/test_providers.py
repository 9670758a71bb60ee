"""ORCID and GitHub sign-in exist only when a deployment sets their keys (read at start-up, so in a process of its own)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
from django.urls import NoReverseMatch, reverse
urls = {}
for name in ("orcid_login", "github_login"):
    try:
        urls[name] = reverse(name)
    except NoReverseMatch:
        urls[name] = None
apps = [a for a in settings.INSTALLED_APPS if "socialaccount" in a or a.endswith(".orcid")]
print(json.dumps({"apps": apps, "urls": urls}))
"""


def _probe(**env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LEXBOARD_ORCID", "LEXBOARD_GITHUB"))}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**clean, "DJANGO_SETTINGS_MODULE": "lexboard.settings", **env})
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_no_social_sign_in_without_keys():
    found = _probe()
    assert found["apps"] == ["allauth.socialaccount"]  # its tables (an ORCID-linked account rule asks them)
    assert found["urls"] == {"orcid_login": None, "github_login": None}


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_orcid_and_github_sign_in_with_their_keys():
    found = _probe(LEXBOARD_ORCID_CLIENT_ID="APP-123", LEXBOARD_ORCID_SECRET="s",
                   LEXBOARD_GITHUB_CLIENT_ID="gh-1", LEXBOARD_GITHUB_SECRET="s")
    assert "accounts.orcid" in found["apps"]  # allauth's ORCID provider, its addresses from the settings
    assert "allauth.socialaccount.providers.github" in found["apps"]
    assert found["urls"] == {"orcid_login": "/accounts/orcid/login/", "github_login": "/accounts/github/login/"}

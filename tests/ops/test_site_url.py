"""The site's address has one source: ``LEXBOARD_SITE_URL``, which defaults to the port ``make run`` serves on.

E-mails sent by the workers have no request to build links from; they linked to port 8000 whatever ``PORT`` said.
Each case runs in a subprocess, because settings are read once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The scored-run e-mail a worker sends: its "turn these e-mails off" link is built from the setting.
SHOW = "from campaigns.notifications import render_email; print(render_email('run_scored', {'id': 1})[1])"


def _shell(code: str, tmp_path: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in {"LEXBOARD_SITE_URL", "PORT", "DJANGO_SETTINGS_MODULE"}}
    base.update(LEXBOARD_VAR_DIR=str(tmp_path / "var"), **env)
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=base,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_the_links_in_e_mails_follow_the_port_the_site_is_served_on(tmp_path):
    out = _shell(SHOW, tmp_path, PORT="8123")
    assert "http://127.0.0.1:8123/tasks/notifications/" in out
    assert ":8000" not in out


@pytest.mark.slow  # > 2 s (docs/testing.md)
def test_the_site_url_setting_wins_over_the_port(tmp_path):
    code = "from django.conf import settings; print(settings.LEXBOARD_SITE_URL)"
    assert _shell(code, tmp_path, PORT="8123", LEXBOARD_SITE_URL="https://lexboard.example.org").split()[-1] \
        == "https://lexboard.example.org"
    assert _shell(code, tmp_path).split()[-1] == "http://127.0.0.1:8000"

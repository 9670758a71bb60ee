"""A web process is ready before its first request (lexboard/wsgi.py).

Importing the WSGI module, as each gunicorn process does, builds the URL
configuration's reverse tables, the API's schema and its table of declared
query parameters, opens the broker connection an upload's task is sent on,
and freezes what it made out of the garbage collector's way. Checked in a
fresh interpreter on the embedded default (no request made).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json
import lexboard.wsgi
from django.urls import get_resolver
from api import contract
resolver = get_resolver()
print(json.dumps({
    "populated": resolver._populated and all(ns._populated for _, ns in resolver.namespace_dict.values()),
    "schema": contract.api_schema.cache_info().currsize,
    "parameters": contract._declared_query_parameters.cache_info().currsize,
    "frozen": gc.get_freeze_count(),
}))
"""


def test_importing_the_wsgi_module_builds_what_the_first_request_would(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST", "LEXBOARD_", "DJANGO_")) and k not in ("DATABASE_URL", "CELERY_BROKER_URL",
                                                                                "CACHE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="lexboard.settings", LEXBOARD_VAR_DIR=str(tmp_path / "var"), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    warm = json.loads(out.stdout.strip().splitlines()[-1])
    assert warm["populated"] is True
    assert warm["schema"] == 1 and warm["parameters"] == 1
    assert warm["frozen"] > 10_000, warm
    assert "health check: broker failed" not in out.stderr, out.stderr[-2000:]

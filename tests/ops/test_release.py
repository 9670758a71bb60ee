"""The cache is keyed by the code: a deploy that changes a template starts from an empty cache."""

import os
import subprocess
import sys
from pathlib import Path

from lexboard.release import _SOURCES, code_digest
from tests.project import PACKAGES

ROOT = Path(__file__).resolve().parents[2]


def _tree(tmp_path: Path) -> Path:
    for folder in ("lexboard", "leaderboard", "submissions", "evaluation", "templates"):
        (tmp_path / folder).mkdir()
    (tmp_path / "templates" / "page.html").write_text("<h1>v1</h1>")
    (tmp_path / "leaderboard" / "views.py").write_text("def page(): ...\n")
    return tmp_path


def test_it_changes_when_a_template_changes(tmp_path):
    base = _tree(tmp_path)
    before = code_digest(base)
    (base / "templates" / "page.html").write_text("<h1>v2</h1>")
    assert code_digest(base) != before


def test_it_ignores_migrations_and_is_stable(tmp_path):
    base = _tree(tmp_path)
    before = code_digest(base)
    (base / "leaderboard" / "migrations").mkdir()
    (base / "leaderboard" / "migrations" / "0002.py").write_text("# data only\n")
    assert code_digest(base) == before == code_digest(base)


def test_the_settings_key_the_cache_by_the_release():
    # The test settings use a prefix per session, so read the base settings in a process of their own.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEXBOARD_RELEASE", "DJANGO_SETTINGS"))}
    code = "from lexboard.settings import base; print(base.CACHES['default']['KEY_PREFIX'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"lexboard-{code_digest(ROOT)}"
    env["LEXBOARD_RELEASE"] = "v1.2.3"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "lexboard-v1.2.3"


def test_it_reads_every_package_of_the_project():
    """A deploy that changes any package's code (a view in participants/, a formatting tag in presentation/) starts
    from an empty cache: the digest reads every folder of pyproject's root_packages, and the templates."""
    assert set(_SOURCES) == set(PACKAGES) | {"templates"}

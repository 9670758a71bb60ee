"""The cache is keyed by the code: a deploy that changes a template starts from an empty cache."""

from pathlib import Path

from django.conf import settings

from lexboard.release import code_digest

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
    # The test settings replace the prefix with one per test session; the release is still computed.
    assert settings.LEXBOARD_RELEASE == code_digest(ROOT) or settings.LEXBOARD_RELEASE
    assert len(code_digest(ROOT)) == 12

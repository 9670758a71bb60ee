"""What is deployed, as a short digest: part of every cache key.

Cached pages are invalidated by data changes (scores, curators' edits), not
by code; a deploy that changes a template or a view would otherwise keep
serving pages rendered by the old code until the next score. Keying the cache
by the code itself makes a deploy start from an empty cache.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: Every package of the project (pyproject.toml's root_packages; tests/ops/test_release.py holds them equal) and the
#: templates. It named five folders of an older layout: a change to any other package (a participant's page, a
#: formatting tag in presentation/, the catalogue, the API) changed no digest, and the old pages stayed cached.
_SOURCES = ("accounts", "api", "assessment", "campaigns", "catalogue", "curation", "demo", "evaluation", "leaderboard",
            "lexboard", "lexboard_cli", "participants", "presentation", "sandbox", "snapshots", "submissions", "templates")
_SUFFIXES = {".py", ".html", ".txt"}


def code_digest(base_dir: Path) -> str:
    """A 12-character digest of the project's Python files and templates (about 10 ms)."""
    digest = hashlib.sha256()
    for folder in _SOURCES:
        for path in sorted((base_dir / folder).rglob("*")):
            if path.suffix in _SUFFIXES and "migrations" not in path.parts and path.is_file():
                digest.update(path.relative_to(base_dir).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]

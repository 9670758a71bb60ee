"""The project's own packages, in one place: import-linter's ``root_packages`` in pyproject.toml.

Tests that walk the source (the disclosure owner, CSV writers, the layout) read this list, so a new top-level
package is covered by every walk without editing each test.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

with (ROOT / "pyproject.toml").open("rb") as _file:
    PACKAGES: tuple[str, ...] = tuple(tomllib.load(_file)["tool"]["importlinter"]["root_packages"])

#: The apps and packages with Django code (every package but the metric core and the stdlib-only client).
DJANGO_PACKAGES = tuple(p for p in PACKAGES if p not in ("evaluation", "lexboard_cli"))


def source_files(packages: tuple[str, ...] = PACKAGES, *, migrations: bool = False) -> list[Path]:
    """Every ``.py`` file of ``packages`` (migrations left out unless asked)."""
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py")
                  if migrations or "migrations" not in path.parts)

"""The templates themselves: nothing in them that Django would print as text.

A ``{# … #}`` comment is one line only; one that spans lines is not a comment to Django and is shown to every
visitor (it once printed above every leaderboard row). Multi-line comments are ``{% comment %}`` blocks. The
rendered side of the same rule is in tests/robustness/test_access_matrix.py (no raw template syntax on any page).
"""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

UNCLOSED_COMMENT = re.compile(r"\{#(?:(?!#\}).)*$", re.MULTILINE)


def _templates() -> list[Path]:
    folders = [Path(d) for t in settings.TEMPLATES for d in t["DIRS"]]
    return sorted(p for folder in folders for p in folder.rglob("*") if p.suffix in {".html", ".txt", ".tex"})


def test_the_templates_are_found():
    assert any(p.name == "base.html" for p in _templates())


def test_no_template_comment_spans_lines():
    wrong = []
    for path in _templates():
        text = path.read_text(encoding="utf-8")
        for m in UNCLOSED_COMMENT.finditer(text):
            wrong.append(f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)[:60]!r}")
    assert not wrong, ("a {# … #} comment must close on its own line (Django prints it otherwise); "
                       "use {% comment %} … {% endcomment %}:\n" + "\n".join(wrong))


def test_no_column_heading_is_empty():
    """A column heading with no text is read as nothing by a screen reader (axe: empty-table-header)."""
    wrong = [f"{path}: {m.group(0)}" for path in _templates()
             for m in re.finditer(r"<th\b[^>]*>\s*</th>", path.read_text(encoding="utf-8"))]
    assert not wrong, "give these column headings a word (or make them <td>):\n" + "\n".join(wrong)

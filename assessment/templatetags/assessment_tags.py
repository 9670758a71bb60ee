"""``user|is_assessor``: whether the navigation offers the assessment pages (one query per request at most)."""

from __future__ import annotations

from django import template

from assessment.models import is_assessor as _is_assessor

register = template.Library()


@register.filter
def is_assessor(user) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    cached = getattr(user, "_lexboard_is_assessor", None)
    if cached is None:
        cached = _is_assessor(user)
        user._lexboard_is_assessor = cached
    return cached

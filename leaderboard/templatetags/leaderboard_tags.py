"""Small template helpers for leaderboard tables: score lookup, formatting, sort links."""

from __future__ import annotations

from urllib.parse import urlencode

from django import template

register = template.Library()


@register.filter
def score(row, measure: str):
    """``row.scores[measure]`` (None when the row lacks it)."""
    scores = getattr(row, "scores", None) or {}
    return scores.get(measure)


@register.simple_tag
def fmt(dataset, value):
    """A fraction as the dataset shows scores (percent or fraction); an en dash when missing."""
    return dataset.format_value(value)


@register.simple_tag
def query_with(request, **params):
    """The current query string with ``params`` replaced (``None`` drops a key), for sort and split links."""
    query = request.GET.copy() if request is not None else {}
    for key, value in params.items():
        if value is None or value == "":
            query.pop(key, None)
        else:
            query[key] = value
    items = query.lists() if hasattr(query, "lists") else [(k, [v]) for k, v in query.items()]
    encoded = urlencode([(k, v) for k, values in items for v in values])
    return "?" + encoded if encoded else "?"

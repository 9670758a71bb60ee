"""Small template helpers for leaderboard pages: score lookup, formatting, sort links, descriptions."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django import template
from django.utils.html import escape, linebreaks
from django.utils.safestring import mark_safe

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


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter(is_safe=True)
def prose(text):
    """A description as paragraphs, with Markdown's `code` spans as <code> (people write them in descriptions).

    The text is escaped first, so nothing else a participant types becomes markup.
    """
    escaped = _CODE_SPAN.sub(r"<code>\1</code>", escape(text or ""))
    return mark_safe(linebreaks(escaped, autoescape=False))


@register.filter(is_safe=True)
def code_spans(text):
    """One line of a message (an error, a warning) with its `code` spans as <code>; everything else escaped."""
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", escape(text or "")))


@register.filter
def pvalue(p) -> str:
    """A p-value to four places; below that "< 0.0001" rather than a "0.0000" that reads as impossible."""
    if p is None or p == "":
        return "–"
    p = float(p)
    return "< 0.0001" if p < 0.00005 else f"{p:.4f}"


@register.filter
def languages(codes) -> str:
    """A dataset's language codes as people write a list: "fr,de,it" → "fr, de, it"."""
    return ", ".join(part.strip() for part in str(codes or "").split(",") if part.strip())

"""Small helpers for words shown to people (messages, reports, warnings)."""

from __future__ import annotations


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """The word that goes with ``n``: ``plural(1, "topic")`` is "topic", ``plural(2, "topic")`` "topics".

    A count of one reads "1 topic has", never "1 topics have"; give the
    plural form when adding "s" is wrong ("query", "queries").
    """
    if n == 1:
        return singular
    return plural_form if plural_form is not None else singular + "s"


def count(n: int, singular: str, plural_form: str | None = None) -> str:
    """``n`` and its word: ``count(1, "submission")`` is "1 submission".

    ``count(3, "query", "queries")`` is "3 queries".
    """
    return f"{n} {plural(n, singular, plural_form)}"

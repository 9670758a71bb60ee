"""URL converters of the project: ``<id:...>`` matches a database id, and only one.

Django's ``<int:...>`` matches any run of digits, so ``/submissions/99999999999999999999/``
reached the view and the database (``OverflowError`` on SQLite, an error on
PostgreSQL): a 500 for a mistyped URL. ``<id:...>`` matches 1 … 2^63−1 (the range
of a ``BigAutoField``); anything else does not resolve, which is a 404.
Registered on import, once: the root URL module (``lexboard/urls.py``) imports it before it includes
the apps' URL modules.
"""

from __future__ import annotations

from django.urls import register_converter

MAX_ID = 2**63 - 1


class IdConverter:
    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if not 1 <= number <= MAX_ID:
            raise ValueError(f"{value} is not a database id")  # the resolver treats this as no match
        return number

    def to_url(self, value: int) -> str:
        return str(int(value))


register_converter(IdConverter, "id")

"""Admin date-and-time fields whose two inputs each have a name a screen reader reads.

Django's admin draws a ``DateTimeField`` as two inputs, a date and a time (``AdminSplitDateTime``), under one
``<label>`` that points at neither (a ``MultiWidget`` has no ``id_for_label`` since Django 4.0): axe-core reports
both inputs unlabelled, and a screen reader says "edit text" twice. Here each input is named for the field:
"Opens at: date", "Opens at: time".
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AdminSplitDateTime, RelatedFieldWidgetWrapper

PARTS = ("date", "time")


def name_split_inputs(field: forms.Field) -> None:
    """Give each input of ``field``'s date-and-time widget an ``aria-label``: the field's label and the part."""
    widget = field.widget.widget if isinstance(field.widget, RelatedFieldWidgetWrapper) else field.widget
    if isinstance(widget, AdminSplitDateTime) and field.label:
        for part, subwidget in zip(PARTS, widget.widgets, strict=True):
            subwidget.attrs["aria-label"] = f"{field.label}: {part}"


class NamedInputsAdmin(admin.options.BaseModelAdmin):
    """A model admin (or inline) whose date-and-time fields name both their inputs (``name_split_inputs``)."""

    def formfield_for_dbfield(self, db_field, request, **kwargs: Any) -> forms.Field | None:
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if field is not None:
            name_split_inputs(field)
        return field

"""Admin saves that write what the curator changed, and nothing else.

Django's admin saves a changed object whole: every column as it was read when
the form was posted. Columns the workers write meanwhile (a split's current
and pending qrels and cache version, a submission's status and progress) would
be put back to what the page read, undoing a qrels switch or a scoring.
"""

from __future__ import annotations

from django.contrib import admin


class ChangedFieldsOnlyAdmin(admin.ModelAdmin):
    """A ``ModelAdmin`` whose change form saves only the fields the form changed (an add saves them all)."""

    def save_model(self, request, obj, form, change):
        if not change:
            return super().save_model(request, obj, form, change)
        columns = {f.name for f in obj._meta.concrete_fields}
        fields = [name for name in form.changed_data if name in columns]
        if fields:
            obj.save(update_fields=fields)
        return None

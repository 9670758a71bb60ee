"""The curators' admin for pools: "Add pool" builds one from a split's runs; the rest is read-only records.

Building (choosing the documents, copying their text, assigning the items)
is ``pools.pool_build`` and ``pools.pool_assign``; after that the pool's own
page (``assessment:pool``) has the statistics, agreement, files and qrels.
"""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html

from .forms import PoolBuildForm
from .models import Assignment, Judgment, Pool, PoolItem


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ("name", "split", "method", "n_items", "expected_hours", "created_by", "created_at", "page")
    list_filter = ("split__dataset", "method")
    list_select_related = ("split__dataset", "created_by")
    search_fields = ("name", "split__dataset__slug")
    readonly_fields = ("split", "method", "params", "base_qrels", "statistics", "qrels_version", "created_by",
                       "created_at", "page")
    fields = ("name", "page", "split", "method", "params", "overlap_share", "seconds_per_judgment", "base_qrels",
              "qrels_version", "statistics", "created_by", "created_at")

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("split", "name", "method", "k", "budget", "p", "depth", "chosen_runs", "assessors",
                    "overlap_share", "seconds_per_judgment")
        return self.fields

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = PoolBuildForm
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            # The builder of the pool (PoolBuildForm.clean builds it), on the class the admin made from PoolBuildForm.
            form.user = request.user  # type: ignore[attr-defined]
        return form

    def save_form(self, request, form, change):
        if change:
            return super().save_form(request, form, change)
        return form.built  # built and assigned by the form's clean(), inside the admin's transaction

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        if change:
            super().save_related(request, form, formsets, change)

    @admin.display(description="documents")
    def n_items(self, obj) -> int:
        return int(obj.statistics.get("documents", 0))

    @admin.display(description="expected hours")
    def expected_hours(self, obj):
        return obj.statistics.get("expected_hours")

    @admin.display(description="pool page")
    def page(self, obj):
        return format_html('<a href="{}">statistics, progress, agreement, qrels</a>', obj.get_absolute_url()) \
            if obj.pk else ""


@admin.register(PoolItem)
class PoolItemAdmin(admin.ModelAdmin):
    list_display = ("pool", "qid", "docid", "position", "priority")
    list_filter = ("pool",)
    search_fields = ("qid", "docid")
    readonly_fields = ("pool", "qid", "docid", "position", "priority", "ranks", "doc_title", "doc_text")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("pool", "assessor", "created_at")
    list_filter = ("pool",)
    readonly_fields = ("pool", "assessor", "created_at")
    exclude = ("items",)

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    """Every judgment ever made, read-only: who, when, how long, and what superseded it."""

    list_display = ("item", "assessor", "grade", "kind", "created_at", "seconds_taken", "superseded_by")
    list_filter = ("kind", "item__pool")
    list_select_related = ("item", "assessor")
    search_fields = ("item__qid", "item__docid", "assessor__username")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

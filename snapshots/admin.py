"""Snapshots in the admin: read-only (a snapshot is never changed or deleted), and a form to take one."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html

from catalogue.models import Split

from .models import ArchiveImport, Snapshot
from .services import snapshot_take


class TakeSnapshotForm(forms.Form):
    split = forms.ModelChoiceField(
        queryset=Split.objects.select_related("dataset").filter(current_qrels__isnull=False),
        help_text="The board (a dataset's split) to keep as it reads now.")
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, max_length=2000,
                           help_text="Why this snapshot (shown on its page), e.g. the paper or the workshop.")


@admin.register(Snapshot)
class SnapshotAdmin(admin.ModelAdmin):
    list_display = ("key", "page", "reason", "taken_at", "qrels_version", "hidden", "made_by")
    list_filter = ("reason", "hidden", "dataset_slug")
    search_fields = ("key", "title", "note")
    date_hierarchy = "taken_at"
    readonly_fields = [f.name for f in Snapshot._meta.fields]
    change_list_template = "snapshots/admin_change_list.html"

    @admin.display(description="page")
    def page(self, obj: Snapshot) -> str:
        return format_html('<a href="{}">{}</a>', obj.get_absolute_url(), obj.title)

    def has_add_permission(self, request) -> bool:
        return False  # taken with "Take a snapshot" (below) or automatically, never typed in

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_urls(self):
        return [path("take/", self.admin_site.admin_view(self.take_view), name="snapshots_snapshot_take"),
                *super().get_urls()]

    def take_view(self, request):
        """Pick a board and take its snapshot now (the same service as the board page's button)."""
        form = TakeSnapshotForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            snapshot = snapshot_take(split=form.cleaned_data["split"], note=form.cleaned_data["note"],
                                     made_by=request.user.get_username())
            self.message_user(request, f"Snapshot {snapshot.key} taken.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:snapshots_snapshot_changelist"))
        context = {**self.admin_site.each_context(request), "form": form, "title": "Take a snapshot",
                   "opts": self.model._meta}
        return render(request, "snapshots/admin_take.html", context)


@admin.register(ArchiveImport)
class ArchiveImportAdmin(admin.ModelAdmin):
    """What each imported archive brought and lacked (``import_benchmark``); a record, so read-only."""

    list_display = ("imported_at", "benchmark", "archive_sha256", "hidden", "lacks")
    readonly_fields = ("imported_at", "archive_sha256", "imported_by", "missing", "manifest")
    exclude = ("datasets",)

    @admin.display(description="benchmark")
    def benchmark(self, obj: ArchiveImport) -> str:
        return f"{obj.manifest.get('benchmark', {}).get('slug', '?')} ({', '.join(obj.manifest.get('datasets', []))})"

    @admin.display(description="hidden material")
    def hidden(self, obj: ArchiveImport) -> str:
        return "left out" if obj.missing.get("hidden") else str(obj.manifest.get("hidden", {}).get("mode", ""))

    @admin.display(description="lacks")
    def lacks(self, obj: ArchiveImport) -> str:
        return ", ".join(f"{k} ({len(v) if isinstance(v, list) else v})" for k, v in obj.missing.items()) or "nothing"

    def has_add_permission(self, request) -> bool:
        return False  # made by import_benchmark

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

"""The curators' admin of the sandbox: each split's policy, the runs (re-run, cancel), the stored images."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet

from catalogue.models import Split
from submissions.errors import UploadRefused

from .models import SandboxRun, SoftwareImage, SplitSandbox
from .services import sandbox_rerun_create, sandbox_run_cancel


@admin.register(SplitSandbox)
class SplitSandboxAdmin(admin.ModelAdmin):
    list_display = ("split", "accepts_images", "software_only", "memory_mb", "cpus", "pids", "wall_seconds",
                    "output_mb", "tmp_mb", "max_pending_per_participant")
    list_filter = ("accepts_images", "software_only")
    # A plain select of the splits (a site has tens): Django's autocomplete picker (select2) is an unnamed combobox
    # with an unlabelled search box, and sets inline styles the site's CSP refuses (axe-core and the console, #38).

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "split":
            kwargs["queryset"] = Split.objects.select_related("dataset").order_by("dataset__slug", "name")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(SandboxRun)
class SandboxRunAdmin(admin.ModelAdmin):
    list_display = ("id", "split", "user", "status", "outcome", "seconds", "attempts", "created_at", "comparison")
    list_filter = ("status", "outcome")
    readonly_fields = [f.name for f in SandboxRun._meta.fields]
    actions = ("rerun", "cancel")

    @admin.action(description="Re-run (same image, same split): identical run or the score differences")
    def rerun(self, request, queryset: QuerySet[SandboxRun]) -> None:
        for run in queryset:
            try:
                rerun = sandbox_rerun_create(run=run)
            except UploadRefused as exc:
                self.message_user(request, f"Run {run.pk}: {exc.message}", messages.WARNING)
            else:
                self.message_user(request, f"Run {run.pk}: re-run {rerun.pk} queued.")

    @admin.action(description="Cancel (a running container is stopped and removed)")
    def cancel(self, request, queryset: QuerySet[SandboxRun]) -> None:
        done = sum(sandbox_run_cancel(run=run) for run in queryset)
        self.message_user(request, f"{done} run(s) cancelled or asked to stop.")


@admin.register(SoftwareImage)
class SoftwareImageAdmin(admin.ModelAdmin):
    list_display = ("sha256", "image_id", "size", "created_at", "last_used_at")
    readonly_fields = ("sha256", "image_id", "size", "archive", "created_at", "last_used_at")

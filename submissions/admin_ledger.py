"""Curators' view of the release ledger: releases, alerts (the admin's mark), waits, per-split policies."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from lexboard.admin_labels import NamedInputsAdmin

from .models import LedgerAlert, Release, ReleasePolicy, ReleaseWait
from .services.ladder import release_waits_judge


class FlaggedFilter(admin.SimpleListFilter):
    title = "crafted shape"
    parameter_name = "flagged"

    def lookups(self, request, model_admin):
        return [("yes", "flagged for review"), ("no", "not flagged")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.exclude(crafted=[])
        if self.value() == "no":
            return queryset.filter(crafted=[])
        return queryset


@admin.register(Release)
class ReleaseAdmin(admin.ModelAdmin):
    list_display = ("released_at", "split", "identity_label", "submission", "first", "bits", "alerted", "flagged",
                    "reviewed_at")
    list_filter = ("split", "day", "first", FlaggedFilter)
    list_select_related = ("split__dataset", "submission")
    search_fields = ("identity_label", "identity")
    readonly_fields = ("split", "result", "submission", "identity", "identity_label", "released_at", "day", "first",
                       "measures", "bits", "crafted", "reviewed_at")
    actions = ["mark_reviewed"]

    @admin.display(description="alert", boolean=True)
    def alerted(self, obj: Release) -> bool:
        """The mark: this identity passed its daily rate of bits on that day."""
        return LedgerAlert.objects.filter(split_id=obj.split_id, day=obj.day, identity=obj.identity).exists()

    @admin.display(description="crafted shape")
    def flagged(self, obj: Release) -> str:
        return "; ".join(obj.crafted) if obj.crafted else ""

    @admin.action(description="Mark the chosen releases reviewed")
    def mark_reviewed(self, request, queryset: QuerySet[Release]) -> None:
        count = queryset.update(reviewed_at=timezone.now())
        self.message_user(request, f"{count} release(s) marked reviewed.")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(LedgerAlert)
class LedgerAlertAdmin(NamedInputsAdmin, admin.ModelAdmin):  # acknowledged_at: date and time inputs
    list_display = ("day", "split", "scope", "who", "bits", "limit", "acknowledged_at", "ledger")
    list_filter = ("split", "scope", "day")
    readonly_fields = ("split", "scope", "identity", "identity_label", "day", "bits", "limit", "created_at")
    actions = ["acknowledge"]

    @admin.display(description="who")
    def who(self, obj: LedgerAlert) -> str:
        return obj.identity_label or "the whole split"

    @admin.display(description="ledger")
    def ledger(self, obj: LedgerAlert) -> str:
        return format_html('<a href="{}">ledger page</a>', reverse("participants:ledger", args=[obj.split_id]))

    @admin.action(description="Acknowledge the chosen alerts")
    def acknowledge(self, request, queryset: QuerySet[LedgerAlert]) -> None:
        count = queryset.filter(acknowledged_at__isnull=True).update(acknowledged_at=timezone.now())
        self.message_user(request, f"{count} alert(s) acknowledged.")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ReleaseWait)
class ReleaseWaitAdmin(admin.ModelAdmin):
    list_display = ("since", "split", "identity", "result")
    list_filter = ("split",)
    readonly_fields = ("result", "split", "identity", "since")
    actions = ["release_now"]

    @admin.action(description="Release now, outside the daily budget (the Ladder still judges)")
    def release_now(self, request, queryset: QuerySet[ReleaseWait]) -> None:
        count = release_waits_judge(wait_ids=list(queryset.values_list("pk", flat=True)), curator=True)
        self.message_user(request, f"{count} waiting run(s) judged again outside the budget.")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(ReleasePolicy)
class ReleasePolicyAdmin(admin.ModelAdmin):
    list_display = ("split", "identity_bits_per_day", "split_bits_per_day", "first_releases_per_day")

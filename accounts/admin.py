"""Profiles, API tokens (hashes never shown) and participant approvals (for splits with "curator approves participants")."""

from __future__ import annotations

from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpResponse
from django.utils import timezone

from lexboard.admin_labels import NamedInputsAdmin

from .models import ApiToken, ParticipantApproval, Profile, TermsAcceptance
from .terms import acceptances_csv

# Sign-in with another site: the keys come from the settings (no SocialApp rows) and its tokens are never shown;
# the linked accounts (ORCID iDs) only where a provider is configured.
for _model in (SocialApp, SocialToken) + (() if settings.SOCIALACCOUNT_PROVIDERS else (SocialAccount,)):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(ParticipantApproval)
class ParticipantApprovalAdmin(admin.ModelAdmin):
    list_display = ("user", "dataset", "split", "requested_at", "approved_at", "approved_by")
    list_filter = (("approved_at", admin.EmptyFieldListFilter), "dataset")
    search_fields = ("user__username", "user__email", "dataset__slug", "message")
    raw_id_fields = ("user",)
    list_select_related = ("user", "dataset", "split", "approved_by")
    readonly_fields = ("requested_at", "approved_at", "approved_by")
    fields = ("user", "dataset", "split", "message", "requested_at", "approved_at", "approved_by")
    actions = ("approve", "revoke")

    @admin.action(description="Approve the selected participants")
    def approve(self, request, queryset):
        count = queryset.filter(approved_at__isnull=True).update(approved_at=timezone.now(), approved_by=request.user)
        self.message_user(request, f"{count} participant(s) approved: they can upload now.", messages.SUCCESS)

    @admin.action(description="Revoke the approval (uploads stop; nothing uploaded is removed)")
    def revoke(self, request, queryset):
        count = queryset.filter(approved_at__isnull=False).update(approved_at=None, approved_by=None)
        self.message_user(request, f"{count} approval(s) revoked.", messages.SUCCESS)

    def save_model(self, request, obj, form, change):
        # A curator who adds a record by hand approves it.
        if not change and obj.approved_at is None:
            obj.approved_at, obj.approved_by = timezone.now(), request.user
        super().save_model(request, obj, form, change)


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ("user", "display_name", "affiliation")
    search_fields = ("user__username", "display_name", "affiliation")
    raw_id_fields = ("user",)


@admin.register(ApiToken)
class ApiTokenAdmin(NamedInputsAdmin, admin.ModelAdmin):  # revoked_at: date and time inputs
    list_display = ("name", "prefix", "user", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    raw_id_fields = ("user",)
    # Only the prefix identifies a token; the hash stays out of sight and keys are never stored.
    fields = ("user", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("user", "prefix", "created_at", "last_used_at")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(TermsAcceptance)
class TermsAcceptanceAdmin(admin.ModelAdmin):
    """Who accepted which version of a dataset's terms, and when: read-only (a record), exported as CSV."""

    list_display = ("dataset", "version", "username", "email", "team", "accepted_at")
    list_filter = ("dataset", "version", "accepted_at")
    search_fields = ("username", "email", "team", "dataset__slug")
    list_select_related = ("dataset",)
    date_hierarchy = "accepted_at"
    actions = ("export_csv",)

    @admin.action(description="Export the selected acceptances as CSV")
    def export_csv(self, request, queryset):
        response = HttpResponse(acceptances_csv(queryset), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="terms-acceptances.csv"'
        return response

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

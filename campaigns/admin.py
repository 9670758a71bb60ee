"""Curators' admin for teams (members, invitations) and the e-mail notifications' record."""

from __future__ import annotations

from django.contrib import admin

from .models import Invitation, Membership, NotificationSetting, SentNotification, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    fields = ("user", "joined_at")
    readonly_fields = ("joined_at",)
    raw_id_fields = ("user",)
    extra = 0


class InvitationInline(admin.TabularInline):
    model = Invitation
    fields = ("email", "invited_by", "created_at", "accepted_at", "accepted_by")
    readonly_fields = ("email", "invited_by", "created_at", "accepted_at", "accepted_by")
    extra = 0
    can_delete = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "phase", "n_members", "created_by", "created_at")
    list_filter = ("phase",)
    search_fields = ("name", "memberships__user__username")
    raw_id_fields = ("created_by",)
    readonly_fields = ("created_at",)
    inlines = [MembershipInline, InvitationInline]

    @admin.display(description="members")
    def n_members(self, obj: Team) -> int:
        return obj.memberships.count()

    def save_formset(self, request, form, formset, change):
        for obj in formset.save(commit=False):
            if isinstance(obj, Membership):
                obj.phase_id = form.instance.phase_id  # one team per user per phase, held by the database
            obj.save()
        for obj in formset.deleted_objects:
            obj.delete()
        formset.save_m2m()


@admin.register(SentNotification)
class SentNotificationAdmin(admin.ModelAdmin):
    """The record of every e-mail: sent, skipped (and why), or still waiting (beat resends it)."""

    list_display = ("key", "kind", "user", "email", "created_at", "sent_at", "skipped", "attempts")
    list_filter = ("kind", ("sent_at", admin.EmptyFieldListFilter))
    search_fields = ("key", "user__username", "email")
    readonly_fields = ("key", "kind", "user", "email", "context", "created_at", "sent_at", "skipped", "attempts")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(NotificationSetting)
class NotificationSettingAdmin(admin.ModelAdmin):
    list_display = ("user", "emails")
    raw_id_fields = ("user",)

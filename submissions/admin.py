"""Curators' view of submissions, results and status history.

Actions go through the services (rescore, hide) so the admin changes rows the
same way the site does: conditional transitions, cache bumps, tasks sent
after commit. Per-query blobs and token hashes are never displayed.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet

from lexboard.admin_labels import NamedInputsAdmin
from lexboard.admin_saves import ChangedFieldsOnlyAdmin

from . import admin_ledger, services  # noqa: F401  (admin_ledger registers the release ledger's admin)
from .errors import ActionRefused
from .models import Result, StatusEvent, Submission


class ScoresDisagreeFilter(admin.SimpleListFilter):
    """Submissions whose double-entry check failed (the core and the second implementation disagreed)."""

    title = "scores disagree"
    parameter_name = "scores_disagree"

    def lookups(self, request, model_admin):
        return [("yes", "scores disagree"), ("no", "no disagreement")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(scores_disagree__isnull=False)
        if self.value() == "no":
            return queryset.filter(scores_disagree__isnull=True)
        return queryset


class VerifiedByFilter(admin.SimpleListFilter):
    """Results by the second implementation that checked them, and whether it checked the means too."""

    title = "verified by"
    parameter_name = "verified"

    def lookups(self, request, model_admin):
        return [("pytrec_eval", "pytrec_eval"), ("plain", "plain"), ("means", "means checked"),
                ("per_query_only", "per-query values only (before the means were checked)"), ("none", "not verified")]

    def queryset(self, request, queryset):
        value = self.value()
        if value in ("pytrec_eval", "plain"):
            return queryset.filter(verified_by__method=value)
        if value == "means":
            return queryset.filter(verified_by__means=True)
        if value == "per_query_only":
            return queryset.filter(verified_by__means=False)
        if value == "none":
            return queryset.filter(verified_by={})
        return queryset


class StatusEventInline(admin.TabularInline):
    model = StatusEvent
    extra = 0
    can_delete = False
    readonly_fields = ("at", "status", "message")

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ResultInline(admin.TabularInline):
    model = Result
    extra = 0
    can_delete = False
    fields = ("qrels_version", "primary_score", "n_queries", "scores", "verified_by", "released", "ladder_message",
              "ladder_p", "duration_seconds", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class CopiesPublicEntryFilter(admin.SimpleListFilter):
    """Uploads whose content is identical to another user's public entry (found at upload)."""

    title = "copies another user's public entry"
    parameter_name = "copies_public"

    def lookups(self, request, model_admin):
        return (("yes", "yes"), ("no", "no"))

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(duplicate_of__isnull=False)
        if self.value() == "no":
            return queryset.filter(duplicate_of__isnull=True)
        return queryset


@admin.register(Submission)
class SubmissionAdmin(NamedInputsAdmin, ChangedFieldsOnlyAdmin):  # withdrawn_at: date and time inputs
    # The workers own the status, progress and attempts: a change saves what the curator changed.
    list_display = (
        "id", "system_name", "user", "split", "status", "failure_kind", "visibility", "is_baseline",
        "hidden_by_curator", "attempts", "disagreement_flag", "created_at",
    )
    list_filter = (
        "status", "failure_kind", ScoresDisagreeFilter, "split", "is_baseline", "visibility", "hidden_by_curator",
        "coverage_exempt", CopiesPublicEntryFilter, "training_data", "could_have_seen",
    )
    search_fields = ("system_name", "user__username", "user__email", "team", "sha256")
    list_select_related = ("user", "split__dataset")
    date_hierarchy = "created_at"
    # A fusion's parts by id, like the other submissions it points to: Django's two-box picker (filter_horizontal)
    # lists every submission of the site and its search boxes carry an aria-label no role allows (axe-core, #38).
    raw_id_fields = ("user", "replaces", "duplicate_of", "fusion_of")
    readonly_fields = (
        "status", "failure_kind", "error", "disagreement", "warnings", "progress", "attempts", "heartbeat_at", "enqueued_at", "held_by",
        "scoring_started_at", "scored_at", "created_at", "updated_at", "run_file", "json_file", "original_name", "file_size",
        "sha256", "file_removed_at", "content_sha256",
    )
    exclude = ("scores_disagree",)  # shown, read-only, as "disagreement"
    inlines = [ResultInline, StatusEventInline]
    actions = ["rescore", "hide", "unhide"]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        obj.split.bump_cache_version()  # visibility, hidden by a curator, metadata: the leaderboard follows at once

    @admin.display(description="scores disagree", boolean=True)
    def disagreement_flag(self, obj: Submission) -> bool:
        return obj.scores_disagree is not None

    @admin.display(description="scores disagree")
    def disagreement(self, obj: Submission) -> str:
        """The first differing query of a failed double entry, with both values (curators only)."""
        d = obj.scores_disagree
        if not d:
            return "–"
        second = "pytrec_eval" if d.get("method") == "pytrec_eval" else "the plain reference implementation"
        qid = str(d.get("qid", ""))
        where = qid if qid.startswith("(") else f"query {qid!r}"  # "(mean)", "(mean of the public part)": no query
        return (f"scores disagree on qrels v{d.get('qrels_version')}: first differing {where}, "
                f"{d.get('measure')}: the core gives {d.get('core')!r}, {second} {d.get('reference')!r}")

    @admin.action(description="Rescore the selected submissions (scored or failed ones)")
    def rescore(self, request, queryset: QuerySet[Submission]) -> None:
        count, removed = 0, 0
        for submission in queryset:
            try:
                count += services.submission_rescore(submission=submission)
            except ActionRefused:
                removed += 1
        skipped = queryset.count() - count - removed
        self.message_user(request, f"{count} submission(s) queued for rescoring"
                          + (f"; {skipped} skipped (queued or scoring already)" if skipped else "")
                          + (f"; {removed} refused (their file was removed after the retention period)"
                             if removed else "") + ".",
                          messages.SUCCESS)

    @admin.action(description="Hide the selected submissions from leaderboards")
    def hide(self, request, queryset: QuerySet[Submission]) -> None:
        self._set_hidden(request, queryset, True)

    @admin.action(description="Unhide the selected submissions")
    def unhide(self, request, queryset: QuerySet[Submission]) -> None:
        self._set_hidden(request, queryset, False)

    def _set_hidden(self, request, queryset: QuerySet[Submission], hidden: bool) -> None:
        splits = {s.split for s in queryset.select_related("split")}
        count = queryset.update(hidden_by_curator=hidden)
        for split in splits:
            split.bump_cache_version()
        self.message_user(request, f"{count} submission(s) {'hidden' if hidden else 'shown again'}.")


@admin.register(Result)
class ResultAdmin(admin.ModelAdmin):
    list_display = ("id", "submission", "qrels_version", "primary_score", "released", "ladder_p", "n_queries",
                    "verified_by", "duration_seconds", "created_at")
    list_filter = ("released", "qrels_version__split", VerifiedByFilter)
    list_select_related = ("submission", "qrels_version__split__dataset")
    raw_id_fields = ("submission",)
    # The per-query blob is derived from hidden labels and is binary: never shown.
    exclude = ("per_query",)
    readonly_fields = ("submission", "qrels_version", "scores", "primary_score", "n_queries", "warnings",
                       "verified_by", "released", "ladder_message", "ladder_p", "duration_seconds", "created_at")

    def get_queryset(self, request):
        return super().get_queryset(request).defer("per_query")

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(StatusEvent)
class StatusEventAdmin(admin.ModelAdmin):
    list_display = ("submission", "status", "message", "at")
    list_filter = ("status",)
    raw_id_fields = ("submission",)
    readonly_fields = ("submission", "status", "message", "at")

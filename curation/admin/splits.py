"""Splits, topics, corpora and qrels versions: counts, versions and digests, never hidden content.

Qrels change only through the importers (a new version) and the "publish"
action of :class:`QrelsVersionAdmin` (which rescores the split's submissions).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import Count, QuerySet
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html

from catalogue.models import Corpus, QrelsVersion, Split, Topic
from catalogue.services import SmallJudgmentChange
from lexboard.admin_saves import ChangedFieldsOnlyAdmin
from lexboard.text import count
from submissions import disclosure
from submissions.models import LedgerAlert, Release
from submissions.selectors import split_rescoring_progress
from submissions.services import qrels_version_publish_and_rescore


def _short(digest: str) -> str:
    return digest[:12] if digest else ""


# --- Splits, topics, corpora, qrels -------------------------------------------------


class QrelsVersionInline(admin.TabularInline):
    """Versions of the split's judgments: counts and digests only."""

    model = QrelsVersion
    fields = ("version", "n_topics", "n_judgments", "n_relevant", "sha_short", "note", "small_change", "created_at",
              "created_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="sha256")
    def sha_short(self, obj) -> str:
        return _short(obj.sha256)

    @admin.display(description="small change")
    def small_change(self, obj) -> str:
        return small_change_text(obj)


def small_change_text(version: QrelsVersion) -> str:
    """A version published below its split's minimum batch, as the admin says it (empty for the others)."""
    if not version.small_change_reason:
        return ""
    by = f" ({version.small_change_by})" if version.small_change_by_id else ""
    return f"published as a small change: {version.small_change_reason}{by}"


@admin.register(Split)
class SplitAdmin(ChangedFieldsOnlyAdmin):
    # The workers own current_qrels, pending_qrels and cache_version: a change saves what the curator changed.
    list_display = (
        "__str__", "dataset", "kind", "hidden", "ladder", "accepts_submissions", "daily_limit", "total_limit",
        "monthly_limit", "current_version", "n_topics",
    )
    list_filter = ("kind", "hidden", "ladder", "accepts_submissions", "dataset__benchmark", "dataset")
    search_fields = ("name", "dataset__slug", "dataset__name")
    list_select_related = ("dataset", "current_qrels", "pending_qrels")
    readonly_fields = ("current_qrels_display", "rescoring", "cache_version", "release_ledger")
    # How strict a hidden split is: "hidden" (no per-query view), "ladder" (scores released only as
    # significant improvements), the quotas, who may upload; docs/security.md says what each one guards against.
    fieldsets = (
        (None, {"fields": (
            "dataset", "name", "kind", "hidden", "ladder", "accepts_submissions", "open_before_judgments",
            "daily_limit", "total_limit", "monthly_limit", ("min_coverage", "min_docs_per_topic"), "min_judgment_batch",
            "current_qrels_display", "rescoring", "cache_version",
        )}),
        ("Who may upload", {"fields": ("verified_email", "approval_required", "orcid_required",
                                        "requires_provenance")}),
        ("What was released", {"fields": ("release_ledger",)}),
    )
    inlines = [QrelsVersionInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n_topics=Count("topics"))

    @admin.display(description="topics", ordering="_n_topics")
    def n_topics(self, obj) -> int:
        return obj._n_topics

    @admin.display(description="current qrels", ordering="current_qrels__version")
    def current_version(self, obj) -> str:
        current = f"v{obj.current_qrels.version}" if obj.current_qrels_id else "–"
        return current + (f" (v{obj.pending_qrels.version} pending)" if obj.pending_qrels_id else "")

    @admin.display(description="rescoring")
    def rescoring(self, obj) -> str:
        progress = split_rescoring_progress(split=obj) if obj.pk else None
        if progress is None:
            return "none (the leaderboard shows the current qrels)"
        return f"{progress}; the leaderboard switches to v{progress.version} when all are done"

    @admin.display(description="release ledger")
    def release_ledger(self, obj) -> str:
        if not obj.pk or not disclosure.hidden(obj):
            return "a public split releases every result: no ledger"
        alerts = LedgerAlert.objects.filter(split=obj, acknowledged_at__isnull=True).count()
        return format_html('<a href="{}">{}</a>{}', reverse("participants:ledger", args=[obj.pk]),
                           count(Release.objects.filter(split=obj).count(), "release"),
                           f" — {count(alerts, 'alert')} not acknowledged" if alerts else "")

    @admin.display(description="current qrels")
    def current_qrels_display(self, obj) -> str:
        if not obj.pk or not obj.current_qrels_id:
            return "none yet — import judgments (Datasets → Import files, or manage.py import_dataset)"
        v = obj.current_qrels
        return (f"v{v.version}: {count(v.n_topics, 'topic')}, {count(v.n_judgments, 'judgment')} "
                f"({v.n_relevant} relevant)")


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    list_display = ("qid", "split", "category", "subcategory", "short_text")
    list_filter = ("split__dataset", "split", "category")
    search_fields = ("qid", "text", "category", "subcategory")
    list_select_related = ("split__dataset",)
    raw_id_fields = ("split",)

    @admin.display(description="text")
    def short_text(self, obj) -> str:
        return obj.text if len(obj.text) <= 100 else obj.text[:99] + "…"


@admin.register(Corpus)
class CorpusAdmin(admin.ModelAdmin):
    """Corpus ids are stored compressed; the admin shows their count and digest."""

    list_display = ("dataset", "n_documents", "sha_short", "updated_at")
    list_filter = ("dataset__benchmark",)
    search_fields = ("dataset__slug", "dataset__name", "sha256")
    list_select_related = ("dataset",)
    fields = ("dataset", "n_documents", "sha256", "first_ids", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request) -> bool:
        return False

    @admin.display(description="sha256")
    def sha_short(self, obj) -> str:
        return _short(obj.sha256)

    @admin.display(description="first ids (sorted)")
    def first_ids(self, obj) -> str:
        ids = obj.ids()
        return ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")


@admin.register(QrelsVersion)
class QrelsVersionAdmin(admin.ModelAdmin):
    """Versions are immutable: made by the importers, published by the action below; content never shown."""

    list_display = (
        "__str__", "split", "version", "is_current", "n_topics", "n_judgments", "n_relevant", "sha_short",
        "created_at", "created_by", "note", "small_change",
    )
    list_filter = ("split__dataset", "split")
    search_fields = ("split__dataset__slug", "split__name", "note", "sha256")
    list_select_related = ("split__dataset", "split__current_qrels", "created_by", "small_change_by")
    fields = (
        "split", "version", "is_current", "n_topics", "n_judgments", "n_relevant", "sha256", "note",
        "small_change", "created_at", "created_by",
    )
    readonly_fields = tuple(f for f in fields if f != "note")
    actions = ["publish"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="current", boolean=True)
    def is_current(self, obj) -> bool:
        return obj.split.current_qrels_id == obj.pk

    @admin.display(description="sha256")
    def sha_short(self, obj) -> str:
        return _short(obj.sha256)

    @admin.display(description="small change")
    def small_change(self, obj) -> str:
        return small_change_text(obj)

    @admin.action(description="Publish this qrels version (and rescore the split's submissions)")
    def publish(self, request, queryset: QuerySet[QrelsVersion]) -> HttpResponse | None:
        """Publish and rescore; a hidden split's small change is refused and leads to a page that asks why."""
        versions = list(queryset.select_related("split"))
        splits = [v.split_id for v in versions]
        if len(set(splits)) != len(splits):
            self.message_user(
                request, "Choose one version per split: a split has one current qrels version.", messages.ERROR
            )
            return None
        reason = request.POST.get("small_change_reason", "").strip() if request.POST.get("confirm") == "yes" else ""
        for version in versions:
            if version.split.current_qrels_id == version.pk and version.split.pending_qrels_id is None:
                self.message_user(request, f"{version} is already the current version.", messages.INFO)
                continue
            try:
                queued = qrels_version_publish_and_rescore(
                    split=version.split, version=version, small_change_reason=reason, user=request.user,
                    override="a reason, on the page this refusal leads to")
            except SmallJudgmentChange as exc:  # nothing written: ask for the reason, or leave it for a batch
                self.message_user(request, str(exc), messages.ERROR)
                return render(request, "admin/catalogue/qrelsversion/small_change.html", {
                    **self.admin_site.each_context(request), "opts": self.opts,
                    "title": f"Publish {version} as a small change?", "version": version, "refusal": exc,
                    "action": "publish", "action_checkbox_name": ACTION_CHECKBOX_NAME,
                })
            self.log_change(request, version, "Published as a small change: " + reason
                            if version.small_change_reason else "Published")
            if version.split.pending_qrels_id == version.pk:
                current = version.split.current_qrels
                assert current is not None  # a version is staged only behind a current one (split_qrels_publish)
                self.message_user(
                    request,
                    f"{version} published; {count(queued, 'submission')} queued for rescoring. The leaderboard keeps "
                    f"showing v{current.version} until every one is rescored, then switches "
                    "(see the split's rescoring progress).",
                    messages.SUCCESS,
                )
                continue
            self.message_user(
                request, f"{version} published; {count(queued, 'submission')} queued for rescoring.", messages.SUCCESS
            )
        return None

"""Benchmarks and datasets, with their splits and reported results inline, and the dataset's "Import files" view.

The import view runs the same importers as ``manage.py import_dataset`` on the
files of :class:`~curation.admin.import_form.ImportForm`.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import get_object_or_404, render
from django.urls import path
from django.utils.html import format_html

from catalogue.importers import ImportRefused
from catalogue.models import Benchmark, Corpus, Dataset, ReportedResult, Split
from leaderboard.selectors import dataset_summary
from submissions.services import release_import

from .dataset_form import DatasetForm
from .import_form import ImportForm

# --- Benchmarks -----------------------------------------------------------------


class DatasetInline(admin.TabularInline):
    model = Dataset
    fields = ("slug", "name", "language", "task", "primary_measure", "is_published", "order")
    readonly_fields = fields
    extra = 0
    show_change_link = True
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "aggregate", "n_datasets", "order")
    list_filter = ("aggregate",)
    search_fields = ("slug", "name", "description")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [DatasetInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n_datasets=Count("datasets"))

    @admin.display(description="datasets", ordering="_n_datasets")
    def n_datasets(self, obj) -> int:
        return obj._n_datasets


# --- Datasets, with their splits and reported results ----------------------------


class SplitInline(admin.TabularInline):
    model = Split
    fields = (
        "name", "kind", "hidden", "ladder", "accepts_submissions", "open_before_judgments", "daily_limit",
        "total_limit", "monthly_limit",
        "current_qrels_display",
    )
    readonly_fields = ("current_qrels_display",)
    extra = 0
    show_change_link = True

    @admin.display(description="current qrels")
    def current_qrels_display(self, obj) -> str:
        return f"v{obj.current_qrels.version}" if obj.pk and obj.current_qrels_id else "–"


class ReportedResultInline(admin.StackedInline):
    model = ReportedResult
    fields = (("system", "family", "split"), "scores", ("params", "latency_ms", "order"), ("source", "url"), "notes")
    extra = 0

    def get_formset(self, request, obj=None, **kwargs):
        self._parent = obj
        return super().get_formset(request, obj, **kwargs)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "split":
            parent = getattr(self, "_parent", None)
            kwargs["queryset"] = Split.objects.filter(dataset=parent) if parent else Split.objects.none()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = (
        "name", "slug", "benchmark", "language", "task", "primary_measure", "n_splits",
        "n_documents", "is_published",
    )
    list_filter = ("benchmark", "task", "score_precision", "empty_queries", "is_published", "language")
    search_fields = ("slug", "name", "description", "citation")
    list_select_related = ("benchmark", "corpus")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [SplitInline, ReportedResultInline]
    form = DatasetForm
    actions = ["publish_with_preview", "unpublish"]
    change_form_template = "admin/catalogue/dataset/change_form.html"
    fieldsets = (
        (None, {"fields": ("benchmark", ("slug", "name"), ("language", "task"), "description", "is_published", "order")}),
        ("Scoring", {"fields": (
            "measures", "other_measures", "primary_measure", "relevance_threshold", "depth", "docid_example",
            "category_min_queries", ("score_precision", "empty_queries"),
        )}),
        ("Reference", {"fields": ("citation", "homepage", "license")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n_splits=Count("splits"))

    def get_changeform_initial_data(self, request):
        """A new dataset starts as a draft: published from the list after a preview of its card (the README's
        draft → preview → publish), never by an "Is published" box ticked for the curator."""
        return {"is_published": False, **super().get_changeform_initial_data(request)}

    @admin.display(description="splits", ordering="_n_splits")
    def n_splits(self, obj) -> int:
        return obj._n_splits

    @admin.display(description="documents")
    def n_documents(self, obj) -> int | str:
        try:
            return obj.corpus.n_documents
        except Corpus.DoesNotExist:
            return "–"

    @admin.action(description="Preview the home-page cards, then publish the selected datasets")
    def publish_with_preview(self, request, queryset):
        """An imported dataset starts as a draft: the curator sees the card the home page will show (name, language,
        benchmark, best entry), then publishes it with the page's button (``confirm``)."""
        drafts = list(queryset.select_related("benchmark").order_by("benchmark__order", "order", "name"))
        blank = [f"{d.slug}: {', '.join(f for f in ('name', 'language') if not getattr(d, f).strip())}"
                 for d in drafts if not d.name.strip() or not d.language.strip()]
        if request.POST.get("confirm") == "yes" and not blank:
            n = queryset.update(is_published=True)
            for dataset in drafts:
                self.log_change(request, dataset, "Published")
            self.message_user(request, f"{n} dataset{'s' if n != 1 else ''} published: on the home page now.")
            return None
        if blank:
            self.message_user(request, "Fill these in before publishing (the card shows them): " + "; ".join(blank),
                              messages.ERROR)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Publish these datasets?",
            "summaries": [dataset_summary(d) for d in drafts],
            "datasets": drafts,
            "blank": blank,
            "action": "publish_with_preview",
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return render(request, "admin/catalogue/dataset/publish.html", context)

    @admin.action(description="Take the selected datasets off the site (drafts again)")
    def unpublish(self, request, queryset):
        n = queryset.update(is_published=False)
        self.message_user(request, f"{n} dataset{'s' if n != 1 else ''} taken off the site; their rows are kept.")

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [
            path("<path:object_id>/import/", view, name="catalogue_dataset_import"),
            *super().get_urls(),
        ]

    def import_view(self, request, object_id):
        """Upload released files (loose or zipped) and run the same importer as ``import_dataset``."""
        dataset = get_object_or_404(Dataset, pk=object_id)
        if not self.has_change_permission(request, dataset):
            raise PermissionDenied
        report = errors = None
        if request.method == "POST":
            form = ImportForm(request.POST, request.FILES)
            if form.is_valid():
                try:
                    data = form.parse(dataset=dataset)
                    report = release_import(
                        dataset=dataset,
                        data=data,
                        user=request.user,
                        publish=form.cleaned_data["publish"],
                        note=form.cleaned_data["note"],
                        dry_run=form.cleaned_data["dry_run"],
                        small_change_reason=form.cleaned_data["small_change_reason"],
                        override="a reason for a small change (the field below)",
                    )
                except ImportRefused as exc:
                    errors = exc.lines
                else:
                    if report.changed and not report.dry_run:
                        self.log_change(request, dataset, f"Imported {data.format} files")
        else:
            form = ImportForm()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": dataset,
            "title": f"Import files into {dataset}",
            "form": form,
            "report": report,
            "errors": errors,
            "has_view_permission": True,
        }
        return render(request, "admin/catalogue/dataset/import.html", context)


# --- Reported results ---------------------------------------------------------------


@admin.register(ReportedResult)
class ReportedResultAdmin(admin.ModelAdmin):
    list_display = ("system", "dataset", "split", "family", "primary_score", "params", "latency_ms", "source_short")
    list_filter = ("dataset__benchmark", "dataset", "family")
    search_fields = ("system", "family", "source", "notes")
    list_select_related = ("dataset", "split")

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "split":
            kwargs["queryset"] = Split.objects.select_related("dataset")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    @admin.display(description="primary score")
    def primary_score(self, obj) -> str:
        value = obj.scores.get(obj.dataset.primary_measure)
        return f"{obj.dataset.primary_measure} {obj.dataset.format_value(value)}" if value is not None else "–"

    @admin.display(description="source")
    def source_short(self, obj):
        text = obj.source if len(obj.source) <= 60 else obj.source[:59] + "…"
        return format_html('<a href="{}">{}</a>', obj.url, text) if obj.url else text

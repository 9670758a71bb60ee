"""Curators' admin for benchmarks, datasets, splits, topics, corpora, qrels versions and reported results.

Hidden labels stay hidden here too: qrels versions and corpora show counts,
versions and digests, never their content. Qrels change only through the
importers (a new version) and the "publish" action (which rescores), so the
admin writes them the same way the command line does. The dataset page has
an "Import files" view that runs the same importers as ``import_dataset``.
"""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404, render
from django.urls import path
from django.utils.html import format_html

from evaluation.errors import Problem
from leaderboard.importers import (
    FORMATS,
    PREDICTION_FORMATS,
    ImportRefused,
    files_from_uploads,
    parse_beir,
    parse_bsard,
    parse_classification,
    parse_trec,
)
from leaderboard.importers.base import DatasetFileError
from leaderboard.models import Benchmark, Corpus, Dataset, QrelsVersion, ReportedResult, Split, Topic
from lexboard.admin_saves import ChangedFieldsOnlyAdmin
from lexboard.text import count
from submissions.selectors import split_rescoring_progress
from submissions.services import qrels_version_publish_and_rescore, release_import


def _short(digest: str) -> str:
    return digest[:12] if digest else ""


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
        "total_limit",
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
        "name", "slug", "benchmark", "language", "task", "primary_measure", "display", "n_splits",
        "n_documents", "is_published",
    )
    list_filter = ("benchmark", "task", "display", "score_precision", "empty_queries", "is_published", "language")
    search_fields = ("slug", "name", "description", "citation")
    list_select_related = ("benchmark", "corpus")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [SplitInline, ReportedResultInline]
    change_form_template = "admin/leaderboard/dataset/change_form.html"
    fieldsets = (
        (None, {"fields": ("benchmark", ("slug", "name"), ("language", "task"), "description", "is_published", "order")}),
        ("Scoring", {"fields": (
            "measures", "primary_measure", "display", "relevance_threshold", "depth", "docid_example",
            "category_min_queries", ("score_precision", "empty_queries"),
        )}),
        ("Reference", {"fields": ("citation", "homepage", "license")}),
    )

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_n_splits=Count("splits"))

    @admin.display(description="splits", ordering="_n_splits")
    def n_splits(self, obj) -> int:
        return obj._n_splits

    @admin.display(description="documents")
    def n_documents(self, obj) -> int | str:
        try:
            return obj.corpus.n_documents
        except Corpus.DoesNotExist:
            return "–"

    def get_urls(self):
        view = self.admin_site.admin_view(self.import_view)
        return [
            path("<path:object_id>/import/", view, name="leaderboard_dataset_import"),
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
        return render(request, "admin/leaderboard/dataset/import.html", context)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("allow_empty_file", True)  # the importer's refusal names the file and the fix
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)] if data else []


class ImportForm(forms.Form):
    """The files of one release, as the command line takes them."""

    format = forms.ChoiceField(
        choices=[(f, f) for f in FORMATS + PREDICTION_FORMATS],
        help_text="bsard: articles_fr.csv and questions_fr_*.csv · beir: corpus.jsonl, queries.jsonl, "
        "qrels/<split>.tsv · trec: the topics, qrels and corpus-ids files below · classification "
        "(classification and NER datasets): one split's JSONL or CSV file in Files, with Split and Hidden",
    )
    files = MultipleFileField(
        required=False,
        help_text="bsard or beir: the released files, several at once or one zip of the folder",
    )
    hidden_splits = forms.CharField(
        initial="test", required=False, help_text="beir: splits with hidden labels, separated by commas"
    )
    split = forms.SlugField(required=False, max_length=32, help_text="trec, classification: the split's name, e.g. test")
    topics = forms.FileField(
        required=False, allow_empty_file=True, help_text="trec: qid<TAB>text[<TAB>category], or <top> SGML"
    )
    qrels = forms.FileField(required=False, allow_empty_file=True, help_text="trec: qid 0 docid grade")
    corpus_ids = forms.FileField(
        required=False, allow_empty_file=True, help_text="trec (optional): one document id per line"
    )
    hidden = forms.BooleanField(
        initial=True, required=False, help_text="trec, classification: the split's labels are hidden"
    )
    publish = forms.BooleanField(
        required=False,
        help_text="Publish new judgments at once and rescore the split's submissions "
        "(a split's first qrels version is always published)",
    )
    note = forms.CharField(required=False, max_length=300, help_text="Stored with a new qrels version")
    dry_run = forms.BooleanField(required=False, label="Check only", help_text="Report what would change; write nothing")

    def clean(self):
        data = super().clean()
        fmt = data.get("format")
        if fmt == "trec":
            for name in ("split", "topics", "qrels"):
                if not data.get(name):
                    self.add_error(name, "Needed for the trec format.")
        elif fmt in PREDICTION_FORMATS:
            if not data.get("split"):
                self.add_error("split", f"Needed for the {fmt} format.")
            if len(data.get("files") or []) != 1:
                self.add_error("files", "Choose one file: the split's examples (JSONL or CSV).")
        elif fmt and not data.get("files"):
            self.add_error("files", f"Choose the {fmt} release files (or a zip of its folder).")
        return data

    def parse(self, *, dataset=None):
        """The parsed release (raises ImportRefused with file:line: reason lines)."""
        data = self.cleaned_data
        limit = settings.LEXBOARD_MAX_DECOMPRESSED_BYTES
        if data["format"] in PREDICTION_FORMATS:
            upload = data["files"][0]
            task = dataset.task if dataset is not None else "single"
            if task == Dataset.Task.RETRIEVAL:
                reason = (f"{dataset} is a retrieval dataset: import bsard, beir or trec files, or set its task to a "
                          "classification or NER task first")
                raise ImportRefused([DatasetFileError(upload.name, [Problem(None, reason)])])
            return parse_classification(
                task=task, split=data["split"],
                file=(upload.name.rsplit("/", 1)[-1], upload.read()), hidden=data["hidden"],
            )
        if data["format"] == "trec":
            def pair(upload):
                return (upload.name.rsplit("/", 1)[-1], upload.read()) if upload else None

            return parse_trec(
                split=data["split"],
                topics=pair(data["topics"]),
                qrels=pair(data["qrels"]),
                corpus_ids=pair(data.get("corpus_ids")),
                hidden=data["hidden"],
            )
        files = files_from_uploads(data["files"], max_bytes=limit)
        if data["format"] == "bsard":
            return parse_bsard(files)
        hidden = [h.strip() for h in (data.get("hidden_splits") or "").split(",") if h.strip()]
        return parse_beir(files, hidden=hidden)


# --- Splits, topics, corpora, qrels -------------------------------------------------


class QrelsVersionInline(admin.TabularInline):
    """Versions of the split's judgments: counts and digests only."""

    model = QrelsVersion
    fields = ("version", "n_topics", "n_judgments", "n_relevant", "sha_short", "note", "created_at", "created_by")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="sha256")
    def sha_short(self, obj) -> str:
        return _short(obj.sha256)


@admin.register(Split)
class SplitAdmin(ChangedFieldsOnlyAdmin):
    # The workers own current_qrels, pending_qrels and cache_version: a change saves what the curator changed.
    list_display = (
        "__str__", "dataset", "kind", "hidden", "ladder", "accepts_submissions", "daily_limit", "total_limit",
        "current_version", "n_topics",
    )
    list_filter = ("kind", "hidden", "ladder", "accepts_submissions", "dataset__benchmark", "dataset")
    search_fields = ("name", "dataset__slug", "dataset__name")
    list_select_related = ("dataset", "current_qrels", "pending_qrels")
    readonly_fields = ("current_qrels_display", "rescoring", "cache_version")
    # How strict a hidden split is: "hidden" (no per-query view), "ladder" (scores released only as
    # significant improvements), the quotas, who may upload; docs/security.md says what each one guards against.
    fieldsets = (
        (None, {"fields": (
            "dataset", "name", "kind", "hidden", "ladder", "accepts_submissions", "open_before_judgments",
            "daily_limit", "total_limit", ("min_coverage", "min_docs_per_topic"), "current_qrels_display",
            "rescoring", "cache_version",
        )}),
        ("Who may upload", {"fields": ("verified_email", "approval_required")}),
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
        "created_at", "created_by", "note",
    )
    list_filter = ("split__dataset", "split")
    search_fields = ("split__dataset__slug", "split__name", "note", "sha256")
    list_select_related = ("split__dataset", "split__current_qrels", "created_by")
    fields = (
        "split", "version", "is_current", "n_topics", "n_judgments", "n_relevant", "sha256", "note",
        "created_at", "created_by",
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

    @admin.action(description="Publish this qrels version (and rescore the split's submissions)")
    def publish(self, request, queryset: QuerySet[QrelsVersion]) -> None:
        versions = list(queryset.select_related("split"))
        splits = [v.split_id for v in versions]
        if len(set(splits)) != len(splits):
            self.message_user(
                request, "Choose one version per split: a split has one current qrels version.", messages.ERROR
            )
            return
        for version in versions:
            if version.split.current_qrels_id == version.pk and version.split.pending_qrels_id is None:
                self.message_user(request, f"{version} is already the current version.", messages.INFO)
                continue
            queued = qrels_version_publish_and_rescore(split=version.split, version=version)
            self.log_change(request, version, "Published")
            if version.split.pending_qrels_id == version.pk:
                self.message_user(
                    request,
                    f"{version} published; {count(queued, 'submission')} queued for rescoring. The leaderboard keeps "
                    f"showing v{version.split.current_qrels.version} until every one is rescored, then switches "
                    "(see the split's rescoring progress).",
                    messages.SUCCESS,
                )
                continue
            self.message_user(
                request, f"{version} published; {count(queued, 'submission')} queued for rescoring.", messages.SUCCESS
            )


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


# Shared tasks: phases (with the reveal action) and private boards (boards/admin_tasks.py).
from . import admin_tasks  # noqa: E402,F401

"""The API's datasets and leaderboards (``/api/v1/datasets/...``) and its docs page: above the submissions.

Thin views: find the dataset and split (404 with a message otherwise), call
the leaderboard selector, answer. Errors leave through
:mod:`api.errors` in one shape.
"""

from __future__ import annotations

import functools

from django.db.models import Prefetch
from django.shortcuts import render
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import permissions, serializers
from rest_framework.response import Response

from accounts.terms import terms_accepted
from api.contract import api_schema
from api.errors import ApiError, measure_or_404
from api.serializers import ModelUsedSerializer, could_have_seen_field, error_responses, training_data_field
from api.submissions import JsonView, _dataset_or_error, _split_or_error
from catalogue.models import Benchmark, Dataset, Split
from catalogue.selectors import DatasetNotFound, data_terms_in_force, dataset_for_page
from leaderboard.downloads import dataset_files
from leaderboard.selectors import LeaderboardFilters, filter_rows, leaderboard_rows, resolve_sort
from submissions import disclosure
from submissions.models import Submission
from submissions.provenance import CouldHaveSeen, TrainingData
from submissions.selectors import submission_quota


class UploadsLeftSerializer(serializers.Serializer):
    """Where the caller stands against the split's limits (a shared task's: the team's)."""

    today = serializers.IntegerField(allow_null=True, help_text="Uploads left in the rolling 24 hours; null: no limit.")
    total = serializers.IntegerField(allow_null=True, help_text="Uploads left in all; null: no limit.")
    month = serializers.IntegerField(
        allow_null=True, help_text="Uploads left this calendar month (UTC; a shared task's team counts together); "
                                   "null: no monthly limit. It starts again on the first of next month, 00:00 UTC.")
    next_allowed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the daily or the monthly limit is reached: the time the next upload is "
                                   "accepted.")
    team = serializers.CharField(allow_null=True, help_text="The shared task's team whose limits these are.")


class SplitSerializer(serializers.ModelSerializer):
    qrels_version = serializers.SerializerMethodField()
    n_topics = serializers.SerializerMethodField(help_text="Topics with judgments in the current qrels.")
    leaderboard = serializers.SerializerMethodField()
    uploads_left = serializers.SerializerMethodField()

    class Meta:
        model = Split
        fields = [
            "name",
            "kind",
            "hidden",
            "accepts_submissions",
            "daily_limit",
            "total_limit",
            "monthly_limit",
            "requires_provenance",
            "qrels_version",
            "n_topics",
            "leaderboard",
            "uploads_left",
        ]

    def get_qrels_version(self, obj: Split) -> int | None:
        return obj.current_qrels.version if obj.current_qrels is not None else None

    def get_n_topics(self, obj: Split) -> int | None:
        return obj.current_qrels.n_topics if obj.current_qrels is not None else None

    @extend_schema_field(UploadsLeftSerializer(allow_null=True))
    def get_uploads_left(self, obj: Split) -> dict | None:
        """The caller's uploads left on this split (null for an anonymous caller or a split that takes none)."""
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or not obj.accepts_submissions:
            return None
        quota = submission_quota(user=user, split=obj)
        return {"today": quota.daily_remaining, "total": quota.total_remaining, "month": quota.monthly_remaining,
                "next_allowed_at": quota.next_allowed_at, "team": quota.team or None}

    def get_leaderboard(self, obj: Split) -> str:
        path = reverse("api:leaderboard", args=[obj.dataset.slug]) + f"?split={obj.name}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class DatasetSerializer(serializers.ModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    default_split = serializers.SerializerMethodField()
    splits = SplitSerializer(many=True, read_only=True)
    page = serializers.SerializerMethodField()
    empty_queries = serializers.ChoiceField(
        choices=Dataset.EmptyQueries.choices, read_only=True,
        help_text="Which queries every mean is over: omit = the qrels queries with a relevant document (a query the "
        "run lacks scores 0); count = every qrels query, as trec_eval -c. Queries judged only negative count as "
        "queries without a relevant document.")
    score_precision = serializers.ChoiceField(
        choices=Dataset.ScorePrecision.choices, read_only=True,
        help_text="How run scores are compared when ranking: float32 as trec_eval 9.x (and pytrec_eval), float64 as "
        "trec_eval 10.")
    relevance_threshold = serializers.IntegerField(
        read_only=True, help_text="A document is relevant when its grade is at least this (trec_eval -l).")

    class Meta:
        model = Dataset
        fields = [
            "slug",
            "name",
            "benchmark",
            "language",
            "task",
            "page",
            "docid_example",
            "depth",
            "relevance_threshold",
            "empty_queries",
            "score_precision",
            "measures",
            "primary_measure",
            "default_split",
            "splits",
        ]

    def get_default_split(self, obj: Dataset) -> str | None:
        split = obj.default_split
        return split.name if split is not None else None

    def get_page(self, obj: Dataset) -> str:
        request = self.context.get("request")
        path = obj.get_absolute_url()
        return request.build_absolute_uri(path) if request is not None else path


LeaderboardSerializer = inline_serializer(
    name="Leaderboard",
    fields={
        "dataset": serializers.CharField(),
        "split": serializers.CharField(),
        "hidden": serializers.BooleanField(help_text="Hidden labels: aggregate scores only."),
        "qrels_version": serializers.IntegerField(allow_null=True),
        "measures": serializers.ListField(child=serializers.CharField()),
        "primary_measure": serializers.CharField(),
        "sort": serializers.CharField(help_text="The measure the entries are ranked by."),
        "entries": inline_serializer(
            name="LeaderboardEntry",
            many=True,
            fields={
                "rank": serializers.IntegerField(allow_null=True, help_text="Ties share a rank; null for reported rows."),
                "kind": serializers.ChoiceField(choices=["scored", "baseline", "reported"]),
                "submission_id": serializers.IntegerField(allow_null=True),
                "system": serializers.CharField(),
                "owner": serializers.CharField(),
                "family": serializers.CharField(),
                "paper_url": serializers.CharField(),
                "code_url": serializers.CharField(),
                "date": serializers.DateField(allow_null=True),
                "scores": serializers.DictField(child=serializers.FloatField(allow_null=True)),
                "is_private": serializers.BooleanField(help_text="Your own private entry, shown to you only."),
                "reproduced": serializers.BooleanField(
                    help_text="The platform ran the participant's software (a container image) to make this run."),
                "training_data": training_data_field(allow_null=True, required=False),
                "training_data_note": serializers.CharField(),
                "models": ModelUsedSerializer(many=True),
                "could_have_seen": could_have_seen_field(allow_null=True, required=False),
                "disclosed": serializers.BooleanField(
                    help_text="Its owner stated all of its provenance (trained on, models and licences, could have seen); "
                    "false for results reported in papers, whose paper states it."),
                "owner_submission_number": serializers.IntegerField(
                    allow_null=True,
                    help_text="Test splits: the owner's n-th submission to this split when this one was made, "
                    "counted like the quota; null for baselines, anonymous entries, reported rows and dev/train splits.",
                ),
            },
        ),
    },
)


_DATASET_EXAMPLE = {
    "slug": "bsard", "name": "BSARD", "benchmark": "lexglue-fr", "language": "fr", "task": "retrieval",
    "page": "https://lexboard.example/d/bsard/", "docid_example": "1234", "depth": 100,
    "relevance_threshold": 1, "empty_queries": "omit", "score_precision": "float32",
    "measures": ["R@100", "nDCG@10"], "primary_measure": "R@100", "default_split": "test",
    "splits": [{"name": "test", "kind": "test", "hidden": True, "accepts_submissions": True, "daily_limit": 5,
                "total_limit": None, "monthly_limit": 20, "requires_provenance": False,
                "qrels_version": 1, "n_topics": 222,
                "leaderboard": "https://lexboard.example/api/v1/datasets/bsard/leaderboard?split=test",
                "uploads_left": {"today": 4, "total": None, "month": 17, "next_allowed_at": None,
                                 "team": None}}],
}


class DatasetList(JsonView):
    """The datasets that accept runs, with their splits and measures."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_list",
        summary="Datasets, their splits and measures",
        responses={200: DatasetSerializer(many=True), **error_responses()},
        examples=[OpenApiExample("One dataset", response_only=True, status_codes=["200"], value=[_DATASET_EXAMPLE])],
        tags=["datasets"],
    )
    def get(self, request):
        return Response(DatasetSerializer(_datasets(request.user), many=True, context={"request": request}).data)


def _datasets(user):
    qs = Dataset.objects.select_related("benchmark").prefetch_related(
        Prefetch("splits", queryset=Split.objects.select_related("current_qrels", "dataset").order_by("kind", "name"))
    )
    return qs if user.is_staff else qs.filter(is_published=True)


class DatasetDetail(JsonView):
    """One dataset: its splits, its measures (the values of a leaderboard's `sort` and compare's `measure`)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_retrieve",
        summary="A dataset, its splits and measures",
        description=("`measures` lists the values this dataset's leaderboard takes as `sort` and compare takes "
                     "as `measure`; `uploads_left` on each split is the caller's (null without a token)."),
        responses={200: DatasetSerializer, **error_responses(e404="No such dataset.")},
        examples=[OpenApiExample("BSARD", response_only=True, status_codes=["200"], value=_DATASET_EXAMPLE)],
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        dataset = _dataset_or_error(slug, user=request.user)
        return Response(DatasetSerializer(dataset, context={"request": request}).data)


class LeaderboardView(JsonView):
    """A split's leaderboard: entries in rank order with their aggregate scores."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="leaderboard_retrieve",
        summary="A dataset's leaderboard",
        parameters=[
            OpenApiParameter("split", str, description="Split name; default: the dataset's hidden test split."),
            OpenApiParameter("sort", {"type": "string", "minLength": 1}, description=(
                "Rank by this measure: one of the `measures` that `GET /api/v1/datasets/{slug}/` lists for this "
                "dataset (e.g. `R@100`); default: the primary measure. A measure the dataset lacks is a 404 that "
                "lists them, as a split it lacks is.")),
            OpenApiParameter("training_data", {"type": "array", "items": {"type": "string",
                                                                          "enum": list(TrainingData.values)}},
                             explode=True, description=(
                "Only entries whose stated training data is one of these (repeat it: "
                "`?training_data=none&training_data=web_scale`); results reported in papers state none here and "
                "are left out. The entries are ranked again among themselves.")),
            OpenApiParameter("could_have_seen", {"type": "array", "items": {"type": "string",
                                                                            "enum": list(CouldHaveSeen.values)}},
                             explode=True, description="Only entries that state one of these (repeatable)."),
            OpenApiParameter("disclosed", bool, description=(
                "`true`: only entries whose provenance is fully stated (the board's \"disclosed\" mark).")),
        ],
        responses={200: LeaderboardSerializer,
                   **error_responses(400, e404="No such dataset, split or measure (the message lists the dataset's).")},
        examples=[OpenApiExample("A leaderboard", response_only=True, status_codes=["200"], value={
            "dataset": "bsard", "split": "test", "hidden": True, "qrels_version": 1, "measures": ["R@100", "nDCG@10"],
            "primary_measure": "R@100", "sort": "R@100", "entries": [{
                "rank": 1, "kind": "scored", "submission_id": 42, "system": "BM25", "owner": "alice",
                "family": "lexical", "paper_url": "", "code_url": "", "date": "2026-01-05",
                "scores": {"R@100": 0.61, "nDCG@10": 0.42}, "is_private": False}]})],
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        split = _split_or_error(slug, request.query_params.get("split") or None, user=request.user)
        dataset = split.dataset
        sort = request.query_params.get("sort")  # absent: the primary measure; empty: a 400
        if sort == "":
            raise ApiError(f"sort is empty; sort by one of {dataset.name}'s measures: {', '.join(dataset.measures)}.",
                           details=[{"line": None, "reason": "sort: may not be empty"}])
        if sort is not None:
            measure_or_404(dataset, sort, parameter="sort")
        rows = leaderboard_rows(split=split, user=request.user, sort=sort)
        rows = filter_rows(rows, _provenance_filters(request.query_params), measure=resolve_sort(dataset, sort))
        return Response(
            {
                "dataset": dataset.slug,
                "split": split.name,
                "hidden": split.hidden,
                "qrels_version": split.current_qrels.version if split.current_qrels is not None else None,
                "measures": list(dataset.measures or []),
                "primary_measure": dataset.primary_measure,
                "sort": resolve_sort(dataset, sort),
                # Scores are fractions (0..1); the site shows them in percent. A hidden split's entries sit on
                # its grid (``grid``, a fraction; null on a public split and on a hidden one with no evaluated
                # topic yet, which has no value to state one for).
                "scale": "fraction",
                "scores_are": disclosure.SCORES_ARE,
                "grid": disclosure.grid_step(split),
                "entries": [row.to_dict() for row in rows],
            }
        )


def _provenance_filters(query) -> LeaderboardFilters:
    """The leaderboard's provenance filters (the board page's), a value outside the vocabulary a 400 naming it."""
    wrong = [f"{name}: {value!r} is not one of {', '.join(allowed)}"
             for name, allowed in (("training_data", TrainingData.values), ("could_have_seen", CouldHaveSeen.values))
             for value in query.getlist(name) if value not in allowed]
    if query.get("disclosed", "true") not in ("true", "false", "1", "0"):
        wrong.append(f"disclosed: {query.get('disclosed')!r} is not true or false")
    if wrong:
        raise ApiError("A filter has a value it does not take: " + "; ".join(wrong) + ".",
                       details=[{"line": None, "reason": reason} for reason in wrong])
    filters = LeaderboardFilters.from_query(query)
    return LeaderboardFilters(training_data=filters.training_data, could_have_seen=filters.could_have_seen,
                              disclosed=filters.disclosed)


class DatasetFileSerializer(serializers.Serializer):
    """One downloadable file of a dataset (gzip)."""

    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=["corpus", "topics", "qrels", "gold", "baseline"])
    split = serializers.CharField(help_text="The split it belongs to; empty for the corpus.")
    description = serializers.CharField()
    size = serializers.IntegerField(help_text="Bytes of the gzip file.")
    sha256 = serializers.CharField(help_text="Of the gzip file as served.")
    url = serializers.SerializerMethodField()

    def get_url(self, obj) -> str:
        path = reverse("leaderboard:dataset_file", args=[self.context["dataset"].slug, obj.name])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class DatasetFilesView(JsonView):
    """What a participant downloads: the corpus (when its license allows), topics, public judgments, baselines."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_files",
        summary="A dataset's downloadable files",
        responses={
            200: inline_serializer("DatasetFiles", {
                "dataset": serializers.CharField(),
                "license": serializers.CharField(),
                "corpus_downloadable": serializers.BooleanField(),
                "terms": inline_serializer("DatasetFilesTerms", allow_null=True, help_text=(
                    "The dataset's data terms in force (null: none): a download or an upload needs them accepted "
                    "once per version (GET `terms` for the text, POST `accept`)."), fields={
                    "version": serializers.IntegerField(),
                    "title": serializers.CharField(),
                    "url": serializers.CharField(),
                    "accept": serializers.CharField(),
                    "accepted": serializers.BooleanField(
                        allow_null=True, help_text="Whether the caller accepted this version; null without a token."),
                }),
                "files": DatasetFileSerializer(many=True),
            }),
            **error_responses(e404="No such dataset."),
        },
        examples=[OpenApiExample("The demo's files", response_only=True, status_codes=["200"], value={
            "dataset": "demo", "license": "CC BY 4.0 (generated)", "corpus_downloadable": True, "terms": None,
            "files": [{"name": "topics-test", "kind": "topics", "split": "test",
                       "description": "The test split's questions (no judgments).", "size": 5120,
                       "sha256": "9f2c0e4b8d1a7f3e6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928170615",
                       "url": "https://lexboard.example/d/demo/files/topics-test.gz"}],
        })],
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        try:
            dataset = dataset_for_page(slug, user=request.user)
        except DatasetNotFound as exc:
            raise ApiError(f"No dataset {slug!r}; see GET /api/v1/datasets/.", status_code=404) from exc
        files = dataset_files(dataset)
        return Response({
            "dataset": dataset.slug,
            "license": dataset.license,
            "corpus_downloadable": dataset.files_downloadable,
            "terms": _terms_summary(request, dataset),
            "files": DatasetFileSerializer(files, many=True, context={"request": request, "dataset": dataset}).data,
        })


def _terms_summary(request, dataset: Dataset) -> dict | None:
    terms = data_terms_in_force(dataset_id=dataset.pk)
    if terms is None:
        return None
    user = request.user
    return {"version": terms.version, "title": terms.title,
            "url": request.build_absolute_uri(reverse("leaderboard:data_terms", args=[dataset.slug])),
            "accept": request.build_absolute_uri(reverse("api:dataset_terms_accept", args=[dataset.slug])),
            "accepted": terms_accepted(user=user, terms=terms) if user.is_authenticated else None}


@functools.cache
def _endpoints() -> list[dict]:
    """The API's operations as the OpenAPI schema describes them (computed once per process)."""
    schema = api_schema()
    out = []
    for path_, operations in schema.get("paths", {}).items():
        for method, op in operations.items():
            if method.startswith("x-") or not isinstance(op, dict):
                continue
            fields = []
            body = op.get("requestBody", {}).get("content", {})
            for media in body.values():
                ref = media.get("schema", {}).get("$ref", "")
                component = schema.get("components", {}).get("schemas", {}).get(ref.rsplit("/", 1)[-1], {})
                required = set(component.get("required", []))
                for name, prop in component.get("properties", {}).items():
                    if prop.get("readOnly"):
                        continue
                    fields.append(
                        {
                            "name": name,
                            "required": name in required,
                            "type": prop.get("format") or prop.get("type") or "choice",
                            "help": prop.get("description", ""),
                            "choices": [c for c in prop.get("enum", []) if c] if "enum" in prop else [],
                        }
                    )
                break
            out.append(
                {
                    "method": method.upper(),
                    "path": path_,
                    "summary": op.get("summary", ""),
                    "description": op.get("description", ""),
                    "parameters": [
                        {"name": p["name"], "where": p["in"], "help": p.get("description", "")}
                        for p in op.get("parameters", [])
                    ],
                    "fields": fields,
                    "responses": sorted(op.get("responses", {})),
                }
            )
    return out


def docs(request):
    """The API documentation: endpoints from the schema, examples with curl, links to the schema.

    Server-rendered with our own template: drf-spectacular's Swagger and Redoc
    pages load their scripts from a CDN, which this site does not do.
    """
    base = request.build_absolute_uri("/").rstrip("/")
    published = Dataset.objects.filter(is_published=True).order_by("benchmark__order", "order", "name")
    example = published.first()
    # Comparison and fusion are for retrieval datasets: their example names a retrieval measure.
    retrieval = published.filter(task=Dataset.Task.RETRIEVAL).first()
    context = {
        "endpoints": _endpoints(),
        "base": base,
        "api_base": base + reverse("api:datasets").rsplit("datasets/", 1)[0].rstrip("/"),
        "schema_url": reverse("api:schema"),
        "dataset_slug": example.slug if example else "bsard",
        "compare_measure": retrieval.primary_measure if retrieval and retrieval.primary_measure else "R@100",
        "families": [c for c, _ in Submission.Family.choices],
        "visibilities": [c for c, _ in Submission.Visibility.choices],
    }
    return render(request, "api/docs.html", context)

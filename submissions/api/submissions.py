"""The HTTP API (``/api/v1/``): upload runs, follow their scoring, read datasets and leaderboards.

One view per operation, each with explicit input and output serializers (the
OpenAPI schema is generated from them). Views stay thin: authenticate, find
the object the caller may see, call the service or the selector, answer.
Every error leaves through :mod:`submissions.api.errors` in one shape.

What the API never returns: qrels of any split, per-query values of a hidden
split, another user's private submission (answered 404, as if it did not
exist), the error details of someone else's failed run.
"""

from __future__ import annotations

import functools

from django.db.models import Prefetch
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.models import Dataset, Split
from leaderboard.selectors import (
    DatasetNotFound,
    SplitNotFound,
    dataset_for_page,
    leaderboard_rows,
    resolve_sort,
    split_for_page,
)

from .errors import ApiError, error_body
from ..errors import QuotaExceeded, UploadRefused
from ..models import Result, Submission
from ..forms import METADATA_HELP, METADATA_LABELS
from ..services import METADATA_FIELDS, submission_create
from ..throttling import UploadRateThrottle

# --- the error shape, for the schema ------------------------------------------------

ErrorSerializer = inline_serializer(
    name="Error",
    fields={
        "error": inline_serializer(
            name="ErrorBody",
            fields={
                "message": serializers.CharField(help_text="What went wrong and what to do, for a person."),
                "details": inline_serializer(
                    name="ErrorDetail",
                    fields={
                        "line": serializers.IntegerField(
                            allow_null=True, help_text="Line of the uploaded file, when the problem has one."
                        ),
                        "reason": serializers.CharField(),
                    },
                    many=True,
                ),
            },
        )
    },
)


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


# --- submissions: upload ---------------------------------------------------------------


class SubmissionCreateInput(serializers.ModelSerializer):
    """The multipart form of an upload: where it goes, the file, and what the system is."""

    dataset = serializers.SlugField(help_text="The dataset's slug, e.g. `bsard` (see `GET /api/v1/datasets/`).")
    split = serializers.SlugField(
        required=False, allow_blank=True, help_text="The split's name; default: the dataset's hidden test split."
    )
    run_file = serializers.FileField(
        allow_empty_file=True,
        help_text=(
            "The file to score, plain or gzip-compressed. Retrieval datasets: a run in TREC format "
            "(`qid Q0 docid rank score tag`). Classification and NER datasets (`task` in `GET /api/v1/datasets/`): "
            'predictions in JSON Lines, one object per example, e.g. `{"id": "doc-1", "label": "civil"}` '
            '(single-label), `{"id": "doc-1", "labels": ["civil", "tax"]}` (multi-label) or '
            '`{"id": "s-1", "tags": ["B-PER", "I-PER", "O"]}` (NER).'
        ),
    )

    class Meta:
        model = Submission
        fields = ["dataset", "split", "run_file", *METADATA_FIELDS]
        # The same words as the upload form ("Paper URL", not the field name's "Paper url").
        extra_kwargs = {
            name: {"help_text": help_text, "label": METADATA_LABELS.get(name) or None}
            for name, help_text in METADATA_HELP.items()
            if name in METADATA_FIELDS
        }


class SubmissionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.URLField(help_text="Poll this URL for the status and the scores.")
    page = serializers.URLField(help_text="The submission's page on the site.")


# --- submissions: read -----------------------------------------------------------------


def current_result(submission: Submission) -> Result | None:
    """The result on the split's current qrels, else the latest one (uses prefetched results)."""
    results = list(submission.results.all())
    if not results:
        return None
    current = submission.split.current_qrels_id
    for result in results:
        if result.qrels_version_id == current:
            return result
    return max(results, key=lambda r: (r.created_at, r.pk))


class SubmissionSerializer(serializers.ModelSerializer):
    """A submission as its owner (or anyone, when public) sees it: status, aggregate scores, warnings."""

    url = serializers.SerializerMethodField()
    page = serializers.SerializerMethodField()
    dataset = serializers.SerializerMethodField()
    split = serializers.SerializerMethodField()
    qrels_version = serializers.SerializerMethodField()
    scores = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "url",
            "page",
            "status",
            "progress",
            "dataset",
            "split",
            "system_name",
            "visibility",
            "qrels_version",
            "scores",
            "warnings",
            "error",
            "created_at",
            "scored_at",
        ]

    def _absolute(self, path: str) -> str:
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path

    def get_url(self, obj: Submission) -> str:
        return self._absolute(reverse("api:submission", args=[obj.pk]))

    def get_page(self, obj: Submission) -> str:
        return self._absolute(obj.get_absolute_url())

    def get_dataset(self, obj: Submission) -> str:
        return obj.split.dataset.slug

    def get_split(self, obj: Submission) -> str:
        return obj.split.name

    def get_qrels_version(self, obj: Submission) -> int | None:
        result = current_result(obj)
        return result.qrels_version.version if result is not None else None

    def get_scores(self, obj: Submission) -> dict[str, float | None]:
        """Aggregate scores only (means over the evaluated queries), fractions between 0 and 1."""
        result = current_result(obj)
        if result is None or obj.status != Submission.Status.SCORED:
            return {}
        return {name: (float(v) if v is not None else None) for name, v in (result.scores or {}).items()}

    def get_error(self, obj: Submission) -> dict | None:
        """Why scoring failed; the line-by-line details only for the owner and staff."""
        if obj.status != Submission.Status.FAILED or not obj.error:
            return None
        user = getattr(self.context.get("request"), "user", None)
        if user is not None and user.is_authenticated and (user.pk == obj.user_id or user.is_staff):
            return {"message": obj.error.get("message", ""), "details": obj.error.get("details", [])}
        return {"message": "Scoring this run failed.", "details": []}


def _submissions():
    return Submission.objects.select_related("split__dataset").prefetch_related(
        Prefetch("results", queryset=Result.objects.defer("per_query").select_related("qrels_version"))
    )


# --- datasets ------------------------------------------------------------------------------


class SplitSerializer(serializers.ModelSerializer):
    qrels_version = serializers.SerializerMethodField()
    n_topics = serializers.SerializerMethodField(help_text="Topics with judgments in the current qrels.")
    leaderboard = serializers.SerializerMethodField()

    class Meta:
        model = Split
        fields = [
            "name",
            "kind",
            "hidden",
            "accepts_submissions",
            "daily_limit",
            "total_limit",
            "qrels_version",
            "n_topics",
            "leaderboard",
        ]

    def get_qrels_version(self, obj: Split) -> int | None:
        return obj.current_qrels.version if obj.current_qrels_id else None

    def get_n_topics(self, obj: Split) -> int | None:
        return obj.current_qrels.n_topics if obj.current_qrels_id else None

    def get_leaderboard(self, obj: Split) -> str:
        path = reverse("api:leaderboard", args=[obj.dataset.slug]) + f"?split={obj.name}"
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request is not None else path


class DatasetSerializer(serializers.ModelSerializer):
    benchmark = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    default_split = serializers.SerializerMethodField()
    splits = SplitSerializer(many=True, read_only=True)
    page = serializers.SerializerMethodField()

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
            },
        ),
    },
)


# --- views ------------------------------------------------------------------------------------


class JsonView(APIView):
    """Base of the API views: JSON only.

    No browsable HTML renderer: its pages carry inline scripts our content
    security policy forbids, and the docs page (``api:docs``) explains the API.
    """

    renderer_classes = [JSONRenderer]


class SubmissionPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 200


class SubmissionListCreate(JsonView):
    """``POST`` uploads a run; ``GET ?mine=1`` lists the caller's own submissions."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_scope = "upload"

    def get_throttles(self):
        # Only uploads are throttled; reading one's own list is cheap.
        return [UploadRateThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        operation_id="submission_create",
        summary="Upload a run",
        description=(
            "Multipart form. Cheap checks (size, gzip, first lines, docid scheme) run at once; scoring "
            "runs in the background: poll `url` until `status` is `scored` or `failed`."
        ),
        request={"multipart/form-data": SubmissionCreateInput},
        responses={
            202: SubmissionCreatedSerializer,
            400: _error("The file or a field was refused; `details` names the lines."),
            401: _error("No valid token."),
            404: _error("No such dataset."),
            429: _error("Too many uploads, or the split's quota is reached."),
        },
        tags=["submissions"],
    )
    def post(self, request):
        data = SubmissionCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        split = _split_or_error(values.pop("dataset"), values.pop("split", "") or None, user=request.user)
        upload = values.pop("run_file")
        metadata = {name: values[name] for name in METADATA_FIELDS if name in values}
        try:
            submission = submission_create(user=request.user, split=split, upload=upload, metadata=metadata)
        except QuotaExceeded as exc:
            # A quota is a rate: 429, with the time of the next allowed upload.
            body = error_body(exc.message, exc.details)
            headers = {}
            if exc.retry_at is not None:
                body["error"]["retry_at"] = exc.retry_at.isoformat()
                wait = (exc.retry_at - timezone.now()).total_seconds()
                headers["Retry-After"] = str(max(1, int(wait)))
            return Response(body, status=status.HTTP_429_TOO_MANY_REQUESTS, headers=headers)
        except UploadRefused as exc:
            raise ApiError(exc.message, details=exc.details) from exc
        url = request.build_absolute_uri(reverse("api:submission", args=[submission.pk]))
        body = {
            "id": submission.pk,
            "status": submission.status,
            "url": url,
            "page": request.build_absolute_uri(submission.get_absolute_url()),
        }
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})

    @extend_schema(
        operation_id="submission_list",
        summary="Your submissions",
        parameters=[
            OpenApiParameter("mine", bool, description="Your own submissions (the only list there is)."),
            OpenApiParameter("dataset", str, description="Only this dataset's (slug)."),
            OpenApiParameter("status", str, enum=[s.value for s in Submission.Status]),
            OpenApiParameter("limit", int, description="At most this many (default 50, at most 200)."),
            OpenApiParameter("offset", int),
        ],
        responses={
            200: inline_serializer(
                name="SubmissionPage",
                fields={
                    "count": serializers.IntegerField(),
                    "next": serializers.URLField(allow_null=True),
                    "previous": serializers.URLField(allow_null=True),
                    "results": SubmissionSerializer(many=True),
                },
            ),
            401: _error("No valid token."),
        },
        tags=["submissions"],
    )
    def get(self, request):
        qs = _submissions().filter(user=request.user).order_by("-created_at", "-pk")
        if request.query_params.get("dataset"):
            qs = qs.filter(split__dataset__slug=request.query_params["dataset"])
        if request.query_params.get("status"):
            qs = qs.filter(status=request.query_params["status"])
        paginator = SubmissionPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(
            SubmissionSerializer(page, many=True, context={"request": request}).data
        )


class SubmissionDetail(JsonView):
    """One submission: status, progress, scores, warnings, error."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="submission_retrieve",
        summary="Status and scores of a submission",
        responses={200: SubmissionSerializer, 404: _error("No such submission, or not yours to see.")},
        tags=["submissions"],
    )
    def get(self, request, pk: int):
        submission = _submissions().filter(pk=pk).first()
        # The same answer for "does not exist" and "not yours": ids cannot be probed.
        if submission is None or not submission.visible_to(request.user):
            raise ApiError("No submission with this id is visible to you.", status_code=status.HTTP_404_NOT_FOUND)
        return Response(SubmissionSerializer(submission, context={"request": request}).data)


class DatasetList(JsonView):
    """The datasets that accept runs, with their splits and measures."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_list",
        summary="Datasets, their splits and measures",
        responses={200: DatasetSerializer(many=True)},
        tags=["datasets"],
    )
    def get(self, request):
        qs = Dataset.objects.select_related("benchmark").prefetch_related(
            Prefetch("splits", queryset=Split.objects.select_related("current_qrels", "dataset").order_by("kind", "name"))
        )
        if not request.user.is_staff:
            qs = qs.filter(is_published=True)
        return Response(DatasetSerializer(qs, many=True, context={"request": request}).data)


class LeaderboardView(JsonView):
    """A split's leaderboard: entries in rank order with their aggregate scores."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="leaderboard_retrieve",
        summary="A dataset's leaderboard",
        parameters=[
            OpenApiParameter("split", str, description="Split name; default: the dataset's hidden test split."),
            OpenApiParameter("sort", str, description="Rank by this measure; default: the primary measure."),
        ],
        responses={200: LeaderboardSerializer, 400: _error("Unknown measure."), 404: _error("No such dataset or split.")},
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        split = _split_or_error(slug, request.query_params.get("split") or None, user=request.user)
        dataset = split.dataset
        sort = request.query_params.get("sort") or None
        if sort is not None and sort not in (dataset.measures or []):
            raise ApiError(
                f"{dataset.name} has no measure {sort!r}; sort by one of: {', '.join(dataset.measures)}."
            )
        rows = leaderboard_rows(split=split, user=request.user, sort=sort)
        return Response(
            {
                "dataset": dataset.slug,
                "split": split.name,
                "hidden": split.hidden,
                "qrels_version": split.current_qrels.version if split.current_qrels_id else None,
                "measures": list(dataset.measures or []),
                "primary_measure": dataset.primary_measure,
                "sort": resolve_sort(dataset, sort),
                "entries": [row.to_dict() for row in rows],
            }
        )


def _split_or_error(slug: str, split_name: str | None, *, user) -> Split:
    """The split a request names, or an API error (404 for the dataset, 400 for a wrong split name)."""
    try:
        dataset = dataset_for_page(slug, user=user)
    except DatasetNotFound:
        raise ApiError(
            f"There is no dataset called {slug!r}. GET /api/v1/datasets/ lists them.",
            status_code=status.HTTP_404_NOT_FOUND,
        ) from None
    try:
        split = split_for_page(dataset, split_name)
    except SplitNotFound as exc:
        raise ApiError(str(exc), status_code=status.HTTP_404_NOT_FOUND) from None
    if split is None:
        raise ApiError(f"{dataset.name} has no split yet.", status_code=status.HTTP_404_NOT_FOUND)
    return split


# --- the docs page -------------------------------------------------------------------------


@functools.cache
def _endpoints() -> list[dict]:
    """The API's operations as the OpenAPI schema describes them (computed once per process)."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
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

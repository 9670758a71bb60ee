"""API of the analyses: compare two submissions, create a fusion.

``GET /api/v1/compare/?submissions=ID,ID&measure=R@100`` answers aggregates
(means, p-values, wins/ties/losses); on a hidden split only between released
entries, means rounded to the display precision, p-values to 2 significant
digits and no wins/ties/losses (null) — docs/security.md.
``POST /api/v1/fusions/`` checks a fusion of 2–5 public runs (or the caller's
own) and answers 202 with an id to poll at ``api:submission``; a worker fuses
and scores it. Errors leave through
:mod:`submissions.api.errors` in the one shape of the API.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from ..compare import CompareRefused, compare_two, parse_ids, visible_submissions
from ..models import Submission
from ..services.fusion import DEFAULT_K, MAX_PARTS, MIN_PARTS, FusionRefused, fusion_create
from ..throttling import UploadRateThrottle
from .errors import ApiError
from .serializers import _error
from .submissions import JsonView

CompareSerializer = inline_serializer(
    name="Comparison",
    fields={
        "measure": serializers.CharField(),
        "a": serializers.IntegerField(help_text="The first submission's id."),
        "b": serializers.IntegerField(help_text="The second submission's id."),
        "mean_a": serializers.FloatField(),
        "mean_b": serializers.FloatField(),
        "p_randomization": serializers.FloatField(
            help_text="Paired two-sided randomization test, 10,000 sign flips (seed 0), exact for ≤ 16 queries."),
        "p_ttest": serializers.FloatField(help_text="Paired two-sided t-test."),
        "wins": serializers.IntegerField(allow_null=True, help_text="Queries where a scores higher than b "
                                                                   "(null on a hidden split)."),
        "ties": serializers.IntegerField(allow_null=True, help_text="null on a hidden split."),
        "losses": serializers.IntegerField(allow_null=True, help_text="Queries where b scores higher than a "
                                                                     "(null on a hidden split)."),
    },
)


class CompareView(JsonView):
    """Two visible submissions of one split on one measure."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="compare",
        summary="Compare two submissions",
        parameters=[
            OpenApiParameter("submissions", str, required=True, description="Two ids, comma-separated: `12,15`."),
            OpenApiParameter("measure", str, description="A measure of the dataset; default: its primary one."),
        ],
        responses={200: CompareSerializer, 400: _error("Not two comparable submissions, or an unknown measure."),
                   404: _error("A submission is not visible to you.")},
        tags=["analyses"],
    )
    def get(self, request):
        raw = request.query_params.get("submissions", "")
        try:
            ids = parse_ids([raw])
            if len(ids) != 2:
                raise CompareRefused("Give exactly two submission ids: ?submissions=12,15.")
        except CompareRefused as exc:
            raise ApiError(exc.message, details=[{"line": None, "reason": f"submissions: {exc.message}"}]) from None
        try:
            a, b = visible_submissions(ids=ids, user=request.user)
        except CompareRefused as exc:
            raise ApiError(exc.message, status_code=status.HTTP_404_NOT_FOUND) from None
        measure = request.query_params.get("measure") or a.split.dataset.primary_measure
        try:
            body = compare_two(a=a, b=b, measure=measure)
        except CompareRefused as exc:
            raise ApiError(exc.message) from None
        return Response(body)


class FusionInput(serializers.Serializer):
    submissions = serializers.ListField(child=serializers.IntegerField(min_value=1), min_length=MIN_PARTS,
                                        max_length=MAX_PARTS, help_text="2 to 5 submission ids of one split.")
    method = serializers.ChoiceField(choices=["rrf", "combsum"], default="rrf")
    k = serializers.IntegerField(default=DEFAULT_K, min_value=0, help_text="RRF constant (default 60).")
    system_name = serializers.CharField(required=False, allow_blank=True, max_length=120)


class FusionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.URLField(help_text="Poll this URL (like any submission) for the status and the scores.")


class FusionCreate(JsonView):
    """Fuse public runs (or your own) into a new private submission; a worker fuses and scores it."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    throttle_scope = "upload"

    def get_throttles(self):
        return [UploadRateThrottle()]

    @extend_schema(
        operation_id="fusion_create",
        summary="Fuse runs",
        request=FusionInput,
        responses={202: FusionCreatedSerializer, 400: _error("The fusion cannot be made; the message says why."),
                   401: _error("No valid token."), 404: _error("A submission is not available to fuse."),
                   429: _error("Too many requests, or the split's quota is reached (a fusion counts).")},
        tags=["analyses"],
    )
    def post(self, request):
        data = FusionInput(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["submissions"]
        found = {s.pk: s for s in Submission.objects.select_related("split__dataset").filter(pk__in=ids)}
        try:
            parts = []
            for pk in ids:
                if pk not in found:
                    raise FusionRefused(f"No public submission #{pk} is available to fuse.", status=404)
                parts.append(found[pk])
            submission = fusion_create(user=request.user, parts=parts, method=data.validated_data["method"],
                                       k=data.validated_data["k"],
                                       system_name=data.validated_data.get("system_name", ""))
        except FusionRefused as exc:
            raise ApiError(exc.message, status_code=exc.status) from None
        url = request.build_absolute_uri(reverse("api:submission", args=[submission.pk]))
        return Response({"id": submission.pk, "status": submission.status, "url": url},
                        status=status.HTTP_202_ACCEPTED, headers={"Location": url})

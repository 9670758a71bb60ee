"""API of the analyses: compare two submissions, create a fusion.

``GET /api/v1/compare/?submissions=ID,ID&measure=R@100`` answers aggregates
(means, p-values, wins/ties/losses); on a hidden split only between released
entries, means rounded to the display precision, p-values to 2 significant
digits and no wins/ties/losses (null) — docs/security.md.
``POST /api/v1/fusions/`` checks a fusion of 2–5 public runs (or the caller's
own) and answers 202 with an id to poll at ``api:submission``; a worker fuses
and scores it. Errors leave through
:mod:`api.errors` in the one shape of the API.
"""

from __future__ import annotations

import re

from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import permissions, serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from lexboard.converters import MAX_ID
from participants.compare import CompareRefused, check_measure, compare_two, parse_ids, visible_submissions
from submissions.disclosure import released_measures
from submissions.models import Submission
from submissions.services.fusion import DEFAULT_K, MAX_K, MAX_PARTS, MIN_PARTS, FusionRefused, fusion_create
from submissions.throttling import UploadRateThrottle

from .errors import ApiError, measure_or_404
from .serializers import StrictInput, error_responses
from .submissions import JsonView

#: Two different ids, comma-separated (a run is not compared with itself).
COMPARE_IDS = re.compile(r"^(?!([1-9][0-9]{0,18}),\1$)[1-9][0-9]{0,18},[1-9][0-9]{0,18}$")


@extend_schema_field({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
                      "minItems": MIN_PARTS, "maxItems": MAX_PARTS, "uniqueItems": True})
class DistinctIdsField(serializers.ListField):
    """Submission ids, each once (the schema says `uniqueItems`; the service refuses a repeated one)."""


CompareSerializer = inline_serializer(
    name="Comparison",
    fields={
        "measure": serializers.CharField(),
        "a": serializers.IntegerField(help_text="The first submission's id."),
        "b": serializers.IntegerField(help_text="The second submission's id."),
        "mean_a": serializers.FloatField(),
        "mean_b": serializers.FloatField(),
        "p_randomization": serializers.FloatField(
            allow_null=True,
            help_text="Paired two-sided randomization test, 10,000 sign flips (seed 0), exact for ≤ 16 queries "
                      "(null on a hidden split: see p_band)."),
        "p_ttest": serializers.FloatField(allow_null=True, help_text="Paired two-sided t-test (null on a hidden split)."),
        "p_band": serializers.ChoiceField(
            choices=["p < 0.01", "p < 0.05", "p ≥ 0.05"],
            help_text="The randomization test's p-value as a band; all a hidden split shows of it."),
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
            OpenApiParameter("submissions", {"type": "string", "pattern": COMPARE_IDS.pattern}, required=True,
                             description="Two ids, comma-separated: `12,15`."),
            OpenApiParameter("measure", {"type": "string", "minLength": 1}, description=(
                "One of the `measures` that `GET /api/v1/datasets/{slug}/` lists for the submissions' dataset "
                "(e.g. `R@100`); default: its primary one. One the dataset lacks is a 404 that lists them.")),
        ],
        responses={200: CompareSerializer, **error_responses(e400="Not two ids.",
                                                             e403="A hidden split shows its primary measure only.",
                                                             e404="A submission is not visible to you, or the "
                                                                  "dataset has no such measure.",
                                                             e409="Not comparable: another split, or not scored yet.")},
        examples=[OpenApiExample("Two runs", response_only=True, status_codes=["200"], value={
            "measure": "R@100", "a": 12, "b": 15, "mean_a": 0.61, "mean_b": 0.55, "p_randomization": 0.03,
            "p_ttest": 0.04, "p_band": "p < 0.05", "wins": 30, "ties": 10, "losses": 14})],
        tags=["analyses"],
    )
    def get(self, request):
        raw = request.query_params.get("submissions", "")
        try:
            if not COMPARE_IDS.fullmatch(raw):
                raise CompareRefused(f"{raw!r}: give exactly two different submission ids, comma-separated: "
                                     "?submissions=12,15.")
            # The pattern takes any 19-digit id; one past the largest a row can have is not found (404, as
            # for ids out of range in every URL), not a malformed request.
            beyond = next((part for part in raw.split(",") if int(part) > MAX_ID), None)
            if beyond is not None:
                raise ApiError(f"No submission #{beyond} is visible to you.", status_code=status.HTTP_404_NOT_FOUND)
            ids = parse_ids([raw])
            if len(ids) != 2:
                raise CompareRefused("Give exactly two submission ids: ?submissions=12,15.")
        except CompareRefused as exc:
            raise ApiError(exc.message, details=[{"line": None, "reason": f"submissions: {exc.message}"}]) from None
        try:
            a, b = visible_submissions(ids=ids, user=request.user)
        except CompareRefused as exc:
            raise ApiError(exc.message, status_code=status.HTTP_404_NOT_FOUND) from None
        dataset = a.split.dataset
        measure = measure_or_404(dataset, request.query_params.get("measure", dataset.primary_measure),
                                 parameter="measure")
        try:
            check_measure(a.split, measure)
        except CompareRefused as exc:
            # The dataset has it, the split does not release it (a hidden split: the primary measure only).
            allowed = ", ".join(released_measures(a.split))
            raise ApiError(exc.message, details=[{"line": None, "reason": f"measure: not one of {allowed}"}],
                           status_code=status.HTTP_403_FORBIDDEN) from None
        try:
            body = compare_two(a=a, b=b, measure=measure)
        except CompareRefused as exc:
            # Both exist and are visible, but their state does not allow it (another split, not scored yet).
            raise ApiError(exc.message, status_code=status.HTTP_409_CONFLICT) from None
        return Response(body)


class FusionInput(StrictInput):
    submissions = DistinctIdsField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
                                        min_length=MIN_PARTS,
                                        max_length=MAX_PARTS, help_text="2 to 5 submission ids of one split.")
    method = serializers.ChoiceField(choices=["rrf", "combsum"], default="rrf")
    k = serializers.IntegerField(default=DEFAULT_K, min_value=0, max_value=MAX_K,
                                 help_text=f"RRF constant (default {DEFAULT_K}, at most {MAX_K:,}).")
    system_name = serializers.CharField(required=False, allow_blank=True, max_length=120)


class FusionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Submission.Status.choices)
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
        responses={202: FusionCreatedSerializer,
                   **error_responses(403, 413, e400="The request is malformed; the message says how.",
                                     e409="The runs cannot be fused: another split, not scored, a closed split, "
                                          "not a retrieval dataset.",
                                     e401="No valid token.", e404="A submission is not available to fuse.",
                                     e429="Too many requests, or the split's quota is reached (a fusion counts).")},
        examples=[OpenApiExample("Two runs fused", request_only=True,
                                 value={"submissions": [12, 15], "method": "rrf", "k": 60, "system_name": "BM25 + dense"})],
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

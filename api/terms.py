"""A dataset's data terms through the API: read the version in force, accept it (the client's ``--accept-terms``).

The rule (accepted once per version before a download or an upload) is :mod:`accounts.terms`; an upload refused
for it answers 403 with ``error.terms`` naming the dataset, the version and these two addresses.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from accounts.models import TermsAcceptance
from accounts.terms import TermsChanged, terms_accept
from campaigns.selectors import team_acting_on
from catalogue.models import Dataset, DataTerms
from catalogue.selectors import data_terms_in_force

from .errors import ApiError, validation_details
from .serializers import StrictInput, error_responses
from .submissions import JsonView, _dataset_or_error

TermsSerializer = inline_serializer(
    name="DataTerms",
    fields={
        "dataset": serializers.CharField(),
        "version": serializers.IntegerField(help_text="The version in force; accepting names it."),
        "title": serializers.CharField(),
        "text": serializers.CharField(help_text="The full text, to show before accepting."),
        "in_force_since": serializers.DateTimeField(),
        "url": serializers.CharField(help_text="The page with the text and the accept button."),
        "accept": serializers.CharField(help_text='POST {"version": N} here to accept version N.'),
        "accepted_at": serializers.DateTimeField(
            allow_null=True, help_text="When the caller's account accepted this version; null: not yet (or no token)."),
    },
)

AcceptedSerializer = inline_serializer(
    name="TermsAccepted",
    fields={
        "dataset": serializers.CharField(),
        "version": serializers.IntegerField(),
        "accepted_at": serializers.DateTimeField(),
        "team": serializers.CharField(allow_null=True, help_text="The shared task's team the account acts for."),
    },
)

_EXAMPLE = {
    "dataset": "demo", "version": 2, "title": "Demo data licence", "text": "You may use the demo data for research.",
    "in_force_since": "2027-01-05T10:00:00Z", "url": "https://lexboard.example/d/demo/terms/",
    "accept": "https://lexboard.example/api/v1/datasets/demo/terms/accept", "accepted_at": None,
}


def _terms_or_404(dataset: Dataset) -> DataTerms:
    terms = data_terms_in_force(dataset_id=dataset.pk)
    if terms is None:
        raise ApiError(f"{dataset.name} has no data terms: its files and uploads need no acceptance.",
                       status_code=status.HTTP_404_NOT_FOUND)
    return terms


class TermsView(JsonView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_terms",
        summary="A dataset's data terms in force",
        description=("The text and version a participant accepts once before downloading the dataset's files or "
                     "uploading to it; with a token, whether (and when) the caller accepted this version."),
        responses={200: TermsSerializer, **error_responses(e404="No such dataset, or it has no data terms.")},
        examples=[OpenApiExample("Terms", response_only=True, status_codes=["200"], value=_EXAMPLE)],
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        dataset = _dataset_or_error(slug, user=request.user)
        terms = _terms_or_404(dataset)
        accepted = (TermsAcceptance.objects.filter(user=request.user, terms=terms).values_list("accepted_at", flat=True)
                    .first() if request.user.is_authenticated else None)
        return Response(_terms_body(request, dataset, terms, accepted))


class TermsAcceptInput(StrictInput):
    version = serializers.IntegerField(min_value=1, help_text="The version read (the one in force).")


class TermsAcceptView(JsonView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="dataset_terms_accept",
        summary="Accept a dataset's data terms",
        description=("Records that the caller's account accepts the version it names, which must be the one in "
                     "force (409 otherwise: read the new text first). Accepting twice returns the first record."),
        request=TermsAcceptInput,
        responses={200: AcceptedSerializer, **error_responses(
            400, e404="No such dataset, or it has no data terms.",
            e409="That version is not the one in force any more: read the current one and accept it.")},
        examples=[OpenApiExample("Accept", request_only=True, value={"version": 2}),
                  OpenApiExample("Accepted", response_only=True, status_codes=["200"], value={
                      "dataset": "demo", "version": 2, "accepted_at": "2027-01-05T10:00:00Z", "team": None})],
        tags=["datasets"],
    )
    def post(self, request, slug: str):
        dataset = _dataset_or_error(slug, user=request.user)
        _terms_or_404(dataset)
        data = TermsAcceptInput(data=request.data)
        if not data.is_valid():
            raise ApiError('Send a JSON object naming the version you read: {"version": 2}.',
                           details=validation_details(data.errors))
        team = team_acting_on(user=request.user, dataset_id=dataset.pk)
        try:
            record = terms_accept(user=request.user, dataset=dataset, version=data.validated_data["version"],
                                  team=team.name if team else "")
        except TermsChanged as exc:
            raise ApiError(exc.message, status_code=status.HTTP_409_CONFLICT) from None
        return Response({"dataset": dataset.slug, "version": record.version, "accepted_at": record.accepted_at,
                         "team": record.team or None})


def _terms_body(request, dataset: Dataset, terms: DataTerms, accepted_at) -> dict:
    return {
        "dataset": dataset.slug, "version": terms.version, "title": terms.title, "text": terms.text,
        "in_force_since": terms.created_at,
        "url": request.build_absolute_uri(reverse("leaderboard:data_terms", args=[dataset.slug])),
        "accept": request.build_absolute_uri(reverse("api:dataset_terms_accept", args=[dataset.slug])),
        "accepted_at": accepted_at,
    }

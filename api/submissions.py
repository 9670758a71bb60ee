"""The HTTP API (``/api/v1/``): upload runs, follow their scoring, read datasets and leaderboards.

One view per operation, each with explicit input and output serializers (the
OpenAPI schema is generated from them). Views stay thin: authenticate, find
the object the caller may see, call the service or the selector, answer.
Every error leaves through :mod:`api.errors` in one shape.

What the API never returns: qrels of any split, per-query values of a hidden
split, another user's private submission (answered 404, as if it did not
exist), the error details of someone else's failed run.
"""

from __future__ import annotations

from django.db.models import Prefetch
from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, permissions, serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from catalogue.models import Dataset, Split
from catalogue.selectors import DatasetNotFound, SplitNotFound, dataset_for_page, dataset_for_upload, split_for_page
from lexboard import long_poll
from lexboard.converters import MAX_ID
from submissions.errors import UploadRefused
from submissions.models import NOT_FINAL, Result, Submission
from submissions.selectors import submission_status_now
from submissions.services import METADATA_FIELDS, submission_create, submission_update_metadata
from submissions.services.presigned import (
    FILE_NAME,
    SLOT_SECONDS,
    NoObjectStorage,
    direct_upload_limits,
    slot_submission_create,
    upload_slot,
)
from submissions.throttling import UploadRateThrottle

from .contract import refuse_unknown_query_parameters
from .errors import ApiError, refusal_response
from .serializers import (
    StrictInput,
    SubmissionCreatedSerializer,
    SubmissionCreateInput,
    SubmissionFromUploadInput,
    SubmissionMetadataInput,
    SubmissionSerializer,
    error_responses,
)

#: Said in the response when an upload did not choose its visibility.
VISIBILITY_DEFAULT_NOTE = (
    "private by default: only you see this entry. Send visibility=public (or anonymous) to put it on the "
    "public leaderboard, or change it later on its page."
)


def _submissions():
    return Submission.objects.select_related("split__dataset").prefetch_related(
        Prefetch("results", queryset=Result.objects.defer("per_query").select_related("qrels_version"))
    )


# --- views ------------------------------------------------------------------------------------


class JsonView(APIView):
    """Base of the API views: JSON only.

    No browsable HTML renderer: its pages carry inline scripts our content
    security policy forbids, and the docs page (``api:docs``) explains the API.
    """

    renderer_classes = [JSONRenderer]

    def initial(self, request, *args, **kwargs):
        # Before authentication and throttles: a misspelt parameter costs no upload of the day.
        refuse_unknown_query_parameters(request)
        # A method the operation does not have is a 405 for anyone (DRF would check the permissions first: an
        # anonymous TRACE or PUT of a public read was a 401, as if a token could make it work).
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise exceptions.MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)


class SubmissionPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 200


class SubmissionListQuery(serializers.Serializer):
    """The query of ``GET /api/v1/submissions/``: every value is checked, none is ignored."""

    mine = serializers.BooleanField(
        required=False, help_text="Your own submissions (the only list there is): `1`, `true` or absent."
    )
    dataset = serializers.SlugField(required=False, help_text="Only this dataset's (slug); an unknown one is a 404.")
    split = serializers.SlugField(
        required=False, help_text="Only this split's (its name, e.g. `dev`); with `dataset`, a split the dataset "
                                  "lacks is a 404.")
    status = serializers.ChoiceField(choices=Submission.Status.choices, required=False)
    limit = serializers.IntegerField(
        required=False, min_value=1, max_value=SubmissionPagination.max_limit,
        help_text=f"At most this many (default {SubmissionPagination.default_limit}).",
    )
    offset = serializers.IntegerField(required=False, min_value=0, max_value=MAX_ID)


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
            **error_responses(
                413,
                e403="The split's account policy: verify your e-mail address, or wait for a curator's approval.",
                e400="The file or a field was refused; `details` names the lines.",
                e401="No valid token.",
                e404="No such dataset or split.",
                e409="The split takes no runs now (closed, or its judgments not published yet).",
                e429="Too many uploads, or the split's quota is reached (`retry_at`, `Retry-After`).",
            ),
        },
        examples=[
            OpenApiExample(
                "Accepted", response_only=True, status_codes=["202"],
                value={"id": 42, "status": "queued", "url": "https://lexboard.example/api/v1/submissions/42/",
                       "page": "https://lexboard.example/submissions/42/"},
            )
        ],
        tags=["submissions"],
    )
    def post(self, request):
        data = SubmissionCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        split = _split_or_error(values.pop("dataset"), values.pop("split", "") or None, user=request.user, upload=True)
        upload = values.pop("run_file")
        return _create(request, split=split, upload=upload, values=values)


    @extend_schema(
        operation_id="submission_list",
        summary="Your submissions",
        parameters=[SubmissionListQuery],
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
            **error_responses(400, e401="No valid token.", e404="No such dataset, or no such split of it."),
        },
        examples=[
            OpenApiExample(
                "One page", response_only=True, status_codes=["200"],
                value={"count": 0, "next": None, "previous": None, "results": []},
            )
        ],
        tags=["submissions"],
    )
    def get(self, request):
        # A plain dict, not the QueryDict: DRF would read `?status=` from a form as "not given".
        query = SubmissionListQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)  # an unknown status or a negative limit is a 400, not an empty list
        qs = _submissions().filter(user=request.user).order_by("-created_at", "-pk")
        if query.validated_data.get("dataset") and query.validated_data.get("split"):
            qs = qs.filter(split=_split_or_error(query.validated_data["dataset"], query.validated_data["split"],
                                                 user=request.user))
        elif query.validated_data.get("dataset"):
            dataset = _dataset_or_error(query.validated_data["dataset"], user=request.user)
            qs = qs.filter(split__dataset=dataset)
        elif query.validated_data.get("split"):
            qs = qs.filter(split__name=query.validated_data["split"])
        if query.validated_data.get("status"):
            qs = qs.filter(status=query.validated_data["status"])
        paginator = SubmissionPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(
            SubmissionSerializer(page, many=True, context={"request": request}).data
        )


def _create(request, *, split: Split, upload=None, values: dict, key: str = "") -> Response:
    """An upload of either kind (a multipart file, a presigned slot's key): the service, then the 202."""
    metadata = {name: values[name] for name in METADATA_FIELDS if name in values}
    # Private first: a sanity check must not land on the public board unasked.
    visibility_defaulted = "visibility" not in metadata
    if visibility_defaulted:
        metadata["visibility"] = Submission.Visibility.PRIVATE
    try:
        if key:  # the slot is spent by this call, and its object deleted, whatever the outcome (presigned.py)
            submission = slot_submission_create(user=request.user, split=split, key=key, metadata=metadata)
        else:
            submission = submission_create(user=request.user, split=split, upload=upload, metadata=metadata)
    except NoObjectStorage as exc:
        raise ApiError(str(exc), status_code=status.HTTP_409_CONFLICT) from None
    except UploadRefused as exc:
        return refusal_response(exc, request)
    url = request.build_absolute_uri(reverse("api:submission", args=[submission.pk]))
    body = {
        "id": submission.pk,
        "status": submission.status,
        "url": url,
        "page": request.build_absolute_uri(submission.get_absolute_url()),
        "visibility": submission.visibility,
    }
    if visibility_defaulted:
        body["visibility_note"] = VISIBILITY_DEFAULT_NOTE
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


#: ``?wait=`` of a submission's status (lexboard/long_poll.py).
WAIT_PARAMETER = OpenApiParameter(
    long_poll.PARAMETER,
    {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": long_poll.MAX_SECONDS},
    description=(f"Seconds the server may hold the answer while the submission is `queued` or `scoring` "
                 f"(0 < wait ≤ {long_poll.MAX_SECONDS}): it answers as soon as the status is final. Answered at "
                 "once when the server is busy: ask again (after a pause)."),
)


def _wait_or_error(request) -> float | None:
    """The seconds ``?wait=`` asks for (None: answer at once), or a 400 naming the parameter and its range."""
    try:
        return long_poll.parse_wait(request.query_params.get(long_poll.PARAMETER))
    except long_poll.WaitRefused as exc:
        raise ApiError(exc.message, details=[{"line": None, "reason": exc.reason}]) from None


def _final(pk: int) -> bool:
    """Whether the submission is no longer queued or scoring (or gone): one column by primary key."""
    return submission_status_now(submission_id=pk) not in NOT_FINAL


def _visible_submission(pk: int, user) -> Submission:
    """The submission if ``user`` may see it; the same 404 for "does not exist" and "not yours": ids cannot be
    probed."""
    submission = _submissions().filter(pk=pk).first()
    if submission is None or not submission.visible_to(user):
        raise ApiError("No submission with this id is visible to you.", status_code=status.HTTP_404_NOT_FOUND)
    return submission


class SubmissionDetail(JsonView):
    """One submission: status, progress, scores, warnings, error; its owner changes metadata and visibility."""

    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="submission_retrieve",
        summary="Status and scores of a submission",
        description=(
            "One submission: status, progress, scores, warnings, error. With `wait`, a submission still `queued` or "
            "`scoring` is answered as soon as it is no longer (`scored`, `failed`), or after `wait` seconds (at most "
            f"{long_poll.MAX_SECONDS}), whichever comes first; the answer is the one an ordinary request gets at "
            "that moment. A server already holding as many answers as it allows answers at once: ask again."),
        parameters=[WAIT_PARAMETER],
        responses={200: SubmissionSerializer, **error_responses(
            e400=f"`wait` is not {long_poll.RANGE}.", e404="No such submission, or not yours to see.")},
        examples=[
            OpenApiExample(
                "Scored", response_only=True, status_codes=["200"],
                value={"id": 42, "url": "https://lexboard.example/api/v1/submissions/42/",
                       "page": "https://lexboard.example/submissions/42/", "status": "scored", "progress": 100,
                       "dataset": "bsard", "split": "test", "system_name": "BM25", "visibility": "public",
                       "qrels_version": 1, "scores": {"R@100": 0.61}, "warnings": [], "error": None,
                       "created_at": "2026-01-05T10:00:00Z", "scored_at": "2026-01-05T10:01:00Z"},
            )
        ],
        tags=["submissions"],
    )
    def get(self, request, pk: int):
        seconds = _wait_or_error(request)
        submission = _visible_submission(pk, request.user)
        # Held only once it is known to be visible (no id is probed by the time of its answer), then read again
        # through the same path: the answer is what an ordinary poll would get at that moment.
        if seconds and submission.status in NOT_FINAL and long_poll.hold(
                request.META, seconds=seconds, settled=lambda: _final(pk),
                wakes=lambda key, status: key == str(pk) and status not in NOT_FINAL):
            submission = _visible_submission(pk, request.user)
        return Response(SubmissionSerializer(submission, context={"request": request}).data)

    @extend_schema(
        operation_id="submission_update",
        summary="Change a submission's metadata or visibility",
        description=("A JSON object with the fields to change, e.g. `{\"visibility\": \"public\"}` or "
                     "`{\"system_name\": \"BM25 (k1=0.9)\", \"paper_url\": \"https://arxiv.org/abs/2301.00001\"}`; "
                     "the others stay. The file and the scores never change (upload a corrected run instead)."),
        request=SubmissionMetadataInput(partial=True),
        responses={200: SubmissionSerializer, **error_responses(
            400, 403, e401="No valid token.", e404="No such submission, or not yours to see.")},
        examples=[OpenApiExample("Make it public", request_only=True, value={"visibility": "public"})],
        tags=["submissions"],
    )
    def patch(self, request, pk: int):
        submission = _visible_submission(pk, request.user)
        if not submission.manageable_by(request.user):
            raise ApiError("Only the owner of this submission can change it.", status_code=status.HTTP_403_FORBIDDEN)
        if not isinstance(request.data, dict):
            raise ApiError('Send a JSON object with the fields to change, e.g. {"visibility": "public"}.')
        data = SubmissionMetadataInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            # The fields not sent keep their values: the model's checks see the whole record.
            current = {name: getattr(submission, name) for name in METADATA_FIELDS}
            submission_update_metadata(submission=submission, data={**current, **data.validated_data})
        except UploadRefused as exc:
            raise ApiError(exc.message, details=exc.details) from exc
        return Response(SubmissionSerializer(submission, context={"request": request}).data)


class SubmissionFromUpload(JsonView):
    """An upload whose file went to object storage first (a presigned POST): the same checks, storage and scoring.

    Not throttled again: the slot was counted as the upload (``UploadSlotCreate``), and a slot makes at most one
    submission."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="submission_create_from_upload",
        summary="Upload a run already sent to object storage",
        description=("For a run too large to send through the site: `POST /api/v1/uploads/` gives a slot, the file "
                     "is POSTed to its `upload_url` with its `upload_fields`, and this names its `upload_key` with "
                     "the dataset and split the slot was given for and the fields an upload takes. A slot makes at "
                     "most one submission: once named here its file is read and removed, whether the run is taken "
                     "or refused (a second naming answers 409). A site without object storage answers 409."),
        request=SubmissionFromUploadInput,
        responses={
            202: SubmissionCreatedSerializer,
            **error_responses(
                403, e400=("The key is not yours, was given for another split or holds no file yet, or the file "
                           "(over the size limit, named) or a field was refused."),
                e401="No valid token.", e404="No such dataset or split.",
                e409=("This site keeps runs on its own disk, the split takes no runs now, or the slot is spent "
                      "(it made a submission already, its file was refused, or it expired)."),
                e429="The split's quota is reached (`retry_at`, `Retry-After`).",
            ),
        },
        examples=[OpenApiExample("Accepted", response_only=True, status_codes=["202"], value={
            "id": 43, "status": "queued", "url": "https://lexboard.example/api/v1/submissions/43/",
            "page": "https://lexboard.example/submissions/43/", "visibility": "private"})],
        tags=["submissions"],
    )
    def post(self, request):
        data = SubmissionFromUploadInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        split = _split_or_error(values.pop("dataset"), values.pop("split", "") or None, user=request.user, upload=True)
        return _create(request, split=split, values=values, key=values.pop("upload_key"))


class UploadSlotInput(StrictInput):
    dataset = serializers.SlugField(help_text="The dataset's slug, e.g. `bsard` (see `GET /api/v1/datasets/`).")
    split = serializers.SlugField(
        required=False, allow_blank=True, help_text="The split's name; default: the dataset's hidden test split.")
    file_name = serializers.RegexField(
        FILE_NAME.pattern, max_length=100,
        help_text="The run's file name, e.g. `bm25.trec.gz` (letters, digits, `.`, `_`, `-`).")


class UploadSlotCreate(JsonView):
    """A presigned POST in object storage for a run too large to send through the site (S3 sites only)."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]
    throttle_scope = "upload"

    def get_throttles(self):
        # A slot is an upload: counted per account and per network, as every upload path (throttling.py).
        return [UploadRateThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        operation_id="upload_slot_limits",
        summary="Whether this site takes runs straight into object storage, and how large",
        description="Stores and counts nothing. A site without object storage answers 409.",
        responses={200: inline_serializer("UploadSlotLimits", {
            "max_bytes": serializers.IntegerField(help_text="The largest file a slot takes."),
            "slot_seconds": serializers.IntegerField(help_text="How long a slot's upload address is valid."),
            "open_slots": serializers.IntegerField(
                help_text="Slots one account may hold whose address is still valid, used or not (0: any)."),
        }), **error_responses(e401="No valid token.", e409="This site keeps runs on its own disk.")},
        examples=[OpenApiExample("Limits", response_only=True, status_codes=["200"],
                                 value={"max_bytes": 209715200, "slot_seconds": 3600, "open_slots": 3})],
        tags=["submissions"],
    )
    def get(self, request):
        try:
            return Response(direct_upload_limits())
        except NoObjectStorage as exc:
            raise ApiError(str(exc), status_code=status.HTTP_409_CONFLICT) from None

    @extend_schema(
        operation_id="upload_slot_create",
        summary="Get a presigned upload slot (large runs)",
        description=(f"Where the site keeps runs in S3-compatible storage: given only where an upload to the split "
                     f"would be taken now (the same account, terms, shared-task and quota checks, answered the same "
                     f"way), and counted as an upload. `POST` the file to `upload_url` within {SLOT_SECONDS // 60} "
                     "minutes as a multipart form: every `upload_fields` entry as a field, then the file as the last "
                     "field, `file`; the storage refuses a file larger than `max_bytes`. Then "
                     "`POST /api/v1/submissions/from-upload` with its `upload_key`. The run gets the same checks "
                     "and limits as any upload. An account holds a few slots at a time, used or not, until their hour "
                     "is over (429 past them). "
                     "A site without object storage answers 409: send the file in the upload's body."),
        request=UploadSlotInput,
        responses={201: inline_serializer("UploadSlot", {
            "upload_url": serializers.URLField(help_text="POST the form here (presigned, valid for an hour)."),
            "upload_fields": serializers.DictField(
                child=serializers.CharField(),
                help_text="The form's fields, sent as they are before the file (the signed policy among them)."),
            "upload_key": serializers.CharField(help_text="Send this as upload_key with the upload."),
            "max_bytes": serializers.IntegerField(help_text="The largest file the storage takes for this slot."),
            "expires_at": serializers.DateTimeField(),
        }), **error_responses(400, 403, e401="No valid token.", e404="No such dataset or split.",
                              e409="This site keeps runs on its own disk, or the split takes no runs now.",
                              e429=("Too many uploads, the split's quota is reached, or too many slots whose "
                                    "hour is not over (`retry_at`, `Retry-After`)."))},
        examples=[OpenApiExample("A slot", response_only=True, status_codes=["201"], value={
            "upload_url": "https://bucket.s3.example/",
            "upload_fields": {"key": "private/incoming/7/3f2a…/bm25.trec.gz", "policy": "eyJleHBpcmF0aW9uIjog…",
                              "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-credential": "…",
                              "x-amz-date": "20260105T100000Z", "x-amz-signature": "…"},
            "upload_key": "incoming/7/3f2a9c0e4b8d1a7f3e6c5b4a39281706/bm25.trec.gz",
            "max_bytes": 209715200,
            "expires_at": "2026-01-05T11:00:00Z"})],
        tags=["submissions"],
    )
    def post(self, request):
        data = UploadSlotInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            # Without object storage there is nothing to check the split for: the 409 comes first.
            direct_upload_limits()
        except NoObjectStorage as exc:
            raise ApiError(str(exc), status_code=status.HTTP_409_CONFLICT) from None
        split = _split_or_error(values["dataset"], values.get("split", "") or None, user=request.user)
        try:
            slot = upload_slot(user=request.user, split=split, file_name=values["file_name"])
        except UploadRefused as exc:
            return refusal_response(exc, request)
        return Response({"upload_url": slot.url, "upload_fields": slot.fields, "upload_key": slot.key,
                         "max_bytes": slot.max_bytes, "expires_at": slot.expires_at},
                        status=status.HTTP_201_CREATED)


# --- the docs page -------------------------------------------------------------------------


def _dataset_or_error(slug: str, *, user, upload: bool = False) -> Dataset:
    """The dataset a request names, or a 404. ``upload``: for an upload, whose service reads the split again,
    without what a dataset page loads (``dataset_for_upload``)."""
    try:
        return (dataset_for_upload if upload else dataset_for_page)(slug, user=user)
    except DatasetNotFound:
        raise ApiError(
            f"There is no dataset called {slug!r}. GET /api/v1/datasets/ lists them.",
            status_code=status.HTTP_404_NOT_FOUND,
        ) from None


def _split_or_error(slug: str, split_name: str | None, *, user, upload: bool = False) -> Split:
    """The split a request names, or an API error (404 for the dataset or the split)."""
    dataset = _dataset_or_error(slug, user=user, upload=upload)
    try:
        split = split_for_page(dataset, split_name)
    except SplitNotFound as exc:
        raise ApiError(str(exc), status_code=status.HTTP_404_NOT_FOUND) from None
    if split is None:
        raise ApiError(f"{dataset.name} has no split yet.", status_code=status.HTTP_404_NOT_FOUND)
    return split

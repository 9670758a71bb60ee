"""The sandbox through the API: send a container image to a split, follow its run, cancel it.

The same service as the web form (``sandbox:upload``): ``sandbox.services.image_submission_create`` makes every
check and refusal (the split takes images, the archive's size before it is stored, the account, shared-task and
quota checks of an upload, the participant's runs in flight, the same image twice). This module only translates:
a refusal becomes the API's one error shape with the status the submissions' upload gives it (403 the account,
409 the split closed, 429 a quota, 400 anything else).

A run is its participant's and the curators' to see; anyone else gets the 404 a missing id gets.
"""

from __future__ import annotations

from django.urls import reverse
from django.utils.datastructures import MultiValueDict
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from sandbox.forms import IMAGE_FIELDS, ImageUploadForm
from sandbox.models import SandboxRun
from sandbox.selectors import run_queue_place, sandbox_worker_refusal, sandbox_worker_silence
from sandbox.services import image_size_refusal, image_submission_create, sandbox_run_cancel
from submissions.errors import UploadRefused
from submissions.models import Submission
from submissions.provenance import FIELD_HELP, NOTE_MAX_LENGTH
from submissions.throttling import UploadRateThrottle

from .errors import ApiError, refusal_response
from .serializers import (
    ModelsUsedField,
    StrictInput,
    WebAddressField,
    could_have_seen_field,
    error_responses,
    training_data_field,
)
from .submissions import JsonView, _split_or_error

#: What a multipart body holds besides the archive's bytes (the fields, the boundaries), at most.
MULTIPART_OVERHEAD = 64 * 1024
IMAGE_METADATA = IMAGE_FIELDS


class ImageCreateInput(StrictInput):
    """The multipart form of an image: where it goes, the archive, and what the system is (the web form's fields)."""

    dataset = serializers.SlugField(help_text="The dataset's slug, e.g. `bsard` (see `GET /api/v1/datasets/`).")
    split = serializers.SlugField(
        required=False, allow_blank=True, help_text="The split's name; default: the dataset's hidden test split.")
    archive = serializers.FileField(
        required=False, allow_empty_file=True,
        help_text=("The image as an archive: what `podman save --format oci-archive -o image.tar IMAGE` (or "
                   "`docker save -o image.tar IMAGE`) writes. docs/sandbox.md is the contract it follows. Give "
                   "either `archive` or `reference`."))
    reference = serializers.CharField(
        required=False, allow_blank=True, max_length=400,
        help_text=("Instead of `archive`: an image the site's registry holds, `NAME:TAG` or `NAME@sha256:DIGEST` "
                   "(pushed there first: `podman push IMAGE REGISTRY/NAME:TAG`). The site resolves it to its "
                   "digest and checks its size before anything is stored; a site without a registry refuses it."))
    system_name = serializers.CharField(max_length=120, help_text="A short name for the leaderboard.")
    description = serializers.CharField(required=False, allow_blank=True, help_text="A few words about the system.")
    code_url = WebAddressField(help_text="Where the code is.")
    paper_url = WebAddressField(help_text="The paper.")
    visibility = serializers.ChoiceField(
        choices=Submission.Visibility.choices, required=False,
        help_text="Of the entry its run makes: public, anonymous or private (the default: only you see it).")
    training_data = training_data_field(required=False)
    training_data_note = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX_LENGTH,
                                               help_text=FIELD_HELP["training_data_note"])
    models_used = ModelsUsedField()
    could_have_seen = could_have_seen_field(required=False)


class QueuePlaceSerializer(serializers.Serializer):
    position = serializers.IntegerField(help_text="1: it runs next.")
    ahead = serializers.IntegerField(help_text="Runs queued before it (one queue for every split).")
    estimate_seconds = serializers.FloatField(help_text="About how long until it starts.")
    text = serializers.CharField(help_text="The same for a person, as the run's page says it.")


class SandboxRunSerializer(serializers.Serializer):
    """A sandbox run as its participant sees it: status, queue place, outcome, digest, limits, time, memory."""

    id = serializers.IntegerField()
    url = serializers.URLField(help_text="This run in the API: poll it until `status` is ran, failed or cancelled.")
    page = serializers.URLField(help_text="The run's page on the site.")
    dataset = serializers.CharField()
    split = serializers.CharField()
    system_name = serializers.CharField()
    status = serializers.ChoiceField(choices=SandboxRun.Status.choices, help_text=(
        "queued → running → ran (its run went to scoring: follow `submission`) / failed / cancelled."))
    queue = QueuePlaceSerializer(allow_null=True, help_text="Where a queued run stands; null once it left the queue.")
    outcome = serializers.CharField(help_text="The sandbox's word on how the image ended (docs/sandbox.md's table): "
                                              "ok, timeout, oom, pids, network, failed, no_run, … ; empty while queued.")
    message = serializers.CharField(help_text="What happened and what to do, for a person.")
    no_worker = serializers.CharField(help_text=(
        "For a queued run where no sandbox worker has answered for a while: that nothing runs it now, and for how "
        "long none answered, in words; empty while a sandbox worker answers (or once the run left the queue)."))
    cancel_requested = serializers.BooleanField()
    digest = serializers.CharField(help_text="The image's digest: podman's image id (its config's digest) once a "
                                             "worker loaded it (known at once for a registry image), the archive's "
                                             "sha256 until then.")
    reference = serializers.CharField(help_text="A registry image as pinned at submission, "
                                                "`REGISTRY/NAME@sha256:<manifest digest>`; empty for an archive.")
    archive_sha256 = serializers.CharField(help_text="The archive's sha256; a registry image's manifest digest.")
    archive_bytes = serializers.IntegerField(help_text="The archive's size; a registry image's compressed layers.")
    limits = serializers.DictField(help_text="memory_mb, cpus, pids, wall_seconds, output_mb, tmp_mb.")
    seconds = serializers.FloatField(allow_null=True, help_text="The container's run time.")
    peak_memory_bytes = serializers.IntegerField(allow_null=True)
    attempts = serializers.IntegerField()
    submission = serializers.IntegerField(allow_null=True, help_text="The submission its run became, once it ran.")
    submission_url = serializers.URLField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


def run_body(request, run: SandboxRun) -> dict:
    place = run_queue_place(run=run)
    absolute = request.build_absolute_uri
    return {
        "id": run.pk,
        "url": absolute(reverse("api:sandbox_run", args=[run.pk])),
        "page": absolute(reverse("sandbox:run", args=[run.pk])),
        "dataset": run.split.dataset.slug,
        "split": run.split.name,
        "system_name": (run.metadata or {}).get("system_name", ""),
        "status": run.status,
        "queue": None if place is None else {"position": place.position, "ahead": place.ahead,
                                             "estimate_seconds": round(place.estimate_seconds, 1),
                                             "text": place.describe()},
        "outcome": run.outcome,
        "message": run.message,
        "no_worker": sandbox_worker_silence(run),
        "cancel_requested": run.cancel_requested,
        "digest": run.image.digest,
        "reference": run.image.reference,
        "archive_sha256": run.image.sha256,
        "archive_bytes": run.image.size,
        "limits": run.limits,
        "seconds": run.seconds,
        "peak_memory_bytes": run.peak_memory_bytes,
        "attempts": run.attempts,
        "submission": run.submission_id,
        "submission_url": absolute(reverse("api:submission", args=[run.submission_id])) if run.submission_id else None,
        "created_at": serializers.DateTimeField().to_representation(run.created_at),
        "started_at": serializers.DateTimeField().to_representation(run.started_at) if run.started_at else None,
        "finished_at": serializers.DateTimeField().to_representation(run.finished_at) if run.finished_at else None,
    }


def _own_run(request, pk: int) -> SandboxRun:
    """The run, for its participant and staff; anyone else is told it does not exist (as the run's page does)."""
    run = SandboxRun.objects.select_related("split__dataset", "image").filter(pk=pk).first()
    if run is None or not (request.user.is_staff or run.user_id == request.user.pk):
        raise ApiError("No sandbox run with this id is visible to you.", status_code=status.HTTP_404_NOT_FOUND)
    return run


_EXAMPLE = {
    "id": 7, "url": "https://lexboard.example/api/v1/sandbox/runs/7/",
    "page": "https://lexboard.example/sandbox/runs/7/", "dataset": "bsard", "split": "test",
    "system_name": "BM25 (image)", "status": "queued",
    "queue": {"position": 2, "ahead": 1, "estimate_seconds": 95.0,
              "text": "2 in the sandbox queue (1 ahead, about 2 min)"},
    "outcome": "", "message": "", "no_worker": "", "cancel_requested": False, "digest": "sha256:3f2a…", "reference": "",
    "archive_sha256": "3f2a…",
    "archive_bytes": 51380224, "limits": {"memory_mb": 2048, "cpus": 1.0, "pids": 256, "wall_seconds": 1800,
                                          "output_mb": 512, "tmp_mb": 512},
    "seconds": None, "peak_memory_bytes": None, "attempts": 0, "submission": None, "submission_url": None,
    "created_at": "2026-01-05T10:00:00Z", "started_at": None, "finished_at": None,
}


class SandboxRunCreate(JsonView):
    """``POST`` a container image for a split: it waits in the sandbox queue, runs, and its run is scored."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser]
    throttle_scope = "upload"

    def get_throttles(self):
        return [UploadRateThrottle()]

    @extend_schema(
        operation_id="sandbox_run_create",
        summary="Submit a container image",
        description=(
            "Multipart form, as the site's image form (`/sandbox/splits/{id}/submit/`), with the same checks: the "
            "split must take images; the image is an `archive` or a `reference` to the site's registry (resolved "
            "to its digest there, another registry refused); its size (the archive's, or the registry image's "
            "compressed layers) is checked against the cap before it is stored; the "
            "account, shared-task and quota checks of an upload; at most the split's number of runs queued or "
            "running per participant; the same image twice on a split is refused, naming the first run. The "
            "image then waits in the sandbox queue: poll `url` for its place, its outcome, and the `submission` "
            "its run became (docs/sandbox.md)."),
        request={"multipart/form-data": ImageCreateInput},
        responses={
            202: SandboxRunSerializer,
            **error_responses(
                e413="The archive is larger than the site's image size cap (checked on the request's length, "
                     "before the body is read).",
                e400="The archive, the reference or a field was refused (not an image archive, an unknown tag or "
                     "another registry, over the size cap, the same image again, too many runs in flight, a split "
                     "that takes no images, a site without a registry); the message says which.",
                e403="The split's account policy: verify your e-mail address, or wait for a curator's approval.",
                e404="No such dataset or split.",
                e409="The split takes no runs now (closed, or its judgments not published yet), or this site runs no "
                     "sandbox worker now (none answered lately): an image would wait for ever, so none is taken; "
                     "nothing was stored.",
                e429="Too many uploads, or the split's quota is reached (`retry_at`, `Retry-After`).",
                e503="The database is away (`Retry-After`).",
            ),
        },
        examples=[OpenApiExample("Queued", response_only=True, status_codes=["202"], value=_EXAMPLE)],
        tags=["sandbox"],
    )
    def post(self, request):
        # The cap before the body is read: the multipart parser would write the whole archive to a temporary
        # file first. The form's fields and boundaries take a few KiB; the service checks the file's own size.
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        # Before the body is read too: where no sandbox worker runs, an image would wait for ever.
        if refusal := sandbox_worker_refusal():
            raise ApiError(refusal, status_code=status.HTTP_409_CONFLICT)  # the site's state, not an outage
        if refusal := image_size_refusal(declared - MULTIPART_OVERHEAD):
            raise ApiError(refusal, details=[{"line": None, "reason": f"archive: {refusal}"}],
                           status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        data = ImageCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        split = _split_or_error(values.pop("dataset"), values.pop("split", "") or None, user=request.user)
        # The web form's own cleaning of the metadata (its defaults: private unless asked).
        archive = values.get("archive")
        form = ImageUploadForm({name: values.get(name) or "" for name in IMAGE_METADATA}
                               | {"visibility": values.get("visibility") or Submission.Visibility.PRIVATE,
                                  "reference": values.get("reference") or ""},
                               MultiValueDict({"archive": [archive]} if archive is not None else {}))
        if not form.is_valid():
            raise ApiError("The request has problems: each is listed in details.", details=[
                {"line": None, "reason": f"{'archive or reference' if field == '__all__' else field}: "
                                        f"{' '.join(str(e) for e in errors)}"} for field, errors in form.errors.items()])
        try:
            run = image_submission_create(user=request.user, split=split, upload=archive,
                                          reference=form.cleaned_data["reference"], metadata=form.metadata())
        except UploadRefused as exc:
            return refusal_response(exc, request)
        run = SandboxRun.objects.select_related("split__dataset", "image").get(pk=run.pk)
        body = run_body(request, run)
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class SandboxRunDetail(JsonView):
    """One sandbox run: its status, place in the queue, outcome, digest, limits, time, memory, submission."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        operation_id="sandbox_run_retrieve",
        summary="Status of a sandbox run",
        responses={200: SandboxRunSerializer,
                   **error_responses(e404="No such sandbox run, or not yours to see.")},
        examples=[OpenApiExample("Queued", response_only=True, status_codes=["200"], value=_EXAMPLE)],
        tags=["sandbox"],
    )
    def get(self, request, pk: int):
        return Response(run_body(request, _own_run(request, pk)))


class SandboxRunCancel(JsonView):
    """Cancel a sandbox run: a queued one at once, a running one within seconds (its container stopped)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        operation_id="sandbox_run_cancel",
        summary="Cancel a sandbox run",
        description=("A queued run is cancelled at once (`status` cancelled); a running one is asked to stop "
                     "(`cancel_requested` true) and its worker stops and removes the container within seconds: "
                     "poll the run. A run that already ended is a 409."),
        request=None,
        responses={200: SandboxRunSerializer,
                   **error_responses(e404="No such sandbox run, or not yours to see.",
                                     e409="The run already ended (ran, failed or cancelled): nothing to cancel.")},
        examples=[OpenApiExample("Cancelled", response_only=True, status_codes=["200"], value={
            **_EXAMPLE, "status": "cancelled", "queue": None, "outcome": "cancelled", "cancel_requested": True,
            "message": "Cancelled before it ran.", "finished_at": "2026-01-05T10:02:00Z"})],
        tags=["sandbox"],
    )
    def post(self, request, pk: int):
        run = _own_run(request, pk)
        if not sandbox_run_cancel(run=run):
            run.refresh_from_db()
            raise ApiError(f"This run is {run.get_status_display()}: there is nothing to cancel.",
                           status_code=status.HTTP_409_CONFLICT)
        run.refresh_from_db()
        return Response(run_body(request, run))

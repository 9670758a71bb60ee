"""The API's side of shared tasks: a team member marks one of the team's runs final (or not) before the close."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from campaigns.errors import TaskRefused
from submissions.models import Submission
from submissions.services.finals import submission_mark_final

from .errors import ApiError, validation_details
from .serializers import StrictInput, SubmissionSerializer, error_responses
from .submissions import JsonView


class FinalInput(StrictInput):
    """The body of ``POST …/final``: a JSON object (a list, a number or null is a 400, never a 500)."""

    final = serializers.BooleanField(help_text="true: one of the team's final runs; false: not (any more).")


class SubmissionFinalView(JsonView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="submission_mark_final",
        summary="Mark a team's run final (shared tasks)",
        description=("A member of the team that sent the run marks it as one of the team's final runs "
                     "(`final: true`) or not, before the task closes; at most the task's number of final runs. "
                     "A team that marks none is ranked on its latest N scored runs."),
        request=FinalInput,
        responses={200: SubmissionSerializer, **error_responses(
            400, e404="No such submission, or not yours to see.",
            e409="Refused by the task's rules: not your team's run, after the close, or past the number of final runs.")},
        examples=[
            OpenApiExample("Mark final", request_only=True, value={"final": True}),
            OpenApiExample(
                "Marked", response_only=True, status_codes=["200"],
                value={"id": 42, "url": "https://lexboard.example/api/v1/submissions/42/",
                       "page": "https://lexboard.example/submissions/42/", "status": "scored", "progress": 100,
                       "dataset": "coliee", "split": "test", "system_name": "BM25", "visibility": "public",
                       "qrels_version": 1, "scores": {"R@100": 0.61}, "released": True, "message": "",
                       "warnings": [], "error": None, "created_at": "2026-01-05T10:00:00Z",
                       "scored_at": "2026-01-05T10:01:00Z", "team": "Red", "after_task": False, "final_run": True,
                       "withdrawn": False},
            ),
        ],
        tags=["submissions"],
    )
    def post(self, request, pk: int):
        submission = Submission.objects.select_related("split__dataset", "entrant_team").filter(pk=pk).first()
        if submission is None or not submission.visible_to(request.user):
            raise ApiError("No submission with this id is visible to you.", status_code=status.HTTP_404_NOT_FOUND)
        data = FinalInput(data=request.data)
        if not data.is_valid():
            raise ApiError('Send a JSON object: {"final": true} or {"final": false}.',
                           details=validation_details(data.errors))
        try:
            submission_mark_final(submission=submission, user=request.user, final=data.validated_data["final"])
        except TaskRefused as exc:
            raise ApiError(exc.message, status_code=status.HTTP_409_CONFLICT) from None
        submission.refresh_from_db()
        return Response(SubmissionSerializer(submission, context={"request": request}).data)


"""What a researcher scripts besides uploading: per-query values, withdrawal, a shared task's phases and team.

``GET …/submissions/{id}/per-query`` answers the per-query table the
submission page offers as CSV, under the same rule (dev and train splits
that are not hidden; never on a hidden split while the disclosure rules say
so). ``POST …/submissions/{id}/withdraw`` takes one's run off the boards for
good. ``GET /api/v1/datasets/{slug}/tasks`` lists the dataset's shared-task
phases, with the caller's team in each. Metadata and visibility are changed
by ``PATCH …/submissions/{id}/`` (:mod:`api.submissions`).
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.response import Response

from campaigns.selectors import phases_for_dataset, team_members, team_of
from participants.analysis import PerQueryNotAllowed, per_query_rows
from submissions.disclosure import SCORES_ARE, shows
from submissions.errors import ActionRefused
from submissions.models import Submission
from submissions.selectors import submission_result
from submissions.services import submission_withdraw

from .errors import ApiError
from .serializers import SubmissionSerializer, error_responses
from .submissions import JsonView, _dataset_or_error

NOT_VISIBLE = "No submission with this id is visible to you."


def visible_submission(pk: int, user) -> Submission:
    """The submission if ``user`` may see it; else a 404 that says the same for "none" and "not yours"."""
    submission = Submission.objects.select_related("split__dataset", "entrant_team").filter(pk=pk).first()
    if submission is None or not submission.visible_to(user):
        raise ApiError(NOT_VISIBLE, status_code=status.HTTP_404_NOT_FOUND)
    return submission


def owned_submission(pk: int, user) -> Submission:
    """The submission if ``user`` may manage it (its owner, staff); 404 if not visible, 403 if only visible."""
    submission = visible_submission(pk, user)
    if not submission.manageable_by(user):
        raise ApiError("Only the owner of this submission can change it.", status_code=status.HTTP_403_FORBIDDEN)
    return submission


PerQuerySerializer = inline_serializer(
    name="PerQuery",
    fields={
        "submission": serializers.IntegerField(),
        "dataset": serializers.CharField(),
        "split": serializers.CharField(),
        "qrels_version": serializers.IntegerField(),
        "measures": serializers.ListField(child=serializers.CharField()),
        "scores_are": serializers.CharField(help_text="The unit of the values."),
        "queries": inline_serializer(name="QueryValues", many=True, fields={
            "qid": serializers.CharField(),
            "category": serializers.CharField(),
            "n_relevant": serializers.IntegerField(allow_null=True),
            "first_relevant_rank": serializers.IntegerField(
                allow_null=True, help_text="Rank of the first relevant document retrieved; null: none."),
            "values": serializers.DictField(child=serializers.FloatField(), help_text="Measure → value."),
        }),
    },
)


class SubmissionPerQuery(JsonView):
    """Per-query values of a scored run on a dev or train split that is not hidden."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="submission_per_query",
        summary="Per-query values of a submission",
        description=("One row per evaluated query, every measure, as fractions. Only on dev and train splits whose "
                     "labels are public: a test or hidden split answers 403 (a topic's value is its judgments)."),
        responses={200: PerQuerySerializer, **error_responses(
            e403="The split's per-query values are not shown (a test or hidden split).",
            e404="No such submission, or not yours to see.", e409="Not scored yet.")},
        examples=[OpenApiExample("Two queries", response_only=True, status_codes=["200"], value={
            "submission": 42, "dataset": "demo", "split": "dev", "qrels_version": 1, "measures": ["R@10", "nDCG@10"],
            "scores_are": SCORES_ARE, "queries": [
                {"qid": "q1", "category": "family", "n_relevant": 2, "first_relevant_rank": 1,
                 "values": {"R@10": 1.0, "nDCG@10": 0.92}},
                {"qid": "q2", "category": "work", "n_relevant": 1, "first_relevant_rank": None,
                 "values": {"R@10": 0.0, "nDCG@10": 0.0}}]})],
        tags=["submissions"],
    )
    def get(self, request, pk: int):
        submission = visible_submission(pk, request.user)
        split = submission.split
        if not shows(split, "per_query"):
            raise ApiError(str(PerQueryNotAllowed(split)), status_code=status.HTTP_403_FORBIDDEN)
        found = submission_result(submission=submission)
        if submission.status != Submission.Status.SCORED or found.result is None or not found.per_query:
            raise ApiError(f"Submission #{submission.pk} is {submission.status}, not scored: no per-query values yet.",
                           status_code=status.HTTP_409_CONFLICT)
        measures = [m for m in split.dataset.measures or [] if m in found.per_query]
        try:
            rows = per_query_rows(split=split, vectors=found.per_query, measures=measures)
        except PerQueryNotAllowed as exc:
            raise ApiError(str(exc), status_code=status.HTTP_403_FORBIDDEN) from None
        return Response({
            "submission": submission.pk,
            "dataset": split.dataset.slug,
            "split": split.name,
            "qrels_version": found.result.qrels_version.version,
            "measures": measures,
            "scores_are": SCORES_ARE,
            "queries": [{"qid": row["qid"], "category": row["category"], "n_relevant": row["n_relevant"],
                         "first_relevant_rank": row["first_relevant_rank"],
                         "values": dict(zip(measures, row["values"], strict=True))} for row in rows],
        })


class SubmissionWithdraw(JsonView):
    """Take one's run off the leaderboard for good (the file and scores stay; it still counts for the quota)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        operation_id="submission_withdraw",
        summary="Withdraw a submission",
        description="For good: it leaves every board; the file and its scores are kept, and it still counts "
                    "against the split's quota. Withdrawing twice is a 409.",
        request=None,
        responses={200: SubmissionSerializer, **error_responses(
            403, e401="No valid token.", e404="No such submission, or not yours to see.",
            e409="Already withdrawn.")},
        examples=[OpenApiExample("Withdrawn", response_only=True, status_codes=["200"], value={
            "id": 42, "url": "https://lexboard.example/api/v1/submissions/42/",
            "page": "https://lexboard.example/submissions/42/", "status": "scored", "progress": 100,
            "dataset": "demo", "split": "dev", "system_name": "BM25", "visibility": "public", "qrels_version": 1,
            "scores": {"R@10": 0.61}, "released": True, "message": "", "warnings": [], "error": None,
            "created_at": "2026-01-05T10:00:00Z", "scored_at": "2026-01-05T10:01:00Z", "team": None,
            "after_task": False, "final_run": False, "withdrawn": True})],
        tags=["submissions"],
    )
    def post(self, request, pk: int):
        submission = owned_submission(pk, request.user)
        try:
            submission_withdraw(submission=submission)
        except ActionRefused as exc:
            raise ApiError(exc.message, status_code=status.HTTP_409_CONFLICT) from None
        return Response(SubmissionSerializer(submission, context={"request": request}).data)


TasksSerializer = inline_serializer(
    name="SharedTask",
    many=True,
    fields={
        "id": serializers.IntegerField(),
        "title": serializers.CharField(),
        "split": serializers.CharField(),
        "state": serializers.ChoiceField(choices=["upcoming", "open", "closed", "revealed"]),
        "opens_at": serializers.DateTimeField(),
        "closes_at": serializers.DateTimeField(),
        "time_zone": serializers.CharField(),
        "daily_cap": serializers.IntegerField(help_text="Runs per team in any 24 hours (0: no limit)."),
        "total_cap": serializers.IntegerField(help_text="Runs per team over the phase (0: no limit)."),
        "max_final_runs": serializers.IntegerField(),
        "page": serializers.CharField(),
        "my_team": inline_serializer(name="MyTeam", allow_null=True, fields={
            "name": serializers.CharField(),
            "members": serializers.ListField(child=serializers.CharField()),
        }, help_text="The caller's team in this task; null without a token or a team."),
    },
)


class DatasetTasks(JsonView):
    """The shared-task phases of a dataset and the caller's team in each."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        operation_id="dataset_tasks",
        summary="A dataset's shared tasks",
        description="Each phase: dates, state, caps per team, final runs; `my_team` is the caller's team.",
        responses={200: TasksSerializer, **error_responses(e404="No such dataset.")},
        examples=[OpenApiExample("One task", response_only=True, status_codes=["200"], value=[{
            "id": 3, "title": "COLIEE 2027 Task 3", "split": "test", "state": "open",
            "opens_at": "2027-01-10T00:00:00Z", "closes_at": "2027-03-01T00:00:00Z", "time_zone": "Asia/Tokyo",
            "daily_cap": 5, "total_cap": 30, "max_final_runs": 3, "page": "https://lexboard.example/tasks/3/",
            "my_team": {"name": "Red", "members": ["alice", "bob"]}}])],
        tags=["datasets"],
    )
    def get(self, request, slug: str):
        dataset = _dataset_or_error(slug, user=request.user)
        out = []
        for phase in phases_for_dataset(dataset_id=dataset.pk):
            team = team_of(user=request.user, phase=phase)
            out.append({
                "id": phase.pk, "title": phase.title, "split": phase.split.name, "state": phase.state(),
                "opens_at": phase.opens_at, "closes_at": phase.closes_at, "time_zone": phase.time_zone,
                "daily_cap": phase.daily_cap, "total_cap": phase.total_cap, "max_final_runs": phase.max_final_runs,
                "page": request.build_absolute_uri(reverse("leaderboard:task", args=[phase.pk])),
                "my_team": None if team is None else {
                    "name": team.name, "members": [u.get_username() for u in team_members(team=team)]},
            })
        return Response(out)

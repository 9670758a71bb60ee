"""Reads of the submissions side: quotas, a submission's current result, a user's submissions.

Keyword-only functions; nothing here writes.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db.models import Case, Count, Exists, IntegerField, OuterRef, Prefetch, QuerySet, Subquery, When
from django.http import Http404
from django.utils import timezone

from campaigns.selectors import phase_of, quota_scope, team_members
from catalogue.models import Split, Topic
from lexboard.text import count

from . import disclosure
from .models import Result, ResultPart, StatusEvent, Submission

#: The daily quota is a rolling window: a submission stops counting 24 hours after it was made.
QUOTA_WINDOW = timedelta(hours=24)


def month_bounds(now: datetime) -> tuple[datetime, datetime]:
    """The calendar month (UTC) holding ``now``: its first instant and the next month's first instant.

    The monthly cap counts uploads made from the first and opens again at the next first, 00:00 UTC, the same
    instant for everyone wherever they are.
    """
    now = now.astimezone(UTC)
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    following = (start + timedelta(days=32)).replace(day=1)
    return start, following


@dataclass(frozen=True)
class QuotaStatus:
    """Where a user stands against a split's limits (0 means no limit)."""

    daily_limit: int
    daily_used: int
    total_limit: int
    total_used: int
    next_allowed_at: datetime | None  # set when the daily or the monthly limit is reached
    team: str = ""  # a shared task's team: the limits are the phase's, shared by its members
    per_team: bool = False  # the limits are a shared task's caps per team (the user may be in no team yet)
    monthly_limit: int = 0  # per calendar month, UTC
    monthly_used: int = 0
    month_resets_at: datetime | None = None  # the next month's first instant (UTC)

    @property
    def daily_remaining(self) -> int | None:
        return None if not self.daily_limit else max(0, self.daily_limit - self.daily_used)

    @property
    def total_remaining(self) -> int | None:
        return None if not self.total_limit else max(0, self.total_limit - self.total_used)

    @property
    def monthly_remaining(self) -> int | None:
        return None if not self.monthly_limit else max(0, self.monthly_limit - self.monthly_used)

    @property
    def allowed(self) -> bool:
        return self.daily_remaining != 0 and self.total_remaining != 0 and self.monthly_remaining != 0

    @property
    def message(self) -> str:
        """Why the next submission is refused, for a person; empty when it is allowed."""
        if self.team and self.total_remaining == 0:
            return (f"Your team \u201c{self.team}\u201d has used all {count(self.total_limit, 'run')} of this shared "
                    "task's phase (failures on our side do not count). The private board ranks your final runs.")
        if self.monthly_remaining == 0 and self.total_remaining != 0:
            when = f"{self.month_resets_at:%Y-%m-%d} 00:00 UTC" if self.month_resets_at else "next month"
            who = f"Your team \u201c{self.team}\u201d has" if self.team else "You have"
            return (f"{who} made {count(self.monthly_used, 'submission')} to this split this calendar month (UTC), "
                    f"the monthly limit is {self.monthly_limit}. "
                    f"The next submission will be accepted from {when}, the first day of next month. "
                    "Failures on our side do not count.")
        if self.team and self.daily_remaining == 0:
            when = self.next_allowed_at.strftime("%Y-%m-%d %H:%M UTC") if self.next_allowed_at else "later"
            return (f"Your team \u201c{self.team}\u201d has sent {count(self.daily_used, 'run')} in the last 24 hours, "
                    f"the task's limit is {self.daily_limit}. Its next run will be accepted from {when}.")
        if self.total_remaining == 0:
            return (
                f"You have used {'the' if self.total_limit == 1 else 'all'} {count(self.total_limit, 'submission')} "
                "allowed on this split. "
                "Withdrawn submissions and files that failed count; failures on our side do not. "
                "Ask the curators if you need more."
            )
        if self.daily_remaining == 0:
            when = self.next_allowed_at.strftime("%Y-%m-%d %H:%M UTC") if self.next_allowed_at else "later"
            return (
                f"You have made {count(self.daily_used, 'submission')} to this split in the last 24 hours, "
                f"the limit is "
                f"{self.daily_limit}. Your next submission will be accepted from {when}."
            )
        return ""


#: Tries on a split that left no submission, registered by the apps above at start-up: the sandbox's images
#: whose run failed or was refused count like any judged upload (so a refused run is no free probe). Each is
#: called with ``users`` (the participant, or every member of their team) and ``split``, and answers the tries'
#: creation times.
QUOTA_TRIES: list[Callable[..., list[datetime]]] = []


def _other_tries(*, users: list, split: Split) -> list[datetime]:
    return sorted(when for count in QUOTA_TRIES for when in count(users=users, split=split))


def counted_submissions(*, user, split: Split) -> QuerySet[Submission]:
    """The submissions that count against the quota: all but baselines and the service's own failures."""
    return _counted(Submission.objects.filter(user=user, split=split))


def _counted(queryset: QuerySet[Submission]) -> QuerySet[Submission]:
    return queryset.filter(is_baseline=False).exclude(
        status=Submission.Status.FAILED, failure_kind=Submission.FailureKind.SERVICE
    )


def submission_ordinal_expr(prefix: str = ""):
    """:func:`submission_ordinal` as an annotation, for a whole leaderboard in one query.

    ``prefix`` is the path to the submission (``"submission__"`` on results).
    Annotates every row; callers show it for test splits and non-baselines only.
    """
    def earlier(owner: str):
        return Subquery(
            _counted(Submission.objects.filter(
                **{owner: OuterRef(f"{prefix}{owner}")},
                split_id=OuterRef(f"{prefix}split_id"),
                created_at__lte=OuterRef(f"{prefix}created_at"),
                pk__lte=OuterRef(f"{prefix}pk"),
            ))
            .order_by()
            .values(owner)
            .annotate(n=Count("pk"))
            .values("n"),
            output_field=IntegerField(),
        )
    # A shared task's run is its team's n-th try, whichever member sent it (the team's quota and Ladder).
    return Case(When(**{f"{prefix}entrant_team_id__isnull": False}, then=earlier("entrant_team_id")),
                default=earlier("user_id"), output_field=IntegerField())


def submission_ordinal(*, submission: Submission) -> int | None:
    """How many submissions its owner had made to its test split when it was sent, this one included.

    Counted like the quota (every upload but baselines and the service's own failures), so a reader
    sees how many tries a test score took. None on dev and train splits, and for baselines.
    """
    if submission.split.kind != Split.Kind.TEST or submission.is_baseline:
        return None
    # The leaderboard's annotation, on this one row: one home for the rule (a team's run is its team's try).
    return (Submission.objects.filter(pk=submission.pk).annotate(n=submission_ordinal_expr())
            .values_list("n", flat=True).first())


def submission_quota(*, user, split: Split, now: datetime | None = None) -> QuotaStatus:
    """The user's quota on the split, rolling 24 hours for the daily limit, the calendar month (UTC) for the monthly.

    In an open shared task the user's team's: the phase's caps over the runs of the team since the opening;
    the split's monthly cap over the team's runs of the month.
    """
    now = now or timezone.now()
    scope = quota_scope(user=user, split=split, now=now)
    counted = counted_submissions(user=user, split=split)
    users = [user]
    if scope.team is not None:
        counted = _counted(Submission.objects.filter(split=split, entrant_team=scope.team))
        users = team_members(team=scope.team)
    daily_limit, total_limit, monthly_limit = scope.daily_limit, scope.total_limit, scope.monthly_limit
    others = _other_tries(users=users, split=split)
    if scope.team is not None:  # a team's quota counts from its phase's opening
        others = [when for when in others if when >= scope.team.phase.opens_at]
    total_used = counted.count() + len(others)
    recent = sorted(
        list(counted.filter(created_at__gt=now - QUOTA_WINDOW).values_list("created_at", flat=True))
        + [when for when in others if when > now - QUOTA_WINDOW]
    )
    month_start, month_end = month_bounds(now)
    monthly_used = (counted.filter(created_at__gte=month_start).count()
                    + sum(1 for when in others if when >= month_start)) if monthly_limit else 0
    next_allowed = None
    if daily_limit and len(recent) >= daily_limit:
        # The window must drop (used - limit + 1) submissions; the last of those leaves at this time.
        next_allowed = recent[len(recent) - daily_limit] + QUOTA_WINDOW
    if monthly_limit and monthly_used >= monthly_limit:
        next_allowed = max(next_allowed or month_end, month_end)
    return QuotaStatus(
        daily_limit=daily_limit,
        daily_used=len(recent),
        total_limit=total_limit,
        total_used=total_used,
        next_allowed_at=next_allowed,
        team=scope.team.name if scope.team is not None else "",
        per_team=scope.per_team,
        monthly_limit=monthly_limit,
        monthly_used=monthly_used,
        month_resets_at=month_end,
    )


def submission_status_now(*, submission_id: int) -> str | None:
    """The row's status as stored now, None once it is gone: one column by primary key (a held answer asks it
    every few hundredths of a second, lexboard/long_poll.py)."""
    return Submission.objects.filter(pk=submission_id).values_list("status", flat=True).first()


def submission_progress_now(*, submission_id: int) -> tuple[str, float] | None:
    """The row's status and progress as stored now, None once it is gone (the run page's held answer)."""
    return Submission.objects.filter(pk=submission_id).values_list("status", "progress").first()


def submission_for_viewer(*, submission_id: int, user) -> Submission:
    """The submission if ``user`` may see it, else 404 (never 403: ids are not to be probed)."""
    submission = (
        Submission.objects.select_related("split__dataset", "user__profile", "replaces")
        .filter(pk=submission_id)
        .first()
    )
    if submission is None or not submission.visible_to(user):
        raise Http404("No such submission.")
    return submission


def submission_for_owner(*, submission_id: int, user) -> Submission:
    """The submission if ``user`` owns it (staff too), else 404."""
    submission = Submission.objects.select_related("split__dataset").filter(pk=submission_id).first()
    if submission is None or not submission.manageable_by(user):
        raise Http404("No such submission.")
    return submission


def submission_events(*, submission: Submission) -> list[StatusEvent]:
    return list(submission.events.all())


def pick_current_result(results, *, current_qrels_id: int | None) -> Result | None:
    """The one rule for "the current result of a submission", among its results.

    The result on the split's current qrels; when there is none (a rescoring
    in progress, or qrels never published), the newest result — newest by
    ``created_at``, then by id, so two results stored in the same instant
    still give one answer.
    """
    results = list(results)
    for result in results:
        if result.qrels_version_id == current_qrels_id:
            return result
    return max(results, key=lambda r: (r.created_at, r.pk)) if results else None


def current_result_of(submission: Submission) -> Result | None:
    """The current result (:func:`pick_current_result`) from ``submission.results.all()`` (prefetched or not)."""
    return pick_current_result(submission.results.all(), current_qrels_id=submission.split.current_qrels_id)


def submission_current_result(*, submission: Submission) -> Result | None:
    """The current result (:func:`pick_current_result`) with its qrels version loaded (shown with it)."""
    results = submission.results.select_related("qrels_version")
    return pick_current_result(results, current_qrels_id=submission.split.current_qrels_id)


def differenced_private_topics(*, submission: Submission) -> frozenset[str] | None:
    """The private topics of its split's shared task, when ``submission``'s means are shown on two sets of topics.

    Its private part then follows by difference (``N * all - Npub * public``), so what the Ladder releases of
    it must hold on the private topics alone too (``services.ladder``). Two cases:

    * after the reveal, a run shown on its public part during the phase (it has parts) is shown on all topics;
    * while the partition holds (from the phase's set-up to the reveal), a run sent before the phase was set
      up may have been shown on all topics then, and is shown on its public part now.

    None otherwise.
    """
    phase = phase_of(split_id=submission.split_id)
    if phase is None or not phase.public_qids:
        return None
    if phase.revealed_at is not None:
        if not ResultPart.objects.filter(submission_id=submission.pk).exists():
            return None
    elif submission.created_at >= phase.created_at:
        return None
    public = set(phase.public_qids)
    return frozenset(q for q in Topic.objects.filter(split_id=submission.split_id).values_list("qid", flat=True)
                     if q not in public)


def partition_in_use(*, split_id: int) -> bool:
    """Whether stored results of the split hold their public part (a shared task's partition shown on pages)."""
    return ResultPart.objects.filter(submission__split_id=split_id).exists()


def released_participant_runs(*, split_id: int) -> int:
    """How many participants' runs (not curators' baselines) have released scores on the split."""
    return (Result.objects.filter(submission__split_id=split_id, submission__is_baseline=False, released=True)
            .exclude(scores={}).values("submission_id").distinct().count())


def full_part_of(result: Result) -> Result | ResultPart:
    """``result`` on all topics: its full part while a shared task shows the public one, else itself."""
    part = ResultPart.objects.filter(submission_id=result.submission_id, qrels_version_id=result.qrels_version_id,
                                     part=ResultPart.Part.FULL).first()
    return part if part is not None else result


def load_per_query(result: Result | ResultPart, names: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """The per-query vectors of a result: ``qids``, one array per measure, and the extras (or only ``names``).

    Extras (when the core provided them): ``n_relevant``, ``first_relevant_rank``,
    ``judged_at_10``, ``rel_ranks`` / ``rel_offsets``, ``recall_curve``.
    Never show these for a hidden split. An npz member is decoded on access, so
    asking for ``names`` (a leaderboard's significance reads two) skips the rest.
    """
    blob = bytes(result.per_query or b"")
    if not blob:
        return {}
    with np.load(io.BytesIO(blob), allow_pickle=False) as data:
        return {name: data[name] for name in (data.files if names is None else names) if name in data.files}


@dataclass(frozen=True)
class SubmissionResult:
    result: Result | None
    per_query: dict[str, np.ndarray]


def submission_result(*, submission: Submission) -> SubmissionResult:
    """The current result and its decoded per-query arrays (empty when not scored yet)."""
    result = submission_current_result(submission=submission)
    return SubmissionResult(result=result, per_query=load_per_query(result) if result else {})


def submissions_of_user(*, user) -> list[Submission]:
    """All of the user's submissions, newest first, each with its results prefetched."""
    return list(
        Submission.objects.filter(user=user)
        .select_related("split__dataset")
        .prefetch_related(Prefetch("results", queryset=Result.objects.defer("per_query").order_by("-created_at")))
        .order_by("-created_at")
    )


def primary_score_of(submission: Submission) -> float | None:
    """The primary score of the current result (:func:`current_result_of`), from prefetched results."""
    result = current_result_of(submission)
    return disclosure.released_primary(result, split=submission.split)


# --- rescoring on new judgments (see submissions.services, "new judgments") ---


def rescoring_targets(*, split_id: int) -> QuerySet[Submission]:
    """The submissions a pending qrels version waits for: scored and not withdrawn (hidden ones too)."""
    return Submission.objects.filter(split_id=split_id, status=Submission.Status.SCORED, withdrawn_at__isnull=True)


def rescoring_waiting(*, split_id: int, version_id: int) -> QuerySet[Submission]:
    """The targets with no result (nor failure marker) on ``version_id`` yet."""
    return rescoring_targets(split_id=split_id).exclude(
        Exists(Result.objects.filter(submission=OuterRef("pk"), qrels_version_id=version_id))
    )


@dataclass(frozen=True)
class RescoringProgress:
    """How far the rescoring on a split's pending qrels version is (for the admin)."""

    version: int
    done: int
    total: int

    def __str__(self) -> str:
        return f"rescoring in progress on qrels v{self.version}: {self.done} of {self.total}"


def split_rescoring_progress(*, split: Split) -> RescoringProgress | None:
    """None when no version is pending; else how many of the waited-for submissions have a result on it."""
    pending = split.pending_qrels
    if pending is None:
        return None
    total = rescoring_targets(split_id=split.pk).count()
    waiting = rescoring_waiting(split_id=split.pk, version_id=pending.pk).count()
    return RescoringProgress(version=pending.version, done=total - waiting, total=total)


def submission_result_history(*, submission: Submission) -> list[Result]:
    """The submission's results, one per qrels version it was scored on, newest version first.

    A result on a version still pending (being rescored, not on the
    leaderboard yet) is left out, and with it any failure marker.
    """
    results = submission.results.select_related("qrels_version").defer("per_query", "qrels_version__qrels_gz")
    pending = submission.split.pending_qrels_id
    if pending is not None:
        results = results.exclude(qrels_version_id=pending)
    return list(results.order_by("-qrels_version__version"))


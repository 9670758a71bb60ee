"""Reads of shared tasks: a split's phase, the partition in force, a user's team, what an upload may do.

Keyword-only functions; nothing here writes (except :func:`phase_partition`, which fixes a phase's partition
the first time it is needed after the opening, as :meth:`Phase.fix_partition` allows once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse

from catalogue.models import Split, Topic

from .models import Membership, NotificationSetting, Phase, Team


def phase_of(*, split_id: int | None) -> Phase | None:
    """The split's phase, or None when the split is not a shared task."""
    if split_id is None:
        return None
    return Phase.objects.filter(split_id=split_id).first()


def phase_partition(*, split_id: int) -> frozenset[str] | None:
    """The public topics while the split's phase partitions it (from the opening to the reveal), else None.

    Scores stored while this is not None are on these topics only wherever they are shown; the rest of
    the topics are scored for the private board, which appears at the reveal.
    """
    phase = phase_of(split_id=split_id)
    if phase is None or phase.revealed_at is not None:
        return None
    if not phase.public_qids:
        phase.fix_partition(list(Topic.objects.filter(split_id=split_id).values_list("qid", flat=True)))
        Phase.objects.filter(pk=phase.pk, public_qids=[]).update(public_qids=phase.public_qids)
        phase.refresh_from_db(fields=["public_qids"])
    return frozenset(phase.public_qids) if phase.public_qids else None


def team_of(*, user, phase: Phase | None) -> Team | None:
    """The user's team in ``phase`` (at most one), or None."""
    if phase is None or user is None or not user.is_authenticated:
        return None
    membership = Membership.objects.select_related("team").filter(phase=phase, user=user).first()
    return membership.team if membership else None


def team_acting_on(*, user, dataset_id: int, now: datetime | None = None) -> Team | None:
    """The team ``user`` acts for on the dataset: their team in a shared task on one of its splits that has not
    closed yet (the newest such task first); None outside shared tasks."""
    if user is None or not user.is_authenticated:
        return None
    for phase in Phase.objects.filter(split__dataset_id=dataset_id).order_by("-opens_at"):
        if phase.state(now) in ("upcoming", "open") and (team := team_of(user=user, phase=phase)) is not None:
            return team
    return None


def team_members(*, team: Team) -> list:
    return [m.user for m in team.memberships.select_related("user").order_by("joined_at", "pk")]


@dataclass(frozen=True)
class UploadPlace:
    """Where an upload to a split goes: refused (``refusal``), a team's task run, or the living board after the task."""

    refusal: str | None = None
    phase: Phase | None = None
    team: Team | None = None
    after_task: bool = False


def upload_place(*, user, split: Split, now: datetime | None = None) -> UploadPlace:
    """The shared task's rule for an upload by ``user`` to ``split`` (a split with no phase: no rule).

    Before the opening: refused, with the dates. While open: a run of the user's team (a user in no team is
    refused, with the page where teams are made). After the close: taken for the living board, marked
    "after the task"; it is never a task run.
    """
    phase = phase_of(split_id=split.pk)
    if phase is None:
        return UploadPlace()
    state = phase.state(now)
    page = reverse("leaderboard:task", args=[phase.pk])
    if state == "upcoming":
        return UploadPlace(refusal=(
            f"{split} is the shared task \u201c{phase.title}\u201d, which opens at {phase.when(phase.opens_at)} and "
            f"closes at {phase.when(phase.closes_at)}. Uploads are taken from the opening: come back then "
            f"(the timeline is at {page})."), phase=phase)
    if state == "open":
        team = team_of(user=user, phase=phase)
        if team is None:
            return UploadPlace(refusal=(
                f"{split} is the shared task \u201c{phase.title}\u201d (open until {phase.when(phase.closes_at)}): "
                f"runs are entered by teams. Create a team or join one at {page}, then upload again."), phase=phase)
        return UploadPlace(phase=phase, team=team)
    return UploadPlace(phase=phase, after_task=True)


@dataclass(frozen=True)
class QuotaScope:
    """Whose uploads a quota counts and its limits: a team's in an open phase, else the user's on the split."""

    team: Team | None
    daily_limit: int
    total_limit: int
    per_team: bool = False  # a shared task's caps, counted per team
    monthly_limit: int = 0  # the split's cap per calendar month (UTC), counted over the same uploads; 0: none


def quota_scope(*, user, split: Split, now: datetime | None = None) -> QuotaScope:
    """Before and during a shared task its caps are the ones that apply (a user in no team is refused until they
    join one, and then counts with the team); otherwise the split's own limits, per participant.

    The split's monthly cap is the permanent board's pace and holds in both cases: a shared task on the board
    does not lift it, and a team's runs count against it together, as they do against the task's caps.
    """
    monthly = split.monthly_limit or 0
    phase = phase_of(split_id=split.pk)
    if phase is not None and phase.state(now) in ("upcoming", "open"):
        team = team_of(user=user, phase=phase) if user is not None and user.is_authenticated else None
        return QuotaScope(team=team, daily_limit=phase.daily_cap, total_limit=phase.total_cap, per_team=True,
                          monthly_limit=monthly)
    return QuotaScope(team=None, daily_limit=split.daily_limit, total_limit=split.total_limit, monthly_limit=monthly)


def phases_for_dataset(*, dataset_id: int) -> list[Phase]:
    return list(Phase.objects.filter(split__dataset_id=dataset_id).select_related("split").order_by("opens_at"))


def notifications_on(*, user) -> bool:
    """Whether ``user`` wants e-mails (on unless turned off)."""
    setting = NotificationSetting.objects.filter(user=user).first() if user is not None else None
    return setting.emails if setting is not None else True

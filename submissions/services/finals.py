"""A shared task's final runs: which runs of a team the private board ranks.

Each team marks up to ``Phase.max_final_runs`` of its runs as final before
the close (never more than :data:`FINAL_RUNS_CAP`). A team that marks none is
ranked on its latest N runs sent before the close that the Ladder released. Runs sent after the close
(``after_task``), withdrawn runs and runs that are not scored are never final.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from campaigns.errors import TaskRefused
from campaigns.models import Membership, Phase, Team

from ..models import Submission


def team_task_runs(*, team: Team, phase: Phase) -> QuerySet[Submission]:
    """The team's runs in the task: sent for it while the phase was open (never after the close)."""
    return Submission.objects.filter(entrant_team=team, split_id=phase.split_id, after_task=False,
                                     created_at__lt=phase.closes_at, withdrawn_at__isnull=True)


#: The most final runs a team's row on the private board is picked from, whatever a phase sets: each is one more
#: private-part mean the board's maximum is taken over (docs/security.md, "The private board").
FINAL_RUNS_CAP = 5


def final_runs_limit(phase: Phase) -> int:
    """How many runs a team of ``phase`` may mark final: the phase's number, at most :data:`FINAL_RUNS_CAP`."""
    return max(1, min(int(phase.max_final_runs), FINAL_RUNS_CAP))


def team_final_runs(*, team: Team, phase: Phase) -> tuple[list[Submission], bool]:
    """(the runs the private board ranks for ``team``, whether the team marked them).

    Marked final runs that are scored (at most :func:`final_runs_limit`); when the team marked none, its latest
    runs of that number **that the Ladder released** on the split's current judgments (a run it held back shows
    no number during the task, and the board is no way around the Ladder: #37). On a split without the Ladder
    every run is released.
    """
    limit = final_runs_limit(phase)
    scored = team_task_runs(team=team, phase=phase).filter(status=Submission.Status.SCORED)
    marked = list(scored.filter(final_run=True).order_by("-created_at", "-pk")[:limit])
    if marked:
        return marked, True
    released = scored.filter(results__released=True, results__qrels_version_id=phase.split.current_qrels_id)
    return list(released.distinct().order_by("-created_at", "-pk")[:limit]), False


def submission_mark_final(*, submission: Submission, user, final: bool, now: datetime | None = None) -> Submission:
    """Mark (or unmark) one of a team's runs as final; refused after the close, for non-members, past the limit."""
    phase = Phase.objects.filter(split_id=submission.split_id).first()
    if phase is None or submission.entrant_team_id is None or submission.after_task:
        raise TaskRefused("Only a team's runs in a shared task can be marked final.")
    if not Membership.objects.filter(team_id=submission.entrant_team_id, user=user).exists():
        raise TaskRefused("Only the members of the team that sent this run can mark it final.")
    now = now or timezone.now()
    if now >= phase.closes_at:
        raise TaskRefused(f"\u201c{phase.title}\u201d closed at {phase.when(phase.closes_at)}: final runs are fixed.")
    if submission.withdrawn_at is not None and final:
        raise TaskRefused("A withdrawn run cannot be final.")
    with transaction.atomic():
        # The team's row is the lock: two members marking at once cannot pass the limit together.
        team = Team.objects.select_for_update(no_key=True).get(pk=submission.entrant_team_id)
        if final and not submission.final_run:
            marked = team_task_runs(team=team, phase=phase).filter(final_run=True).count()
            if marked >= final_runs_limit(phase):
                raise TaskRefused(f"Your team has marked {marked} runs final, the limit of this task: unmark one "
                                  "first.")
        Submission.objects.filter(pk=submission.pk).update(final_run=final)
        submission.final_run = final
    return submission

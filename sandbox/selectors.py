"""Reads of the sandbox: a run's place in the queue and an estimate, the run behind an entry."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from submissions.models import Submission

from .models import SandboxRun


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: ``position`` 1 runs next; ``estimate_seconds`` until it starts."""

    position: int
    ahead: int
    estimate_seconds: float

    def describe(self) -> str:
        minutes = max(1, round(self.estimate_seconds / 60))
        if self.ahead == 0:
            return "next in the sandbox queue"
        return f"{self.position} in the sandbox queue ({self.ahead} ahead, about {minutes} min)"


def run_queue_place(*, run: SandboxRun, sample: int = 20) -> QueuePlace | None:
    """The run's place among the queued runs of every split (one queue), first come first served.

    The estimate: the runs running now finish in half their usual time on
    average, then each run ahead takes the median time of the last ``sample``
    finished runs (the run's own wall-time limit when none finished yet).
    """
    if run.status != SandboxRun.Status.QUEUED:
        return None
    ahead = SandboxRun.objects.filter(status=SandboxRun.Status.QUEUED, created_at__lt=run.created_at).count()
    running = SandboxRun.objects.filter(status=SandboxRun.Status.RUNNING).count()
    recent: list[float] = [seconds for seconds in SandboxRun.objects.filter(status=SandboxRun.Status.RAN, seconds__isnull=False)
                  .order_by("-finished_at").values_list("seconds", flat=True)[:sample] if seconds is not None]
    typical = statistics.median(recent) if recent else float(run.limits.get("wall_seconds", 1800))
    return QueuePlace(position=ahead + 1, ahead=ahead, estimate_seconds=ahead * typical + running * typical / 2)


def submission_reproduction(submission: Submission) -> SandboxRun | None:
    """The sandbox run that made this submission's run, if the platform made it."""
    return SandboxRun.objects.filter(submission=submission, status=SandboxRun.Status.RAN).select_related(
        "image").first()


def reproduced_submission_ids(*, split_id: int) -> set[int]:
    """The entries of a split whose run the platform made (the board's mark and filter)."""
    return set(SandboxRun.objects.filter(split_id=split_id, status=SandboxRun.Status.RAN, rerun_of__isnull=True,
                                         submission__isnull=False).values_list("submission_id", flat=True))

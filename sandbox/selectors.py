"""Reads of the sandbox: a run's place in the queue and an estimate, the run behind an entry."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from submissions.models import Submission

from .models import SandboxRun, SandboxWorker

#: What the image form and the API answer, before the upload, where no sandbox worker runs.
NO_SANDBOX_WORKER = ("This site runs no sandbox worker now: images would wait in the queue until one starts, so "
                     "none is taken. Upload a run file instead, or try again later (the site's operators start "
                     "one as docs/sandbox.md says; make run starts one on a host with podman, as root).")


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


def sandbox_worker_last_seen() -> datetime | None:
    """When a sandbox worker last said it is alive: its heartbeat row, or a running run's heartbeat."""
    seen = [SandboxWorker.objects.aggregate(at=Max("seen_at"))["at"],
            SandboxRun.objects.filter(status=SandboxRun.Status.RUNNING).aggregate(at=Max("heartbeat_at"))["at"]]
    known = [at for at in seen if at is not None]
    return max(known) if known else None


def sandbox_worker_alive() -> bool:
    """Whether a sandbox worker answered within ``LEXBOARD_SANDBOX_WORKER_STALE_SECONDS`` (always, when 0)."""
    stale = settings.LEXBOARD_SANDBOX_WORKER_STALE_SECONDS
    if stale <= 0:
        return True
    seen = sandbox_worker_last_seen()
    return seen is not None and seen >= timezone.now() - timedelta(seconds=stale)


def sandbox_worker_refusal() -> str | None:
    """The image form's and the API's refusal where no sandbox worker runs; None where one does."""
    return None if sandbox_worker_alive() else NO_SANDBOX_WORKER


def sandbox_worker_silence(run: SandboxRun) -> str:
    """For a queued run: that no sandbox worker has answered for N seconds, in words; empty while one answers."""
    if run.status != SandboxRun.Status.QUEUED or sandbox_worker_alive():
        return ""
    seen = sandbox_worker_last_seen()
    if seen is None:
        return ("No sandbox worker has ever answered on this site: this run waits in the queue until one starts "
                "(nothing runs it now). Cancel it, or ask the site's operators.")
    seconds = max(0, round((timezone.now() - seen).total_seconds()))
    return (f"No sandbox worker has answered for {seconds} s: this run waits in the queue until one starts "
            "again (nothing runs it now). Cancel it, or ask the site's operators.")

"""Participants' images, the runs the sandbox made of them, and each split's sandbox policy.

A ``SandboxRun`` is the record of one job, as a ``Submission`` is: every
status change is a conditional UPDATE (``_transition``), so a redelivered
message never runs an image twice at once, and a cancel is seen by the worker
that runs it. Once the image wrote its run, the run becomes an ordinary
``Submission`` (``submission``), scored by the scoring workers; the run row
stays as the proof of how it was made (image digest, limits, time).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import storages
from django.db import models
from django.utils import timezone


def private_storage():
    return storages["private"]


def image_upload_to(instance: SoftwareImage, filename: str) -> str:
    return f"sandbox/images/{instance.sha256[:2]}/{instance.sha256}.tar"


class SplitSandbox(models.Model):
    """A split's sandbox policy, set by curators: whether it takes images, whether only images, the limits."""

    split = models.OneToOneField("catalogue.Split", on_delete=models.CASCADE, related_name="sandbox")
    accepts_images = models.BooleanField(default=True, help_text="Participants may submit a container image")
    software_only = models.BooleanField(
        default=False,
        help_text="Only images are taken; the topics' text is never downloadable, only seen inside the sandbox",
    )
    memory_mb = models.PositiveIntegerField(default=2048)
    cpus = models.FloatField(default=1.0)
    pids = models.PositiveIntegerField(default=256)
    wall_seconds = models.PositiveIntegerField(default=1800)
    output_mb = models.PositiveIntegerField(default=512)
    tmp_mb = models.PositiveIntegerField(default=512)
    max_pending_per_participant = models.PositiveIntegerField(
        default=2, help_text="Runs a participant may have queued or running on this split at once"
    )

    class Meta:
        verbose_name = "split sandbox policy"
        verbose_name_plural = "split sandbox policies"

    def __str__(self) -> str:
        return f"sandbox policy of {self.split}"

    def clean(self) -> None:
        if self.software_only and not self.split.hidden:
            raise ValidationError({"software_only": (
                "Only a hidden split can be software-only: a public split shows each topic's text with its "
                "per-query scores. Make the split hidden first.")})

    def limits_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in ("memory_mb", "cpus", "pids", "wall_seconds", "output_mb",
                                                        "tmp_mb")}


class SoftwareImage(models.Model):
    """A participant's image, stored once by digest (``sandbox_images_collect`` removes the unused ones).

    Either an uploaded OCI or Docker archive (``archive``; ``sha256`` the archive's bytes'), or an image of the
    deployment's registry (``reference``, ``host/name@sha256:…`` pinned when it was submitted; ``sha256`` that
    manifest's digest, ``size`` its compressed layers', ``image_id`` its config's digest), which sandbox workers
    pull by digest (``sandbox.registry``).
    """

    sha256 = models.CharField(max_length=64, unique=True)
    archive = models.FileField(storage=private_storage, upload_to=image_upload_to, max_length=300, blank=True)
    reference = models.CharField(
        max_length=400, blank=True,
        help_text="An image of the deployment's registry, pinned: host/name@sha256:<manifest digest>")
    size = models.BigIntegerField(default=0)
    # podman's image id (the sha256 of its configuration) once a sandbox worker loaded it: the digest shown.
    image_id = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"image {self.reference or self.sha256[:12]} ({self.size} bytes)"

    @property
    def digest(self) -> str:
        return f"sha256:{self.image_id or self.sha256}"


class SandboxRun(models.Model):
    """One run of an image on a split's topics: queued → running → ran (a submission) / failed / cancelled."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running in the sandbox"
        RAN = "ran", "ran: its run went to scoring"
        FAILED = "failed", "failed"
        CANCELLED = "cancelled", "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="sandbox_runs")
    split = models.ForeignKey("catalogue.Split", on_delete=models.PROTECT, related_name="sandbox_runs")
    image = models.ForeignKey(SoftwareImage, on_delete=models.PROTECT, related_name="runs")
    metadata = models.JSONField(default=dict, blank=True)
    # A curator's re-run of an entry: the same image on the same input, compared with the first run.
    rerun_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="reruns")
    submission = models.OneToOneField("submissions.Submission", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="sandbox_run")

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    outcome = models.CharField(max_length=20, blank=True, help_text="the runner's status (sandbox.runner.Status)")
    message = models.TextField(blank=True)
    limits = models.JSONField(default=dict)
    attempts = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)

    seconds = models.FloatField(null=True, blank=True)
    peak_memory_bytes = models.BigIntegerField(null=True, blank=True)
    run_sha256 = models.CharField(max_length=64, blank=True)
    run_bytes = models.BigIntegerField(default=0)
    input_sha256 = models.CharField(max_length=64, blank=True)
    # The image's last 2 KiB of stderr: for curators (on a software-only split participants never see it).
    stderr_tail = models.TextField(blank=True)
    comparison = models.JSONField(default=dict, blank=True, help_text="a re-run against its first run")

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"sandbox run {self.pk} of {self.image} on {self.split} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in self.ACTIVE

    def _transition(self, from_statuses: tuple[str, ...] | list[str], *, only_if: dict | None = None,
                    **fields: Any) -> bool:
        """Move this row if, and only if, it is still in one of ``from_statuses`` (the UPDATE is the lock)."""
        updated = SandboxRun.objects.filter(pk=self.pk, status__in=from_statuses, **(only_if or {})).update(**fields)
        if updated:
            self.refresh_from_db()
        return bool(updated)

    def claim(self, *, worker: str, max_attempts: int, stale_before: Any) -> bool:
        """queued → running; or running → running when its worker went silent (died), while attempts last.

        A run whose worker died keeps ``running`` with a heartbeat that stands
        still; the redelivered message (or the sweep's) takes it over, once:
        ``max_attempts`` counts the attempts in all. A running row whose
        heartbeat is fresh belongs to a live worker and is left alone.
        """
        now = timezone.now()
        fields: dict[str, Any] = dict(status=self.Status.RUNNING, attempts=models.F("attempts") + 1,
                                      started_at=now, heartbeat_at=now, worker=worker[:200])
        if self._transition([self.Status.QUEUED], only_if={"attempts__lt": max_attempts,
                                                           "cancel_requested": False}, **fields):
            return True
        return self._transition([self.Status.RUNNING], only_if={"attempts__lt": max_attempts,
                                                                "cancel_requested": False,
                                                                "heartbeat_at__lt": stale_before}, **fields)

    def beat(self) -> bool:
        """Say the worker running this row is alive; whether the row asks it to stop (a cancel)."""
        SandboxRun.objects.filter(pk=self.pk, status=self.Status.RUNNING).update(heartbeat_at=timezone.now())
        return SandboxRun.objects.filter(pk=self.pk, cancel_requested=True).exists()

    def mark_failed(self, *, outcome: str, message: str, **fields: Any) -> bool:
        return self._transition(self.ACTIVE, status=self.Status.FAILED, outcome=outcome, message=message,
                                finished_at=timezone.now(), **fields)

    def mark_ran(self, **fields: Any) -> bool:
        return self._transition([self.Status.RUNNING], status=self.Status.RAN, finished_at=timezone.now(), **fields)

    def request_cancel(self) -> bool:
        """Ask for the run to stop: a queued run is cancelled at once, a running one by its worker (it polls)."""
        if self._transition([self.Status.QUEUED], status=self.Status.CANCELLED, cancel_requested=True,
                            outcome="cancelled", message="Cancelled before it ran.", finished_at=timezone.now()):
            return True
        return bool(SandboxRun.objects.filter(pk=self.pk, status=self.Status.RUNNING).update(cancel_requested=True))

    def mark_cancelled(self, **fields: Any) -> bool:
        return self._transition(self.ACTIVE, status=self.Status.CANCELLED, outcome="cancelled",
                                message="Cancelled while it ran: its container was stopped and removed.",
                                finished_at=timezone.now(), **fields)

    @staticmethod
    def new_name() -> str:
        return secrets.token_hex(6)


class SandboxWorker(models.Model):
    """A sandbox worker's heartbeat: each worker consuming the sandbox queue writes ``seen_at`` every few seconds
    (``sandbox.worker_steps.SandboxWorkerBeat``), so the site knows, before an upload, whether an image would run
    (``sandbox.selectors.sandbox_worker_alive``)."""

    hostname = models.CharField(max_length=200, unique=True)
    seen_at = models.DateTimeField(db_index=True)
    started_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"sandbox worker {self.hostname} (seen {self.seen_at:%Y-%m-%d %H:%M:%S})"

"""Submissions and their life cycle, stored scores.

The database row is the record of the job; the broker is only a doorbell.
Every status change is a conditional UPDATE on the row, so a redelivered or
duplicated message can never score a submission twice.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import storages
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from lexboard import long_poll

# The release ledger's models live in their own module; imported here so the app registers them.
from .ledger_models import WAITING_FOR_BUDGET, LedgerAlert, Release, ReleasePolicy, ReleaseWait, Verdict  # noqa: F401
from .provenance import (
    MODELS_FORMAT,
    MODELS_MAX_LENGTH,
    NOTE_MAX_LENGTH,
    CouldHaveSeen,
    Gap,
    ModelUsed,
    TrainingData,
    gaps_of,
    normalize_models,
    parse_models,
    validate_models_used,
)

#: What a run sent before its split's judgments are published is told (status ``waiting``).
WAITING_MESSAGE = (
    "This split's relevance judgments are not published yet: the run waits and is scored when the curators "
    "publish them."
)


def private_storage():
    return storages["private"]


def run_upload_to(instance: Submission, filename: str) -> str:
    stamp = timezone.now().strftime("%Y/%m/%d")
    return f"runs/{stamp}/{secrets.token_hex(8)}-{filename[-80:]}"


def json_upload_to(instance: Submission, filename: str) -> str:
    stamp = timezone.now().strftime("%Y/%m/%d")
    return f"runs/json/{stamp}/{secrets.token_hex(8)}-{filename[-80:]}"


#: Visibilities a leaderboard shows (a private entry is its owner's alone; baselines are shown whatever theirs).
SHOWN_VISIBILITIES = ("public", "anonymous")


def live_q(prefix: str = "") -> Q:
    """Not withdrawn by its owner, not hidden by a curator. ``prefix`` reaches a submission through a relation
    (``"submission__"`` from a Result)."""
    return Q(**{f"{prefix}withdrawn_at__isnull": True, f"{prefix}hidden_by_curator": False})


def scored_live_q(prefix: str = "") -> Q:
    """Scored and live: what a board may hold for someone (their own private entries included)."""
    return live_q(prefix) & Q(**{f"{prefix}status": "scored"})


def on_board_q(prefix: str = "") -> Q:
    """THE rule of which submissions a leaderboard shows to everyone: scored, live, and a baseline or a public or
    anonymous entry. On a hidden split the Ladder's release is asked on top (``Result.released``, through
    ``submissions.disclosure``). Every board, export, history and fusion reads it here."""
    return scored_live_q(prefix) & (Q(**{f"{prefix}is_baseline": True})
                                    | Q(**{f"{prefix}visibility__in": SHOWN_VISIBILITIES}))


class SubmissionQuerySet(models.QuerySet):
    def live(self) -> SubmissionQuerySet:
        return self.filter(live_q())

    def on_board(self) -> SubmissionQuerySet:
        """The submissions a leaderboard shows (:func:`on_board_q`)."""
        return self.filter(on_board_q())


class Submission(models.Model):
    """One run file for one split, from upload to scores."""

    objects = SubmissionQuerySet.as_manager()

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        SCORING = "scoring", "scoring"
        SCORED = "scored", "scored"
        FAILED = "failed", "failed"
        # Sent to a split opened for runs before its judgments: scored when the curators publish them.
        WAITING = "waiting", "waiting for judgments"

    class FailureKind(models.TextChoices):
        NONE = "", "none"
        INPUT = "input", "the file"  # counts against the quota
        SERVICE = "service", "the service"  # does not

    class Visibility(models.TextChoices):
        PUBLIC = "public", "public"
        ANONYMOUS = "anonymous", "public, anonymous"
        PRIVATE = "private", "private"

    class Family(models.TextChoices):
        LEXICAL = "lexical", "lexical"
        DENSE = "dense", "dense"
        SPARSE = "sparse", "learned sparse"
        HYBRID = "hybrid", "hybrid"
        LLM = "llm", "LLM-augmented"
        OTHER = "other", "other"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    split = models.ForeignKey("catalogue.Split", on_delete=models.PROTECT, related_name="submissions")

    # What the participant tells about the system.
    system_name = models.CharField(max_length=120)
    description = models.TextField(blank=True)
    team = models.CharField("team or affiliation", max_length=200, blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    family = models.CharField(max_length=16, choices=Family.choices, default=Family.OTHER)
    # Provenance (submissions/provenance.py): what the system was trained on, its models, what it could have seen.
    training_data = models.CharField("trained on", max_length=16, choices=TrainingData.choices,
                                     default=TrainingData.UNKNOWN)
    training_data_note = models.TextField("training data, in words", max_length=NOTE_MAX_LENGTH, blank=True)
    models_used = models.TextField("models and their licences", max_length=MODELS_MAX_LENGTH, blank=True,
                                   validators=[validate_models_used], help_text=MODELS_FORMAT)
    could_have_seen = models.CharField("could have seen", max_length=16, choices=CouldHaveSeen.choices,
                                       default=CouldHaveSeen.UNKNOWN)
    params = models.CharField("parameters", max_length=50, blank=True, help_text="e.g. 110M")
    latency_ms = models.FloatField("latency per query (ms)", null=True, blank=True)
    llm_calls_per_query = models.FloatField(null=True, blank=True)
    llm_tokens_per_query = models.FloatField(null=True, blank=True)
    hardware = models.CharField(max_length=200, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PUBLIC)
    is_baseline = models.BooleanField(default=False)
    hidden_by_curator = models.BooleanField(default=False)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    # The file, kept whatever happens to the scoring.
    run_file = models.FileField(storage=private_storage, upload_to=run_upload_to, max_length=300)
    # A JSON run's bytes as uploaded ({qid: {docid: score}}, gzipped or not): ``run_file`` holds the TREC run it was
    # converted to on arrival; the double entry reads this one with its own reader (evaluation/reference_json.py).
    json_file = models.FileField(storage=private_storage, upload_to=json_upload_to, max_length=300, blank=True)
    original_name = models.CharField(max_length=300, blank=True)
    file_size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    # Set when the sweep removed the file after the retention period (withdrawn or failed
    # submissions, submissions/services/storage.py); the row, results and history stay.
    file_removed_at = models.DateTimeField(null=True, blank=True)
    # sha256 of the decompressed content, to find the same run sent twice (blank when the
    # file was larger than the upload check's in-request budget).
    content_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # sha256 of a run's lines without their last column (the tag) and with single spaces: the same ranking sent
    # again under another tag (a shared task's run re-sent after the close, #37). Blank as content_sha256 is.
    ranking_sha256 = models.CharField(max_length=64, blank=True, db_index=True)
    # Larger than the upload check's in-request budget: the worker checks the rest of the file.
    checked_in_worker = models.BooleanField(default=False)
    # The Ladder's near-copy rule (submissions.services.ladder): per topic a digest of its top-k documents (or per
    # example its answer), {"key": what they were computed for, "units": {id: digest}}; kept once computed, so
    # the run stays a reference after its file is removed.
    fingerprints = models.JSONField(default=dict, blank=True, editable=False)
    # The same content as another user's public entry: accepted, shown to curators.
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Another user's public entry with identical content, found at upload",
    )
    # Not held to a hidden split's coverage rule (a curator's baseline or a reported
    # system's partial run); shown on the leaderboard.
    coverage_exempt = models.BooleanField(default=False)

    # Fusion of other submissions (the run file is then the fused run).
    fusion_of = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="fused_into")
    fusion_params = models.JSONField(default=dict, blank=True)
    # A corrected file resubmitted for a failed (or any) submission points at the one it replaces.
    replaces = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replaced_by"
    )

    # Shared tasks (campaigns.Phase on the split): the team this run was entered for while the phase
    # was open; ``after_task`` for a run sent after the close (on the living board, never on the private
    # board); ``final_run`` when the team marked it as one of its final runs.
    entrant_team = models.ForeignKey("campaigns.Team", null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="submissions")
    after_task = models.BooleanField("sent after the task", default=False)
    final_run = models.BooleanField("marked final by its team", default=False)

    # The job.
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_kind = models.CharField(max_length=10, choices=FailureKind.choices, default="", blank=True)
    error = models.JSONField(default=dict, blank=True, help_text='{"message": ..., "details": [{"line", "reason"}]}')
    warnings = models.JSONField(default=list, blank=True)
    scores_disagree = models.JSONField(
        null=True, blank=True, default=None,
        help_text="Set when the metric core and the second implementation disagreed: the first differing "
                  "query, measure and both values (curators only)",
    )
    progress = models.FloatField(default=0.0)
    attempts = models.PositiveIntegerField(default=0)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # The worker process (host:pid:start token) that received this queued row's message and has not started it: while it
    # lives it keeps heartbeat_at fresh; once that goes stale the message is sent again (submissions/worker_steps.py).
    held_by = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)
    scoring_started_at = models.DateTimeField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["split", "status"]),
            models.Index(fields=["user", "split", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.system_name} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("participants:detail", args=[self.pk])

    @property
    def file_removed_note(self) -> str:
        """For pages: "file removed after N days" once the sweep removed the file, else ""."""
        if self.file_removed_at is None:
            return ""
        days = settings.LEXBOARD_FILE_RETENTION_DAYS
        return f"file removed after {days} days ({self.file_removed_at:%Y-%m-%d})"

    def clean(self) -> None:
        """Hold the free texts of provenance to their bounds (a TextField's ``max_length`` binds forms only) and
        store ``models_used`` in its one form (one ``id licence`` per line), once its lines read."""
        super().clean()
        too_long = {name: [f"at most {limit} characters (got {len(value)}); shorten it"]
                    for name, limit in (("training_data_note", NOTE_MAX_LENGTH), ("models_used", MODELS_MAX_LENGTH))
                    if len(value := getattr(self, name) or "") > limit}
        if too_long:
            raise ValidationError(too_long)
        try:
            validate_models_used(self.models_used)
        except ValidationError:
            return  # the field's validator reports it, with the lines
        self.models_used = normalize_models(self.models_used)

    # --- provenance -----------------------------------------------------------------

    @property
    def models_list(self) -> list[ModelUsed]:
        return parse_models(self.models_used)

    @property
    def provenance_gaps(self) -> list[Gap]:
        """What the entry's provenance lacks (``submissions.provenance.provenance_gaps``); empty: disclosed."""
        return gaps_of(self)

    @property
    def provenance_missing(self) -> list[str]:
        """The fields whose statement is missing, each once (``["training_data", "models_used"]``)."""
        return list(dict.fromkeys(gap.field for gap in self.provenance_gaps))

    @property
    def disclosed(self) -> bool:
        """Its provenance is complete: the board's "disclosed" mark."""
        return not self.provenance_gaps

    # --- who sees what ------------------------------------------------------------

    @property
    def is_live(self) -> bool:
        """:func:`live_q` for a row already loaded: not withdrawn, not hidden by a curator."""
        return self.withdrawn_at is None and not self.hidden_by_curator

    @property
    def is_public(self) -> bool:
        """Live and shown to everyone (:func:`on_board_q`'s visibility part, for a row already loaded)."""
        return self.is_live and self.visibility in SHOWN_VISIBILITIES

    def manageable_by(self, user) -> bool:
        """The one rule of who may manage a submission and see all of it: its owner, and staff."""
        return bool(user is not None and user.is_authenticated and (user.pk == self.user_id or user.is_staff))

    def visible_to(self, user) -> bool:
        """Public entries of published datasets are for everyone; the rest only for those who may manage them.

        (A curator who unpublishes a dataset takes its entries off the site, not only its pages.)
        """
        return (self.is_public and self.split.dataset.is_published) or self.manageable_by(user)

    def display_owner(self) -> str:
        if self.visibility == self.Visibility.ANONYMOUS:
            return "anonymous"
        if (team := self.entrant_team) is not None:
            return f"team {team.name}"
        profile = getattr(self.user, "profile", None)
        return (profile and profile.display_name) or self.user.get_username()

    # --- the life cycle: each transition is one conditional UPDATE ----------------

    def _transition(self, from_statuses: list[str], *, message: str = "", only_if: dict | None = None,
                    **fields: Any) -> bool:
        """Move this row if, and only if, it is still in one of ``from_statuses``.

        The UPDATE ... WHERE status IN (...) is the lock: of two workers that
        received the same message, exactly one sees "1 row updated".
        """
        fields.setdefault("updated_at", timezone.now())
        updated = Submission.objects.filter(pk=self.pk, status__in=from_statuses, **(only_if or {})).update(**fields)
        if updated:
            for name, value in fields.items():
                if not isinstance(value, models.expressions.Combinable):
                    setattr(self, name, value)
            if "status" in fields:
                StatusEvent.objects.create(submission_id=self.pk, status=fields["status"], message=message[:500])
                long_poll.announce(self.pk, fields["status"])  # answers held on this row look again at the commit
        return bool(updated)

    def claim(self) -> bool:
        """queued → scoring for this worker; False when someone else has it."""
        now = timezone.now()
        ok = self._transition(
            [self.Status.QUEUED],
            status=self.Status.SCORING,
            scoring_started_at=now,
            heartbeat_at=now,
            held_by="",
            progress=0.0,
            attempts=models.F("attempts") + 1,
        )
        if ok:
            self.refresh_from_db(fields=["attempts"])
        return ok

    def take_over(self, *, attempt: int, heartbeat_at: Any) -> bool:
        """scoring → scoring by a new attempt, if the row is still exactly as seen (attempt and heartbeat).

        For a redelivered message whose worker died mid-task: the caller has
        watched the heartbeat stand still, so the attempt that had the row is dead.
        """
        now = timezone.now()
        ok = self._transition(
            [self.Status.SCORING],
            message="its worker was lost mid-task; scored again from the redelivered message",
            only_if={"attempts": attempt, "heartbeat_at": heartbeat_at},
            status=self.Status.SCORING,
            scoring_started_at=now,
            heartbeat_at=now,
            progress=0.0,
            attempts=models.F("attempts") + 1,
        )
        if ok:
            self.refresh_from_db(fields=["attempts"])
        return ok

    def heartbeat(self, progress: float) -> None:
        """Record that the worker scoring this row is alive, and how far it got."""
        Submission.objects.filter(pk=self.pk, status=self.Status.SCORING).update(
            heartbeat_at=timezone.now(), progress=progress
        )

    def requeue(self, message: str = "") -> bool:
        """scoring → queued, e.g. when the worker that had it went silent."""
        return self._transition(
            [self.Status.SCORING],
            message=message,
            status=self.Status.QUEUED,
            progress=0.0,
            heartbeat_at=None,
            enqueued_at=None,
            held_by="",
        )

    def mark_scored(self, *, warnings: list[dict]) -> bool:
        """scoring → scored, with the warnings the core collected."""
        return self._transition(
            [self.Status.SCORING],
            status=self.Status.SCORED,
            warnings=warnings,
            progress=1.0,
            scored_at=timezone.now(),
            failure_kind="",
            error={},
            scores_disagree=None,
        )

    def mark_failed(self, *, kind: str, message: str, details: list[dict] | None = None) -> bool:
        """queued/scoring → failed with a reason a person can act on.

        ``kind`` is ``input`` (the file is wrong; counts against the quota) or
        ``service`` (our fault; does not count).
        """
        return self._transition(
            [self.Status.QUEUED, self.Status.SCORING],
            message=message,
            status=self.Status.FAILED,
            failure_kind=kind,
            error={"message": message, "details": details or []},
        )

    def mark_waiting(self, message: str) -> bool:
        """queued/scoring → waiting: the split has no published judgments yet (``reset_for_rescore`` when it has)."""
        return self._transition(
            [self.Status.QUEUED, self.Status.SCORING],
            message=message,
            status=self.Status.WAITING,
            progress=0.0,
            heartbeat_at=None,
            enqueued_at=None,
        )

    def reset_for_rescore(self) -> bool:
        """scored/failed/waiting → queued, when qrels are published or a curator asks (never once the file is removed)."""
        return self._transition(
            [self.Status.SCORED, self.Status.FAILED, self.Status.WAITING],
            only_if={"file_removed_at__isnull": True},
            status=self.Status.QUEUED,
            progress=0.0,
            failure_kind="",
            error={},
            enqueued_at=None,
            held_by="",
        )

    def checksum_file(self) -> str:
        digest = hashlib.sha256()
        with self.run_file.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        return digest.hexdigest()


#: A submission on its way to a score: a client following it asks again (or waits, ``?wait=``) while it is in one.
NOT_FINAL = (Submission.Status.QUEUED, Submission.Status.SCORING)


class StatusEvent(models.Model):
    """The history of a submission's status, one row per transition."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    status = models.CharField(max_length=10)
    message = models.CharField(max_length=500, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "pk"]


class Result(models.Model):
    """The scores of one submission against one qrels version.

    Unique per (submission, qrels version): scoring twice stores one result.
    ``per_query`` holds the compressed per-query vectors (npz) for statistics
    and breakdowns; it is never served for hidden splits.
    """

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="results")
    qrels_version = models.ForeignKey("catalogue.QrelsVersion", on_delete=models.PROTECT, related_name="results")
    scores = models.JSONField(default=dict)
    primary_score = models.FloatField(null=True, db_index=True)
    n_queries = models.PositiveIntegerField(default=0)
    per_query = models.BinaryField(default=b"")
    warnings = models.JSONField(default=list, blank=True)
    duration_seconds = models.FloatField(default=0.0)
    verified_by = models.JSONField(
        default=dict, blank=True,
        help_text="What the second implementation checked and agreed with: {method: pytrec_eval or plain, measures, "
                  "values_compared, means (every stored mean recomputed), parts (a shared task's parts whose means "
                  "were recomputed), source (trec, json: the uploaded JSON read again, predictions)}; docs/metrics.md. "
                  "Empty on the trace of a rescoring that could not be done, and on classification results stored "
                  "before December 2026; {method} alone (means: false) on results stored before the means were "
                  "checked",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The Ladder (hidden splits, docs/security.md): a result not released shows no number of its own
    # anywhere; its owner reads ``ladder_message``. ``ladder_p`` is for curators only (per-query derived).
    released = models.BooleanField(default=True, db_index=True)
    ladder_message = models.TextField(blank=True)  # the Ladder's and the budget's messages run past 300 characters
    ladder_p = models.FloatField("Ladder p-value (staff only)", null=True, blank=True)
    # The primary measure as a hidden split shows it, computed once when the Ladder judges the result
    # (``submissions.disclosure.release_of``: the stored mean on the grid of this result's N) and read by every
    # surface: the board, exports, API, compare and the Ladder's own comparison show one number, never a mean
    # summed again or put on a grid of another N. Null until judged (then the same function computes it).
    released_score = models.FloatField("released primary value (on the grid)", null=True, blank=True)
    released_step = models.FloatField("grid step of the released value", null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["submission", "qrels_version"], name="result_unique_per_qrels")
        ]

    def __str__(self) -> str:
        return f"result of #{self.submission_id} on qrels v{self.qrels_version_id}"


class ResultPart(models.Model):
    """A result restricted to one part of a shared task's topics: ``public``, ``private`` or ``full``.

    Stored beside the :class:`Result` while a phase partitions the split
    (``campaigns.Phase``): the Result then holds the public part (what every
    page shows), ``private`` feeds the private board at the reveal, and
    ``full`` (all topics) replaces the Result's values at the reveal. Never
    shown on a page: the private board reads its snapshot.
    """

    class Part(models.TextChoices):
        PUBLIC = "public", "public topics"
        PRIVATE = "private", "private topics"
        FULL = "full", "all topics"

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="result_parts")
    qrels_version = models.ForeignKey("catalogue.QrelsVersion", on_delete=models.PROTECT, related_name="+")
    part = models.CharField(max_length=8, choices=Part.choices)
    scores = models.JSONField(default=dict)
    primary_score = models.FloatField(null=True)
    n_queries = models.PositiveIntegerField(default=0)
    per_query = models.BinaryField(default=b"")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["submission", "qrels_version", "part"],
                                               name="result_part_unique")]

    def __str__(self) -> str:
        return f"{self.part} part of #{self.submission_id} on qrels v{self.qrels_version_id}"


class LadderBest(models.Model):
    """A participant's best released result on a split and qrels version: what the Ladder compares with.

    A participant is a user, or a shared task's team (``team``): a team's members climb one Ladder.
    One row per (split, participant, qrels version), locked (``select_for_update``)
    while a result is judged, so two workers scoring the same participant's
    runs at once take turns instead of both comparing with the same best.
    """

    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="ladder_bests")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ladder_bests")
    qrels_version = models.ForeignKey("catalogue.QrelsVersion", on_delete=models.CASCADE, related_name="+")
    result = models.ForeignKey(Result, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    team = models.ForeignKey("campaigns.Team", null=True, blank=True, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["split", "user", "qrels_version"], condition=models.Q(team__isnull=True),
                                    name="ladder_best_unique"),
            models.UniqueConstraint(fields=["split", "team", "qrels_version"], condition=models.Q(team__isnull=False),
                                    name="ladder_best_unique_team"),
        ]

    def __str__(self) -> str:
        return f"best of user {self.user_id} on {self.split_id} (qrels {self.qrels_version_id})"


class UploadSlot(models.Model):
    """One presigned upload address (``submissions/services/presigned.py``): minted for one account and one split
    after the upload checks, used by at most one submission, its object removed once it is used, refused or expired.

    ``state`` moves by conditional UPDATEs only: ``open`` → ``claimed`` (one completion reads the object; a second
    one finds the slot no longer open) → ``used`` or ``refused``; ``open`` → ``expired`` by the sweep. The
    one-to-one ``submission`` is the second guard: a slot never names two submissions.
    """

    class State(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        USED = "used"
        REFUSED = "refused"
        EXPIRED = "expired"

    key = models.CharField(max_length=300, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upload_slots")
    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="upload_slots")
    max_bytes = models.PositiveBigIntegerField(help_text="The largest object the slot's signed policy takes.")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(db_index=True, help_text="The signed policy's expiry: no upload starts after.")
    state = models.CharField(max_length=8, choices=State.choices, default=State.OPEN, db_index=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    submission = models.OneToOneField(Submission, null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="upload_slot")
    message = models.CharField(max_length=500, blank=True, help_text="Why the slot's upload was refused.")
    object_removed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"upload slot {self.key} ({self.state})"

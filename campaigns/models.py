"""Shared tasks: a phase on a hidden split, the teams that enter it, its private board, and e-mail notices.

A :class:`Phase` turns one hidden split into a shared task: dates, caps per
team, a number of final runs, and a seeded partition of the split's topics
into a public part (scored on every page while the phase runs) and a private
part (scored only on the private board revealed at the close). The partition
is fixed once the phase opens and is never shown, not even in the admin
(the admin shows its size only).

Nothing here knows a submission: the submissions app points at teams
(``Submission.entrant_team``) and the boards app writes the private board.
"""

from __future__ import annotations

import random
import secrets
import zoneinfo
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse
from django.utils import timezone

from catalogue.models import Split


def _seed() -> int:
    return secrets.randbelow(2**31)


def _token() -> str:
    return secrets.token_urlsafe(24)


def _zone_names() -> list[tuple[str, str]]:
    return [(name, name) for name in sorted(zoneinfo.available_timezones())]


class Phase(models.Model):
    """A shared task's phase on one hidden split (one phase per split: a later round is a new split)."""

    split = models.OneToOneField("catalogue.Split", on_delete=models.CASCADE, related_name="phase")
    title = models.CharField(max_length=200, help_text="e.g. COLIEE 2027 Task 3")
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    time_zone = models.CharField(max_length=64, default="UTC", choices=_zone_names,
                                 help_text="Dates are shown in this time zone (and in UTC)")
    daily_cap = models.PositiveIntegerField(default=5, help_text="Runs per team in any 24 hours (0 = no limit)")
    total_cap = models.PositiveIntegerField(default=30, help_text="Runs per team over the phase (0 = no limit)")
    # At most 5 (``submissions.services.finals.FINAL_RUNS_CAP``): the board's row is the best of them.
    max_final_runs = models.PositiveIntegerField(default=3, validators=[MinValueValidator(1), MaxValueValidator(5)],
                                                 help_text="Runs a team may mark final, 1 to 5 (the private board "
                                                           "ranks each team by its best final run)")
    public_share = models.FloatField(
        default=0.5, validators=[MinValueValidator(0.05), MaxValueValidator(0.95)],
        help_text="Share of the split's topics scored on the public board during the phase (the rest: the "
                  "private board). Fixed at the opening.")
    seed = models.PositiveIntegerField(default=_seed, help_text="Seed of the partition (fixed at the opening)")
    # The public topics' ids: never shown on the site, nor in the admin (which shows their number).
    public_qids = models.JSONField(default=list, blank=True, editable=False)
    revealed_at = models.DateTimeField(null=True, blank=True, editable=False,
                                       help_text="When the private board was published")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-opens_at"]

    def __str__(self) -> str:
        return f"{self.title} ({self.split})"

    def save(self, *args, **kwargs) -> None:
        """Saved, and the split's cached pages made stale: the dataset page shows the task's timeline.

        A new phase on a split whose scores are not per topic is refused whatever made it (the admin's form says it
        first, through :meth:`clean`; a shell, an import or a service land here): its private board would be empty.
        """
        if self._state.adding and self.split_id and (refusal := self.task_refusal(self.split)):
            raise ValidationError({"split": refusal})
        super().save(*args, **kwargs)
        Split(pk=self.split_id).bump_cache_version()

    def get_absolute_url(self) -> str:
        return reverse("leaderboard:task", args=[self.pk])

    # --- the clock -----------------------------------------------------------------

    def state(self, now: datetime | None = None) -> str:
        """``upcoming`` (before opening), ``open``, ``closed`` (before the reveal) or ``revealed``."""
        now = now or timezone.now()
        if self.revealed_at is not None:
            return "revealed"
        if now < self.opens_at:
            return "upcoming"
        if now < self.closes_at:
            return "open"
        return "closed"

    def is_open(self, now: datetime | None = None) -> bool:
        return self.state(now) == "open"

    @property
    def partition_active(self) -> bool:
        """Scores shown are on the public topics only: from the partition's fixing until the reveal."""
        return self.revealed_at is None and bool(self.public_qids)

    @property
    def zone(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.time_zone or "UTC")

    def local(self, when: datetime) -> datetime:
        return timezone.localtime(when, self.zone)

    def when(self, when: datetime) -> str:
        """A date as the pages and refusals write it: in the phase's zone, and in UTC when that differs."""
        local = self.local(when)
        text = f"{local:%Y-%m-%d %H:%M} {self.time_zone}"
        if self.time_zone != "UTC":
            text += f" ({timezone.localtime(when, zoneinfo.ZoneInfo('UTC')):%Y-%m-%d %H:%M} UTC)"
        return text

    # --- the partition -------------------------------------------------------------

    @staticmethod
    def draw_public(qids: list[str], *, share: float, seed: int) -> list[str]:
        """The public topics: a seeded sample of ``share`` of the sorted ids (at least one on each side)."""
        ordered = sorted(set(qids))
        if len(ordered) < 2:
            return ordered
        k = min(len(ordered) - 1, max(1, round(share * len(ordered))))
        return sorted(random.Random(seed).sample(ordered, k))

    def fix_partition(self, qids: list[str], *, in_use: bool = False) -> None:
        """Draw the public topics from ``qids`` (the split's topics); only before the opening, or once if unset.

        ``in_use``: stored results hold their public part on the drawn topics already (their values were shown
        on it): the draw is kept, opening or not.
        """
        if self.public_qids and (in_use or timezone.now() >= self.opens_at):
            return
        self.public_qids = self.draw_public(qids, share=self.public_share, seed=self.seed)

    def clean(self) -> None:
        errors = {}
        if self.opens_at and self.closes_at and self.closes_at <= self.opens_at:
            errors["closes_at"] = "The close must come after the opening: set a later close date."
        if self.pk and self.public_qids:
            before = Phase.objects.filter(pk=self.pk).values("public_share", "seed", "opens_at").first()
            if before and timezone.now() >= before["opens_at"] and (
                    before["public_share"] != self.public_share or before["seed"] != self.seed):
                errors["public_share"] = ("The partition was fixed at the opening: the public share and the seed "
                                          "cannot change any more (set them back to "
                                          f"{before['public_share']} and {before['seed']}).")
        if self.split_id and not self.split.hidden:
            errors["split"] = "A shared task runs on a hidden split: mark the split hidden first."
        elif self.split_id and (refusal := self.task_refusal(self.split)):
            errors["split"] = refusal
        if errors:
            raise ValidationError(errors)

    @staticmethod
    def task_refusal(split: Split) -> str | None:
        """Why no shared task runs on ``split``'s dataset (None when one may): its scores must be means over topics.

        Macro-F1 (classification, NER) is not a mean over examples: the stored result has no per-example values to
        cut, so no public part could be scored apart from the private one, and the private board at the reveal
        would be empty (#37). The admin's form, :meth:`save` and the reveal say this.
        """
        task = split.dataset.task
        if task == "retrieval":
            return None
        return (f"A shared task's public and private parts need per-topic scores, and {split.dataset.name} is a "
                f"{split.dataset.get_task_display().lower()} dataset scored by macro-F1 over the whole split (no "
                "per-example values to cut into a public and a private part: its private board would be empty). "
                "Choose a split of a retrieval dataset, or run the task as an ordinary hidden split with the Ladder "
                "(classification and NER scores are corpus-level).")

    def closing_soon(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.is_open(now) and self.closes_at - now <= timedelta(hours=24)


class Team(models.Model):
    """A team entering a phase: its members submit on its behalf; quotas, the Ladder and the boards count it once."""

    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=120)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # The invitation link (anyone holding it may join); a new one replaces it.
    invite_token = models.CharField(max_length=64, unique=True, default=_token, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["phase", "name"], name="team_unique_name_per_phase")]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        """Saved, and the split's cached boards made stale: they name the team."""
        super().save(*args, **kwargs)
        Split(pk=self.phase.split_id).bump_cache_version()

    def invite_url(self) -> str:
        return reverse("campaigns:join", args=[self.invite_token])


class Membership(models.Model):
    """A user in a team. ``phase`` repeats the team's so the database holds "one team per user per task"."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    phase = models.ForeignKey(Phase, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["joined_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["phase", "user"], name="one_team_per_user_per_phase")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team}"


class Invitation(models.Model):
    """An invitation by e-mail: accepted by the account holding that verified address (allauth's)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    token = models.CharField(max_length=64, unique=True, default=_token, editable=False)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.email} to {self.team}"

    def get_absolute_url(self) -> str:
        return reverse("campaigns:invitation", args=[self.token])


class PrivateBoard(models.Model):
    """The private board of a phase, published once at the reveal: a dated snapshot.

    ``rows`` hold everything shown (team, system, rounded scores on the private
    topics, tier and markers), so later qrels versions never change it.
    """

    phase = models.OneToOneField(Phase, on_delete=models.PROTECT, related_name="private_board")
    published_at = models.DateTimeField()
    qrels_version = models.PositiveIntegerField(help_text="The qrels version the board was scored on")
    measure = models.CharField(max_length=40)
    measures = models.JSONField(default=list)
    n_queries = models.PositiveIntegerField(default=0)
    rows = models.JSONField(default=list)
    method = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"private board of {self.phase} ({self.published_at:%Y-%m-%d})"


class NotificationSetting(models.Model):
    """A user's choice about e-mails from shared tasks (on unless turned off)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_setting")
    emails = models.BooleanField("send me e-mails about my runs, teams and tasks", default=True)

    def __str__(self) -> str:
        return f"{self.user}: {'on' if self.emails else 'off'}"


class SentNotification(models.Model):
    """One e-mail, by a key that says what it is about: the unique key makes "never twice" a database rule.

    Created in the transaction of the event, sent by a task after the commit;
    ``sent_at`` is set in the transaction that holds the row's lock while the
    message goes out, so a retried or duplicated task finds it sent.
    """

    key = models.CharField(max_length=200, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+")
    email = models.EmailField(blank=True, help_text="For invitations to an address with no account yet")
    kind = models.CharField(max_length=40)
    context = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    skipped = models.CharField(max_length=100, blank=True, help_text="Why it was not sent (opted out, no address)")
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.key

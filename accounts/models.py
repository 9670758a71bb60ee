"""Accounts' own rows: profiles (how the leaderboard names a person), API tokens, participant approvals.

Profiles and API tokens were the submissions app's; they keep their tables
(``submissions_profile``, ``submissions_apitoken``) so moving them changed no row.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    display_name = models.CharField(max_length=100, blank=True)
    affiliation = models.CharField(max_length=200, blank=True)

    class Meta:
        db_table = "submissions_profile"

    def __str__(self) -> str:
        return self.display_name or self.user.get_username()


#: How fresh a token's ``last_used_at`` is kept (the profile page shows it to the minute).
LAST_USED_RESOLUTION = timedelta(minutes=1)


class ApiToken(models.Model):
    """A token for scripts. Only a hash is stored; the key is shown once at creation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="token")
    prefix = models.CharField(max_length=12, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "submissions_apitoken"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash_key(key: str) -> str:
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, *, user, name: str = "token") -> tuple[ApiToken, str]:
        """Create a token and return it with its key, which is not stored."""
        key = "lxb_" + secrets.token_urlsafe(30)
        token = cls.objects.create(user=user, name=name, prefix=key[:12], key_hash=cls.hash_key(key))
        return token, key

    @classmethod
    def authenticate(cls, key: str) -> ApiToken | None:
        """The live token whose key this is, its ``last_used_at`` brought up to date to the minute: written only
        when a minute has passed since (a client asking every second wrote a row each time, before its own
        request's queries)."""
        token = cls.objects.select_related("user").filter(key_hash=cls.hash_key(key), revoked_at=None).first()
        if token is None or not token.user.is_active:
            return None
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            cls.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token


class ParticipantApproval(models.Model):
    """A participant's request to upload to a split that needs approval, and the curator's answer.

    With ``split`` empty the approval covers every split of the dataset. A
    request is made by the participant (``approved_at`` empty: waiting) and
    approved by a curator in the admin; revoking the approval stops further
    uploads, never removes what was uploaded.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approvals")
    dataset = models.ForeignKey("catalogue.Dataset", on_delete=models.CASCADE, related_name="approvals")
    split = models.ForeignKey(
        "catalogue.Split", null=True, blank=True, on_delete=models.CASCADE, related_name="approvals",
        help_text="Empty: every split of the dataset.",
    )
    message = models.TextField(blank=True, help_text="What the participant says about themselves and their system.")
    requested_at = models.DateTimeField(default=timezone.now)
    approved_at = models.DateTimeField(null=True, blank=True)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-requested_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "dataset"], condition=Q(split__isnull=True), name="approval_unique_dataset"
            ),
            models.UniqueConstraint(
                fields=["user", "split"], condition=Q(split__isnull=False), name="approval_unique_split"
            ),
        ]

    def __str__(self) -> str:
        where = self.split or self.dataset
        return f"{self.user} → {where} ({'approved' if self.approved else 'waiting'})"

    @property
    def approved(self) -> bool:
        return self.approved_at is not None

    @classmethod
    def for_split(cls, *, user, split) -> ParticipantApproval | None:
        """The record that decides for ``user`` on ``split``: an approved one first, else the pending request."""
        rows = cls.objects.filter(user=user, dataset_id=split.dataset_id).filter(
            Q(split=split) | Q(split__isnull=True)
        )
        return rows.order_by(models.F("approved_at").desc(nulls_last=True), "-requested_at").first()


class TermsAcceptance(models.Model):
    """That an account accepted one version of a dataset's terms, and when: the record curators export.

    Kept as it was written: the account's name and e-mail address and the team it acted for are copied at the
    time (an account renamed or deleted later leaves the record readable), and the terms version is protected.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                             related_name="terms_acceptances")
    terms = models.ForeignKey("catalogue.DataTerms", on_delete=models.PROTECT, related_name="acceptances")
    dataset = models.ForeignKey("catalogue.Dataset", on_delete=models.PROTECT, related_name="+")
    version = models.PositiveIntegerField()
    username = models.CharField(max_length=150)
    email = models.CharField(max_length=254, blank=True)
    team = models.CharField(max_length=200, blank=True,
                            help_text="The shared task's team the account acted for when it accepted, if any.")
    accepted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-accepted_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "terms"], condition=Q(user__isnull=False),
                                    name="terms_accepted_once"),
        ]

    def __str__(self) -> str:
        return f"{self.username} accepted terms v{self.version} on {self.accepted_at:%Y-%m-%d}"

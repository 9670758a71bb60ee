"""Who may take part where: a curator's approval of a participant, for a dataset or one split."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class ParticipantApproval(models.Model):
    """A participant's request to upload to a split that needs approval, and the curator's answer.

    With ``split`` empty the approval covers every split of the dataset. A
    request is made by the participant (``approved_at`` empty: waiting) and
    approved by a curator in the admin; revoking the approval stops further
    uploads, never removes what was uploaded.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="approvals")
    dataset = models.ForeignKey("leaderboard.Dataset", on_delete=models.CASCADE, related_name="approvals")
    split = models.ForeignKey(
        "leaderboard.Split", null=True, blank=True, on_delete=models.CASCADE, related_name="approvals",
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

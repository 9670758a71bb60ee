"""The release ledger of hidden splits: what was released, to whom, when, and how many bits at most.

Rows are written by ``submissions.services.ledger`` in the transaction that
releases a result (``ladder_judge``), so the ledger and the releases never
disagree. Curators read it in the admin and on the ledger page
(``/submissions/ledger/<split id>/``); participants never see it.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

#: How the owner's message of a run held by the budget of first releases starts (services/ledger.py).
WAITING_FOR_BUDGET = "Waiting for tomorrow's release budget"
#: What others read about such a run (its owner's message names the split's budget).
WAITING_NOTE = ("Waiting for tomorrow's release budget: this hidden split releases the first runs of a few new "
                "participants a day; released the next day, or by a curator, if it is still an improvement.")


class ReleasePolicy(models.Model):
    """A hidden split's own alert rates and first-release budget; an empty field means the site's setting."""

    split = models.OneToOneField("catalogue.Split", on_delete=models.CASCADE, related_name="release_policy")
    identity_bits_per_day = models.FloatField(
        null=True, blank=True, help_text="Alert when one participant or team is released more bits than this in a "
                                         "day (empty: LEXBOARD_LEDGER_IDENTITY_BITS).")
    split_bits_per_day = models.FloatField(
        null=True, blank=True, help_text="Alert when the split releases more bits than this in a day "
                                         "(empty: LEXBOARD_LEDGER_SPLIT_BITS).")
    first_releases_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="First releases of new participants or teams a day; the others wait for "
                                         "the next day or a curator (empty: LEXBOARD_FIRST_RELEASE_BUDGET; "
                                         "0: no budget).")

    class Meta:
        verbose_name_plural = "release policies"

    def __str__(self) -> str:
        return f"release policy of {self.split}"


class Release(models.Model):
    """One result released on a hidden split: the ledger's line.

    ``bits`` bounds what the release told: log2 of the number of values each
    released measure could take on its grid (``disclosure.step_for`` of the
    result's evaluated topics), summed over the released measures.
    """

    class Kind(models.TextChoices):
        RELEASE = "release", "a result released by the Ladder"
        REVEAL = "reveal", "a team's row on a shared task's private board (its private part, at the reveal)"

    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="releases")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.RELEASE, db_index=True)
    # What was released stays in the ledger when a curator deletes the submission: the numbers were out.
    result = models.OneToOneField("submissions.Result", null=True, on_delete=models.SET_NULL,
                                  related_name="ledger_entry")
    submission = models.ForeignKey("submissions.Submission", null=True, on_delete=models.SET_NULL, related_name="+")
    identity = models.CharField(max_length=40, db_index=True, help_text="user:<id> or team:<id>")
    identity_label = models.CharField(max_length=200)
    released_at = models.DateTimeField(default=timezone.now, db_index=True)
    day = models.DateField(db_index=True)
    first = models.BooleanField(default=False, help_text="The identity's first release on this split.")
    measures = models.JSONField(default=list)
    bits = models.FloatField()
    crafted = models.JSONField(default=list, blank=True, help_text="Why the run's shape looks crafted (for review).")
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-released_at"]

    def __str__(self) -> str:
        return f"{self.identity_label}: #{self.submission_id} on {self.split} ({self.bits:.1f} bits)"


class Verdict(models.Model):
    """One answer of the Ladder on a hidden split: released, not released, or no verdict (a near-copy).

    A "not released" is an answer too: a crafted run whose verdict turns on one judgment reads that judgment
    from a "no" as well as from a "yes". ``mechanism`` names how the verdict was drawn
    (``evaluation.noisy_margin.MECHANISM``: the noisy margin; blank for a near-copy, which the runs alone decide,
    and for rows written before it). ``epsilon``: one judgment that turns a unit from unchanged to changed (or back)
    moves this verdict's probability by at most a factor e^epsilon, epsilon = (1 + Δmargin)/b at the run's count of
    changed units (Δmargin ≤ 1, the margin's step there; from worse to better, 2/b). ``bits``
    bounds what the answer told about any one judgment beyond the runs themselves
    (``evaluation.noisy_margin.verdict_bits``: 0.47 at epsilon 1/2, 1 at epsilon 1; 1 for an exact verdict; 0 for a
    near-copy); the released value's own bits are its ``Release`` row's. ``net``, ``noise`` and ``margin`` are
    the margin's pass, for curators only (with a verdict, the noise would give ``net``, a function of judgments).
    """

    class Outcome(models.TextChoices):
        RELEASED = "released", "released"
        NOT_RELEASED = "not_released", "not released"
        NEAR_COPY = "near_copy", "no verdict (near-copy)"

    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="verdicts")
    result = models.OneToOneField("submissions.Result", null=True, on_delete=models.SET_NULL,
                                  related_name="ledger_verdict")
    submission = models.ForeignKey("submissions.Submission", null=True, on_delete=models.SET_NULL, related_name="+")
    identity = models.CharField(max_length=40, db_index=True, help_text="user:<id> or team:<id>")
    identity_label = models.CharField(max_length=200)
    answered_at = models.DateTimeField(default=timezone.now, db_index=True)
    day = models.DateField(db_index=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    bits = models.FloatField()
    mechanism = models.CharField(max_length=40, blank=True, default="")
    epsilon = models.FloatField(null=True, blank=True)
    net = models.IntegerField(null=True, blank=True, help_text="Topics (examples) improved minus worsened.")
    noise = models.FloatField(null=True, blank=True)
    margin = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-answered_at"]

    def __str__(self) -> str:
        return f"{self.identity_label}: #{self.submission_id} on {self.split}: {self.outcome} ({self.bits:g} bit)"


class ReleaseWait(models.Model):
    """A result the Ladder admitted that waits for the split's daily budget of first releases (or a curator)."""

    result = models.OneToOneField("submissions.Result", on_delete=models.CASCADE, related_name="release_wait")
    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="release_waits")
    identity = models.CharField(max_length=40)
    since = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["since", "pk"]

    def __str__(self) -> str:
        return f"result {self.result_id} of {self.identity} waiting since {self.since:%Y-%m-%d %H:%M}"


class LedgerAlert(models.Model):
    """An identity, or the whole split, passed its daily rate of released bits; curators were e-mailed."""

    class Scope(models.TextChoices):
        IDENTITY = "identity", "one participant or team"
        SPLIT = "split", "the whole split"

    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="ledger_alerts")
    scope = models.CharField(max_length=10, choices=Scope.choices)
    identity = models.CharField(max_length=40, blank=True)
    identity_label = models.CharField(max_length=200, blank=True)
    day = models.DateField()
    bits = models.FloatField()
    limit = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["split", "scope", "identity", "day"],
                                               name="ledger_alert_once_a_day")]

    def __str__(self) -> str:
        who = self.identity_label or "the split"
        return f"{who} passed {self.limit:g} bits on {self.day} ({self.bits:.1f}) on {self.split}"

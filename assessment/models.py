"""Pools of documents to judge, who judges what, and every judgment ever made.

A ``Pool`` is built once from a split's scored runs (``services.pool_build``)
and holds its ``PoolItem`` rows, one per (query, document) to judge, with the
document's text copied from the corpus so the assessor's page never reads the
whole corpus. ``Assignment`` gives an assessor a set of items; an item in two
assignments is judged twice (the agreement sample). ``Judgment`` rows are never
updated in place or deleted: a new grade, an undo or an adjudication adds a row
and points the old one at it (``superseded_by``), so the history of who graded
what, when and in how many seconds is the table itself.

Assessors are the users of the Django group ``assessors`` (created by the
migration); staff see everything an assessor sees, and more.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse

#: The group whose members may judge (curators add people to it in the admin).
ASSESSORS_GROUP = "assessors"
#: The grade scale offered to assessors: 0 not relevant … 3 highly relevant (keys 0–3 on the page).
GRADES = (0, 1, 2, 3)
GRADE_LABELS = {0: "not relevant", 1: "related", 2: "relevant", 3: "highly relevant"}


def is_assessor(user) -> bool:
    """Whether ``user`` may open the assessment pages: staff, or a member of the assessors group."""
    if not getattr(user, "is_authenticated", False):
        return False
    return bool(user.is_staff or user.groups.filter(name=ASSESSORS_GROUP).exists())


class Pool(models.Model):
    """Documents of one split chosen for judging, by depth-k or the RBP-weighted method, with its statistics."""

    class Method(models.TextChoices):
        DEPTH = "depth", "depth-k (union of every run's top k)"
        RBP = "rbp", "RBP-weighted, budget per query (Moffat, Webber & Zobel 2007)"
        MTF = "mtf", "move-to-front, adaptive, budget per query (Cormack, Palmer & Clarke 1998)"

    split = models.ForeignKey("catalogue.Split", on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=120)
    method = models.CharField(max_length=8, choices=Method.choices, default=Method.DEPTH)
    # {"k": 10} for depth-k; {"budget": 20, "p": 0.8, "depth": 100} for RBP; {"budget": 20, "depth": 100} for MTF.
    params = models.JSONField(default=dict, blank=True)
    # MTF only: each run's docids per query within the depth, {run: {qid: [docid, ...]}}, so that the next
    # document can be chosen after every judgment without reading the runs again.
    tops = models.JSONField(default=dict, blank=True, editable=False)
    runs = models.ManyToManyField("submissions.Submission", blank=True, related_name="pools",
                                  help_text="The runs pooled; empty when built from every scored run of the split.")
    base_qrels = models.ForeignKey("catalogue.QrelsVersion", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", help_text="The judgments the pool was built against.")
    overlap_share = models.FloatField(default=0.0, help_text="Share of the items judged by two assessors.")
    seconds_per_judgment = models.FloatField(default=30.0)
    statistics = models.JSONField(default=dict, blank=True)
    qrels_version = models.ForeignKey("catalogue.QrelsVersion", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+", help_text="The qrels version made from this pool.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.split})"

    def get_absolute_url(self) -> str:
        return reverse("assessment:pool", args=[self.pk])

    @property
    def describe(self) -> str:
        """The method and its parameters, for people: "depth-10", "RBP (p = 0.8), 20 per query, depth 100"."""
        p = self.params
        if self.method == self.Method.DEPTH:
            return f"depth-{p.get('k')}"
        prefix = f"RBP (p = {p.get('p')})" if self.method == self.Method.RBP else "move-to-front"
        return f"{prefix}, up to {p.get('budget')} per query, runs read to depth {p.get('depth')}"

    @property
    def depth(self) -> int:
        """How deep each run was read."""
        return int(self.params.get("k") or self.params.get("depth") or 0)


class PoolItem(models.Model):
    """One (query, document) to judge, in the method's order, with why it is in the pool."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="items")
    qid = models.CharField(max_length=100)
    docid = models.CharField(max_length=200)
    position = models.PositiveIntegerField(help_text="Place in the query's judging order (1 = first).")
    priority = models.FloatField()
    # {run name: rank} of the runs that retrieved the document within the pool's depth.
    ranks = models.JSONField(default=dict)
    doc_title = models.CharField(max_length=500, blank=True)
    doc_text = models.TextField(blank=True)

    class Meta:
        ordering = ["pool", "qid", "position"]
        constraints = [models.UniqueConstraint(fields=["pool", "qid", "docid"], name="poolitem_unique_pair")]

    def __str__(self) -> str:
        return f"{self.qid} {self.docid}"

    @property
    def reason(self) -> str:
        """Why the document is in the pool, for people: its best rank and the runs that retrieved it."""
        if not self.ranks:
            return ""
        best = min(self.ranks.values())
        n = len(self.ranks)
        return f"best rank {best}, retrieved by {n} run{'s' if n != 1 else ''}"


class Assignment(models.Model):
    """The items one assessor judges in one pool."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="assignments")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    items = models.ManyToManyField(PoolItem, related_name="assignments")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool", "assessor"]
        constraints = [models.UniqueConstraint(fields=["pool", "assessor"], name="assignment_unique_assessor")]

    def __str__(self) -> str:
        return f"{self.assessor} on {self.pool}"

    def get_absolute_url(self) -> str:
        return reverse("assessment:assignment", args=[self.pk])


class Judgment(models.Model):
    """A grade given to a pool item by one person; never changed, only superseded.

    ``grade`` None records an undo that left the item without a grade. An
    adjudication (a curator settling a disagreement) is the grade used for the
    item whatever the assessors said.
    """

    class Kind(models.TextChoices):
        ASSESSMENT = "assessment", "assessment"
        ADJUDICATION = "adjudication", "adjudication"
        IMPORT = "import", "imported from a file"

    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="judgments")
    assessor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    grade = models.SmallIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.ASSESSMENT)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    seconds_taken = models.FloatField(null=True, blank=True)
    superseded_by = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL,
                                         related_name="supersedes")
    # Set on the row an undo adds: the judgment it took back (whose predecessor's grade it restores).
    undoes = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="undone_by")

    class Meta:
        ordering = ["created_at", "pk"]
        # One standing judgment (superseded_by null) per person, kind and item: the services lock the
        # item row while they add one and point the previous one at it.
        indexes = [models.Index(fields=["item", "assessor"])]

    def __str__(self) -> str:
        return f"{self.item}: {self.grade} by {self.assessor}"

"""A snapshot: one board's state at one moment, kept unchanged so a paper can cite it.

A snapshot holds what the board showed, not what the database knew: the
public rows of the split's leaderboard as :func:`leaderboard.selectors.leaderboard_rows`
gave them to an anonymous visitor, with each value both as the fraction the
JSON export released and as the text the page printed (a hidden split's
grid). Nothing is recomputed when it is read, so later judgments, a changed
grid or a withdrawn entry never change it; :mod:`snapshots.diff` says how the
living board differs.

Immutable once made: :meth:`Snapshot.save` and :meth:`Snapshot.delete` refuse
an existing row, the manager's ``update``/``delete``/``bulk_update`` refuse,
the split and its versions are protected from deletion, and the database
itself refuses an UPDATE (a trigger, migration 0002): the one way to change a
snapshot is to break the database by hand, and the stored ``digest`` of its
content shows that too.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from django.db import models
from django.urls import reverse


class SnapshotImmutable(Exception):
    """Something tried to change or delete a snapshot that exists."""

    def __init__(self, what: str = "changed") -> None:
        super().__init__(f"A snapshot cannot be {what} once it is made: a paper may cite it.")


class SnapshotQuerySet(models.QuerySet):
    """Reads and creation only: the bulk writes that bypass ``save`` and ``delete`` refuse."""

    def update(self, **kwargs: Any) -> int:
        raise SnapshotImmutable("changed")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise SnapshotImmutable("deleted")

    def bulk_update(self, objs: Any, fields: Any, batch_size: int | None = None) -> int:
        raise SnapshotImmutable("changed")

    def update_or_create(self, *args: Any, **kwargs: Any) -> Any:
        raise SnapshotImmutable("changed")


class Snapshot(models.Model):
    """One board (a split's leaderboard) as it stood at ``taken_at``."""

    class Reason(models.TextChoices):
        CURATOR = "curator", "made by a curator"
        QRELS = "qrels", "new judgments published"
        REVEAL = "reveal", "a shared task's private board revealed"

    # Permanent: "bsard-test-2027-03-01" (a second one that day: "-2"). Kept across an archive's import,
    # so a citation's path is the same on any host that holds the benchmark.
    key = models.SlugField(max_length=120, unique=True)
    split = models.ForeignKey("catalogue.Split", on_delete=models.PROTECT, related_name="snapshots")
    taken_at = models.DateTimeField()
    reason = models.CharField(max_length=8, choices=Reason.choices)
    note = models.TextField(blank=True)
    made_by = models.CharField(max_length=150, blank=True, help_text="The curator's user name; blank when automatic")

    # The names as they were (a dataset renamed later still reads as cited).
    title = models.CharField(max_length=300, help_text='"Lexboard, BSARD test board, snapshot 2027-03-01"')
    benchmark_name = models.CharField(max_length=200)
    dataset_slug = models.SlugField(max_length=100)
    dataset_name = models.CharField(max_length=200)
    split_name = models.CharField(max_length=32)
    hidden = models.BooleanField(help_text="The split hid its labels: values are the released ones, on its grid")

    qrels_version = models.PositiveIntegerField(null=True)
    qrels_created_at = models.DateTimeField(null=True)
    # Public splits only: the checksum of the judgments' text (a hidden split's board does not show it).
    qrels_sha256 = models.CharField(max_length=64, blank=True)
    core_version = models.CharField(max_length=80, help_text="The metric core (evaluation/) that scored the board")

    measures = models.JSONField(default=list)
    primary_measure = models.CharField(max_length=40)
    ranked_by = models.CharField(max_length=40)
    grid = models.FloatField(null=True, help_text="A hidden split's step (a fraction); null on public splits")
    grid_note = models.CharField(max_length=100, blank=True)
    scores_are = models.CharField(max_length=300)
    rows = models.JSONField(default=list)
    digest = models.CharField(max_length=64, help_text="sha256 of the canonical JSON of everything above")

    objects: ClassVar[models.Manager[Snapshot]] = SnapshotQuerySet.as_manager()

    class Meta:
        ordering = ["-taken_at", "-pk"]
        indexes = [models.Index(fields=["split", "-taken_at"])]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("snapshots:detail", args=[self.key])

    # --- immutability -----------------------------------------------------------------------------

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Insert once; any later save refuses (a citation must keep pointing at the same table)."""
        if not self._state.adding or kwargs.get("force_update") or kwargs.get("update_fields"):
            raise SnapshotImmutable("changed")
        if not self.digest:
            self.digest = self.content_digest()
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise SnapshotImmutable("deleted")

    # --- content ----------------------------------------------------------------------------------

    CONTENT_FIELDS: ClassVar[tuple[str, ...]] = (
        "key", "taken_at", "reason", "note", "made_by", "title", "benchmark_name", "dataset_slug", "dataset_name",
        "split_name", "hidden", "qrels_version", "qrels_created_at", "qrels_sha256", "core_version", "measures",
        "primary_measure", "ranked_by", "grid", "grid_note", "scores_are", "rows",
    )

    def content(self) -> dict[str, Any]:
        """Everything the snapshot states, JSON-ready (the JSON export and the digest read this)."""
        out: dict[str, Any] = {}
        for name in self.CONTENT_FIELDS:
            value = getattr(self, name)
            out[name] = value.isoformat() if hasattr(value, "isoformat") else value
        return out

    def content_digest(self) -> str:
        """sha256 of :meth:`content` as canonical JSON: a reader can check a copy against the page's digest."""
        text = json.dumps(self.content(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def intact(self) -> bool:
        """The stored content still gives the stored digest."""
        return self.content_digest() == self.digest


class SnapshotEntryMap(models.Model):
    """Where the entries a snapshot cites live on this host, for a snapshot brought by an archive.

    A snapshot's rows keep the submission ids of the host that took it (its content and digest never change);
    after a move those entries have other ids here. ``ids`` maps each cited id (as a string) to this host's
    submission, so the snapshot's links and its diff with the living board find the same entries.
    """

    snapshot = models.OneToOneField(Snapshot, on_delete=models.PROTECT, related_name="entry_map")
    ids = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"entries of {self.snapshot_id}"


def entry_ids(snapshot: Snapshot) -> dict[int, int]:
    """The cited submission id → this host's submission id (identity for a snapshot taken here)."""
    found = SnapshotEntryMap.objects.filter(snapshot_id=snapshot.pk).values_list("ids", flat=True).first()
    return {int(k): int(v) for k, v in (found or {}).items()}


class ArchiveImport(models.Model):
    """One archive imported here: its manifest, and what it lacked (hidden material left out, missing files)."""

    imported_at = models.DateTimeField(auto_now_add=True)
    archive_sha256 = models.CharField(max_length=64, db_index=True)
    manifest = models.JSONField(default=dict)
    datasets = models.ManyToManyField("catalogue.Dataset", related_name="+")
    # {"hidden": "omitted", "qrels_versions": [ids with no judgments], "results": [ids with no scores], ...}
    missing = models.JSONField(default=dict, blank=True)
    imported_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-imported_at"]

    def __str__(self) -> str:
        return f"{self.manifest.get('benchmark', {}).get('slug', '?')} imported {self.imported_at:%Y-%m-%d}"

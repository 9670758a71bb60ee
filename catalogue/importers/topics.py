"""Storing a release's topics in a split: what changes, what is kept, and the words that say so.

A topics file is the curator's word on what it holds, and only on that: a
field the file leaves empty (no category column, as the TREC topics the site
and the demo export; a query without BEIR metadata) keeps the value the topic
has, so importing those files with new judgments never empties the categories
the per-category breakdowns are drawn from. A topic the files lack is kept.

With ``keep_existing`` (the demo, loaded again at every start) only missing
topics are created: a topic already in the split is never rewritten, whether a
curator edited it or not; the rows that differ from the files are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lexboard.text import count, plural

from ..models import Split, Topic
from .base import TopicRow

#: The fields of a topic a file may set, in the order the report names them.
FIELDS = ("text", "category", "subcategory", "extra")
#: Fields a file may leave empty without clearing them (the text is always given).
KEPT_WHEN_EMPTY = ("category", "subcategory", "extra")
#: How the report names them.
LABELS = {"text": "text", "category": "category", "subcategory": "subcategory", "extra": "extra fields"}


@dataclass
class TopicChanges:
    """What storing a file's topics did to a split's rows (counts; query ids only as examples, by the caller)."""

    created: int = 0
    updated: int = 0
    kept: int = 0  # in the split, not in the files
    changed_fields: dict[str, int] = field(default_factory=dict)  # field → topics whose value the files changed
    kept_fields: dict[str, int] = field(default_factory=dict)  # field → topics whose value the files left empty
    differing: int = 0  # keep_existing: topics that differ from the files, left as they are

    def notes(self, *, thing: str = "topic", things: str = "topics") -> list[str]:
        """Sentences for the report: which fields the files changed, which they kept (none when nothing)."""
        out = []
        if self.changed_fields:
            parts = [f"{LABELS[name]} of {count(n, thing, things)}" for name, n in self.changed_fields.items()]
            out.append(f"{things} changed from these files: " + ", ".join(parts))
        if self.kept_fields:
            parts = [f"{LABELS[name]} of {count(n, thing, things)}" for name, n in self.kept_fields.items()]
            out.append(f"{things} kept where these files have none: " + ", ".join(parts))
        if self.differing:
            out.append(
                f"{count(self.differing, thing, things)} already in the split "
                f"{plural(self.differing, 'differs', 'differ')} from these files and "
                f"{plural(self.differing, 'was', 'were')} left as {plural(self.differing, 'it is', 'they are')} "
                "(existing rows are never rewritten here: edit them in the admin)"
            )
        return out


def _empty(value) -> bool:
    return value in ("", None, {}, [])


def topics_store(*, split: Split, rows: list[TopicRow], keep_existing: bool = False) -> TopicChanges:
    """Insert the files' new topics and update changed ones, keeping what the files leave empty."""
    existing = {t.qid: t for t in Topic.objects.filter(split=split)}
    changes = TopicChanges()
    new: list[Topic] = []
    updated: list[Topic] = []
    for row in rows:
        topic = existing.get(row.qid)
        if topic is None:
            new.append(Topic(split=split, qid=row.qid, text=row.text, category=row.category,
                             subcategory=row.subcategory, extra=row.extra))
            continue
        wanted = {}
        for name in FIELDS:
            value, had = getattr(row, name), getattr(topic, name)
            if name in KEPT_WHEN_EMPTY and _empty(value):
                if not _empty(had):
                    changes.kept_fields[name] = changes.kept_fields.get(name, 0) + 1
                continue
            if value != had:
                wanted[name] = value
        if not wanted:
            continue
        if keep_existing:
            changes.differing += 1
            continue
        for name, value in wanted.items():
            setattr(topic, name, value)
            changes.changed_fields[name] = changes.changed_fields.get(name, 0) + 1
        updated.append(topic)
    if keep_existing:
        changes.kept_fields = {}  # nothing of an existing row was looked at for writing
    Topic.objects.bulk_create(new, batch_size=500)
    Topic.objects.bulk_update(updated, list(FIELDS), batch_size=500)
    changes.created, changes.updated = len(new), len(updated)
    changes.kept = len(set(existing) - {r.qid for r in rows})
    changes.changed_fields = {n: changes.changed_fields[n] for n in FIELDS if n in changes.changed_fields}
    changes.kept_fields = {n: changes.kept_fields[n] for n in FIELDS if n in changes.kept_fields}
    return changes

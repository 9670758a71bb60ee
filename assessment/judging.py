"""An assessor at work: grading an item, undoing, moving through an assignment, and the progress made.

Every action adds a ``Judgment`` row (never an update of a grade): a new
grade supersedes the assessor's standing one; an undo adds a row that takes
the last action back, restoring the grade before it (or none). The item row is
locked while the standing judgment changes, so two tabs of one assessor cannot
leave two standing grades.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.core import signing
from django.db import transaction

from .errors import AssessmentError
from .models import GRADES, Assignment, Judgment, Pool, PoolItem
from .pools import pool_advance

#: A page left open longer than this says nothing about how long judging took.
MAX_SECONDS = 3600.0
_SHOWN_SALT = "assessment.shown"
OWN_KINDS = (Judgment.Kind.ASSESSMENT, Judgment.Kind.IMPORT)


def shown_token() -> str:
    """A signed timestamp put in the page's form: the server measures how long the item was open."""
    return signing.dumps(time.time(), salt=_SHOWN_SALT)


def seconds_since(token: str | None) -> float | None:
    """Seconds since ``shown_token()`` made ``token``; None when it is missing, forged or absurd."""
    if not token:
        return None
    try:
        shown = float(signing.loads(token, salt=_SHOWN_SALT))
    except (signing.BadSignature, TypeError, ValueError):
        return None
    elapsed = time.time() - shown
    return round(elapsed, 3) if 0 <= elapsed <= MAX_SECONDS else None


def assignment_items(assignment: Assignment) -> list[PoolItem]:
    """The assignment's items in judging order: query by query, each in the pool's order."""
    return list(assignment.items.order_by("qid", "position", "pk"))


def standing(*, item: PoolItem, assessor) -> Judgment | None:
    """The assessor's standing judgment of ``item`` (its grade may be None after an undo)."""
    return (Judgment.objects.filter(item=item, assessor=assessor, kind__in=OWN_KINDS, superseded_by__isnull=True)
            .order_by("-created_at", "-pk").first())


def grades_of(assignment: Assignment) -> dict[int, int]:
    """item id → the assessor's standing grade, for the items of the assignment that have one."""
    rows = Judgment.objects.filter(item__assignments=assignment, assessor=assignment.assessor, kind__in=OWN_KINDS,
                                   superseded_by__isnull=True, grade__isnull=False)
    return {item_id: grade for item_id, grade in rows.values_list("item_id", "grade") if grade is not None}


def _supersede(item: PoolItem, assessor, new: Judgment) -> None:
    old = (Judgment.objects.filter(item=item, assessor=assessor, kind__in=OWN_KINDS, superseded_by__isnull=True)
           .exclude(pk=new.pk))
    old.update(superseded_by=new)


@transaction.atomic
def judgment_record(*, assignment: Assignment, item: PoolItem, grade: int, seconds: float | None = None,
                    kind: str = Judgment.Kind.ASSESSMENT) -> Judgment:
    """The assessor of ``assignment`` grades ``item``; the previous grade (if any) is superseded, not lost."""
    if grade not in GRADES:
        raise AssessmentError(f"the grade {grade} is not on the scale; use {GRADES[0]}–{GRADES[-1]}")
    if not assignment.items.filter(pk=item.pk).exists():
        raise AssessmentError("this document is not in your assignment")
    PoolItem.objects.select_for_update(no_key=True).filter(pk=item.pk).first()
    new = Judgment.objects.create(item=item, assessor=assignment.assessor, grade=grade, kind=kind,
                                  seconds_taken=seconds)
    _supersede(item, assignment.assessor, new)
    pool_advance(pool=assignment.pool, qid=item.qid)  # MTF: the query's next document
    return new


def last_action(assignment: Assignment) -> Judgment | None:
    """The assessor's latest judgment in the assignment that is neither an undo nor undone: what undo takes back."""
    return (Judgment.objects.filter(item__assignments=assignment, assessor=assignment.assessor, kind__in=OWN_KINDS,
                                    undoes__isnull=True, undone_by__isnull=True)
            .order_by("-created_at", "-pk").first())


@transaction.atomic
def judgment_undo(*, assignment: Assignment) -> PoolItem | None:
    """Take back the assessor's last grade in this pool; returns its item (None when there is nothing to undo).

    The item gets back the grade it had before that action (or none), as a
    new row pointing at the action it undoes; repeated undos walk further back.
    """
    last = last_action(assignment)
    if last is None:
        return None
    PoolItem.objects.select_for_update(no_key=True).filter(pk=last.item_id).first()
    before = Judgment.objects.filter(superseded_by=last).first()
    new = Judgment.objects.create(item_id=last.item_id, assessor=assignment.assessor, kind=last.kind,
                                  grade=before.grade if before is not None else None, undoes=last)
    _supersede(last.item, assignment.assessor, new)
    pool_advance(pool=assignment.pool, qid=last.item.qid)
    return last.item


@dataclass(frozen=True)
class Neighbours:
    """Where the keys lead from one item: previous, next, the next not judged yet (skip), and the place."""

    previous: PoolItem | None
    next: PoolItem | None
    next_unjudged: PoolItem | None
    index: int
    total: int
    judged: int


def neighbours(assignment: Assignment, item: PoolItem) -> Neighbours:
    """Previous and next in the assignment's order, and the next unjudged item after this one (wrapping)."""
    items = assignment_items(assignment)
    graded = grades_of(assignment)
    at = next(i for i, it in enumerate(items) if it.pk == item.pk)
    after = items[at + 1:] + items[:at]
    pending = next((it for it in after if it.pk not in graded), None)
    return Neighbours(previous=items[at - 1] if at > 0 else None, next=items[at + 1] if at + 1 < len(items) else None,
                      next_unjudged=pending, index=at + 1, total=len(items), judged=len(graded))


def first_unjudged(assignment: Assignment) -> PoolItem | None:
    """Where an assessor resumes: the first item without a grade, else the first item."""
    items = assignment_items(assignment)
    graded = grades_of(assignment)
    return next((it for it in items if it.pk not in graded), items[0] if items else None)


# ---------------------------------------------------------------- progress


def progress_per_assessor(pool: Pool) -> list[dict]:
    """For each assignment: items, graded, seconds spent and the median seconds per judgment."""
    out = []
    for a in pool.assignments.select_related("assessor"):
        n = a.items.count()
        rows = Judgment.objects.filter(item__pool=pool, assessor=a.assessor, kind=Judgment.Kind.ASSESSMENT,
                                       undoes__isnull=True, seconds_taken__isnull=False)
        seconds = sorted(s for s in rows.values_list("seconds_taken", flat=True) if s is not None)
        done = len(grades_of(a))
        out.append({"assignment": a, "assessor": a.assessor, "items": n, "judged": done,
                    "share": done / n if n else 0.0, "seconds": round(sum(seconds), 1),
                    "median_seconds": seconds[len(seconds) // 2] if seconds else None})
    return out


def progress_per_query(pool: Pool) -> list[dict]:
    """For each query: items, items with at least one grade, items every assignee graded."""
    assigned: dict[int, set[int]] = {}
    for item_id, user_id in Assignment.items.through.objects.filter(assignment__pool=pool).values_list(
            "poolitem_id", "assignment__assessor_id"):
        assigned.setdefault(item_id, set()).add(user_id)
    graded: dict[int, set[int]] = {}
    for item_id, user_id in Judgment.objects.filter(item__pool=pool, kind__in=OWN_KINDS, superseded_by__isnull=True,
                                                    grade__isnull=False).values_list("item_id", "assessor_id"):
        graded.setdefault(item_id, set()).add(user_id)
    per: dict[str, dict] = {}
    for item_id, qid in pool.items.values_list("pk", "qid"):
        row = per.setdefault(qid, {"qid": qid, "items": 0, "some": 0, "complete": 0})
        row["items"] += 1
        got = graded.get(item_id, set())
        row["some"] += bool(got)
        row["complete"] += bool(got) and assigned.get(item_id, set()) <= got
    return [per[q] for q in sorted(per)]


"""From several assessors' grades to one grade per document: agreement, disagreements, adjudication.

κ and α are the metric core's (:mod:`evaluation.agreement`): unweighted
Cohen's κ per pair of assessors (and the mean over pairs, Light 1971), and
Krippendorff's α with the ordinal distance, because grades 0–3 are ordered.
An item's grade is the curator's adjudication when there is one, else the
grade its assessors agree on; a disagreement nobody adjudicated follows the
rule the curator picks when making qrels (:data:`DISAGREEMENT_RULES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.db import transaction

from catalogue.models import Topic
from evaluation import agreement

from .errors import AssessmentError
from .judging import OWN_KINDS
from .models import GRADES, Judgment, Pool, PoolItem
from .pools import pool_advance

Pair = tuple[str, str]

#: What to do with an item whose assessors disagree and that nobody adjudicated.
DISAGREEMENT_RULES = {
    "leave_out": "leave the document out of the new qrels until a curator adjudicates it",
    "max": "take the highest grade given",
    "min": "take the lowest grade given",
}


def assessor_grades(pool: Pool) -> dict[str, dict[Pair, int]]:
    """``{assessor name: {(qid, docid): standing grade}}`` (the metric core's ``Judgments`` shape)."""
    out: dict[str, dict[Pair, int]] = {}
    rows = Judgment.objects.filter(item__pool=pool, kind__in=OWN_KINDS, superseded_by__isnull=True,
                                   grade__isnull=False)
    for name, qid, docid, grade in rows.values_list("assessor__username", "item__qid", "item__docid", "grade"):
        assert grade is not None  # grade__isnull=False above
        out.setdefault(name, {})[(qid, docid)] = grade
    return out


def adjudicated(pool: Pool) -> dict[Pair, int]:
    """(qid, docid) → the standing adjudicated grade."""
    rows = Judgment.objects.filter(item__pool=pool, kind=Judgment.Kind.ADJUDICATION, superseded_by__isnull=True,
                                   grade__isnull=False)
    return {(q, d): g for q, d, g in rows.values_list("item__qid", "item__docid", "grade") if g is not None}


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


@dataclass(frozen=True)
class Agreement:
    """What the curator's agreement table shows (None where a value is undefined: shown as n/a)."""

    items: int
    kappa: float | None
    alpha: float | None
    pairs: list[dict]
    per_query: list[dict]


def pool_agreement(pool: Pool) -> Agreement:
    """κ and α over the doubly judged items: overall, per pair of assessors, per query."""
    grades = assessor_grades(pool)
    whole = agreement.overall(grades, scale=GRADES)
    pairs = [{"a": p.a, "b": p.b, "items": p.items, "kappa": _num(p.kappa), "alpha": _num(p.alpha)}
             for p in agreement.pairwise(grades, scale=GRADES)]
    by_query: dict[str, dict[str, dict[Pair, int]]] = {}
    for name, items in grades.items():
        for pair, g in items.items():
            by_query.setdefault(pair[0], {}).setdefault(name, {})[pair] = g
    per_query = []
    for qid in sorted(by_query):
        o = agreement.overall(by_query[qid], scale=GRADES)
        if o["items"]:
            per_query.append({"qid": qid, "items": int(o["items"]), "kappa": _num(o["kappa"]),
                              "alpha": _num(o["alpha"])})
    return Agreement(items=int(whole["items"]), kappa=_num(whole["kappa"]), alpha=_num(whole["alpha"]),
                     pairs=pairs, per_query=per_query)


def pool_disagreements(pool: Pool) -> list[dict]:
    """Items whose assessors gave different grades: who gave what, the adjudicated grade if any, and the question
    (the item holds the document), so that a curator settles it on what the assessors read."""
    judged = adjudicated(pool)
    items = {(i.qid, i.docid): i for i in pool.items.all()}
    listed = agreement.disagreements(assessor_grades(pool))
    questions = dict(Topic.objects.filter(split_id=pool.split_id, qid__in={qid for (qid, _), _ in listed})
                     .values_list("qid", "text"))
    return [{"item": items[pair], "grades": sorted(by.items()), "adjudicated": judged.get(pair),
             "question": questions.get(pair[0], "")} for pair, by in listed]


@transaction.atomic
def judgment_adjudicate(*, item: PoolItem, user, grade: int) -> Judgment:
    """A curator settles an item's grade; it wins over the assessors' grades (and over an earlier adjudication)."""
    if grade not in GRADES:
        raise AssessmentError(f"the grade {grade} is not on the scale; use {GRADES[0]}–{GRADES[-1]}")
    PoolItem.objects.select_for_update(no_key=True).filter(pk=item.pk).first()
    new = Judgment.objects.create(item=item, assessor=user, grade=grade, kind=Judgment.Kind.ADJUDICATION)
    (Judgment.objects.filter(item=item, kind=Judgment.Kind.ADJUDICATION, superseded_by__isnull=True)
     .exclude(pk=new.pk).update(superseded_by=new))
    pool_advance(pool=item.pool, qid=item.qid)  # MTF learns from the settled grade
    return new


def final_grades(pool: Pool, *, rule: str = "leave_out") -> tuple[dict[Pair, int], list[Pair]]:
    """One grade per judged item, and the items left out (disagreements nobody adjudicated, under ``leave_out``).

    The adjudicated grade wins; otherwise the grade every assessor gave; a
    disagreement follows ``rule`` (:data:`DISAGREEMENT_RULES`).
    """
    if rule not in DISAGREEMENT_RULES:
        raise AssessmentError(f"unknown rule {rule!r} for disagreements; choose one of {', '.join(DISAGREEMENT_RULES)}")
    by_item: dict[Pair, list[int]] = {}
    for items in assessor_grades(pool).values():
        for pair, g in items.items():
            by_item.setdefault(pair, []).append(g)
    settled = adjudicated(pool)
    out: dict[Pair, int] = {}
    left_out: list[Pair] = []
    for pair in sorted(set(by_item) | set(settled)):
        if pair in settled:
            out[pair] = settled[pair]
            continue
        given = by_item[pair]
        if len(set(given)) == 1:
            out[pair] = given[0]
        elif rule == "max":
            out[pair] = max(given)
        elif rule == "min":
            out[pair] = min(given)
        else:
            left_out.append(pair)
    return out, left_out

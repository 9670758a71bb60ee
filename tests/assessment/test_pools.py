"""Pools built from the stored runs: exact on hand-made runs, judged documents left out, statistics, assignment."""

from __future__ import annotations

import pytest

from assessment.errors import AssessmentError
from assessment.judging import judgment_record
from assessment.models import Assignment, Pool, PoolItem
from assessment.pools import pool_assign, pool_build, run_label
from catalogue.services import corpus_set

pytestmark = pytest.mark.django_db

DEPTH2 = {"q1": ["d11", "d14", "d9"], "q2": ["d15", "d12"], "q3": ["d13", "d16"]}


def items(pool: Pool) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for it in pool.items.order_by("qid", "position"):
        out.setdefault(it.qid, []).append(it.docid)
    return out


def test_it_pools_the_top_k_of_every_run_minus_the_judged_documents(test_split, runs, staff):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2}, user=staff,
                      overlap_share=0.5, seconds_per_judgment=30)
    assert items(pool) == DEPTH2
    a, b = run_label(runs["A"]), run_label(runs["B"])
    s = pool.statistics
    assert s["documents"] == 7 and s["queries"] == 4  # q4 has a topic but no run answers it
    assert s["size_per_query"] == {"q1": 3, "q2": 2, "q3": 2, "q4": 0}
    assert s["unjudged_per_run"] == {a: 3, b: 5}
    assert s["unique_per_run"] == {a: 2, b: 4}
    assert s["in_pool_per_run"] == {a: 3, b: 5}
    assert s["expected_cost"] == 7 * 1.5 * 30
    d13 = pool.items.get(qid="q3", docid="d13")
    assert d13.ranks == {a: 2, b: 1} and d13.priority == 2.0 and d13.reason == "best rank 1, retrieved by 2 runs"
    assert pool.base_qrels == test_split.current_qrels and pool.created_by == staff


def test_depth_one_and_chosen_runs(test_split, runs):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 1}, submissions=[runs["B"]])
    assert items(pool) == {"q1": ["d11"], "q2": ["d15"], "q3": ["d13"]}
    assert list(pool.runs.all()) == [runs["B"]]


def test_the_rbp_pool_keeps_the_heaviest_documents_within_the_budget(test_split, runs):
    pool = pool_build(split=test_split, name="p", method="rbp", params={"budget": 1, "p": 0.5, "depth": 3})
    # q1: d11 = 0.5·0.25 (A rank 3) + 0.5 (B rank 1) = 0.625 beats d9 (0.25) and d14 (0.25).
    assert items(pool) == {"q1": ["d11"], "q2": ["d15"], "q3": ["d13"]}
    assert pool.items.get(qid="q1").priority == pytest.approx(0.625)


def test_documents_judged_in_another_pool_are_not_pooled_again(test_split, runs, assessors):
    first = pool_build(split=test_split, name="first", method="depth", params={"k": 1})
    (assignment,) = pool_assign(pool=first, assessors=[assessors[0]])
    judgment_record(assignment=assignment, item=first.items.get(docid="d11"), grade=1)
    second = pool_build(split=test_split, name="second", method="depth", params={"k": 2})
    assert items(second) == {"q1": ["d14", "d9"], "q2": ["d15", "d12"], "q3": ["d13", "d16"]}


def test_the_pooled_documents_carry_their_text_from_the_corpus(test_split, runs, tiny_dataset):
    ids = [f"d{i}" for i in range(1, 21)]
    corpus_set(dataset=tiny_dataset, ids=ids,
               documents=[{"_id": d, "title": f"Art. {d}", "text": f"Le bail du locataire {d}."} for d in ids])
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 1})
    it = pool.items.get(docid="d11")
    assert (it.doc_title, it.doc_text) == ("Art. d11", "Le bail du locataire d11.")


def test_it_refuses_a_run_of_another_split_and_a_split_without_runs(tiny_dataset, runs):
    dev = tiny_dataset.splits.get(name="dev")
    with pytest.raises(AssessmentError, match="cannot be pooled"):
        pool_build(split=dev, name="p", method="depth", params={"k": 2}, submissions=[runs["A"]])
    with pytest.raises(AssessmentError, match="no scored run"):
        pool_build(split=dev, name="p", method="depth", params={"k": 2})
    assert not Pool.objects.exists()


def test_assignment_keeps_queries_together_and_doubles_the_overlap_share(test_split, runs, assessors):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2})
    carol, dave = pool_assign(pool=pool, assessors=assessors, overlap_share=0.0)
    mine = {q for q in carol.items.values_list("qid", flat=True)}
    theirs = {q for q in dave.items.values_list("qid", flat=True)}
    assert not mine & theirs and mine | theirs == {"q1", "q2", "q3"}
    assert carol.items.count() + dave.items.count() == 7
    carol, dave = pool_assign(pool=pool, assessors=assessors, overlap_share=0.5)
    doubled = [it for it in PoolItem.objects.filter(pool=pool) if it.assignments.count() == 2]
    assert len(doubled) == 4  # ceil(0.5 × 7)
    assert carol.items.count() + dave.items.count() == 11
    assert Assignment.objects.filter(pool=pool).count() == 2


def test_assignment_is_refused_once_judging_started_and_overlap_needs_two(test_split, runs, assessors):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2})
    with pytest.raises(AssessmentError, match="two assessors"):
        pool_assign(pool=pool, assessors=assessors[:1], overlap_share=0.2)
    (a,) = pool_assign(pool=pool, assessors=assessors[:1], overlap_share=0)
    judgment_record(assignment=a, item=a.items.first(), grade=0)
    with pytest.raises(AssessmentError, match="judging has started"):
        pool_assign(pool=pool, assessors=assessors, overlap_share=0)

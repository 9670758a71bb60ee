"""Move-to-front on the platform: the pool grows one document per judgment, in MTF's order, worked by hand.

Runs (conftest.py), q1: A = d1 d9 d11, B = d11 d14 d1; d1 and d2 are judged already. Both runs start at
priority 0, A first in run order: A offers d1 (judged: skipped), then d9. d9 judged not relevant: A drops
to -1 and the turn passes to B, which offers d11; d11 relevant: B keeps the turn and offers d14. Budget 3.
"""

from __future__ import annotations

import pytest

from assessment.consensus import judgment_adjudicate
from assessment.judging import judgment_record, judgment_undo
from assessment.pools import pool_assign, pool_build

pytestmark = pytest.mark.django_db


def order(pool, qid="q1"):
    return list(pool.items.filter(qid=qid).order_by("position").values_list("docid", flat=True))


@pytest.fixture
def mtf(test_split, runs):
    return pool_build(split=test_split, name="mtf", method="mtf", params={"budget": 3, "depth": 100},
                      seconds_per_judgment=10)


def test_each_query_starts_with_the_document_mtf_asks_about_first(mtf):
    assert {q: order(mtf, q) for q in ("q1", "q2", "q3")} == {"q1": ["d9"], "q2": ["d12"], "q3": ["d13"]}
    # Reachable unjudged documents: q1 d9 d11 d14 (3, the budget), q2 d12 d15, q3 d13 d16.
    assert mtf.statistics["planned_documents"] == 3 + 2 + 2 and mtf.statistics["expected_cost"] == 70
    assert len(mtf.tops) == 2 and all(t["q1"] for t in mtf.tops.values())


def test_the_pool_grows_in_mtf_order_as_the_assessor_judges(mtf, assessors):
    (carol,) = pool_assign(pool=mtf, assessors=assessors[:1], overlap_share=0)
    judgment_record(assignment=carol, item=mtf.items.get(docid="d9"), grade=0)
    assert order(mtf) == ["d9", "d11"]
    d11 = mtf.items.get(docid="d11")
    assert carol.items.filter(pk=d11.pk).exists() and d11.ranks and d11.position == 2
    judgment_record(assignment=carol, item=d11, grade=2)
    assert order(mtf) == ["d9", "d11", "d14"]
    judgment_record(assignment=carol, item=mtf.items.get(docid="d14"), grade=1)
    assert order(mtf) == ["d9", "d11", "d14"]  # the budget is spent
    judgment_undo(assignment=carol)
    judgment_undo(assignment=carol)
    assert order(mtf) == ["d9", "d11", "d14"]  # asked documents stay in the pool


def test_disagreeing_grades_and_an_adjudication_keep_the_mtf_pool_consistent(mtf, assessors, staff):
    carol, dave = pool_assign(pool=mtf, assessors=assessors, overlap_share=1.0)
    d12 = mtf.items.get(docid="d12")  # q2: A = d3 (judged) d12, B = d15 d3
    judgment_record(assignment=carol, item=d12, grade=2)
    judgment_record(assignment=dave, item=d12, grade=0)
    # The highest grade counts until a curator settles it: d12 relevant, A keeps the turn but has no more;
    # B offers d15 either way. The adjudication is stored and the pool stays consistent.
    assert order(mtf, "q2") == ["d12", "d15"]
    judgment_adjudicate(item=d12, user=staff, grade=0)
    assert order(mtf, "q2") == ["d12", "d15"]


def test_the_agreement_sample_of_an_mtf_pool_is_whole_queries(mtf, assessors):
    carol, dave = pool_assign(pool=mtf, assessors=assessors, overlap_share=0.34)  # ceil(0.34 × 3) = 2 queries
    both = set(carol.items.values_list("qid", flat=True)) & set(dave.items.values_list("qid", flat=True))
    assert len(both) == 2
    qid = sorted(both)[0]
    judgment_record(assignment=carol, item=mtf.items.get(qid=qid, position=1), grade=0)
    new = mtf.items.filter(qid=qid).order_by("-position").first()
    assert new.position == 2 and carol.items.filter(pk=new.pk).exists() and dave.items.filter(pk=new.pk).exists()

"""Agreement on the doubly judged items, against scikit-learn and the krippendorff package; adjudication wins."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from assessment.consensus import final_grades, judgment_adjudicate, pool_agreement, pool_disagreements
from assessment.judging import judgment_record
from assessment.models import GRADES
from assessment.pools import pool_assign, pool_build

pytestmark = pytest.mark.django_db

#: Grades of carol and dave on the 7 items of the depth-2 pool (q1: 3 items, q2: 2, q3: 2), in pool order.
CAROL = [2, 0, 1, 3, 0, 1, 2]
DAVE = [2, 1, 1, 3, 0, 2, 0]


@pytest.fixture
def judged(test_split, runs, assessors):
    pool = pool_build(split=test_split, name="p", method="depth", params={"k": 2})
    carol, dave = pool_assign(pool=pool, assessors=assessors, overlap_share=1.0)
    items = list(pool.items.order_by("qid", "position"))
    for it, gc, gd in zip(items, CAROL, DAVE):
        judgment_record(assignment=carol, item=it, grade=gc)
        judgment_record(assignment=dave, item=it, grade=gd)
    return pool, items


def _alpha(a, b):
    return krippendorff.alpha(reliability_data=np.array([a, b], dtype=float), level_of_measurement="ordinal",
                              value_domain=list(GRADES))


def test_kappa_and_alpha_equal_the_reference_implementations(judged):
    pool, items = judged
    result = pool_agreement(pool)
    (pair,) = result.pairs
    assert (pair["a"], pair["b"], pair["items"]) == ("carol", "dave", 7)
    assert pair["kappa"] == pytest.approx(cohen_kappa_score(CAROL, DAVE), abs=1e-12)
    assert pair["alpha"] == pytest.approx(_alpha(CAROL, DAVE), abs=1e-12)
    assert result.kappa == pytest.approx(pair["kappa"]) and result.alpha == pytest.approx(pair["alpha"])
    per_query = {row["qid"]: row for row in result.per_query}
    for qid, span in (("q1", slice(0, 3)), ("q2", slice(3, 5)), ("q3", slice(5, 7))):
        ref_kappa = cohen_kappa_score(CAROL[span], DAVE[span])
        got = per_query[qid]["kappa"]
        assert (got is None and np.isnan(ref_kappa)) or got == pytest.approx(ref_kappa, abs=1e-12), qid
    assert per_query["q1"]["alpha"] == pytest.approx(_alpha(CAROL[:3], DAVE[:3]), abs=1e-12)
    # q2: both gave 3 then 0: perfect agreement, α = 1.
    assert per_query["q2"]["alpha"] == pytest.approx(_alpha(CAROL[3:5], DAVE[3:5]), abs=1e-12) == 1.0


def test_disagreements_are_listed_and_the_adjudicated_grade_wins(judged, staff):
    pool, items = judged
    listed = pool_disagreements(pool)
    assert [d["item"] for d in listed] == [items[1], items[5], items[6]]
    assert listed[0]["grades"] == [("carol", 0), ("dave", 1)] and listed[0]["adjudicated"] is None
    grades, left_out = final_grades(pool)
    assert left_out == sorted((it.qid, it.docid) for it in (items[1], items[5], items[6]))
    assert grades[(items[0].qid, items[0].docid)] == 2
    judgment_adjudicate(item=items[1], user=staff, grade=3)
    judgment_adjudicate(item=items[1], user=staff, grade=1)  # a second thought supersedes the first
    grades, left_out = final_grades(pool)
    assert grades[(items[1].qid, items[1].docid)] == 1 and len(left_out) == 2
    assert pool_disagreements(pool)[0]["adjudicated"] == 1
    high, none_left = final_grades(pool, rule="max")
    assert not none_left and high[(items[6].qid, items[6].docid)] == 2
    low, _ = final_grades(pool, rule="min")
    assert low[(items[6].qid, items[6].docid)] == 0 and low[(items[1].qid, items[1].docid)] == 1


def test_the_curator_sees_agreement_and_adjudicates_on_the_pool_page(client, judged, staff):
    pool, items = judged
    client.force_login(staff)
    body = client.get(reverse("assessment:pool", args=[pool.pk])).content.decode()
    kappa = cohen_kappa_score(CAROL, DAVE)
    assert f"{kappa:.3f}" in body and "carol · dave" in body and 'id="disagreement-list"' in body
    response = client.post(reverse("assessment:adjudicate", args=[pool.pk, items[5].pk]), {"grade": "2"})
    assert response.status_code == 302
    assert pool_disagreements(pool)[1]["adjudicated"] == 2


def test_the_adjudication_shows_the_question_and_the_document(client, judged, staff, test_split):
    """A curator settles a disagreement with what the assessors read: the question and the document's text."""
    pool, items = judged
    it = items[1]
    test_split.topics.filter(qid=it.qid).update(text="Le locataire peut-il résilier le bail ?")
    type(it).objects.filter(pk=it.pk).update(doc_title="Article 1 du code démo", doc_text="Le bail peut être résilié.")
    client.force_login(staff)
    body = client.get(reverse("assessment:pool", args=[pool.pk])).content.decode()
    listing = body.split('id="disagreement-list"', 1)[1].split("</table>", 1)[0]
    row = next(r for r in listing.split("<tr>") if f">{it.docid}<" in r or f"<code>{it.docid}</code>" in r)
    assert "Le locataire peut-il résilier le bail ?" in row
    assert "Article 1 du code démo" in row and "Le bail peut être résilié." in row
